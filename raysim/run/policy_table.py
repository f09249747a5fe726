"""Settings an experiment prepares for the policies it may run with: ``policies: {NAME: {...}}``,
where NAME is a policy or a kind of policy (``round``: every round-based one;
raysim.policy.base.Policy.kind).

A policy's settings live in its own group (``policy.profiler.nodes`` under policy=lucid), so one that
another policy sets is refused (``policy.profiler: not a setting of policy srtf``). An experiment
that a sweep runs under several policies (``-m +experiment=venus policy=fifo,lucid``) cannot set
Lucid's pool in the policy group, then: it names it for Lucid, ``policies.lucid.profiler.take_from``.

A run's policy settings (:func:`policy_values`) are its policy group with ``policies.<its kind>``
and then ``policies.<its name>`` laid over the values nobody set: a setting given on the command
line (``policy.KEY=VALUE``), or set to anything but its declared default, wins. Every entry of the
table is checked against the declared settings of its policy (of each policy of its kind)
whichever policy runs (:func:`check_policy_table`), so a misspelt one is refused at once.
"""

from __future__ import annotations

import copy

from omegaconf import DictConfig, OmegaConf

from raysim.errors import ConfigError
from raysim.policy import POLICIES, policy_class, policy_kind
from raysim.settings import defaults, parse

#: The kinds of policy (raysim.policy.base.Policy.kind).
KINDS = ("event", "round", "elastic", "harvest")


def of_kind(kind: str) -> list[str]:
    """The policies of `kind`."""
    return [name for name in POLICIES if policy_kind(name) == kind]


def check_policy_table(cfg: DictConfig) -> None:
    """Each entry of `cfg.policies` names a policy or a kind and holds settings every policy it
    names declares: else a ConfigError naming the entry's key."""
    table = cfg.get("policies")
    if not table:
        return
    if not isinstance(table, DictConfig):
        raise ConfigError("policies", "must be a table: policy (or kind of policy) -> its settings", table)
    for name in table:
        if name not in POLICIES and name not in KINDS:
            raise ConfigError(f"policies.{name}", "unknown policy or kind of policy; choose one of "
                              f"{', '.join(sorted(POLICIES))}, or a kind: {', '.join(KINDS)}")
        values = table[name]
        if not isinstance(values, DictConfig):
            raise ConfigError(f"policies.{name}", "must be a section of the policy's settings", values)
        values = OmegaConf.to_container(values, resolve=True)
        for member in [name] if name in POLICIES else of_kind(name):
            parse(policy_class(member).Settings, values, prefix=f"policies.{name}", owner=f"policy {member}")


def entries_for(cfg: DictConfig) -> tuple[str, ...]:
    """The entries of `cfg.policies` that apply to the run's policy (its kind's, then its own)."""
    name = cfg.policy.name
    return tuple(e for e in (policy_kind(name), name) if e in (cfg.get("policies") or {}))


def policy_values(cfg: DictConfig, overrides=None) -> dict:
    """The run's policy settings (its group without name and kind, resolved) with the entries of
    `cfg.policies` that apply to it laid over the values nobody set (see the module doc);
    `overrides`: the command line's (default: this run's)."""
    return _laid(cfg, overrides)[0]


def unread_entries(cfg: DictConfig, overrides=None) -> list[str]:
    """The settings of `cfg.policies` this run does not read (dotted): the entries for other
    policies, and those of its own that a set value overrides (their data: names are not fetched)."""
    applying = entries_for(cfg)
    return [f"policies.{e}" for e in (cfg.get("policies") or {}) if e not in applying] + _laid(cfg, overrides)[1]


def _laid(cfg: DictConfig, overrides) -> tuple[dict, list[str]]:
    from raysim.run.overrides import command_line_overrides, covers, override_key

    values = {k: v for k, v in OmegaConf.to_container(cfg.policy, resolve=True).items() if k not in ("name", "kind")}
    entries, unread = entries_for(cfg), []
    if not entries:
        return values, unread
    given = [override_key(o) for o in (command_line_overrides() if overrides is None else overrides)]
    given = [key for key in given if key != "policy"]  # policy=NAME chooses the group, it sets no value
    declared = defaults(policy_class(cfg.policy.name).Settings)
    for entry in entries:
        for path, value in _leaves(OmegaConf.to_container(cfg.policies[entry], resolve=True)):
            if any(covers(g, "policy." + ".".join(path)) for g in given) or (
                    _get(values, path) != _get(declared, path)):  # set on the command line, or by a caller
                unread.append(".".join(("policies", entry, *path)))
                continue
            _set(values, path, copy.deepcopy(value))
    return values, unread


def _leaves(node, prefix=()):
    """(key path, value) of every non-table value under `node` (lists are values)."""
    for key, value in node.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


_ABSENT = object()


def _get(node, path):
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _ABSENT
        node = node[key]
    return node


def _set(node, path, value) -> None:
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):  # null (the default) or absent: the table's own
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
