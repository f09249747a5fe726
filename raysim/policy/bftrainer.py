"""Idle-node harvesting on the VC engine (BFTrainer, Liu et al., arXiv 2106.12091): elastic DNN
training tasks soak up the nodes a batch scheduler leaves idle.

The run's one VC is the harvested machine: one GPU per node, and its capacity plan is the node log
(raysim.harvest.inputs): a node the batch scheduler takes goes down, an idle one comes up. The
policy decides at the *decision points* of BFTrainer's replayer: the start (tick 0), every tick
whose capacity changed and, with ``precise``, task arrivals and exact task completions. At each, in
order (the reference replayer's semantics):

1. each active task progresses by elapsed time x its rate, minus the rescale cost the previous
   decision charged it;
2. nodes going busy leave the pool; a task that held any of them pays Tcdw x its rate once (the
   engine stopped the whole task, `on_requeue`: it keeps its surviving nodes and is booked on them
   again below);
3. tasks whose progress reaches Pmax finish (the overshoot is trimmed) and free their nodes;
4. nodes going idle join the pool;
5. submitted tasks are admitted first-come first-served (task file order) while fewer than
   ``max_jobs`` are active;
6. the allocator (raysim.harvest.allocators) re-plans node counts (skipped when the pool or the
   queue is empty; an empty pool stops every task); growing a task costs Tcup x its old rate,
   shrinking Tcdw x its old rate, both charged in the next interval. A task's old rate is its
   samples/s at the count it holds after step 2 (0 below Jmin).

Counts map to nodes deterministically: a shrinking task releases its earliest-joined nodes first,
and growing tasks, in admission order, take free nodes in the same order (join time, then node
index). Each decision is a plan booked by the self-timed base (raysim.policy.selftimed): a task
whose nodes changed ends its lease, changes size and starts on its new nodes; a finished task ends
with ``view.finish``. Decisions after the node log's last event are not taken: the run ends there, with
the tasks still active unfinished, as the reference's replay does.

Under checkpoint-restart (`checkpoint.*`) a task's stretch on one set of nodes is a run of the one
checkpoint model (raysim.harvest.runs): it progresses only while its run trains (its restores and
writes, at its rate, count in ``precost``); in step 2 a task stopped by a node going busy loses its
run's training since its last completed checkpoint (at its rate) instead of Tcdw x its rate, and
its next run begins with a restore instead of the rescale cost of step 6; the allocator's rescales
keep BFTrainer's costs and all progress. Without it every result is BFTrainer's, as above.
"""

from __future__ import annotations

import math

import numpy as np

from raysim.harvest.allocators import get_allocator
from raysim.harvest.problem import Problem, compat_cap
from raysim.harvest.runs import TaskRuns
from raysim.policy.base import NEVER
from raysim.policy.selftimed import Plan, SelfTimed, Start

#: Relative tolerance on Pmax for completion (absorbs rounding of precise completion times).
DONE_RTOL = 1e-9


