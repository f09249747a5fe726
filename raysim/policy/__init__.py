"""Scheduling policies behind one small interface (`raysim.policy.base.Policy`).

A new policy is one file with a Policy subclass, one line in POLICIES (or a `register_policy`
call) and one conf file, `conf/policy/<name>.yaml`, holding its constants.
"""

from __future__ import annotations

from pathlib import Path

from raysim.registry import LazyRegistry
from raysim.rounds.policies import POLICIES as ROUND_POLICIES

#: name -> Policy subclass, each module imported when its policy is first used (raysim.registry);
#: Gavel's round-based family (raysim.rounds.policies) as RoundBased kernel policies.
POLICIES: LazyRegistry = LazyRegistry({
    **{name: f"raysim.policy.{module}:{cls}" for name, module, cls in (
        ("fifo", "fifo", "FIFO"), ("fifo_backfill", "fifo_backfill", "FIFOBackfill"), ("sjf", "sjf", "SJF"),
        ("srtf", "srtf", "SRTF"), ("qssf", "qssf", "QSSF"), ("tiresias", "tiresias", "Tiresias"),
        ("lucid", "lucid", "Lucid"), ("sia", "sia", "Sia"), ("pollux", "pollux", "Pollux"),
        ("gavel_elastic", "gavel_elastic", "GavelElastic"), ("bftrainer", "bftrainer", "BFTrainer"))},
    **{name: f"raysim.policy.rounds:RoundBased_{name}" for name in ROUND_POLICIES}})


def register_policy(cls) -> type:
    """Make a Policy subclass available by its `name` (usable as a class decorator)."""
    POLICIES[cls.name] = cls
    return cls


def policy_class(name: str):
    """The Policy subclass called `name`."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of {sorted(POLICIES)}") from None


def policy_constants(name: str, conf_dir: str | Path | None = None) -> dict:
    """The constants in `conf/policy/<name>.yaml` (everything but `name` and `kind`); {} without such
    a file. This is where a policy's constants live: Hydra runs pass the composed `policy` group
    the same way."""
    from omegaconf import OmegaConf

    from raysim.paths import CONF_DIR

    path = Path(conf_dir or CONF_DIR) / "policy" / f"{name}.yaml"
    if not path.exists():
        return {}
    conf = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    for key in ("name", "kind"):
        conf.pop(key, None)
    return conf


def checked_constants(name: str, options: dict) -> dict:
    """`options` over the constants of conf/policy/<name>.yaml, each of a conf constant's type (an
    int where the conf has an int, a number where it has a float); a wrong one is a one-line error."""
    defaults = policy_constants(name)
    out = {**defaults, **options}
    for key, default in defaults.items():
        value = out[key]
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            continue
        want = int if isinstance(default, int) else float
        if isinstance(value, bool) or not isinstance(value, (int, float)) or want is int and value != int(value):
            raise ValueError(f"policy.{key} must be {'an integer' if want is int else 'a number'} "
                             f"(conf/policy/{name}.yaml has {default!r}), not {value!r}")
    return out


def make_policy(name: str, *, params, **options):
    """Build the policy called `name`: its constants from conf/policy/<name>.yaml, overridden by
    `options` (which also carry run inputs such as Lucid's pair speeds)."""
    cls = policy_class(name)
    return cls(params, **{**policy_constants(name), **options})
