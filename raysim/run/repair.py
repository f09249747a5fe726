"""The `repair` config group: how a node that a drawn failure takes down comes back (REPAIRS, one per
preset of conf/repair/). `fixed` (the default): the failure model's own repair time
(`failures.repair_h`, `failures.repair`, a category's `repair_h`), as every run before the group
existed; `pipeline`: AIReSim's automated-then-manual repair pipeline with false successes
(raysim.sim.repairs, docs/failures.md), whose settings are declared here and checked once. A bad
value is one line naming it; `repair=pipeline` needs drawn failures (`failures=exponential`, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.registry import Registry
from raysim.run.presets import Preset, chosen, chosen_settings
from raysim.settings import setting
from raysim.sim.repairs import TIMES, Pipeline

#: The longest mean repair stage a setting may give (hours, as failures.MAX_HOURS).
MAX_HOURS = 1e7
HOUR = 3600


@dataclass(frozen=True)
class PipelineSettings:
    """The repair pipeline's settings (conf/repair/pipeline.yaml holds AIReSim's Table I defaults)."""

    auto_h: float = setting(2.0, "mean time of an automated repair, hours", minimum=0, maximum=MAX_HOURS)
    escalate: float = setting(0.8, "probability that an automated repair is escalated to a manual one after it",
                              minimum=0, maximum=1)
    manual_h: float = setting(48.0, "mean time of a manual repair, hours", minimum=0, maximum=MAX_HOURS)
    auto_false: float = setting(0.4, "probability that an automated repair that ends the repair reports success "
                                "without fixing the node (a bad node stays bad)", minimum=0, maximum=1)
    manual_false: float = setting(0.2, "probability that a manual repair reports success without fixing the node",
                                  minimum=0, maximum=1)
    times: str = setting("exponential", "fixed | exponential (each stage's time, of its mean)", choices=TIMES)


#: repair=NAME (conf/repair/NAME.yaml's `name`) -> its preset.
REPAIRS = Registry({
    "fixed": Preset("The failure model's repair time (failures.repair_h, fixed or exponential): the default"),
    "pipeline": Preset("AIReSim's repair pipeline: automated, escalated to manual with a probability, each with "
                     "false successes (docs/failures.md)", PipelineSettings),
}, what="repair preset")


def repair_name(cfg: DictConfig) -> str:
    """The chosen preset (`fixed` where the group is absent)."""
    return chosen(cfg, "repair", REPAIRS, "fixed")


def repair_settings(cfg: DictConfig):
    """The chosen preset's checked settings (`repair.*` but its name)."""
    return chosen_settings(cfg, "repair", REPAIRS, "fixed")


def check_repair_config(cfg: DictConfig, drawn: bool) -> None:
    """Check the `repair` group: its keys and values, and that `repair=pipeline` comes with failures
    drawn from a model (`drawn`)."""
    repair_settings(cfg)
    if repair_name(cfg) == "pipeline" and not drawn:
        raise ConfigError("repair", "repair=pipeline repairs drawn failures: set failures=exponential, weibull, "
                          "lognormal or llama3", "pipeline")


def pipeline(cfg: DictConfig) -> Pipeline | None:
    """The run's repair pipeline (None under repair=fixed)."""
    if repair_name(cfg) != "pipeline":
        return None
    s = repair_settings(cfg)
    return Pipeline(s.auto_h * HOUR, s.escalate, s.manual_h * HOUR, s.auto_false, s.manual_false, s.times)
