"""Lucid's non-intrusive profiler: a small pool of nodes that runs each new job briefly first.

Jobs of at most `nodes x factor` GPUs queue for the pool least-GPU-first (blocking, consolidated
placement) and run for at most `time_limit` seconds; a job no longer than that finishes there.
Periodically the pool borrows a node from the lending VC when its queue is long, and gives it back
when the queue is short, the node is idle and the forecast of submitted GPUs over the next bins is
low (constants: conf `policy.profiler.scaling`). The pool is simulated by the same event engine as a VC.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.placement.consolidate import Consolidate
from raysim.policy.base import NEVER, BlockingQueuePolicy
from raysim.sim import VCSimulator
from raysim.profiler.stage import PROFILE_RECORD_SCHEMA, route
from raysim.sim.jobs import INPUT_COLUMNS


class ForecastMean:
    """Mean forecast over the next `bins` forecast bins strictly after t (the reference's rule:
    fewer bins -> mean of those left; none left -> `empty`)."""

    def __init__(self, times, values, bins: int = 5, empty: float = -1.0):
        self.times = np.asarray(times, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.float64)
        self.bins, self.empty = bins, empty

    def at(self, t: int) -> float:
        i = int(np.searchsorted(self.times, t, side="right"))
        rest = self.values[i:]
        if len(rest) == 0:
            return self.empty
        return float(rest[: self.bins].mean()) if len(rest) > self.bins else float(rest.mean())


class LeastGPUFirst(BlockingQueuePolicy):
    """The pool's queue, least GPUs first, plus its time-aware node scaling (through the same view
    actions as any policy: borrow_node and lend_node). `scaling` holds the profiler's constants
    (conf: policy.profiler.scaling): at multiples of `borrow_period_s` the pool borrows a node when more
    than `borrow_above_jobs` wait; at multiples of `return_period_s` it returns it when fewer than
    `return_below_jobs` wait, the node is idle and the forecast is at most the pool's GPU limit x
    `return_forecast_factor`. None: no scaling."""

    name = "lgf"

    def __init__(self, params, *, base_nodes: int, gpu_limit: int, forecast: ForecastMean | None,
                 scaling: dict | None):
        super().__init__(params)
        self.base_nodes, self.gpu_limit = base_nodes, gpu_limit
        self.forecast, self.scaling = forecast, scaling
        if scaling:
            self.up_jobs, self.up_s = int(scaling["borrow_above_jobs"]), int(scaling["borrow_period_s"])
            self.down_jobs, self.down_s = int(scaling["return_below_jobs"]), int(scaling["return_period_s"])
            self.down_factor = scaling["return_forecast_factor"]
        self.loans: list[tuple[int, int]] = []  # (time, +1 borrowed / -1 returned)
        self._wake = NEVER

    def key(self, view, j):
        return (view.jobs.gpu[j],)

    def schedule(self, view, now):
        super().schedule(view, now)
        self._wake = NEVER
        if not self.scaling:
            return
        waiting = len(view.pending)
        if now % self.up_s == 0 and waiting > self.up_jobs and view.num_nodes == self.base_nodes:
            view.borrow_node()
            self.loans.append((now, +1))
            self._wake = now + 1  # the new node takes jobs from the next second on
        if (now % self.down_s == 0 and waiting < self.down_jobs and view.num_nodes == self.base_nodes + 1
                and view.borrowed_idle()):
            if self.forecast is None or self.forecast.at(now) <= self.gpu_limit * self.down_factor:
                view.lend_node()
                self.loans.append((now, -1))

    def next_wakeup(self, view, now):
        if not self.scaling:
            return NEVER
        waiting, t = len(view.pending), self._wake
        if waiting > self.up_jobs and view.num_nodes == self.base_nodes:
            t = min(t, (now // self.up_s + 1) * self.up_s)
        if waiting < self.down_jobs and view.num_nodes == self.base_nodes + 1 and view.borrowed_idle():
            t = min(t, (now // self.down_s + 1) * self.down_s)
        return t


class LucidProfiler:
    """The profiling stage: routes each window's jobs through the pool to the VC groups.

    With params.profiled_jobs_keep_submit_time (Lucid) a job that outlives profiling still reaches
    its VC at its submit time with its full duration; the profiling wait is only added to its
    queue. Otherwise it reaches its VC when profiling ends, with the work done there subtracted,
    and the wait counts in queue and JCT.
    """

    def __init__(self, settings: dict, group_of_vc: dict[str, int], n_groups: int, t0: int = 0):
        params = settings["params"]
        self.compat = params.profiled_jobs_keep_submit_time
        self.limit = int(settings["time_limit"])
        pool = settings["pool"]
        self.gpu_limit = pool.nodes * int(settings["factor"])
        self.lender = settings.get("lender")
        self.group_of_vc, self.n_groups = dict(group_of_vc), n_groups
        fc = settings.get("forecast")
        scaling = settings["scaling"]
        forecast = ForecastMean(fc["times"], fc["pred_gpu_num"], bins=int(scaling["forecast_bins"])) if fc else None
        self.policy = LeastGPUFirst(params, base_nodes=pool.nodes, gpu_limit=self.gpu_limit,
                                    forecast=forecast, scaling=scaling if self.lender else None)
        self.sim = VCSimulator("profiler", (pool,), self.policy, Consolidate(params=params), params, t0=t0)
        self._profiling: dict[int, dict] = {}  # seq -> the job's full input row, while it is profiled
        self._loans_sent = 0

    def process(self, jobs: pa.Table, t_start: int, t_end: int):
        """Per-group {"jobs", "loans"} for [t_start, t_end) and the stage's status (records, next event)."""
        to_vc = []
        if jobs.num_rows:
            gpu, duration = jobs.column("gpu_num").to_numpy(), jobs.column("duration").to_numpy()
            eligible = gpu <= self.gpu_limit
            finishes = eligible & (duration <= self.limit)
            if eligible.any():
                rows = jobs.filter(pa.array(eligible))
                for row in rows.to_pylist():
                    self._profiling[row["seq"]] = row
                prof = {k: rows.column(k).to_numpy() for k in INPUT_COLUMNS if k in rows.column_names}
                prof["duration"] = np.minimum(prof["duration"], self.limit)
                self.sim.add_jobs(prof)
            to_vc.append(jobs.filter(pa.array(~finishes if self.compat else ~eligible)))
        self.sim.run(until=t_end)
        records, leaving = self._drain()
        self.sim.forget_if_worth()  # their records are out: memory follows the jobs being profiled
        if leaving:
            to_vc.append(pa.Table.from_pylist(leaving, schema=jobs.schema))
        outputs = route(_sorted(pa.concat_tables(to_vc)) if to_vc else None, self.group_of_vc, self.n_groups)
        for t, delta in self.policy.loans[self._loans_sent:]:
            outputs[self.group_of_vc[self.lender]]["loans"].append((self.lender, t, -delta))
        self._loans_sent = len(self.policy.loans)
        nxt = self.sim.next_event_time()
        return outputs, {"records": records, "next_event": None if nxt == np.inf else int(nxt)}

    def _drain(self):
        """Records of jobs whose profiling ended, and (clean) the rows that now enter their VC."""
        done, self.sim.finished_log = self.sim.finished_log, []
        jobs, leaving, rec = self.sim.jobs, [], {f.name: [] for f in PROFILE_RECORD_SCHEMA}
        for j in done:
            row = self._profiling.pop(jobs.seq[j])
            finished = row["duration"] <= self.limit
            for name, value in (("seq", jobs.seq[j]), ("prof_start", jobs.start[j]), ("prof_end", jobs.end[j]),
                                ("prof_queue", jobs.queue[j]), ("finished", finished)):
                rec[name].append(value)
            if not finished and not self.compat:
                leaving.append({**row, "submit_time": jobs.end[j], "duration": row["duration"] - self.limit})
        return pa.table(rec, schema=PROFILE_RECORD_SCHEMA), leaving

def _sorted(batch: pa.Table) -> pa.Table:
    """Arrivals in (time, trace row) order."""
    order = np.lexsort((batch.column("seq").to_numpy(), batch.column("submit_time").to_numpy()))
    return batch.take(pa.array(order))
