"""Priority classes in a trace replay (docs/spot.md): the `spot:` settings, declared here, and what
a run with a trace's `priority_class` column needs (raysim.sim.spot: high-priority jobs evict spot
jobs), refused in one line where it cannot apply yet."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.policy import policy_class
from raysim.run.values import plain, value
from raysim.settings import setting
from raysim.sim.spot import VICTIMS, SpotRules
from raysim.trace.load import Trace
from raysim.trace.schema import LARGEST, PRIORITY_CLASSES

COLUMN = "priority_class"


def _victims(name, key: str):
    return VICTIMS.chosen(name, key)


@dataclass(frozen=True)
class SpotSettings:
    """`spot:` what high-priority jobs may do to spot jobs (with a trace's priority_class column)."""

    victims: str = setting("youngest", "which running spot jobs a high-priority job that cannot start evicts, on one "
                                       "node: youngest (least run since their starts) or gfs (GFS's FIFO choice)",
                           check=_victims, what="a victim chooser")
    guarantee_s: int = setting(0, "a spot job is not evicted during the first guarantee_s of each run (s; 0: any "
                                  "time)", minimum=0, maximum=LARGEST)
    overhead_s: int = setting(0, "work an evicted job redoes on top of its remaining work, without checkpoint.* (s)",
                              minimum=0, maximum=LARGEST)


def spot_rules(cfg: DictConfig, settings: SpotSettings, trace: Trace, *, resources: bool,
               checkpoints: bool) -> tuple[SpotRules | None, np.ndarray | None]:
    """The run's eviction rules and, per trace job, 1 for a spot job (0: high priority); (None, None)
    for a trace without the priority_class column. What cannot apply is one line naming its setting."""
    if COLUMN not in trace.table.column_names:
        given = {k: v for k, v in (plain(cfg, "spot") or {}).items() if getattr(SpotSettings(), k, v) != v}
        if given:
            key = next(iter(given))
            raise ConfigError(f"spot.{key}", f"the trace {trace.source} has no {COLUMN} column: every job has one "
                              "class, no job is evicted (docs/spot.md)", given[key])
        return None, None
    name = value(cfg, "policy.name")
    if not policy_class(name).ranks_classes:
        raise ConfigError("policy.name", f"the trace's {COLUMN} column needs a policy that ranks the classes "
                          "(high-priority jobs first, evicting spot jobs): fifo, sjf or qssf for now", name)
    if value(cfg, "sim.compat") != "clean":
        raise ConfigError("sim.compat", f"priority classes (the trace's {COLUMN} column) run under sim.compat=clean "
                          "only", value(cfg, "sim.compat"))
    if resources:
        raise ConfigError("trace.path", f"the trace's jobs ask for GPU shares, CPU or memory: evicting spot jobs "
                          f"from shared GPUs is not modelled yet; drop its {COLUMN} column", trace.source)
    if value(cfg, "quota") is not None and value(cfg, "quota.mode") == "borrow":
        raise ConfigError("quota", f"priority classes (the trace's {COLUMN} column) do not run with quota "
                          "lending yet: run them with quota=none or global", "borrow")
    if checkpoints and settings.overhead_s:
        raise ConfigError("spot.overhead_s", "with checkpoint-restart an evicted job pays checkpoint.restart_s and "
                          "loses its work since its last checkpoint instead: leave spot.overhead_s at 0",
                          settings.overhead_s)
    classes = trace.table.column(COLUMN).cast(pa.string()).to_numpy(zero_copy_only=False)
    spot = (classes == PRIORITY_CLASSES[1]).astype(np.int64)
    return SpotRules(settings.victims, settings.guarantee_s, settings.overhead_s), spot
