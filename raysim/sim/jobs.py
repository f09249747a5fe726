"""Column-oriented job table of one VC: trace columns in, per-job results out.

Columns are plain Python lists (fast scalar access in the event loop) filled from Arrow/numpy
batches; results come back out as numpy arrays. There is no object per job, and finished jobs
whose results were handed out are dropped (`retain`), so a table holds the live jobs, not the trace.
"""

from __future__ import annotations

import numpy as np

UNSET = -1
#: End time of a job that left unfinished (VCSimulator.drop); reported as UNSET.
DROPPED = -2

#: Input columns a batch must provide (name -> numpy dtype).
INPUT_COLUMNS = {
    "seq": np.int64,  # row order in the trace: the final tie-breaker everywhere
    "submit_time": np.int64,
    "duration": np.int64,
    "gpu_num": np.int64,
    "gpu_util": np.float64,
    "gmem": np.float64,
    "estimate": np.float64,  # estimated duration (s) for QSSF/Lucid; NaN when none
    "workload": np.int64,  # workload-profile id (model, dataset, batch size, AMP); -1 unknown
    "share_score": np.int64,  # Lucid's share score 0-2 (how much the job suffers from sharing)
    "constraint": np.int64,  # GPU types the job may use: an id into the run's TypeCatalog; -1 any
    "speed_profile": np.int64,  # its speed per GPU type: an id into the run's TypeCatalog; -1 none
    "gpu_milli": np.int64,  # milli of each GPU: 1000 whole GPUs, less a share of one GPU (gpu_num 1)
    "cpu_milli": np.int64,  # CPU (milli-cores) on its node; 0 none asked
    "mem_mib": np.int64,  # memory (MiB) on its node; 0 none asked
    "shape": np.int64,  # the job's request shape: an id into the run's shapes (scored placers); -1 none
    "checkpoint_kind": np.int64,  # its application's checkpoint settings: an id into the run's kinds; -1 the run's
    "spot": np.int64,  # 1: a spot job (high-priority jobs may evict it, raysim.sim.spot); 0: high priority, or no classes
    "workers": np.int64,  # equal workers, each on one node (raysim.placement.workers); 1: one piece
}
#: What a job asks besides whole GPUs (raysim.run.requests), with the value of a job that asks nothing
#: more: job batches carry these columns only in runs whose VCs count them.
REQUEST_INPUTS = {"gpu_milli": 1000, "cpu_milli": 0, "mem_mib": 0, "shape": -1}
#: Job inputs that batches carry only in runs that set them (checkpoint settings per application,
#: raysim.run.config.checkpoint_kinds; priority classes, raysim.run.spot; workers, raysim.run.workers), with the
#: value of a job that has none.
SPARSE_INPUTS = {**REQUEST_INPUTS, "checkpoint_kind": -1, "spot": 0, "workers": 1}
#: Input columns a batch may leave out, with their default value.
OPTIONAL_INPUTS = {"workload": -1, "share_score": 0, "constraint": -1, "speed_profile": -1, **SPARSE_INPUTS}

#: Causes of a job's stops in its ledger (JobTable.stops, JobTable.lost_by): the policy's preemption,
#: a quota reclaim, a failed run its trace replays (raysim.sim.attempts), a high-priority job's eviction
#: of a spot job (raysim.sim.spot), then the run's capacity causes (raysim.sim.capacity.CapacityPlan.causes:
#: node logs, failure categories), the k-th at CAPACITY + k.
PREEMPTION, RECLAIM, RETRY, EVICTION, CAPACITY = 0, 1, 2, 3, 4
NO_STOPS: dict = {}

RESULT_COLUMNS = ("start_time", "end_time", "queue", "preemptions", "first_node", "num_nodes", "shared", "first_gpu")


