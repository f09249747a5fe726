"""The `retire` config group: when a node that keeps failing leaves the cluster for good (RETIRES,
one per preset of conf/retire/), as AIReSim's removal policies decide it after each repair
(raysim.sim.retirement, docs/failures.md). `never` (the default): every node comes back after each
repair, as every run before the group existed; `threshold`: a number of failures within a window;
`scored`: a score that failures lower and survived time raises. The settings are declared here and
checked once; a bad value is one line naming it; `retire=threshold | scored` needs drawn failures
(`failures=exponential`, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.registry import Registry
from raysim.run.presets import Preset, chosen, chosen_settings
from raysim.settings import setting
from raysim.sim.retirement import Scored, Threshold

#: The longest window or period a setting may give (hours, as failures.MAX_HOURS).
MAX_HOURS = 1e7
#: The largest score, penalty or increment (scores are plain numbers; this keeps sums finite).
MAX_SCORE = 1e12
HOUR = 3600


@dataclass(frozen=True)
class ThresholdSettings:
    """Retirement by a failure count in a window (conf/retire/threshold.yaml holds AIReSim's defaults)."""

    max_failures: int = setting(5, "failures within the window that retire a node after its repair", minimum=1,
                                maximum=10 ** 9)
    window_h: float = setting(168.0, "the window, hours before the repair's end (failures over the node's whole "
                              "history count)", minimum=0, maximum=MAX_HOURS)


@dataclass(frozen=True)
class ScoredSettings:
    """Retirement by a score (conf/retire/scored.yaml holds AIReSim's defaults)."""

    initial: float = setting(100.0, "each node's score at the start", minimum=-MAX_SCORE, maximum=MAX_SCORE)
    penalty: float = setting(30.0, "taken off per failure that sends the node to repair", minimum=0, maximum=MAX_SCORE)
    increment: float = setting(10.0, "added per whole period of each lifetime (up until its next failure)",
                               minimum=0, maximum=MAX_SCORE)
    period_h: float = setting(24.0, "the period, hours (0: one increment per lifetime)", minimum=0, maximum=MAX_HOURS)
    threshold: float = setting(0.0, "a repaired node whose score is at or below it retires",
                               minimum=-MAX_SCORE, maximum=MAX_SCORE)


#: retire=NAME (conf/retire/NAME.yaml's `name`) -> its preset.
RETIRES = Registry({
    "never": Preset("Every node comes back after each repair: the default"),
    "threshold": Preset("AIReSim's ThresholdRemoval: a node with max_failures failures within window_h of a "
                      "repair's end retires after it (docs/failures.md)", ThresholdSettings),
    "scored": Preset("AIReSim's ScoredRemoval: a node's score loses a penalty per failure repaired and gains an "
                   "increment per whole period survived; at or below the threshold it retires after its repair",
                   ScoredSettings),
}, what="retirement policy")


def retire_name(cfg: DictConfig) -> str:
    """The chosen preset (`never` where the group is absent)."""
    return chosen(cfg, "retire", RETIRES, "never")


def retire_settings(cfg: DictConfig):
    """The chosen preset's checked settings (`retire.*` but its name)."""
    return chosen_settings(cfg, "retire", RETIRES, "never")


def check_retire_config(cfg: DictConfig, drawn: bool) -> None:
    """Check the `retire` group: its keys and values, and that a policy other than `never` comes with
    failures drawn from a model (`drawn`)."""
    retire_settings(cfg)
    name = retire_name(cfg)
    if name != "never" and not drawn:
        raise ConfigError("retire", f"retire={name} retires nodes after repairs of drawn failures: set "
                          "failures=exponential, weibull, lognormal or llama3", name)


def retirement(cfg: DictConfig) -> Threshold | Scored | None:
    """The run's retirement policy (None under retire=never)."""
    name = retire_name(cfg)
    if name == "never":
        return None
    s = retire_settings(cfg)
    if name == "threshold":
        return Threshold(s.max_failures, s.window_h * HOUR)
    return Scored(s.initial, s.penalty, s.increment, s.period_h * HOUR, s.threshold)
