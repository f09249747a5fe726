"""Gavel's round mechanism, as its simulator runs it (``scheduler.py`` ``simulate()``).

One loop iteration is one round:

1. Time jumps to the latest finish of the micro-tasks launched last round (a round lasts at most
   ``round_s``; less when every job it ran finished early), or to the next arrival when none ran.
2. The micro-tasks complete: their steps are credited, jobs whose steps are all done finish at
   their micro-task's finish time (their GPUs idle until the round ends: no backfill), and the time
   each ran is added to its per-type time counters (measured from the previous round's end).
3. Jobs that arrived by now join (their arrival time is kept as their start).
4. If a job arrived or finished and ``reset_min_s`` passed since the last recompute (or the last
   recompute was at time 0), deficits are updated, time counters reset to ``round_s / 2`` and the
   policy computes a new allocation.
5. Priorities = allocation / share of the type's time received since the recompute; per GPU type,
   in the type order (reshuffled every round for heterogeneity-agnostic policies), jobs sorted by
   (priority, deficit, allocation) descending take GPUs greedily: ``scale_factor`` GPUs of one
   type, each job (or either job of a pair) at most once per round. Jobs the allocation does not
   contain take GPUs in that pass but get none (Gavel's behaviour: those GPUs idle this round).
6. Each chosen job runs ``min(int(throughput * round_s), remaining)`` steps, finishing at
   ``now + steps / throughput``.

A micro-task whose steps cannot be split over its GPUs (fewer steps than GPUs) fails, as in Gavel;
a job failing ``MAX_FAILURES`` times in a row is dropped (reported, never silent).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import numpy as np

from raysim.rounds.cluster import RoundCluster, RoundJobs
from raysim.rounds.policies.base import AllocationInput, Combo, RoundPolicy

#: Consecutive failed micro-tasks after which a job is dropped (Gavel's MAX_FAILED_ATTEMPTS).
MAX_FAILURES = 5
#: Priority of a job with allocation > 0 that has not run on the type since the recompute.
UNSERVED_PRIORITY = 1e9


@dataclass
class MicroTask:
    finish: float
    combo: Combo
    gpu_type: int
    steps: tuple


@dataclass
class RoundResult:
    """Per job (positions as in the input): completion time (NaN: dropped), first start, seconds on
    each GPU type; cluster totals."""

    completion: np.ndarray
    first_start: np.ndarray       # when the job first ran (NaN: never)
    dropped: list[int]
    makespan: float
    busy_gpu_seconds: float
    total_gpus: int
    rounds: int
    allocations: int
    type_seconds: np.ndarray      # (jobs x types) seconds each job ran on each type

    @property
    def utilization(self) -> float:
        """Busy GPU time over all GPUs' time until the last completion (Gavel's definition)."""
        return self.busy_gpu_seconds / (self.total_gpus * self.makespan) if self.makespan > 0 else 0.0


class ComboTable:
    """Per-combination state, rows in Gavel's priority order (a job, then its new pairs, by arrival):
    time run on each type since the last recompute, deficits, allocation, runnable types, size."""

    def __init__(self, n_types: int):
        self.combos: list[Combo] = []
        self.row: dict[Combo, int] = {}
        self.time_so_far = np.zeros((0, n_types))      # Gavel's _job_time_so_far
        self.deficit = np.zeros((0, n_types))
        self.x = np.zeros((0, n_types))                # allocation (0 where not allocated)
        self.allocated = np.zeros(0, dtype=bool)       # in the current allocation at all
        self.runnable = np.zeros((0, n_types), dtype=bool)
        self.scale = np.zeros(0, dtype=np.int64)

    def add(self, combo: Combo, time_so_far: np.ndarray, runnable: np.ndarray, scale: int) -> None:
        self.row[combo] = len(self.combos)
        self.combos.append(combo)
        self.time_so_far = np.vstack([self.time_so_far, time_so_far])
        self.deficit = np.vstack([self.deficit, np.zeros_like(time_so_far)])
        self.x = np.vstack([self.x, np.zeros_like(time_so_far)])
        self.allocated = np.append(self.allocated, False)
        self.runnable = np.vstack([self.runnable, runnable])
        self.scale = np.append(self.scale, scale)

    def remove_job(self, j: int) -> None:
        keep = np.array([j not in c for c in self.combos], dtype=bool)
        self.combos = [c for c, k in zip(self.combos, keep) if k]
        self.row = {c: i for i, c in enumerate(self.combos)}
        for name in ("time_so_far", "deficit", "x", "allocated", "runnable", "scale"):
            setattr(self, name, getattr(self, name)[keep])

    def set_allocation(self, allocation: dict) -> None:
        self.x[:] = 0.0
        self.allocated[:] = False
        for combo, i in self.row.items():
            if combo in allocation:
                self.x[i] = allocation[combo]
                self.allocated[i] = True


class RoundEngine:
    """Simulate `jobs` on `cluster` under `policy` with Gavel's round mechanism (see module docs)."""

    def __init__(self, jobs: RoundJobs, cluster: RoundCluster, throughputs: np.ndarray, policy: RoundPolicy, *,
                 round_s: float = 360.0, reset_min_s: float = 1920.0, type_order=None, reference_type: str | None = None,
                 seed: int = 0, pair_throughputs=None):
        if policy.packing and pair_throughputs is None:
            raise ValueError(f"policy {policy.name} packs jobs: it needs pair throughputs")
        self.jobs, self.cluster, self.policy = jobs, cluster, policy
        self.thr = throughputs
        self.round_s, self.reset_min_s = float(round_s), float(reset_min_s)
        self.order = cluster.index(type_order) if type_order else list(range(len(cluster.types)))
        self.reference = cluster.index([reference_type])[0] if reference_type else self.order[0]
        self.shuffler = random.Random(seed + 5)
        self.pair_thr = pair_throughputs
        n = len(cluster.types)
        self.n_types = n
        self.active: dict[int, None] = {}            # Gavel's _jobs, in arrival order
        # per-job scalars as Python lists: the round loop reads and writes them one at a time
        self.total = jobs.total_steps.tolist()
        self.scale = jobs.scale_factor.tolist()
        self.rates = throughputs.tolist()
        self.done = [0.0] * len(jobs)                # _total_steps_run
        self.failures = [0] * len(jobs)
        self.started = [False] * len(jobs)
        self.table = ComboTable(n)
        self.worker_time = np.zeros(n)               # _worker_time_so_far
        self.allocation: dict[Combo, np.ndarray] = {}
        self.last_reset = 0.0
        self.need_update = False
        self.round_start, self.round_end = 0.0, None
        self.completion = np.full(len(jobs), np.nan)
        self.first_start = np.full(len(jobs), np.nan)
        self.type_seconds = np.zeros((len(jobs), n))
        self.busy = 0.0
        self.dropped: list[int] = []
        self.allocations = 0

    # -- the loop ---------------------------------------------------------------------------
    def run(self, progress=None) -> RoundResult:
        """Run until every job has finished (or been dropped)."""
        jobs = self.jobs
        queue = deque(range(len(jobs)))
        remaining = len(jobs)
        running: list[MicroTask] = []
        now = float(jobs.arrival_time[0]) if len(jobs) else 0.0
        rounds = idle_rounds = 0
        while remaining > 0:
            if not queue and not running:
                self.last_reset = 0.0       # Gavel forces a recompute when nothing runs or arrives
            if running:
                end = max(task.finish for task in running)
                if self.round_end is not None:
                    self.round_start = self.round_end
                self.round_end = end
                now = end
            elif queue:
                now = float(jobs.arrival_time[queue[0]])
            for task in sorted(running, key=lambda t: (-t.finish, t.combo)):
                remaining -= self._complete(task)
            while queue and jobs.arrival_time[queue[0]] <= now:
                self._add(queue.popleft(), now)
            running = [self._launch(combo, k, now) for combo, k in self._schedule(now)]
            rounds += 1
            idle_rounds = 0 if running or queue else idle_rounds + 1
            if idle_rounds > 2 and remaining > 0:
                raise RuntimeError(f"policy {self.policy.name} gives no GPU to the {remaining} waiting jobs "
                                   f"(at {now:.0f} s); the run cannot progress")
            if progress is not None:
                progress(now, len(jobs) - remaining, len(jobs))
        return RoundResult(self.completion, self.first_start, self.dropped, now, self.busy,
                           int(self.cluster.gpus.sum()), rounds, self.allocations, self.type_seconds)

    # -- step 2: completions ----------------------------------------------------------------
    def _complete(self, task: MicroTask) -> int:
        """Credit a finished micro-task; returns how many jobs left the system."""
        active = self.active
        if not any(j in active for j in task.combo):
            return 0
        elapsed = task.finish - self.round_start
        scale = self.scale[task.combo[0]]
        ok = elapsed > 0 and all(_splits(n, scale) for n, j in zip(task.steps, task.combo) if j in active)
        leaving: list[int] = []
        if not ok:
            if len(task.combo) == 1:
                j = task.combo[0]
                self.failures[j] += 1
                if self.failures[j] >= MAX_FAILURES:
                    self.dropped.append(j)
                    leaving.append(j)
            self.need_update = True
        else:
            k = task.gpu_type
            for n, j in zip(task.steps, task.combo):
                if j not in active:
                    continue
                self.failures[j] = 0
                self.done[j] += n
                self.type_seconds[j, k] += elapsed
                if self.total[j] - self.done[j] <= 0:
                    self.completion[j] = task.finish
                    leaving.append(j)
            row = self.table.row.get(task.combo)
            if row is not None:
                self.table.time_so_far[row, k] += elapsed
                self.worker_time[k] += elapsed
            self.busy += elapsed * scale
        for j in leaving:
            self._remove(j)
        return len(leaving)

    # -- step 3: arrivals -------------------------------------------------------------------
    def _add(self, j: int, now: float) -> None:
        self.active[j] = None
        scale = self.scale[j]
        self.table.add((j,), np.full(self.n_types, self.round_s / 2), self.thr[j] > 0, scale)
        if self.policy.packing:
            for other in self.active:
                if other != j and self.scale[other] == scale:
                    pair = (min(other, j), max(other, j))
                    self.table.add(pair, np.zeros(self.n_types), (self.pair_thr(*pair) > 0).all(axis=1), scale)
        self.need_update = True

    def _remove(self, j: int) -> None:
        del self.active[j]
        self.table.remove_job(j)
        self.need_update = True

    # -- steps 4-5: allocation, priorities, the greedy pass ---------------------------------
    def _schedule(self, now: float) -> list[tuple[Combo, int]]:
        priority = self._update_priorities(now)
        order = list(self.order)
        if self.policy.shuffle_types:
            self.shuffler.shuffle(order)
        t = self.table
        left = self.cluster.gpus.copy()
        taken: set[int] = set()                       # packing: jobs taken (alone or in a pair)
        chosen = []
        eligible = t.runnable & (priority > 0) if self.policy.fifo else t.runnable
        combos, scales, allocated = t.combos, t.scale.tolist(), t.allocated.tolist()
        packing = self.policy.packing
        untaken = np.ones(len(combos), dtype=bool)    # singles: rows whose job is not yet taken
        for k in order:
            # descending (priority, deficit, allocation); ties keep the priority order (stable)
            ranked = np.lexsort((-t.x[:, k], -t.deficit[:, k], -priority[:, k]))
            room = int(left[k])
            candidates = ranked[eligible[ranked, k]] if packing else ranked[eligible[ranked, k] & untaken[ranked]]
            for i in candidates.tolist():
                scale = scales[i]
                if scale > room:
                    continue
                combo = combos[i]
                if packing:
                    if any(j in taken for j in combo):
                        continue
                    taken.update(combo)
                else:
                    untaken[i] = False
                room -= scale
                if allocated[i]:
                    chosen.append((combo, k))
                if room == 0:
                    break
            left[k] = room
        return chosen

    def _update_priorities(self, now: float) -> np.ndarray:
        """Recompute the allocation if due, then each combination's priority on each type."""
        may_reset = now - self.last_reset >= self.reset_min_s or self.last_reset == 0
        if self.need_update and may_reset:
            self._reset_time(now)
            self.allocation = self.policy.allocate(self._allocation_input(now)) if self.active else {}
            self.table.set_allocation(self.allocation)
            self.allocations += 1
            self.need_update = False
        t = self.table
        share = np.divide(t.time_so_far, self.worker_time, out=np.zeros_like(t.time_so_far),
                          where=self.worker_time != 0)
        serve = t.allocated[:, None] & (t.x != 0) & t.runnable
        priority = np.where(serve, t.x * UNSERVED_PRIORITY, 0.0)
        np.divide(t.x, share, out=priority, where=serve & (share > 0))
        return priority

    def _reset_time(self, now: float) -> None:
        """Deficits += time owed under the old allocation - time received; time counters restart."""
        t = self.table
        t.deficit += t.x * (now - self.last_reset) - (t.time_so_far - self.round_s / 2)
        t.time_so_far[:] = self.round_s / 2
        self.worker_time[:] = self.round_s / 2 * len(t.combos)
        self.last_reset = now

    def _allocation_input(self, now: float) -> AllocationInput:
        ids = np.array(list(self.active), dtype=np.int64)
        ids.sort()
        jobs = self.jobs
        state = AllocationInput(
            jobs=ids, throughputs=self.thr[ids], reference=self.thr[ids, self.reference],
            scale_factors=jobs.scale_factor[ids].astype(float), priority_weights=jobs.priority_weight[ids],
            times_since_start=now - jobs.arrival_time[ids],
            steps_remaining=jobs.total_steps[ids] - np.array(self.done)[ids],
            gpus=self.cluster.gpus.astype(float))
        if self.policy.packing:
            state.pairs = sorted(c for c in self.table.combos if len(c) == 2)
            state.pair_throughputs = np.array([self.pair_thr(a, b) for a, b in state.pairs]).reshape(
                len(state.pairs), self.n_types, 2)
        return state

    # -- step 6: micro-tasks ----------------------------------------------------------------
    def _rates(self, combo: Combo, k: int):
        if len(combo) == 1:
            return (self.rates[combo[0]][k],)
        return self.pair_thr(*combo)[k].tolist()

    def _launch(self, combo: Combo, k: int, now: float) -> MicroTask:
        finish = now
        steps = []
        for j, rate in zip(combo, self._rates(combo, k)):
            if not self.started[j]:
                self.started[j] = True
                self.first_start[j] = now
            n = min(int(rate * self.round_s), self.total[j] - self.done[j])
            steps.append(n)
            finish = max(finish, now + n / rate)
        return MicroTask(finish, combo, k, tuple(steps))


def _splits(steps: float, scale: int) -> bool:
    """Whether `steps` split over `scale` workers gives every worker at least one (Gavel's check)."""
    each = steps // scale
    return each > 0 and steps - each * (scale - 1) > 0 if scale > 1 else steps > 0
