"""The harvester's event loop (the reference replayer's semantics, vectorised over jobs and nodes).

At every event, in order:

1. each active job progresses by elapsed time x its rate, minus the rescale cost the previous
   decision charged it;
2. nodes going busy leave the pool; a job that held any of them pays Tcdw x its rate once;
3. jobs whose progress reaches Pmax complete (the overshoot is trimmed) and free their nodes;
4. nodes going idle join the pool;
5. submitted jobs are admitted first-come first-served while fewer than ``max_jobs`` are active;
6. the allocator re-plans node counts (skipped when the pool or the queue is empty; an empty pool
   stops every job); growing a job costs Tcup x its old rate, shrinking Tcdw x its old rate, both
   charged in the next interval. A job's old rate is its samples/s at the count it holds after
   step 2 (0 below Jmin; the reference interpolates the curve there instead, which differs only
   for tasks with Jmin > 1).

Events are the node log's (times where the slice's idle set changes); ``precise`` adds job
arrivals and exact job completions as events of their own. The replay ends when every task has
completed or when the log ends. Counts map to nodes deterministically: a shrinking job releases
its earliest-joined nodes first (the reference's column order), and growing jobs, in admission
order, take free nodes in the same order.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from raysim.harvest.allocators import get_allocator
from raysim.harvest.problem import Problem, compat_cap
from raysim.harvest.replay import NS, NodeEvents
from raysim.harvest.tasks import TaskSet

#: Relative tolerance on Pmax for completion (absorbs rounding of precise completion times).
DONE_RTOL = 1e-9

STEP_COLUMNS = ("evt", "evtTime", "Thr", "Rate", "ReScost", "Nleft", "Npre", "Njoin", "nJob", "nNd",
                "nJrun", "nNrun", "PreCost", "from_log")


@dataclass(frozen=True)
class HarvestParams:
    """Settings of one replay (the ``harvest`` config section minus data paths)."""

    tfwd: float = 10.0
    max_jobs: int = 10
    allocator: str = "exact"
    compat_cap: bool = True
    precise: bool = False
    milp_time_limit: float = 60.0


@dataclass
class HarvestResult:
    """What a replay produced: the step log, per-task state, and timing."""

    t0_ns: int
    steps: dict[str, np.ndarray]  # STEP_COLUMNS; evtTime in seconds since t0
    tasks: TaskSet
    tsub: np.ndarray  # seconds since t0
    admitted: np.ndarray  # seconds since t0, NaN if never admitted
    finished: np.ndarray  # seconds since t0, NaN if unfinished
    samples: np.ndarray
    precost: np.ndarray
    rescost: np.ndarray
    overshoot: np.ndarray
    preemptions: np.ndarray
    rescales: np.ndarray
    alloc_seconds: float = 0.0
    decisions: int = 0


class Harvester:
    """Replays `events` for `tasks` under `params`; call `run` once."""

    def __init__(self, events: NodeEvents, tasks: TaskSet, params: HarvestParams):
        if params.max_jobs < 1:
            raise ValueError(f"harvest.max_jobs={params.max_jobs}: must be >= 1")
        self.ev, self.tasks, self.params = events, tasks, params
        self.allocate = get_allocator(params.allocator, milp_time_limit=params.milp_time_limit)
        n_tasks, n_nodes = len(tasks), events.num_nodes
        self.tsub = (tasks.tsub_ns - events.t0_ns) / NS
        self.accs = np.zeros(n_tasks)
        self.rate = np.zeros(n_tasks)
        self.pend = np.zeros(n_tasks)  # rescale cost charged in the next interval
        self.count = np.zeros(n_tasks, np.int64)
        self.precost = np.zeros(n_tasks)
        self.rescost = np.zeros(n_tasks)
        self.overshoot = np.zeros(n_tasks)  # progress past Pmax trimmed at completion
        self.preemptions = np.zeros(n_tasks, np.int64)
        self.rescales = np.zeros(n_tasks, np.int64)
        self.admitted = np.full(n_tasks, np.nan)
        self.finished = np.full(n_tasks, np.nan)
        self.active: list[int] = []  # admission order
        self.idle = np.zeros(n_nodes, bool)
        self.owner = np.full(n_nodes, -1, np.int64)
        self.key = np.zeros(n_nodes, np.int64)  # join order: event * n_nodes + node
        self.pool = 0
        self.rows: list[tuple] = []
        self.alloc_seconds = 0.0
        self.decisions = 0

    # ---- one step each -------------------------------------------------------------------------
    def _progress(self, dt: float) -> np.ndarray:
        prog = np.zeros(len(self.tasks))
        act = np.asarray(self.active, np.int64)
        prog[act] = dt * self.rate[act] - self.pend[act]
        self.rescost[act] += self.pend[act]
        self.pend[act] = 0.0
        return prog

    def _preempt(self, left: np.ndarray, prog: np.ndarray) -> tuple[int, float]:
        held = self.owner[left]
        held = held[held >= 0]
        hit = np.unique(held)
        cost = self.tasks.tcdw[hit] * self.rate[hit]
        prog[hit] -= cost
        self.precost[hit] += cost
        self.preemptions[hit] += 1
        np.subtract.at(self.count, held, 1)
        self.owner[left] = -1
        self.idle[left] = False
        self.pool -= len(left)
        return len(hit), float(cost.sum())

    def _complete(self, t: float, prog: np.ndarray) -> float:
        act = np.asarray(self.active, np.int64)
        self.accs[act] += prog[act]
        pmax = self.tasks.pmax
        done = act[self.accs[act] >= pmax[act] * (1 - DONE_RTOL)]
        if len(done):
            self.overshoot[done] = self.accs[done] - pmax[done]
            prog[done] -= self.overshoot[done]
            self.accs[done] = pmax[done]
            self.finished[done] = t
            self.owner[np.isin(self.owner, done)] = -1
            self.count[done] = 0
            self.rate[done] = 0.0
            gone = set(done.tolist())
            self.active = [j for j in self.active if j not in gone]
        return float(prog[act].sum())

    def _join(self, joined: np.ndarray, evt: int) -> None:
        self.idle[joined] = True
        self.key[joined] = evt * len(self.idle) + joined
        self.pool += len(joined)

    def _admit(self, t: float) -> None:
        room = self.params.max_jobs - len(self.active)
        if room <= 0:
            return
        new = np.flatnonzero(np.isnan(self.admitted) & (self.tsub <= t))[:room]
        self.admitted[new] = t
        self.active.extend(new.tolist())

    def _decide(self) -> None:
        act = np.asarray(self.active, np.int64)
        tasks, cur = self.tasks, self.count[act]
        problem = Problem(self.pool, cur.copy(), tasks.jmin[act], tasks.jmax[act], tasks.obj_tab[act],
                          tasks.tcup[act], tasks.tcdw[act], self.params.tfwd,
                          compat_cap(self.pool) if self.params.compat_cap else None)
        tic = _time.perf_counter()
        new = np.asarray(self.allocate(problem), np.int64)
        self.alloc_seconds += _time.perf_counter() - tic
        self.decisions += 1
        if new.sum() > self.pool or np.any(new < 0):
            raise RuntimeError(f"allocator {self.params.allocator!r} returned {new.tolist()} for a pool of {self.pool}")
        old_rate = tasks.rate_tab[act, cur]
        grow, shrink = new > cur, new < cur
        self.pend[act] = np.where(grow, tasks.tcup[act] * old_rate, np.where(shrink, tasks.tcdw[act] * old_rate, 0.0))
        self.rescales[act[grow | shrink]] += 1
        for j, k in zip(act[shrink], (cur - new)[shrink]):
            mine = np.flatnonzero(self.owner == j)
            self.owner[mine[np.argsort(self.key[mine])[:k]]] = -1
        free = np.flatnonzero(self.idle & (self.owner < 0))
        free = free[np.argsort(self.key[free])]
        take = np.cumsum(np.concatenate([[0], (new - cur)[grow]]))
        for j, a, b in zip(act[grow], take[:-1], take[1:]):
            self.owner[free[a:b]] = j
        self.count[act] = new
        self.rate[act] = tasks.rate_tab[act, new]

    def _log(self, evt, t, thr, left, npre, join, precost, from_log) -> None:
        act = np.asarray(self.active, np.int64)
        c = self.count[act]
        self.rows.append((evt, t, thr, float(self.rate[act].sum()), float(self.pend[act].sum()), left, npre,
                          join, len(act), self.pool, int((c > 0).sum()), int(c.sum()), precost, from_log))

    # ---- the loop ------------------------------------------------------------------------------
    def _next_time(self, e: int, t_prev: float, arrivals: np.ndarray) -> float:
        ev = self.ev
        t = ev.times[e] if e < ev.num_events else np.inf
        if not self.params.precise:
            return t
        later = arrivals[arrivals > t_prev]
        if len(later):
            t = min(t, later[0])
        act = np.asarray(self.active, np.int64)
        run = act[self.rate[act] > 0]
        if len(run):
            due = t_prev + (self.tasks.pmax[run] - self.accs[run] + self.pend[run]) / self.rate[run]
            t = min(t, max(float(due.min()), t_prev + 1e-6))  # never a zero-length step
        return t if t <= ev.times[-1] else np.inf

    def run(self) -> HarvestResult:
        """Replay every event; return the result."""
        ev = self.ev
        self._join(np.flatnonzero(ev.initial_idle), 0)
        self._admit(0.0)
        if self.pool and self.active:
            self._decide()
        self._log(0, 0.0, 0.0, 0, 0, self.pool, 0.0, True)
        arrivals = np.unique(self.tsub[self.tsub > 0])
        t_prev, e = 0.0, 1
        while True:
            t = self._next_time(e, t_prev, arrivals)
            if not np.isfinite(t):
                break
            from_log = e < ev.num_events and ev.times[e] == t
            if from_log:
                sl = slice(ev.ptr[e], ev.ptr[e + 1])
                nodes, up = ev.node[sl], ev.idle[sl]
                left, joined = nodes[~up], nodes[up]
            else:
                left = joined = np.zeros(0, np.int64)
            prog = self._progress(t - t_prev)
            npre, precost = self._preempt(left, prog)
            thr = self._complete(t, prog)
            self._join(joined, e)
            self._admit(t)
            if self.pool == 0:
                act = np.asarray(self.active, np.int64)
                self.rate[act] = 0.0
                self.pend[act] = 0.0
            elif self.active:
                self._decide()
            self._log(e, t, thr, len(left), npre, len(joined), precost, from_log)
            t_prev, e = t, e + from_log
            if not self.active and not np.isnan(self.admitted).any():
                break
        return self._result()

    def _result(self) -> HarvestResult:
        cols = list(zip(*self.rows))
        steps = {name: np.asarray(col) for name, col in zip(STEP_COLUMNS, cols)}
        return HarvestResult(self.ev.t0_ns, steps, self.tasks, self.tsub, self.admitted, self.finished,
                             self.accs.copy(), self.precost, self.rescost, self.overshoot, self.preemptions,
                             self.rescales, self.alloc_seconds, self.decisions)


def simulate(events: NodeEvents, tasks: TaskSet, params: HarvestParams) -> HarvestResult:
    """Replay `events` for `tasks` under `params` (pure computation; no I/O, no global state)."""
    return Harvester(events, tasks, params).run()
