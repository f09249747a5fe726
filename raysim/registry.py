"""A name -> class registry that imports each class when it is first asked for.

A run uses one policy; importing every policy's module to list their names would import what the
others need too (the elastic ones' solvers, harvesting's scipy.optimize). Entries are
``"module:attribute"`` strings or functions of no arguments returning the class; iterating, ``in``
and ``len`` never import anything.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping


class LazyRegistry(MutableMapping):
    """name -> class; `entries` says where each class is (see the module docs). Assigning a class
    registers it as it is (e.g. a policy defined in a test)."""

    def __init__(self, entries: dict[str, str | Callable[[], type]]):
        self._where = dict(entries)
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        cls = self._classes.get(name)
        if cls is None:
            where = self._where[name]
            if callable(where):
                cls = where()
            else:
                module, _, attribute = where.partition(":")
                cls = getattr(importlib.import_module(module), attribute)
            self._classes[name] = cls
        return cls

    def __setitem__(self, name: str, cls: type) -> None:
        self._where[name] = lambda: cls
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._classes.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where
