"""Elastic jobs on the VC engine: policies that choose each job's GPU kind and count every round
(Sia, Pollux, and Gavel's baseline as Sia's simulator runs it).

Every ``round_s`` seconds (multiples of it from time 0, as Sia's simulator) the jobs that ran in the
last round advance (:meth:`raysim.elastic.job.ElasticJob.advance`: checkpoint-restore time first,
then training at the profiles' goodput), those that reached their last epoch finish at their exact
second, jobs submitted by now join, and the allocator (:mod:`raysim.elastic.sia`, ...) gives each a
configuration. The policy places them on nodes itself (Sia's round-robin placement), so that the
nodes the engine books are the ones whose placement sets the job's speed: a job whose nodes change
gives its GPUs back (``view.end_lease``), changes size (``view.resize``) and starts on the new ones
(``view.start_on``); it pays a restart when its placement's shape or its GPU kind changes.

When nodes go down or come back (raysim.sim.capacity) the next round sees the VC's nodes as they
are then; a job whose node goes down mid-round trains until then, holds nothing for the rest of
the round and pays a restart when it runs again. With checkpoint-restart (``checkpoint.*``,
raysim.sim.checkpoint) it goes back to its last checkpoint instead (written every ``interval_s`` of
a run, for ``write_s``) and restores it for ``restart_s`` (raysim.elastic.job.CheckpointedRun); a
change of allocation stays Sia's own checkpoint-restore (the application's ``restart_s``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from raysim.elastic.configs import Kinds, configurations, node_runs, spread
from raysim.elastic.job import CheckpointedRun, ElasticJob
from raysim.elastic.settings import ElasticSettings
from raysim.policy.base import NEVER
from raysim.policy.selftimed import Plan, SelfTimed, Start


class Elastic(SelfTimed):
    """Kernel side of an elastic policy; subclasses build their allocator (`allocator`).

    Options (from the run, see :meth:`prepare`): ``inputs`` (raysim.elastic.inputs.ElasticInputs)
    and ``round_s``; the rest are the policy's constants (conf/policy/<name>.yaml)."""

    name = "elastic"
    kind = "elastic"
    elastic = True
    duration_is_work = False
    result_columns = ("restarts", "gpu_seconds")
    ticks_per_s = 1000
    tune_bsz = True
    pooled = False  # True: jobs keep one profile for all GPU kinds (heterogeneity-unaware)
    Settings = ElasticSettings

    def __init__(self, params, *, inputs=None, round_s: float = 60.0, **constants):
        super().__init__(params)
        if inputs is None:
            raise TypeError(f"policy {self.name!r} needs the run's elastic inputs (Elastic.prepare)")
        self.inputs = inputs
        self.round_s = float(round_s)
        self.constants = constants
        self.arrived: list[int] = []        # seqs arrived, not yet seen by a round
        self.active: list[ElasticJob] = []  # jobs in the rounds, in arrival order
        self.nodes: dict[int, tuple] = {}   # seq -> (kind, the VC's node of each GPU) it holds
        self.allocator = None
        self.kinds: Kinds | None = None     # the VC's GPU kinds, read at the first round and again
        self.configs = None                 # after its nodes change (on_capacity)
        self.node_ids: dict[str, list[int]] = {}
        self.per_node: dict[str, int] = {}  # GPUs per node of each kind (as first read)
        self.done: dict[int, tuple] = {}    # seq -> (restarts, GPU-seconds) of finished jobs
        self.ending: ElasticJob | None = None  # the job finishing (checkpoint-restart: finish_cost)

    @classmethod
    def prepare(cls, settings, run, trace, spec):
        """The run's elastic inputs (profiles, per-job application and batch size) and its clock."""
        from raysim.elastic.inputs import elastic_options

        options = elastic_options(settings, run, trace, spec)
        params = replace(spec.params, ticks_per_s=cls.ticks_per_s)
        return replace(spec, params=params, policy_options={**spec.policy_options, **options}), None

    def make_allocator(self, kinds: Kinds):
        raise NotImplementedError

    # -- the engine's hooks ----------------------------------------------------------------
    def on_arrival(self, view, j: int) -> None:
        super().on_arrival(view, j)
        seq = view.jobs.seq[j]
        self.arrived.append(seq)
        if self.wake == NEVER:  # the first round at or after its arrival
            self.wake = self._tick(self._boundary(self.inputs.arrival[seq]))

    def on_capacity(self, view, now: int) -> None:
        self.kinds = None  # the next round reads the VC's nodes again
        if self.wake == NEVER and (self.active or self.arrived):
            self.wake = self._tick(self._boundary(now / self.tps))  # jobs waited for nodes

    def on_requeue(self, view, j: int, now: int) -> None:
        """Job j's node went down mid-round: it trains until now, then holds nothing (its next
        allocation pays a restart); a job that reached its last epoch before then finishes."""
        seq = view.jobs.seq[j]
        job = next(job for job in self.active if job.seq == seq)
        self._train_until(job, now)
        self.nodes.pop(seq, None)
        if job.completion is not None:
            self.active.remove(job)
            self._finished(view, job, now)
        else:
            job.allocate(None, ())

    def stop_cost(self, view, j: int, now: int, cp) -> tuple:
        """Job j's node went down at tick `now` (checkpoint-restart): it trains until then and goes
        back to its last checkpoint (raysim.elastic.job.CheckpointedRun), holding nothing; a job
        that reached its last epoch before then loses nothing. In ticks per GPU."""
        seq = view.jobs.seq[j]
        job = next(job for job in self.active if job.seq == seq)
        self._train_until(job, now)
        if job.completion is not None:
            lost, unpriced = 0, job.run.finish()
        else:
            lost, unpriced = job.run.stop(job)
        job.allocate(None, ())  # (on_requeue: it has trained until now)
        return lost * self.tps, unpriced * self.tps / view.jobs.gpu[j]

    def finish_cost(self, view, j: int, cp):
        """Job j completes: the restores and writes of its runs not yet priced (ticks per GPU)."""
        return self.ending.run.finish() * self.tps / view.jobs.gpu[j]

    def _train_until(self, job: ElasticJob, now: int) -> None:
        """Job `job` trains from the round in progress's start until tick `now`."""
        start = self.wake / self.tps - self.round_s  # (the round in progress ends at the next one)
        job.advance(start, now / self.tps - start)

    def job_results(self, seqs) -> dict:
        """Restarts and GPU-seconds of jobs `seqs` (0 for jobs that did not finish)."""
        got = [self.done.get(s, (0, 0)) for s in seqs]
        return {"restarts": np.array([g[0] for g in got], dtype=np.int64),
                "gpu_seconds": np.array([g[1] for g in got], dtype=np.int64)}

    def schedule(self, view, t: int) -> None:
        if t < self.wake:
            return
        now = self.wake / self.tps
        self._advance(view, t, now - self.round_s)
        if self.kinds is None:
            self._read_kinds(view)
        inputs = self.inputs
        while self.arrived and inputs.arrival[self.arrived[0]] <= now:
            seq = self.arrived.pop(0)
            job = inputs.job(seq, self.kinds.names, tune_bsz=self.tune_bsz, pooled=self.pooled)
            cp = view.checkpointing(self.index[seq])
            if cp is not None:
                job.run = CheckpointedRun(cp.in_seconds(self.tps))
            self.active.append(job)
        self._allocate(view, t, now)
        if self.active and (not view.nodes_down or any(job.placement for job in self.active)):
            self.wake = self._tick(now + self.round_s)
        elif self.arrived:
            self.wake = self._tick(self._boundary(inputs.arrival[self.arrived[0]]))
        else:
            self.wake = NEVER  # nothing to do, or nothing runs until nodes come back (on_capacity)

    # -- one round ----------------------------------------------------------------------------
    def _advance(self, view, t: int, since: float) -> None:
        """The last round's training; jobs that reached their last epoch finish."""
        still = []
        for job in self.active:
            job.advance(since, self.round_s)
            if job.completion is None:
                still.append(job)
                continue
            self._finished(view, job, t)
        self.active = still

    def _finished(self, view, job: ElasticJob, t: int) -> None:
        """Job `job` reached its last epoch: it ends at its completion second."""
        j = self.index.pop(job.seq)
        self.nodes.pop(job.seq, None)
        self.ending = job  # (finish_cost prices its runs)
        view.finish(j, t, self._tick(job.completion))
        self.done[job.seq] = (job.restarts or 0, int(round(job.attained)))

    def _read_kinds(self, view) -> None:
        by_type = view.nodes_by_type()
        names = tuple(sorted(by_type, key=str.lower))
        self.node_ids = {k: [node for node, _ in by_type[k]] for k in names}
        for k in names:  # (a kind whose nodes are all down keeps its shape)
            self.per_node[k] = max((g for _, g in by_type[k]), default=self.per_node.get(k, 0))
        covered = tuple(min(p.max_nodes for (_, kind), p in self.inputs.profiles.items() if kind == k) for k in names)
        self.kinds = Kinds(names, tuple(len(by_type[k]) for k in names), tuple(self.per_node[k] for k in names),
                           covered)
        self.configs = configurations(self.kinds, self.inputs.rigid_sizes)
        old, self.allocator = self.allocator, self.make_allocator(self.kinds)
        if old is not None:  # the nodes changed (on_capacity)
            self.allocator.carry_over(old)

    def _allocate(self, view, t: int, now: float) -> None:
        placed = self.allocator.allocate(self.active, now, self.inputs.ratio) if self.active else {}
        node_ids = self.node_ids
        placed = {seq: (kind, tuple(node_ids[kind][i] for i in ids)) for seq, (kind, ids) in placed.items()}
        moved = [job for job in self.active if placed.get(job.seq) != self.nodes.get(job.seq)]
        plan = Plan([job.seq for job in moved if self.nodes.pop(job.seq, None) is not None])  # (their nodes may go to others)
        for job in moved:
            new = placed.get(job.seq)
            if new is None:
                job.allocate(None, ())
                continue
            kind, nodes = new
            runs = node_runs(nodes)
            job.allocate(kind, spread(tuple(count for _, count in runs), self.kinds.max_nodes[self.kinds.names.index(kind)]))
            plan.starts.append(Start(job.seq, runs, len(nodes)))
            self.nodes[job.seq] = new
        self.apply(view, plan, t, t)

    def _boundary(self, arrival: float) -> float:
        """The first round at or after `arrival` (rounds at multiples of round_s, the first at round_s)."""
        k = max(1, -(-arrival // self.round_s))
        return k * self.round_s
