"""Priority classes in a trace replay (docs/spot.md): the `spot:` settings, declared here, the traits
of a run that the Spot extension declares it cannot run with (raysim.sim.spot: high-priority jobs
evict spot jobs; refused in one line by raysim.run.config.refuse_together), and the run's eviction
rules with its spot quota per VC."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.policy import policy_class
from raysim.run.values import plain, value
from raysim.settings import setting
from raysim.run.spot_forecast import DAY_S, SOURCES, demand_steps, forecast_peaks, quota_steps, read_forecast_file
from raysim.sim.spot import EVICT, REQUEUE, VICTIMS, SpotRules
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
    quota_gpus: int | None = setting(None, "the most GPUs the spot jobs of each VC may hold at once: a spot job that "
                                           "would take more waits (null: no bound; not with quota_share)",
                                     minimum=0, maximum=LARGEST)
    quota_share: float | None = setting(None, "the same bound as a share of each VC's GPUs, rounded down (null: no "
                                              "bound; not with quota_gpus)", minimum=0, maximum=1)
    quota_from: str = setting("fixed", "where the spot quota comes from: fixed (quota_gpus or quota_share) | file | "
                                       "oracle | estimate (each VC's GPUs less a forecast of its high-priority demand, "
                                       "updated every quota_interval_s; docs/spot.md)", choices=SOURCES)
    quota_file: str | None = setting(None, "the forecast CSV vc,time,hp_gpus (quota_from=file; time in seconds on the "
                                           "trace clock)")
    quota_interval_s: int = setting(300, "seconds between updates of a forecast quota (GFS's 5 minutes)", minimum=1,
                                    maximum=LARGEST)
    quota_horizon_s: int = setting(3600, "a forecast quota bounds spot work by the peak demand forecast over the next "
                                         "quota_horizon_s (GFS's guarantee hour)", minimum=1, maximum=DAY_S)
    quota_scale: float = setting(1.0, "a forecast quota is this share of the GPUs left (GFS's safety factor eta, "
                                      "fixed here)", minimum=0, maximum=1)
    evict: str = setting("blocked", "when a high-priority job evicts: blocked (only when the placer finds it no GPUs) "
                                    "| always (every placement goes through the victim chooser, as GFS's simulator "
                                    "places HP jobs; with victims=gfs)", choices=EVICT)
    requeue: str = setting("in_place", "where an evicted spot job waits again: in_place (its place by submit time) | "
                                       "back (behind every job waiting, as GFS's FIFO re-enters it; policy=fifo only)",
                           choices=REQUEUE)

    def __post_init__(self):
        if self.evict == "always" and self.victims != "gfs":
            raise ConfigError("spot.evict", "always places every high-priority job as GFS's simulator does: it needs "
                              "spot.victims=gfs", self.evict)
        forecast = self.quota_from != "fixed"
        if forecast and (self.quota_gpus is not None or self.quota_share is not None):
            key = "spot.quota_gpus" if self.quota_gpus is not None else "spot.quota_share"
            raise ConfigError(key, f"a fixed quota does not go with spot.quota_from={self.quota_from}",
                              self.quota_gpus if self.quota_gpus is not None else self.quota_share)
        if (self.quota_from == "file") != (self.quota_file is not None):
            raise ConfigError("spot.quota_file", "a forecast file goes with spot.quota_from=file, and that needs one",
                              self.quota_file)
        default = SpotSettings.__dataclass_fields__
        for name in ("quota_interval_s", "quota_horizon_s", "quota_scale"):
            if not forecast and getattr(self, name) != default[name].default:
                raise ConfigError(f"spot.{name}", "applies to a forecast quota only (spot.quota_from=file, oracle or "
                                  "estimate)", getattr(self, name))


#: The traits class_traits gives (the keys Spot's declaration may name besides the run's settings).
TRAITS = ("priority_class", "spot_without_classes", "unranked", "resources", "requeue_back")


def class_traits(cfg: DictConfig, settings: SpotSettings, trace: Trace, *, resources: bool) -> dict:
    """What priority classes are checked against in the one loop of refusals (raysim.run.config.
    refuse_together; raysim.sim.spot.Spot's declaration): the trace's traits and the policy's, each
    key -> (the key a refusal names, its value; None: it does not hold). With `resources` (the run
    counts GPU shares, CPU and memory) jobs asking CPU or memory are refused, GPU shares are not."""
    column = COLUMN in trace.table.column_names
    given = {} if column else {k: v for k, v in (plain(cfg, "spot") or {}).items() if getattr(SpotSettings(), k, v) != v}
    key = next(iter(given), None)
    name = value(cfg, "policy.name")
    return {"priority_class": ("trace.path", trace.source if column else None),
            "spot_without_classes": (f"spot.{key}", given[key]) if key else ("spot", None),
            "unranked": ("policy.name", None if policy_class(name).ranks_classes else name),
            "resources": ("trace.path", trace.source if resources and _asks_cpu_or_memory(trace) else None),
            "requeue_back": ("spot.requeue", "back" if settings.requeue == "back"
                             and not policy_class(name).queues_in_entry_order else None)}


def _asks_cpu_or_memory(trace: Trace) -> bool:
    """Whether some job of the trace asks for CPU or memory (which evicting spot jobs does not free)."""
    table = trace.table
    return any(name in table.column_names and (table.column(name).cast(pa.int64()).fill_null(0).to_numpy() > 0).any()
               for name in ("cpu_milli", "memory_mib"))


def spot_rules(settings: SpotSettings, trace: Trace, layout: dict) -> tuple[SpotRules | None, np.ndarray | None]:
    """The run's eviction rules and, per trace job, 1 for a spot job (0: high priority); (None, None)
    for a trace without the priority_class column (what cannot apply was refused: class_traits).
    `layout`: the run's VCs -> node pools, which the spot quota bounds."""
    if COLUMN not in trace.table.column_names:
        return None, None
    classes = trace.table.column(COLUMN).cast(pa.string()).to_numpy(zero_copy_only=False)
    spot = (classes == PRIORITY_CLASSES[1]).astype(np.int64)
    quota = spot_quota(settings, trace, layout, spot)
    return SpotRules(settings.victims, settings.guarantee_s, settings.overhead_s, settings.evict, quota,
                     settings.requeue), spot


def spot_quota(settings: SpotSettings, trace: Trace, layout: dict, spot: np.ndarray) -> tuple[tuple[str, object], ...]:
    """(VC, its quota) for each VC of `layout` (none without a quota): the most GPUs its spot jobs may
    hold at once, fixed (`spot.quota_gpus` or `spot.quota_share`: a number) or from a forecast
    (`spot.quota_from`: its changes, see forecast_quota). One ConfigError line for both fixed ones set,
    a quota above the cluster's GPUs, or one below a spot job of its VC (that job would never start)."""
    gpus, share = settings.quota_gpus, settings.quota_share
    if settings.quota_from != "fixed":
        return forecast_quota(settings, trace, layout, spot)
    if gpus is None and share is None:
        return ()
    if gpus is not None and share is not None:
        raise ConfigError("spot.quota_share", "set spot.quota_gpus or spot.quota_share, not both", share)
    sizes = _sizes(layout)
    key, given = ("spot.quota_gpus", gpus) if gpus is not None else ("spot.quota_share", share)
    if gpus is not None and gpus > sum(sizes.values()):
        raise ConfigError(key, f"above the cluster's {sum(sizes.values())} GPUs", gpus)
    quota = {vc: gpus if gpus is not None else math.floor(share * size) for vc, size in sizes.items()}
    _refuse_below_spot_jobs(quota, trace, layout, spot, key, given)
    return tuple(quota.items())


def forecast_quota(settings: SpotSettings, trace: Trace, layout: dict,
                   spot: np.ndarray) -> tuple[tuple[str, tuple], ...]:
    """(VC, its quota's changes ((time s, GPUs), ...)) for each VC of `layout`, from the forecast
    `spot.quota_from` names (raysim.run.spot_forecast). One line for a quota that never again admits
    a VC's largest spot job once its changes are over (that job might never start)."""
    table = trace.table
    submit = table.column("submit_time").to_numpy().astype(np.int64)
    first = int(submit.min()) if len(submit) else 0
    if settings.quota_from == "file":
        demand = read_forecast_file(settings.quota_file, list(layout))
    else:
        vcs = table.column("vc").cast(pa.string()).to_numpy(zero_copy_only=False)
        duration = table.column("duration").to_numpy().astype(np.int64)
        asks = table.column("gpu_num").to_numpy().astype(np.int64)
        hp = spot == 0
        demand = {vc: demand_steps(*(a[hp & (vcs == vc)] if len(layout) > 1 else a[hp]
                                     for a in (submit, duration, asks))) for vc in layout}
    out = {}
    for vc, size in _sizes(layout).items():
        grid, peaks = forecast_peaks(settings.quota_from, *demand[vc], settings.quota_horizon_s,
                                     settings.quota_interval_s, first)
        out[vc] = quota_steps(size, grid, peaks, settings.quota_scale)
    key = "spot.quota_file" if settings.quota_from == "file" else "spot.quota_scale"
    given = settings.quota_file if settings.quota_from == "file" else settings.quota_scale
    _refuse_below_spot_jobs({vc: steps[-1][1] for vc, steps in out.items()}, trace, layout, spot, key, given,
                            " once its forecast is over")
    return tuple(out.items())


def _sizes(layout: dict) -> dict[str, int]:
    """VC -> the GPUs of its nodes as laid out."""
    return {vc: sum(p.gpus_per_node * p.nodes for p in pools) for vc, pools in layout.items()}


def _refuse_below_spot_jobs(quota: dict, trace: Trace, layout: dict, spot: np.ndarray, key: str, given,
                            when: str = "") -> None:
    """One ConfigError line (naming `key`) for a VC whose quota is below its largest spot job."""
    table = trace.table
    vcs = table.column("vc").cast(pa.string()).to_numpy(zero_copy_only=False)[spot == 1]
    asks = table.column("gpu_num").to_numpy()[spot == 1]
    for vc, limit in quota.items():
        mine = asks[vcs == vc] if len(layout) > 1 else asks
        if len(mine) and mine.max() > limit:
            raise ConfigError(key, f"VC {vc}'s spot quota is {limit} GPUs{when}, below its largest spot job's "
                                   f"{int(mine.max())}: that job would never start", given)
