"""Scheduling policies behind one small interface (`raysim.policy.base.Policy`).

A new policy is one file with a Policy subclass (its constants declared as `Settings`, see
raysim.settings), one line in POLICIES (or a `register_policy` call) and one conf file,
`conf/policy/<name>.yaml`, holding its constants' defaults for Hydra.
"""

from __future__ import annotations

from raysim.registry import Registry
from raysim.rounds.policies import POLICIES as ROUND_POLICIES
from raysim.settings import as_options, defaults, describe, parse

_SHIPPED = (  # name, module, class, kind (the class's `kind`, raysim.policy.base.Policy)
    ("fifo", "fifo", "FIFO", "event"), ("fifo_backfill", "fifo_backfill", "FIFOBackfill", "event"),
    ("sjf", "sjf", "SJF", "event"), ("srtf", "srtf", "SRTF", "event"), ("qssf", "qssf", "QSSF", "event"),
    ("tiresias", "tiresias", "Tiresias", "event"), ("lucid", "lucid", "Lucid", "event"),
    ("sia", "sia", "Sia", "elastic"), ("pollux", "pollux", "Pollux", "elastic"),
    ("gavel_elastic", "gavel_elastic", "GavelElastic", "elastic"), ("bftrainer", "bftrainer", "BFTrainer", "harvest"))
#: name -> Policy subclass, each module imported when its policy is first used (raysim.registry);
#: Gavel's round-based family (raysim.rounds.policies) as RoundBased kernel policies.
POLICIES: Registry = Registry({
    **{name: f"raysim.policy.{module}:{cls}" for name, module, cls, _ in _SHIPPED},
    **{name: f"raysim.policy.rounds:RoundBased_{name}" for name in ROUND_POLICIES}}, what="policy")
#: The kind of each policy shipped with raysim, known without importing its module: a policy table
#: entry for a kind (policies.round) is checked against every policy of the kind, and importing all
#: of them to find those would import the elastic ones' solvers into every round-based run.
#: tests/test_policy_api.py keeps it equal to the classes' own `kind`.
SHIPPED_KINDS: dict[str, str] = {**{name: kind for name, _, _, kind in _SHIPPED},
                                 **{name: "round" for name in ROUND_POLICIES}}


def register_policy(cls) -> type:
    """Make a Policy subclass available by its `name` (usable as a class decorator)."""
    POLICIES[cls.name] = cls
    SHIPPED_KINDS.pop(cls.name, None)  # (a shipped name taken by another class: its kind is the class's)
    return cls


def policy_class(name: str):
    """The Policy subclass called `name`."""
    return POLICIES.get_known(name)


def policy_kind(name: str) -> str:
    """The kind of policy `name` (event, round, elastic or harvest), importing its module only where
    it is not one of raysim's own."""
    return SHIPPED_KINDS.get(name) or policy_class(name).kind


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
