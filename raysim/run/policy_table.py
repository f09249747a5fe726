"""Settings an experiment prepares for the policies it may run with: ``policies: {NAME: {...}}``.

A policy's settings live in its own group (``policy.profiler.nodes`` under policy=lucid), so one that
another policy sets is refused (``policy.profiler: not a setting of policy srtf``). An experiment
that a sweep runs under several policies (``-m +experiment=venus policy=fifo,lucid``) cannot set
Lucid's pool in the policy group, then: it names it for Lucid, ``policies.lucid.profiler.take_from``.
When a run's policy is NAME, ``policies.NAME`` is laid over the policy group's defaults (a setting
given on the command line, ``policy.KEY=VALUE``, wins); every entry of the table is checked against
its policy's declared settings whichever policy runs, so a misspelt one is refused at once.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf, open_dict

from raysim.errors import ConfigError
from raysim.policy import POLICIES, policy_class
from raysim.run.unused import command_line_overrides, covers, override_key
from raysim.settings import parse


def apply_policy_table(cfg: DictConfig, overrides=None) -> None:
    """Check `cfg.policies` and lay the entry of the run's policy over `cfg.policy` (in place),
    except where the command line (default: this run's overrides) sets `policy.<key>`."""
    table = cfg.get("policies")
    if not table:
        return
    if not isinstance(table, DictConfig):
        raise ConfigError("policies", "must be a table: policy name -> its settings", table)
    for name in table:
        if name not in POLICIES:
            raise ConfigError(f"policies.{name}", f"unknown policy; choose one of {', '.join(sorted(POLICIES))}")
        values = table[name]
        if not isinstance(values, DictConfig):
            raise ConfigError(f"policies.{name}", "must be a section of the policy's settings", values)
        parse(policy_class(name).Settings, OmegaConf.to_container(values, resolve=True),
              prefix=f"policies.{name}", owner=f"policy {name}")
    mine = table.get(cfg.policy.name)
    if not mine:
        return
    given = [override_key(o) for o in (command_line_overrides() if overrides is None else overrides)]
    given = [key for key in given if key != "policy"]  # policy=NAME chooses the group, it sets no value
    with open_dict(cfg):
        for key, value in _leaves(OmegaConf.to_container(mine, resolve=False)):
            dotted = f"policy.{key}"
            if not any(covers(g, dotted) for g in given):
                OmegaConf.update(cfg, dotted, value, merge=False)


def _leaves(node, prefix: str = ""):
    """(dotted key, value) of every non-table value under `node` (lists are values)."""
    for key, value in node.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value