class Same:
    """A column holding one value for every job (indexable like a list, stores nothing per job)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __getitem__(self, j):
        return self.value


class JobTable:
    """Per-job inputs and simulation state of one VC, indexed 0..n-1 in arrival order."""

    def __init__(self):
        self.n = 0
        self.seq: list[int] = []
        self.submit: list[int] = []
        self.duration: list[int] = []
        self.gpu: list[int] = []
        self.util_milli: list[int] = []
        self.gmem: list[float] = []
        self.estimate: list[float] = []
        # results
        self.start: list[int] = []
        self.end: list[int] = []
        self.queue: list[int] = []
        self.first_node: list[int] = []
        self.num_nodes: list[int] = []
        self.first_gpu: list[int] = []  # lowest GPU id of its latest placement on first_node (-1: none)
        # runs with several GPU types: the run's type index of its latest placement, when that
        # placement began, and the time it held each type (None: not yet; {type index: time})
        self.gpu_type: list[int] = []
        self.placed_at: list[int] = []  # (set at every start: a spot job's guarantee counts from it)
        self.type_held: list = []
        # quota lending (raysim.quota.ledger): the lender whose nodes the latest run used (-1: the
        # job's own VC)
        self.ran_on: list[int] = []
        # the stop ledger: per job None, or {cause (PREEMPTION, RECLAIM, RETRY, CAPACITY + k): its
        # stops of that cause}; `count_stop` is the one place a stop is counted
        self.stops: list = []
        # checkpoint-restart (raysim.sim.checkpoint): the work of the checkpoint the current (or next)
        # run starts from, whether that run begins with a restore, and the work lost and the
        # restores and writes so far, in GPU x job seconds
        self.ck_kept: list = []
        self.ck_restart: list[bool] = []
        self.lost_gpu_s: list = []
        self.overhead_gpu_s: list = []
        # per job None, or {cause: work its stops of that cause lost x GPUs} (with checkpoints)
        self.lost_by: list = []
        # trace.failed=replay (raysim.sim.attempts): the remaining work at which the current run
        # fails (0: it is the job's last), and per job None or [the remaining work when the current
        # run began, [(fail_at, gap) of its later failures]] (its failures so far are stops of
        # cause RETRY); the same for every
        # job until one ran several times
        self.fail_at: list[int] | Same = Same(0)
        self.retry: list | Same = Same(None)
        # state used by preemptive policies
        self.workload: list[int] = []
        self.share_score: list[int] = []
        self.run_order: list[int] = []  # order of the latest start (the reference's run_list order)
        self.shared: list[bool] = []  # ever shared GPUs with another job
        self.constraint: list[int] = []  # TypeCatalog constraint id (-1: any GPU type)
        self.speed_profile: list[int] = []  # TypeCatalog speed profile id (-1: speed 1 on every type)
        # what a job asks besides whole GPUs (REQUEST_INPUTS): lists once a batch carries them, else
        # the same value for every job (whole-GPU runs keep no per-job copy)
        self.gpu_milli: list[int] | Same = Same(REQUEST_INPUTS["gpu_milli"])  # 1000: whole GPUs; less: a share
        self.cpu_milli: list[int] | Same = Same(REQUEST_INPUTS["cpu_milli"])
        self.mem_mib: list[int] | Same = Same(REQUEST_INPUTS["mem_mib"])
        self.shape: list[int] | Same = Same(REQUEST_INPUTS["shape"])  # request shape id (raysim.placement.scored)
        #: id of its checkpoint settings among the run's per-application kinds (-1: the run's own)
        self.checkpoint_kind: list[int] | Same = Same(SPARSE_INPUTS["checkpoint_kind"])
        #: 1: a spot job, which high-priority jobs may evict (raysim.sim.spot); 0: high priority (every
        #: job of a run without priority classes)
        self.spot: list[int] | Same = Same(SPARSE_INPUTS["spot"])
        #: its equal workers, each placed on one node (raysim.placement.workers); 1 for every job of a
        #: trace without a workers column
        self.workers: list[int] | Same = Same(SPARSE_INPUTS["workers"])
        #: a spot job's guarantee hours kept by its runs so far (raysim.sim.spot.Spot.released); the
        #: same for every job until one kept one
        self.hours_kept: list[int] | Same = Same(0)
        # progress per second while running = type_speed x share_speed x net_speed, each a named
        # factor set by its own mechanism (GPU type of the placement, a sharing partner, NIC contention)
        self.rate: list[float] = []
        self.type_speed: list[float] = []
        self.share_speed: list[float] = []
        self.net_speed: list[float] = []
        self.remain: list = []  # remaining work (s) while pending; at run_since while running
        #: the least work any stop has left the job (its current run's at first): a stop that
        #: leaves less is progress (raysim.sim.engine.VCSimulator.progress_at)
        self.least_remain: list = []
        self.end_due: list[int] = []  # completion time while running
        self.attained: list[int] = []  # GPU-seconds of service before the current run
        self.run_since: list[int] = []  # time of the current placement
        self.ckpt_time: list[int] = []  # time of the last preemption
        self.version: list[int] = []  # invalidates stale completion events

    def extend(self, cols: dict[str, np.ndarray]) -> None:
        """Append a batch of jobs (numpy columns of INPUT_COLUMNS, sorted by submit time then seq)."""
        k = len(cols["seq"])
        if k == 0:
            return
        self.seq += cols["seq"].tolist()
        self.submit += cols["submit_time"].tolist()
        duration = cols["duration"].tolist()
        self.duration += duration
        self.gpu += cols["gpu_num"].tolist()
        util, gmem = cols["gpu_util"], cols["gmem"]
        util = np.where(np.isnan(util), 0.0, util)
        self.util_milli += np.rint(util * 1000).astype(np.int64).tolist()
        self.gmem += np.where(np.isnan(gmem), 0.0, gmem).tolist()
        self.estimate += cols["estimate"].tolist()
        for name, default in OPTIONAL_INPUTS.items():
            col, have = cols.get(name), getattr(self, name)
            if isinstance(have, Same):
                if col is None:
                    continue
                have = [have.value] * self.n
                setattr(self, name, have)
            have.extend([default] * k if col is None else col.tolist())
        if not isinstance(self.fail_at, Same):
            self.fail_at += [0] * k
            self.retry += [None] * k
        if not isinstance(self.hours_kept, Same):
            self.hours_kept += [0] * k
        for name in ("rate", "type_speed", "share_speed", "net_speed"):
            getattr(self, name).extend([1.0] * k)
        self.run_order += [-1] * k
        self.shared += [False] * k
        self.type_held += [None] * k
        self.stops += [None] * k
        self.lost_by += [None] * k
        self.ck_restart += [False] * k
        for name in ("start", "end", "first_node", "first_gpu", "end_due", "ckpt_time", "run_since", "ran_on",
                     "gpu_type", "placed_at"):
            getattr(self, name).extend([UNSET] * k)
        for name in ("queue", "num_nodes", "attained", "version", "ck_kept", "lost_gpu_s", "overhead_gpu_s"):
            getattr(self, name).extend([0] * k)
        self.remain += duration
        self.least_remain += duration
        self.n += k

    def set_attempts(self, j: int, plan: list[tuple[int, int]]) -> None:
        """Job j ran several times in its trace: `plan` lists its failures (raysim.sim.attempts.Attempts.plan)."""
        if isinstance(self.fail_at, Same):
            self.fail_at, self.retry = [0] * self.n, [None] * self.n
        self.fail_at[j] = plan[0][0]
        self.retry[j] = [self.duration[j], plan]

    def retain(self, rows: list[int]) -> None:
        """Keep only the jobs `rows` (ascending), renumbered 0..len(rows)-1 in that order."""
        for name, col in vars(self).items():
            if isinstance(col, list):
                setattr(self, name, [col[j] for j in rows])
        self.n = len(rows)

    def keep_hours(self, j: int, hours: int) -> None:
        """Spot job j kept `hours` more guarantee hours (raysim.sim.spot)."""
        if isinstance(self.hours_kept, Same):
            self.hours_kept = [0] * self.n
        self.hours_kept[j] += hours

    def count_stop(self, j: int, cause: int, lost=0) -> None:
        """Job j stopped for `cause`, which cost it `lost` (work x GPUs; 0 without checkpoints)."""
        counts = self.stops[j]
        if counts is None:
            counts = self.stops[j] = {}
        counts[cause] = counts.get(cause, 0) + 1
        if lost:
            by = self.lost_by[j]
            if by is None:
                by = self.lost_by[j] = {}
            by[cause] = by.get(cause, 0) + lost

    def stop_counts(self, rows, cause: int) -> np.ndarray:
        """Per job of `rows`: its stops of `cause`."""
        stops = self.stops
        return np.array([(stops[j] or NO_STOPS).get(cause, 0) for j in rows], dtype=np.int64)

    def type_results(self, rows, types: int) -> dict[str, np.ndarray]:
        """Per job of `rows`: `gpu_type` (the run's type index of its latest placement, -1: never
        ran) and `held_<k>`, the clock time it held GPUs of type k, for each of the run's `types`."""
        rows = list(rows)
        out = {"gpu_type": np.array([self.gpu_type[j] for j in rows], dtype=np.int64)}
        held = [self.type_held[j] or {} for j in rows]
        for k in range(types):
            out[f"held_{k}"] = np.array([h.get(k, 0) for h in held], dtype=np.int64)
        return out

    def interruption_results(self, rows, causes: int) -> dict[str, np.ndarray]:
        """Per job of `rows`: `interruptions` (times a capacity event stopped it) and `intr_<k>`,
        those of capacity cause k, for each of the run's `causes` (raysim.sim.capacity.CapacityPlan.causes)."""
        rows = list(rows)
        out = {f"intr_{k}": self.stop_counts(rows, CAPACITY + k) for k in range(causes)}
        return {"interruptions": sum(out.values(), np.zeros(len(rows), dtype=np.int64)), **out}

    def checkpoint_results(self, rows, causes: int = 0) -> dict[str, np.ndarray]:
        """Per job of `rows`, under checkpoint-restart (raysim.sim.checkpoint): `lost_gpu_s` (work
        lost to stops x GPUs), `overhead_gpu_s` (restores and checkpoint writes x GPUs) and, for
        each of the run's capacity `causes`, `lost_<k>`: the work lost to stops of cause k x GPUs."""
        rows = list(rows)
        out = {name: np.array([float(getattr(self, name)[j]) for j in rows], dtype=np.float64)
               for name in ("lost_gpu_s", "overhead_gpu_s")}
        by = [self.lost_by[j] or NO_STOPS for j in rows]
        for k in range(causes):
            out[f"lost_{k}"] = np.array([float(b.get(CAPACITY + k, 0)) for b in by], dtype=np.float64)
        return out

    def attempt_results(self, rows) -> dict[str, np.ndarray]:
        """Per job of `rows`, under trace.failed=replay: `retries`, the runs of it that failed."""
        return {"retries": self.stop_counts(rows, RETRY)}

    def results(self, rows=None) -> dict[str, np.ndarray]:
        """Results of the given job indices (all by default) as numpy columns (-1 = not yet)."""
        rows = range(self.n) if rows is None else rows
        stops = self.stops
        pick = [(self.seq[j], self.start[j], self.end[j], self.queue[j], (stops[j] or NO_STOPS).get(PREEMPTION, 0),
                 self.first_node[j], self.num_nodes[j], self.shared[j], self.first_gpu[j]) for j in rows]
        cols = np.array(pick, dtype=np.int64).reshape(len(pick), 9).T
        cols[2][cols[2] == DROPPED] = UNSET
        return {name: cols[i] for i, name in enumerate(("seq",) + RESULT_COLUMNS)}
