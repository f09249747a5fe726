"""Gavel's round mechanism (its simulator's ``simulate()``), the state of one VC's rounds.

The kernel policy :class:`raysim.policy.rounds.RoundBased` drives it from the VC engine's events;
this module holds what a round decides and keeps no reference to the engine. Jobs are named by
their trace row (``seq``), which is their arrival order, so combinations sort as Gavel's do.

One round, at time ``now`` (floats, seconds; the engine's clock only orders the events):

1. The micro-tasks launched last round complete (latest finish first): their steps are credited,
   jobs whose steps are all done finish at their micro-task's finish time (their GPUs idle until
   the round ends: no backfill), and the time each ran is added to its per-type time counters
   (measured from the previous round's end). A micro-task whose steps cannot be split over its
   GPUs (fewer steps than GPUs) fails, as in Gavel; a job failing ``MAX_FAILURES`` times in a row
   is dropped (reported, never silent).
2. Jobs that arrived by now join (their arrival time is kept as their start).
3. If a job arrived or finished and ``reset_min_s`` passed since the last recompute (or the last
   recompute was at time 0), deficits are updated, time counters reset to ``round_s / 2`` and the
   policy computes a new allocation.
4. Priorities = allocation / share of the type's time received since the recompute; per GPU type,
   in the type order (reshuffled every round for heterogeneity-agnostic policies), combinations
   sorted by (priority, deficit, allocation) descending take GPUs greedily: ``scale_factor`` GPUs
   of one type, each job (or either job of a pair) at most once per round. Combinations the
   allocation does not contain take GPUs in that pass but get none (Gavel: those GPUs idle).
5. Each chosen job runs ``min(int(throughput * round_s), remaining)`` steps, finishing at
   ``now + steps / throughput``; the round ends at the latest finish.

A round whose choice provably repeats the last one (:meth:`RoundState.repeats`: every candidate
took GPUs, so priorities could not change the choice, and nothing joins, finishes, fails or is
recomputed) needs no priorities: the kernel policy runs such rounds in one step
(raysim.policy.rounds), each with the same operations as above, so results do not change.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from raysim.rounds.policies.base import AllocationInput, Combo, RoundPolicy

#: Consecutive failed micro-tasks after which a job is dropped (Gavel's MAX_FAILED_ATTEMPTS).
MAX_FAILURES = 5
#: Priority of a combination with allocation > 0 that has not run on the type since the recompute.
UNSERVED_PRIORITY = 1e9
#: An allocation at least this far from 0 keeps a priority > 0 whatever share of time it received
#: (allocation / share cannot underflow to 0): FIFO policies' eligible combinations then stay so.
FAR_FROM_ZERO = 1e-250


@dataclass
class MicroTask:
    finish: float
    combo: Combo
    gpu_type: int
    steps: tuple
    #: its GPUs' node went down before it finished (raysim.sim.capacity): `steps` are those done by then
    interrupted: bool = False


class ComboTable:
    """Per-combination state, rows in Gavel's priority order (a job, then its new pairs, by arrival):
    time run on each type since the last recompute, deficits, allocation, runnable types, size.

    What the rounds' priorities and greedy pass derive from the rows and the allocation (which
    combinations are served, their priority before they run, the sort keys) is kept until either
    changes, with the buffers each round computes into (`derived`): a round allocates no arrays
    for them."""

    _derived = None  # (a class default: tables pickled before it existed)

    def __init__(self, n_types: int):
        self.combos: list[Combo] = []
        self.row: dict[Combo, int] = {}
        self.time_so_far = np.zeros((0, n_types))      # Gavel's _job_time_so_far
        self.deficit = np.zeros((0, n_types))
        self.x = np.zeros((0, n_types))                # allocation (0 where not allocated)
        self.allocated = np.zeros(0, dtype=bool)       # in the current allocation at all
        self.runnable = np.zeros((0, n_types), dtype=bool)
        self.scale = np.zeros(0, dtype=np.int64)
        self._derived: Derived | None = None

    def add(self, combo: Combo, time_so_far: np.ndarray, runnable: np.ndarray, scale: int) -> None:
        self.row[combo] = len(self.combos)
        self.combos.append(combo)
        self.time_so_far = np.vstack([self.time_so_far, time_so_far])
        self.deficit = np.vstack([self.deficit, np.zeros_like(time_so_far)])
        self.x = np.vstack([self.x, np.zeros_like(time_so_far)])
        self.allocated = np.append(self.allocated, False)
        self.runnable = np.vstack([self.runnable, runnable])
        self.scale = np.append(self.scale, scale)
        self._derived = None

    def remove_job(self, j: int) -> None:
        keep = np.array([j not in c for c in self.combos], dtype=bool)
        self.combos = [c for c, k in zip(self.combos, keep) if k]
        self.row = {c: i for i, c in enumerate(self.combos)}
        for name in ("time_so_far", "deficit", "x", "allocated", "runnable", "scale"):
            setattr(self, name, getattr(self, name)[keep])
        self._derived = None

    def set_allocation(self, allocation: dict) -> None:
        """The allocation of a recompute (deficits were updated just before)."""
        self.x[:] = 0.0
        self.allocated[:] = False
        for combo, i in self.row.items():
            if combo in allocation:
                self.x[i] = allocation[combo]
                self.allocated[i] = True
        self._derived = None

    @property
    def derived(self) -> Derived:
        if self._derived is None:
            self._derived = Derived(self)
        return self._derived


class Derived:
    """What a ComboTable's rows and allocation give the rounds until either changes: `serve` (a
    combination with allocation > 0 on a type it can run on), its priority before it runs there
    (`unserved`: allocation x UNSERVED_PRIORITY, else 0), the greedy pass's secondary sort keys per
    type (negated deficit and allocation, contiguous), and buffers for a round's share of time,
    priorities and masks."""

    def __init__(self, t: ComboTable):
        self.serve = t.allocated[:, None] & (t.x != 0) & t.runnable
        self.unserved = np.where(self.serve, t.x * UNSERVED_PRIORITY, 0.0)
        self.neg_x = [np.ascontiguousarray(-t.x[:, k]) for k in range(t.x.shape[1])]
        self.neg_deficit = [np.ascontiguousarray(-t.deficit[:, k]) for k in range(t.x.shape[1])]
        self.share = np.empty_like(t.x)
        self.priority = np.empty_like(t.x)
        self.mask = np.empty_like(t.runnable)
        self.eligible = np.empty_like(t.runnable)
        self.neg_priority = np.empty(len(t.x))


class RoundState:
    """The rounds of one VC: active jobs, combinations, time counters, deficits, the allocation.

    `rates(j)` gives job j's whole-job throughput on each of the `n_types` GPU types (0: cannot run
    there), `pair_rates(a, b)` the (types x 2) throughputs of a packed pair (packing policies only).
    `order` is the greedy pass's type order (indices), `reference` the reference type's index."""

    #: the last round's choice, and whether later rounds repeat it (see choose); class defaults for
    #: states pickled before they existed
    chosen: list[tuple[Combo, int]] | tuple = ()
    fixed = False

    def __init__(self, policy: RoundPolicy, n_types: int, *, rates, steps, weight, arrival, round_s: float,
                 reset_min_s: float, order: list[int], reference: int, seed: int, pair_rates=None):
        if policy.packing and pair_rates is None:
            raise ValueError(f"policy {policy.name} packs jobs: it needs pair throughputs")
        self.policy = policy
        self.n_types = n_types
        self.rates, self.steps, self.weight, self.arrival = rates, steps, weight, arrival
        self.pair_rates = pair_rates
        self.round_s, self.reset_min_s = float(round_s), float(reset_min_s)
        self.order, self.reference = list(order), int(reference)
        self.shuffler = random.Random(seed + 5)
        self.active: dict[int, None] = {}            # Gavel's _jobs, in arrival order
        self.row_rates: dict[int, list] = {}         # active job -> its throughputs (list)
        self.scale: dict[int, int] = {}              # active job -> GPUs it needs
        self.total: dict[int, float] = {}            # active job -> its steps
        self.done: dict[int, float] = {}             # _total_steps_run
        self.failures: dict[int, int] = {}
        self.table = ComboTable(n_types)
        self.worker_time = np.zeros(n_types)         # _worker_time_so_far
        self.allocation: dict[Combo, np.ndarray] = {}
        self.last_reset = 0.0
        self.need_update = False
        self.round_start, self.round_end = 0.0, None
        self.busy = 0.0                              # GPU-seconds of successful micro-tasks
        self.rounds = 0
        self.allocations = 0

    # -- step 1: completions ---------------------------------------------------------------
    def complete(self, task: MicroTask) -> tuple[list[int], list[int]]:
        """Credit a finished micro-task; returns (jobs that finished, jobs dropped)."""
        active = self.active
        live = [j for j in task.combo if j in active]
        if not live:
            return [], []
        elapsed = task.finish - self.round_start
        scale = self.scale[live[0]]  # (a pair's jobs have one size)
        ok = elapsed > 0 and all(_splits(n, scale) for n, j in zip(task.steps, task.combo) if j in active)
        finished, dropped = [], []
        if not ok and task.interrupted:
            return [], []  # cut short by its node, not failed: nothing to credit, nothing counted
        if not ok:
            if len(task.combo) == 1:
                j = task.combo[0]
                self.failures[j] += 1
                if self.failures[j] >= MAX_FAILURES:
                    dropped.append(j)
            self.need_update = True
        else:
            k = task.gpu_type
            for n, j in zip(task.steps, task.combo):
                if j not in active:
                    continue
                self.failures[j] = 0
                self.done[j] += n
                if self.total[j] - self.done[j] <= 0:
                    finished.append(j)
            row = self.table.row.get(task.combo)
            if row is not None:
                self.table.time_so_far[row, k] += elapsed
                self.worker_time[k] += elapsed
            self.busy += elapsed * scale
        for j in finished + dropped:
            self.remove(j)
        return finished, dropped

    # -- step 2: arrivals -------------------------------------------------------------------
    def add(self, j: int, scale: int) -> None:
        self.active[j] = None
        rates = self.rates(j)
        self.row_rates[j] = list(rates)
        self.scale[j] = scale
        self.total[j] = float(self.steps[j])
        self.done[j] = 0.0
        self.failures[j] = 0
        self.table.add((j,), np.full(self.n_types, self.round_s / 2), np.asarray(rates) > 0, scale)
        if self.policy.packing:
            for other in self.active:
                if other != j and self.scale[other] == scale:
                    pair = (min(other, j), max(other, j))
                    self.table.add(pair, np.zeros(self.n_types), (self.pair_rates(*pair) > 0).all(axis=1), scale)
        self.need_update = True
        self.fixed = False

    def remove(self, j: int) -> None:
        del self.active[j]
        del self.row_rates[j]
        del self.scale[j]
        del self.total[j]
        del self.done[j]
        del self.failures[j]
        self.table.remove_job(j)
        self.need_update = True
        self.fixed = False

    # -- steps 3-4: allocation, priorities, the greedy pass ---------------------------------
    def choose(self, now: float, gpus: np.ndarray) -> list[tuple[Combo, int]]:
        """The (combination, type) pairs that run this round on `gpus` GPUs per type.

        Sets `fixed`: whether every later round repeats this choice until the table, the allocation
        or the GPUs change. So it is when every candidate of every type took GPUs (which priorities
        only order), candidates stay candidates (FIFO: every allocation is FAR_FROM_ZERO), and the
        type order cannot matter (it is not reshuffled, or no combination is a candidate on two
        types); packing policies' pairs compete for their jobs, so never for them."""
        priority = self._update_priorities(now, gpus)
        order = self._type_order()
        t = self.table
        d = t.derived
        taken: set[int] = set()                       # packing: jobs taken (alone or in a pair)
        chosen = []
        eligible = t.runnable
        if self.policy.fifo:
            eligible = np.logical_and(t.runnable, np.greater(priority, 0.0, out=d.eligible), out=d.eligible)
        combos, scales, allocated = t.combos, t.scale.tolist(), t.allocated.tolist()
        packing = self.policy.packing
        untaken = np.ones(len(combos), dtype=bool)    # singles: rows whose job is not yet taken
        every = not packing                           # every candidate so far took GPUs
        for k in order:
            # descending (priority, deficit, allocation); ties keep the priority order (stable)
            ranked = np.lexsort((d.neg_x[k], d.neg_deficit[k], np.negative(priority[:, k], out=d.neg_priority)))
            room = int(gpus[k])
            candidates = ranked[eligible[ranked, k]] if packing else ranked[eligible[ranked, k] & untaken[ranked]]
            took = 0
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
                took += 1
                if allocated[i]:
                    chosen.append((combo, k))
                if room == 0:
                    break
            every = every and took == len(candidates)
        self.chosen = chosen
        self.fixed = every and (not self.policy.fifo or not ((t.x > 0) & (t.x < FAR_FROM_ZERO)).any()) and (
            not self.policy.shuffle_types or not len(combos) or eligible.sum(axis=1).max() <= 1)
        return chosen

    def _type_order(self) -> list[int]:
        """The greedy pass's type order this round (reshuffled every round for agnostic policies)."""
        order = list(self.order)
        if self.policy.shuffle_types:
            self.shuffler.shuffle(order)
        return order

    def repeats(self, tasks: list[MicroTask], now: float) -> bool:
        """Whether the round starting at `now`, where `tasks` (the last round's micro-tasks) complete,
        chooses what the last one chose: its choice is `fixed`, no job of `tasks` finishes, fails or
        has left, and no allocation recompute is due. Arrivals and node changes are the caller's to
        rule out. Such a round is run by `repeat`."""
        if not self.fixed or self.need_update and (now - self.last_reset >= self.reset_min_s or self.last_reset == 0):
            return False
        start = self.round_end if self.round_end is not None else self.round_start
        active, total, done = self.active, self.total, self.done
        for task in tasks:
            if task.interrupted or not all(j in active for j in task.combo):
                return False
            scale = self.scale[task.combo[0]]
            if not (task.finish - start > 0 and all(_splits(n, scale) for n in task.steps)):
                return False  # (it fails)
            if any(total[j] - (done[j] + n) <= 0 for n, j in zip(task.steps, task.combo)):
                return False  # (a job finishes)
        return True

    def repeat(self) -> list[tuple[Combo, int]]:
        """The choice of a round that `repeats` the last one (the type order is drawn as every round
        draws it)."""
        self._type_order()
        return self.chosen

    def _update_priorities(self, now: float, gpus: np.ndarray) -> np.ndarray:
        """Recompute the allocation if due, then each combination's priority on each type."""
        may_reset = now - self.last_reset >= self.reset_min_s or self.last_reset == 0
        if self.need_update and may_reset:
            self._reset_time(now)
            state = self._allocation_input(now, gpus) if self.active else None
            self.allocation = self.policy.allocate(state) if state is not None and len(state.jobs) else {}
            self.table.set_allocation(self.allocation)
            self.allocations += 1
            self.need_update = False
        t = self.table
        d = t.derived
        share, priority = d.share, d.priority
        share.fill(0.0)
        np.divide(t.time_so_far, self.worker_time, out=share, where=self.worker_time != 0)
        np.copyto(priority, d.unserved)
        np.divide(t.x, share, out=priority, where=np.logical_and(d.serve, np.greater(share, 0.0, out=d.mask),
                                                                 out=d.mask))
        return priority

    def _reset_time(self, now: float) -> None:
        """Deficits += time owed under the old allocation - time received; time counters restart."""
        t = self.table
        t.deficit += t.x * (now - self.last_reset) - (t.time_so_far - self.round_s / 2)
        t.time_so_far[:] = self.round_s / 2
        self.worker_time[:] = self.round_s / 2 * len(t.combos)
        self.last_reset = now

    def _allocation_input(self, now: float, gpus: np.ndarray) -> AllocationInput:
        """The policy's input: the active jobs that can run on some GPU type present (all of them
        unless nodes are down, raysim.sim.capacity: the others get no allocation until they can)."""
        present = gpus > 0
        ids = [j for j in sorted(self.active) if any(r > 0 and p for r, p in zip(self.row_rates[j], present))]
        thr = np.array([self.row_rates[j] for j in ids], dtype=float).reshape(len(ids), self.n_types)
        state = AllocationInput(
            jobs=np.array(ids, dtype=np.int64), throughputs=thr, reference=thr[:, self.reference],
            scale_factors=np.array([self.scale[j] for j in ids], dtype=float),
            priority_weights=np.array([self.weight[j] for j in ids], dtype=float),
            times_since_start=now - np.array([self.arrival[j] for j in ids], dtype=float),
            steps_remaining=np.array([self.total[j] - self.done[j] for j in ids], dtype=float),
            gpus=gpus.astype(float))
        if self.policy.packing:
            kept = set(ids)
            state.pairs = sorted(c for c in self.table.combos if len(c) == 2 and kept.issuperset(c))
            state.pair_throughputs = np.array([self.pair_rates(a, b) for a, b in state.pairs]).reshape(
                len(state.pairs), self.n_types, 2)
        return state

    # -- step 5: micro-tasks ----------------------------------------------------------------
    def interrupt(self, task: MicroTask, start: float, at: float) -> MicroTask:
        """Micro-task `task`, launched at `start`, cut short at `at` (its node went down): the steps
        each job had done by then (whole steps at its throughput), finishing at `at`."""
        rates = (self.row_rates[task.combo[0]][task.gpu_type],) if len(task.combo) == 1 else \
            self.pair_rates(*task.combo)[task.gpu_type].tolist()
        steps = tuple(min(n, int(rate * (at - start))) for n, rate in zip(task.steps, rates))
        return MicroTask(at, task.combo, task.gpu_type, steps, interrupted=True)

    def launch(self, combo: Combo, k: int, now: float) -> MicroTask:
        finish = now
        steps = []
        rates = (self.row_rates[combo[0]][k],) if len(combo) == 1 else self.pair_rates(*combo)[k].tolist()
        for j, rate in zip(combo, rates):
            n = min(int(rate * self.round_s), self.total[j] - self.done[j])
            steps.append(n)
            finish = max(finish, now + n / rate)
        return MicroTask(finish, combo, k, tuple(steps))


def _splits(steps: float, scale: int) -> bool:
    """Whether `steps` split over `scale` workers gives every worker at least one (Gavel's check)."""
    each = steps // scale
    return each > 0 and steps - each * (scale - 1) > 0 if scale > 1 else steps > 0
