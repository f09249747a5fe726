"""Scheduling policies behind one small interface (`raysim.policy.base.Policy`).

A new policy is one file with a Policy subclass (its constants declared as `Settings`, see
raysim.settings), one line in POLICIES (or a `register_policy` call) and one conf file,
`conf/policy/<name>.yaml`, holding its constants' defaults for Hydra.
"""

from __future__ import annotations

from raysim.registry import Registry
from raysim.rounds.policies import POLICIES as ROUND_POLICIES
from raysim.settings import as_options, defaults, describe, parse

#: name -> Policy subclass, each module imported when its policy is first used (raysim.registry);
#: Gavel's round-based family (raysim.rounds.policies) as RoundBased kernel policies.
POLICIES: Registry = Registry({
    **{name: f"raysim.policy.{module}:{cls}" for name, module, cls in (
        ("fifo", "fifo", "FIFO"), ("fifo_backfill", "fifo_backfill", "FIFOBackfill"), ("sjf", "sjf", "SJF"),
        ("srtf", "srtf", "SRTF"), ("qssf", "qssf", "QSSF"), ("tiresias", "tiresias", "Tiresias"),
        ("lucid", "lucid", "Lucid"), ("sia", "sia", "Sia"), ("pollux", "pollux", "Pollux"),
        ("gavel_elastic", "gavel_elastic", "GavelElastic"), ("bftrainer", "bftrainer", "BFTrainer"))},
    **{name: f"raysim.policy.rounds:RoundBased_{name}" for name in ROUND_POLICIES}}, what="policy")


def register_policy(cls) -> type:
    """Make a Policy subclass available by its `name` (usable as a class decorator)."""
    POLICIES[cls.name] = cls
    return cls


def policy_class(name: str):
    """The Policy subclass called `name`."""
    return POLICIES.get_known(name)


def policy_settings(name: str, values=None):
    """The typed settings (the class's `Settings`) of policy `name`: `values` (a mapping of its
    constants, e.g. the composed `policy` group without name and kind) over the declared defaults,
    checked; a bad or unknown one is a ConfigError naming `policy.<key>`."""
    return parse(policy_class(name).Settings, values or {}, prefix="policy", owner=f"policy {name}")


def policy_constants(name: str) -> dict:
    """The declared defaults of policy `name`'s constants (conf/policy/<name>.yaml holds the same)."""
    return defaults(policy_class(name).Settings)


def checked_constants(name: str, options: dict) -> dict:
    """`options` with policy `name`'s constants (its settings but its sections, which its `prepare`
    reads) checked against its declaration and filled with their defaults; the other options (run
    inputs such as Lucid's pair speeds) are passed as they are."""
    constants = {d.name for d in describe(policy_class(name).Settings) if d.section is None}
    settings = policy_settings(name, {k: v for k, v in options.items() if k in constants})
    return {**options, **as_options(settings)}


def make_policy(name: str, *, params, **options):
    """Build the policy called `name`: its declared constants, overridden by `options` (which also
    carry run inputs such as Lucid's pair speeds), checked."""
    return policy_class(name)(params, **checked_constants(name, options))
