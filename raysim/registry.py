"""The one registry pattern: name -> plug-in (a class or a function), each imported when it is first
asked for.

raysim's plug-ins -- scheduling policies (raysim.policy.POLICIES), Gavel's round policies
(raysim.rounds.policies.POLICIES), placers (raysim.placement.PLACERS), FGD's node scorers
(raysim.placement.scored.SCORERS), trace readers (raysim.trace.load.READERS), harvesting's
allocators (raysim.harvest.allocators.ALLOCATORS), failure producers (raysim.run.failures.FAILURES)
and quota modes (raysim.quota.settings.QUOTAS) -- are each a :class:`Registry`. ``raysim --help``
lists them with the first sentence of each one's docstring (:meth:`Registry.summary`) and, for
plug-ins that declare settings (a ``Settings`` attribute of the class or function, raysim.settings),
those settings.

A run uses one policy; importing every policy's module to list their names would import what the
others need too (the elastic ones' solvers, harvesting's scipy.optimize). Entries are
``"module:attribute"`` strings (imported on first use) or the plug-ins themselves; iterating, ``in``
and ``len`` never import anything.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Iterator, MutableMapping


class Registry(MutableMapping):
    """name -> plug-in; `entries` says where each one is (see the module docs), `what` names the kind
    of plug-in in errors ("policy"). Assigning registers a plug-in as it is (e.g. a policy defined
    in a test)."""

    def __init__(self, entries: dict[str, object], what: str = "plug-in"):
        self._where = dict(entries)
        self._loaded: dict[str, object] = {}
        self.what = what

    def __getitem__(self, name: str):
        if name in self._loaded:
            return self._loaded[name]
        where = self._where[name]
        if isinstance(where, str):
            module, _, attribute = where.partition(":")
            where = getattr(importlib.import_module(module), attribute)
        self._loaded[name] = where
        return where

    def __setitem__(self, name: str, plugin) -> None:
        self._where[name] = self._loaded[name] = plugin

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def get_known(self, name: str):
        """The plug-in called `name`; a ValueError listing the known ones if there is none."""
        if name not in self:
            raise ValueError(f"unknown {self.what} {name!r}; choose one of {', '.join(sorted(self))}")
        return self[name]

    def chosen(self, name, key: str) -> str:
        """`name`, the plug-in a run chose with setting `key` (e.g. policy.name); a ConfigError naming
        `key` and the known plug-ins if there is none."""
        if not isinstance(name, str) or name not in self:
            from raysim.errors import ConfigError

            raise ConfigError(key, f"unknown {self.what}; choose one of {', '.join(sorted(self))}", name)
        return name

    def summary(self, name: str) -> str:
        """The first sentence of plug-in `name`'s docstring (its own, else its module's)."""
        return first_sentence(own_doc(self[name]))


def own_doc(plugin) -> str:
    """The docstring `plugin` itself defines (not one it inherits), else its module's."""
    doc = plugin.__dict__.get("__doc__") if inspect.isclass(plugin) else plugin.__doc__
    if not doc:
        module = sys.modules.get(getattr(plugin, "__module__", ""), None)
        doc = getattr(module, "__doc__", None) or ""
    return doc


def first_sentence(doc: str) -> str:
    """The first sentence of the first paragraph of `doc`, on one line."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return re.split(r"(?<!\be\.g)(?<!\bi\.e)\. ", paragraph, maxsplit=1)[0].rstrip(".")