class BFTrainer(SelfTimed):
    """Idle-node harvesting (BFTrainer): elastic DNN tasks on the nodes a batch scheduler leaves idle.

    Its inputs come from the run (`prepare`, raysim.harvest.inputs)."""

    name = "bftrainer"
    kind = "harvest"
    duration_is_work = False
    refuses = {
        "quota": "policy={policy} harvests one machine, one VC: run it with quota=none",
        "cluster.capacity": "policy={policy}'s nodes come and go as its node log says (harvest.node_log)",
        "failures": "policy={policy}'s nodes come and go as its node log says (harvest.node_log)",
        **SelfTimed.refuses,
        "estimator.source": "{policy} is timed by its node log (harvesting) and reads no duration estimates",
        "sim.network": "{policy} is timed by its node log (harvesting): its jobs progress at their own rates "
                       "(throughput table, scalability curves); NIC contention is not modelled for them",
        "sim.compat": "{policy} is timed by its node log (harvesting): Lucid's compatibility switches do not apply",
    }
    #: whole seconds (the node log's and the task sets' clock); precise runs count milliseconds
    ticks_per_s = 1
    result_columns = ("samples", "precost", "rescost", "overshoot", "rescales", "max_nodes")

    def __init__(self, params, *, tasks=None, rows=None, initial_idle=None, end_s: float = 0.0, tfwd: float = 10.0,
                 max_jobs: int = 10, allocator: str = "exact", compat_cap: bool = True, precise: bool = False,
                 milp_time_limit: float = 60.0):
        super().__init__(params)
        if tasks is None:
            raise TypeError(f"policy {self.name!r} needs the run's harvest inputs (+experiment=harvest_summit)")
        self.tasks = tasks
        self.rows = rows                    # trace row (seq) -> task row
        self.seqs = np.full(len(tasks), -1, np.int64)  # task row -> trace row (once it arrived)
        self.tfwd, self.max_jobs, self.precise = float(tfwd), int(max_jobs), bool(precise)
        self.cap = bool(compat_cap)
        self.allocator_name = allocator
        self.allocate = get_allocator(allocator, milp_time_limit=float(milp_time_limit))
        self.end = int(round(end_s * self.tps))  # tick of the node log's last event
        k, n = len(tasks), len(initial_idle)
        self.accs = np.zeros(k)
        self.rate = np.zeros(k)
        self.pend = np.zeros(k)              # rescale cost charged in the next interval
        self.count = np.zeros(k, np.int64)
        self.precost = np.zeros(k)
        self.rescost = np.zeros(k)
        self.overshoot = np.zeros(k)
        self.rescales = np.zeros(k, np.int64)
        self.submitted = np.zeros(k, bool)
        self.admitted = np.zeros(k, bool)
        self.active: list[int] = []          # task rows in admission order
        self.hit: set[int] = set()           # tasks a node going down stopped at this tick
        self.idle = np.asarray(initial_idle, bool).copy()
        self.owner = np.full(n, -1, np.int64)
        self.key = np.arange(n, dtype=np.int64)  # join order: tick * nodes + node
        self.pool = int(self.idle.sum())
        self.last = 0                        # tick of the last decision
        self.changed = -1                    # tick of the latest capacity change
        self.runs: TaskRuns | None = None    # under checkpoint-restart (set at the first arrival)
        self.ending = 0.0                    # node-seconds of the finishing task's runs (finish_cost)

    @classmethod
    def prepare(cls, settings, run, trace, spec):
        """The node log as the run's capacity plan, the tasks and the settings (`harvest.*`)."""
        from raysim.harvest.inputs import harvest_spec

        return harvest_spec(run.harvest, trace, spec), None

    # -- the engine's hooks --------------------------------------------------------------------
    def on_arrival(self, view, j: int) -> None:
        super().on_arrival(view, j)
        seq = view.jobs.seq[j]
        task = self.rows[seq]
        self.seqs[task] = seq
        self.submitted[task] = True
        cp = view.checkpointing(j)
        if self.runs is None and cp is not None:
            self.runs = TaskRuns(cp.in_seconds(self.tps), len(self.tasks))

    def on_requeue(self, view, j: int, now: int) -> None:
        """A node of task j went busy: the engine stopped it; it pays once and keeps its other nodes."""
        self.hit.add(self.rows[view.jobs.seq[j]])

    def on_capacity(self, view, now: int) -> None:
        self.changed = now

    def stop_cost(self, view, j: int, now: int, cp) -> tuple:
        """Under checkpoint-restart, a node of task j went busy at tick `now`: (training lost since its
        run's last completed checkpoint, restores and writes not yet priced per node), in ticks
        (raysim.harvest.runs; `_preempt` books the stop)."""
        lost, overhead = self.runs.priced(self.rows[view.jobs.seq[j]], now / self.tps)
        return lost * self.tps, overhead * self.tps / view.jobs.gpu[j]

    def finish_cost(self, view, j: int, cp):
        """Task j completes: the restores and writes of its runs not yet priced (ticks per node)."""
        return self.ending * self.tps / view.jobs.gpu[j]

    def next_wakeup(self, view, now: int) -> float:
        """With ``precise``: the first tick at which an active task's progress reaches Pmax (within
        the node log)."""
        if not self.precise or not self.active:
            return NEVER
        act = np.asarray(self.active, np.int64)
        run = act[self.rate[act] > 0]
        if not len(run):
            return NEVER
        due = (self.tasks.pmax[run] - self.accs[run] + self.pend[run]) / self.rate[run]
        if self.runs is not None:  # (seconds of training: the run's writes come between)
            due = np.array([self.runs.due(k, self.last / self.tps, s) for k, s in zip(run.tolist(), due)])
        tick = self.last + max(math.ceil(float(due.min()) * self.tps - 1e-9), 1)
        return tick if tick <= self.end else NEVER

    def schedule(self, view, t: int) -> None:
        due = t == 0 or t == self.changed or self.precise and (view.arrived_now or self._due(t))
        if not due or t > self.end:
            return
        changes = view.capacity_changes if t == self.changed else ()
        left = np.fromiter((node for node, up in changes if not up), np.int64)
        joined = np.fromiter((node for node, up in changes if up), np.int64)
        prog = self._progress(t)
        self._preempt(left, prog, t)
        self._complete(view, t, prog)
        self.idle[joined] = True
        self.key[joined] = t * len(self.idle) + joined
        self.pool += len(joined)
        self._admit()
        hit, self.hit = self.hit, set()
        if self.pool == 0:
            act = np.asarray(self.active, np.int64)
            self.rate[act] = 0.0
            self.pend[act] = 0.0
        elif self.active:
            moved = self._decide() | hit
            if self.runs is not None:
                self._rerun(moved, hit, t)
            self._book(view, t, moved)
        self.last = t

    # -- one decision, step by step ------------------------------------------------------------
    def _due(self, t: int) -> bool:
        """Whether an active task's progress reaches Pmax by tick t (precise mode's completions)."""
        return self.next_wakeup(None, t) <= t

    def _progress(self, t: int) -> np.ndarray:
        """Each active task's progress since the last decision; under checkpoint-restart, of its
        run's training only: its restores and writes, at its rate, are part of `precost`."""
        dt = (t - self.last) / self.tps
        prog = np.zeros(len(self.tasks))
        act = np.asarray(self.active, np.int64)
        train = dt if self.runs is None else self.runs.training(act, self.last / self.tps, t / self.tps)
        prog[act] = train * self.rate[act] - self.pend[act]
        if self.runs is not None:
            self.precost[act] += (dt - train) * self.rate[act]
        self.rescost[act] += self.pend[act]
        self.pend[act] = 0.0
        return prog

    def _preempt(self, left: np.ndarray, prog: np.ndarray, t: int) -> None:
        """Nodes `left` go busy; a task that held one pays Tcdw x its rate, or under checkpoint-restart
        the training its run loses since its last completed checkpoint, at its rate."""
        held = self.owner[left]
        held = held[held >= 0]
        hit = np.unique(held)
        if self.runs is None:
            cost = self.tasks.tcdw[hit] * self.rate[hit]
        else:
            cost = self.runs.stop(hit, t / self.tps) * self.rate[hit]
        prog[hit] -= cost
        self.precost[hit] += cost
        np.subtract.at(self.count, held, 1)
        self.owner[left] = -1
        self.idle[left] = False
        self.pool -= len(left)

    def _complete(self, view, t: int, prog: np.ndarray) -> None:
        act = np.asarray(self.active, np.int64)
        self.accs[act] += prog[act]
        pmax = self.tasks.pmax
        done = act[self.accs[act] >= pmax[act] * (1 - DONE_RTOL)]
        if not len(done):
            return
        self.overshoot[done] = self.accs[done] - pmax[done]
        self.accs[done] = pmax[done]
        self.owner[np.isin(self.owner, done)] = -1
        self.count[done] = 0
        self.rate[done] = 0.0
        for task in done.tolist():
            if self.runs is not None:
                self.ending = self.runs.finish(task, t / self.tps)
            view.finish(self.index.pop(int(self.seqs[task])), t)
        gone = set(done.tolist())
        self.active = [task for task in self.active if task not in gone]
        self.hit -= gone

    def _admit(self) -> None:
        room = self.max_jobs - len(self.active)
        if room <= 0:
            return
        new = np.flatnonzero(self.submitted & ~self.admitted)[:room]
        self.admitted[new] = True
        self.active.extend(new.tolist())

    def _decide(self) -> set[int]:
        """New node counts for the active tasks; returns the tasks whose count changed."""
        act = np.asarray(self.active, np.int64)
        tasks, cur = self.tasks, self.count[act]
        problem = Problem(self.pool, cur.copy(), tasks.jmin[act], tasks.jmax[act], tasks.obj_tab[act],
                          tasks.tcup[act], tasks.tcdw[act], self.tfwd, compat_cap(self.pool) if self.cap else None)
        new = np.asarray(self.allocate(problem), np.int64)
        if new.sum() > self.pool or np.any(new < 0):
            raise RuntimeError(f"allocator {self.allocator_name!r} returned {new.tolist()} for a pool of {self.pool}")
        old_rate = tasks.rate_tab[act, cur]
        grow, shrink = new > cur, new < cur
        self.pend[act] = np.where(grow, tasks.tcup[act] * old_rate, np.where(shrink, tasks.tcdw[act] * old_rate, 0.0))
        self.rescales[act[grow | shrink]] += 1
        for task, k in zip(act[shrink], (cur - new)[shrink]):
            mine = np.flatnonzero(self.owner == task)
            self.owner[mine[np.argsort(self.key[mine])[:k]]] = -1
        free = np.flatnonzero(self.idle & (self.owner < 0))
        free = free[np.argsort(self.key[free])]
        take = np.cumsum(np.concatenate([[0], (new - cur)[grow]]))
        for task, a, b in zip(act[grow], take[:-1], take[1:]):
            self.owner[free[a:b]] = task
        self.count[act] = new
        self.rate[act] = tasks.rate_tab[act, new]
        return set(act[grow | shrink].tolist())

    def _rerun(self, moved: set[int], hit: set[int], t: int) -> None:
        """Under checkpoint-restart: the runs of tasks whose nodes changed end (a rescale; a stopped
        task's ended at the stop) and those left with nodes begin a new run; a stopped task's begins
        with a restore, which replaces the rescale cost of this decision."""
        at, runs = t / self.tps, self.runs
        for task in sorted(moved):
            if task in hit:
                self.pend[task] = 0.0
            elif runs.since[task] >= 0:
                runs.end(task, at)
            if self.count[task]:
                runs.begin(task, at, int(self.count[task]))

    def _book(self, view, t: int, moved: set[int]) -> None:
        """The engine's books follow the tasks whose nodes changed (and those it stopped): leases
        that change end first (their nodes may go to others), then each starts on its nodes."""
        seqs = [int(self.seqs[task]) for task in sorted(moved)]
        plan = Plan([seq for seq in seqs if self.index[seq] in view.running])
        for seq in seqs:
            nodes = np.flatnonzero(self.owner == self.rows[seq])
            if len(nodes):
                plan.starts.append(Start(seq, [(node, 1) for node in nodes.tolist()], len(nodes)))
        self.apply(view, plan, t, t)

    def job_results(self, seqs) -> dict:
        """Per task: samples processed, samples lost to preemptions and to rescaling, progress
        trimmed past Pmax, rescales, and its most nodes (Jmax)."""
        rows = self.rows[np.asarray(seqs, np.int64)]
        return {"samples": self.accs[rows], "precost": self.precost[rows], "rescost": self.rescost[rows],
                "overshoot": self.overshoot[rows], "rescales": self.rescales[rows],
                "max_nodes": self.tasks.jmax[rows]}
