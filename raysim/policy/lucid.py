"""Lucid (ASPLOS'23): priority by estimated GPU time, forecast-driven GPU packing with measured pair speeds.

Priority = estimated duration x GPUs (fixed, lower first). Every `switch_period_s` a packing switch
is read from the throughput forecast: off -> blocking exclusive placement in priority order; on ->
no blocking, and each job that fits on one node first looks for a partner: the first running job
(in start order) that runs alone, has the same GPU count, fits in GPU memory (`memory_mb`) with
it, whose share scores sum to <= `max_share_score` and whose priority is at least the job's /
`partner_priority_ratio`. Partners progress at their measured pair speeds. No preemption or
migration.

Ablations (docs/lucid_ablations.md): `packing=False` never packs (the switch stays off: blocking
exclusive placement in priority order throughout); policy.profiler.nodes=0 runs no profiling stage
(raysim.policy.lucid_inputs).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from raysim.models.forecast import PackingSwitch, packing_switch
from raysim.policy.base import NEVER, Policy
from raysim.policy.lucid_inputs import lucid_inputs
from raysim.settings import section, setting


@dataclass(frozen=True)
class ScalingSettings:
    """When Lucid's profiling pool borrows and returns the lender's node (Lucid's rules)."""

    borrow_above_jobs: int = setting(10, "borrow when more than this many jobs wait ...", minimum=0)
    borrow_period_s: int = setting(10, "... checked at multiples of this", minimum=1)
    return_below_jobs: int = setting(5, "return it when fewer than this many wait, it is idle ...", minimum=0)
    return_period_s: int = setting(100, "... checked at multiples of this ...", minimum=1)
    return_forecast_factor: int = setting(5, "... and the forecast GPUs <= the pool's GPU limit x this", minimum=0)
    forecast_bins: int = setting(5, "forecast bins averaged (the next ones after now)", minimum=1)


@dataclass(frozen=True)
class ProfilerSettings:
    """Lucid's profiling pool: nodes where new jobs run first, for a short while, to be measured."""

    nodes: int = setting(2, "nodes in the profiling pool; 0: no profiling stage (the ablation \"profiler off\": "
                         "jobs go straight to their VCs, which keep their nodes)", minimum=0)
    time_limit: int = setting(200, "seconds a job is profiled at most", minimum=0)
    factor: int = setting(4, "jobs of more than nodes x factor GPUs skip profiling (at most the pool's GPUs per "
                          "node)", minimum=0)
    take_from: list[str] = setting([], "VCs that each give one node to the pool")
    lender: str | None = setting(None, "VC that lends the pool a temporary node when its queue is long")
    scaling: ScalingSettings = section(ScalingSettings, "when the pool borrows and returns that node")


@dataclass(frozen=True)
class ForecastSettings:
    """Lucid's forecast of submitted GPU jobs, which turns packing on and off."""

    source: str = setting("none", "none | file (time, pred_gpu_job, pred_gpu_num per 10-minute bin)",
                          choices=("none", "file"))
    path: str | None = setting(None, "the forecast CSV (policy.forecast.source=file)")


@dataclass(frozen=True)
class ProfilesSettings:
    """Measured job profiles: the speeds of jobs sharing GPUs, and the jobs' share scores."""

    colocation: str | None = setting(None, "measured pair speeds (Lucid's colocate_info.csv); null: no slowdown")
    single: str | None = setting(None, "single-job profiles with share-score labels (single_data.csv)")
    interference: str = setting("measured", "measured | learned | analytic: how pairs missing from the table "
                                "are priced", choices=("measured", "learned", "analytic"))


@dataclass(frozen=True)
class LucidSettings:
    """Lucid's packing (who may share GPUs with whom, and when packing is on) and its inputs."""

    memory_mb: int = setting(24576, "GPU memory two sharing jobs must fit in (RTX 3090, where pairs were "
                             "measured), MiB", above=0)
    switch_period_s: int = setting(100, "seconds between readings of the packing switch", minimum=1)
    max_share_score: int = setting(2, "two jobs may share only if their share scores sum to at most this", minimum=0)
    partner_priority_ratio: float = setting(2.0, "... and the partner's priority is at least the job's / this",
                                            above=0)
    packing: bool = setting(True, "false: the ablation \"packing off\": no job ever shares GPUs "
                            "(docs/lucid_ablations.md)")
    packing_threshold: float = setting(2.0, "packing is on while the mean forecast of submitted GPU jobs "
                                       "exceeds this", minimum=0)
    forecast_bins: int = setting(5, "... over the next this many forecast bins", minimum=1)
    profiler: ProfilerSettings = section(ProfilerSettings, "the profiling pool")
    forecast: ForecastSettings = section(ForecastSettings, "the packing forecast")
    profiles: ProfilesSettings = section(ProfilesSettings, "pair speeds and share scores")


class Lucid(Policy):
    name = "lucid"
    Settings = LucidSettings
    needs_estimate = True
    countdown = True
    refuses = {"resources": "{policy} packs pairs of jobs on GPUs and lends nodes to its profiler, which VCs cannot "
                            "do yet where VCs count GPU shares, CPU and memory (raysim.run.requests)"}

    def __init__(self, params, *, memory_mb: float, switch_period_s: int, max_share_score: int,
                 partner_priority_ratio: float, packing_threshold: float, forecast_bins: int,
                 packing: bool = True, pairs: dict | None = None, forecast: dict | None = None,
                 switch: PackingSwitch | None = None):
        """`pairs`: pair speeds by workload ids (see pair_speeds); the packing switch comes from
        `forecast` (raysim.models.forecast.load_forecast) or is given as `switch`; `packing=False`:
        a switch that is always off (no job ever shares GPUs)."""
        super().__init__(params)
        self.pairs = pairs or {}
        self.period_s = int(switch_period_s)
        if not packing:
            switch = PackingSwitch(initial=False)
        self.switch = switch or packing_switch(forecast, threshold=packing_threshold, bins=int(forecast_bins),
                                               period_s=self.period_s)
        self.memory_mb = memory_mb
        self.max_share_score = max_share_score
        self.partner_priority_ratio = partner_priority_ratio
        self.queue: list[tuple[float, int]] = []  # (priority, j), sorted
        self.partner: dict[int, int] = {}  # j -> the job sharing its GPUs
        self.solo: dict[int, list[tuple[int, int]]] = {}  # gpu_num -> [(run order, j)] of jobs alone on their GPUs

    @classmethod
    def unread(cls, values):
        """Without packing, the packing switch; without a profiling pool, the pool's settings."""
        out = {}
        if values.get("packing", True) is False:
            for key in ("packing_threshold", "forecast_bins", "switch_period_s"):
                out[f"policy.{key}"] = "policy.packing=false: Lucid never packs, so its packing switch is not read"
        profiler = values.get("profiler")
        if isinstance(profiler, dict) and str(profiler.get("nodes")) == "0":
            for key in ("time_limit", "factor", "take_from", "lender", "scaling"):
                out[f"policy.profiler.{key}"] = ("policy.profiler.nodes=0: no profiling stage, jobs go straight "
                                                 "to their VCs")
        return out

    @classmethod
    def outside_vcs(cls, values):
        """The profiling stage, unless policy.profiler.nodes=0."""
        if int((values.get("profiler") or {}).get("nodes", 0)) > 0:
            return "Lucid's profiler", "policy.profiler.nodes=0"
        return None

    @classmethod
    def prepare(cls, settings, run, trace, spec):
        """The profiler pool, pair speeds, forecast and share scores (raysim.policy.lucid_inputs)."""
        return lucid_inputs(settings, trace, spec)

    # ------------------------------------------------------------------ bookkeeping
    def on_arrival(self, view, j):
        bisect.insort(self.queue, (view.jobs.estimate[j] * view.jobs.gpu[j], j))

    def _solo_add(self, view, j):
        bisect.insort(self.solo.setdefault(view.jobs.gpu[j], []), (view.jobs.run_order[j], j))

    def _solo_remove(self, view, j):
        lst = self.solo.get(view.jobs.gpu[j], [])
        i = bisect.bisect_left(lst, (view.jobs.run_order[j], j))
        if i < len(lst) and lst[i][1] == j:
            del lst[i]

    def on_ending(self, view, j, now):
        self._solo_remove(view, j)
        other = self.partner.pop(j, None)
        if other is None:
            return
        self.partner.pop(other, None)
        if view.jobs.end_due[other] == now:
            return  # both end this second
        host_ends = view.jobs.run_order[j] < view.jobs.run_order[other]
        if self.params.partner_keeps_pair_speed and host_ends:
            return  # Lucid: the guest keeps its pair speed and is never paired again
        view.set_rate_factor(other, "share", 1.0, now)
        self._solo_add(view, other)

    def on_requeue(self, view, j, now):
        """j was stopped by its VC and waits again; its partner shares its GPUs, so it was stopped too."""
        self._solo_remove(view, j)
        other = self.partner.pop(j, None)
        if other is not None:
            self.partner.pop(other, None)
        self.on_arrival(view, j)

    def renumber(self, new):
        self.queue = [(prio, new[j]) for prio, j in self.queue]
        self.partner = {new[j]: new[k] for j, k in self.partner.items()}
        self.solo = {g: [(order, new[j]) for order, j in lst] for g, lst in self.solo.items()}

    # ------------------------------------------------------------------ decisions
    def schedule(self, view, now):
        packing = self.switch.at(now)
        jobs = view.jobs
        started = set()
        node_gpus = view.max_node_gpus
        for prio, j in self.queue:
            g = jobs.gpu[j]
            if packing and g <= node_gpus:
                host = self._find_partner(view, j, prio)
                if host is not None:
                    self._share(view, j, host, now)
                    started.add(j)
                    continue
            if view.try_start(j, now):
                started.add(j)
                self._solo_add(view, j)
            elif not packing:
                break  # exclusive mode blocks at the first job that does not fit
        if started:
            self.queue = [e for e in self.queue if e[1] not in started]

    def next_wakeup(self, view, now):
        return self.switch.next_change(now) if view.pending else NEVER

    def _find_partner(self, view, j, prio):
        jobs = view.jobs
        limit = self.memory_mb - jobs.gmem[j]
        score = self.max_share_score - jobs.share_score[j]
        ratio = self.partner_priority_ratio
        gmem, scores, est, gpu = jobs.gmem, jobs.share_score, jobs.estimate, jobs.gpu
        for _, r in self.solo.get(gpu[j], ()):
            if gmem[r] < limit and scores[r] <= score and prio <= ratio * est[r] * gpu[r] and view.joinable(r):
                return r
        return None

    def _share(self, view, j, host, now):
        jobs = view.jobs
        s1, s2, util, gmem = pair_speeds(self.pairs, jobs, j, host)
        self._solo_remove(view, host)
        self.partner[j], self.partner[host] = host, j
        view.share(j, host, now, s1, s2, util, gmem)


def pair_speeds(pairs: dict, jobs, a: int, b: int):
    """(speed of a, speed of b, joint GPU util %, joint memory MB) when a and b share GPUs.

    Looked up by workload ids in either order; unknown pairs fall back to no slowdown with summed
    utilisation and memory (as the reference does for models it did not measure).
    """
    wa, wb = jobs.workload[a], jobs.workload[b]
    hit = pairs.get((wa, wb))
    if hit is not None:
        return hit
    hit = pairs.get((wb, wa))
    if hit is not None:
        return hit[1], hit[0], hit[2], hit[3]
    util = min(1.0, (jobs.util_milli[a] + jobs.util_milli[b]) / 1000)
    return 1.0, 1.0, util, jobs.gmem[a] + jobs.gmem[b]
