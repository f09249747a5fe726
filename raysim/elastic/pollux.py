"""Pollux (OSDI'21) as Sia's comparison runs it: heterogeneity-unaware goodput optimisation.

Pollux sees the cluster as identical virtual nodes of the smallest node size (Sia's cluster: 16
nodes of 4 GPUs; an 8-GPU node is two of them) and each job through one goodput model fitted to
every configuration it ran, whatever the kind. Each round it chooses every job's GPUs to maximise
the power mean (``p``, Pollux and Sia: -1) of the jobs' speedups, where a job's speedup is its
goodput over its goodput at a fair share of the cluster (``ceil(GPUs / jobs)`` GPUs on one node,
at most what its batch-size limit allows; a job that has not run yet scales linearly), scaled so that one node's share counts 1, and an
allocation that changes is scaled down by Pollux's restart factor (a fixed ``restart_delay_s``).
A job gets at most twice the GPUs it has been profiled on, and never more than the batch-size
limit allows. A rigid job (``policy.share`` < 1) gets its own GPU count or none.

Pollux searches with a genetic algorithm (NSGA-II, 100 x 100 per round). Here the same objective is
solved exactly: with p < 0, maximising the power mean is minimising the sum of speedup^p, one term
per job, so one integer program over (job, GPU count) picks every job's count under the cluster's
GPUs and virtual nodes (HiGHS). The counts are then placed on virtual nodes in order, without
regard to kind (a job keeps its nodes while its count does not change); a job whose nodes span
several kinds keeps only those of the kind holding most of them, as Sia's simulator cuts Pollux's
allocations. The exact search finds allocations at least as good as the GA's under the model
(docs/elastic.md).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from scipy.optimize import Bounds, LinearConstraint
from scipy.sparse import csr_matrix

from raysim.elastic.configs import Kinds
from raysim.elastic.goodput import speedup
from raysim.highs import milp


class PolluxAllocator:
    """One VC's Pollux rounds; remembers each job's virtual nodes between rounds."""

    def __init__(self, kinds: Kinds, *, p: float, restart_delay_s: float, max_replicas_cap: int,
                 max_nodes_per_job: int, sizes=()):
        if p == 0:
            raise ValueError("policy.p must not be 0")
        self.kinds, self.p = kinds, p
        self.delay, self.cap, self.max_nodes = restart_delay_s, max_replicas_cap, max_nodes_per_job
        self.size = min(kinds.per_node)                       # GPUs per virtual node
        self.vnodes = []                                      # virtual node -> (kind index, real node)
        for k, (n, g) in enumerate(zip(kinds.nodes, kinds.per_node)):
            for node in range(n):
                self.vnodes += [(k, node)] * (g // self.size)
        counts = [c for c in (1 << i for i in range(8)) if c < self.size]
        counts += [self.size * m for m in range(1, min(len(self.vnodes), max_nodes_per_job) + 1)]
        counts += [c for c in sizes if 0 < c <= len(self.vnodes) * self.size]  # rigid jobs' own counts
        self.counts = np.array(sorted(set(counts)))
        self.prev: dict[int, tuple] = {}                      # seq -> virtual GPU slots it held

    def carry_over(self, old: "PolluxAllocator") -> None:
        """Continue the rounds of `old`, an allocator of the same VC before its nodes changed. Its
        virtual GPU slots name other nodes now: jobs start this round with none remembered."""

    def allocate(self, jobs: list, now: float, ratios) -> dict:
        if not jobs:
            self.prev = {}
            return {}
        n, m = len(jobs), len(self.counts)
        total = len(self.vnodes) * self.size
        fair = math.ceil(total / n)
        held = {job.seq: len(self.prev.get(job.seq, ())) for job in jobs}
        cost = np.empty((n, m + 1))
        for i, job in enumerate(jobs):
            s = self._speedups(job, fair) * len(self.vnodes) / total  # one node's share of GPUs counts 1
            factor = self._restart_factor(job, now)
            changed = self.counts != held[job.seq]
            s = np.where(changed, s * factor, s)
            allowed = self.counts == job.target_replicas if job.rigid else self.counts <= self._max_replicas(job)
            s = np.where(allowed, s, -1.0)
            cost[i, :m] = np.where(s >= 0, (np.maximum(s, 0) + 1e-3) ** self.p, np.inf)
            cost[i, m] = 1e-3 ** self.p  # no GPUs
        counts = self._solve(cost)
        return self._place(jobs, counts)

    # -- goodput view ------------------------------------------------------------------------
    def _speedups(self, job, fair: int) -> np.ndarray:
        """Speedup of each GPU count over the fair share, as Pollux sees the job (one model)."""
        kind = self.kinds.names[0]
        model = job.model(kind)
        if model is None:  # never ran: linear in GPUs
            return self.counts / fair
        app = job.apps[kind]
        nodes = np.ceil(self.counts / self.size)
        limits = dict(max_batch_size=app.max_batch_size, atomic_bsz_range=(app.min_local_bsz, app.max_local_bsz))
        fair = min(fair, app.max_batch_size // app.min_local_bsz)  # a fair share the batch limit allows
        base = speedup(model, np.array([1.0]), np.array([float(fair)]), **limits)[0]
        return np.asarray(speedup(model, nodes, self.counts.astype(float), **limits)) / base

    def _max_replicas(self, job) -> int:
        app = job.apps[self.kinds.names[0]]
        covered = min(job.apps[k].max_replicas for k in self.kinds.names)  # GPUs the profiles price anywhere
        limit = min(max(2 * job.max_profiled_replicas(self.kinds.names[0]), 1), self.cap,
                    app.max_batch_size // app.min_local_bsz, covered)
        return min(limit, job.max_replicas or limit)

    def _restart_factor(self, job, now: float) -> float:
        age = now - job.submit
        if age <= 0:
            return 1.0
        return max(age - (job.restarts or 0) * self.delay, 0.0) / (age + self.delay)

    # -- the program -------------------------------------------------------------------------
    def _solve(self, cost: np.ndarray) -> list:
        """GPU count per job (0: none) minimising the summed cost (p < 0; maximising for p > 0)
        within the cluster's GPUs and virtual nodes."""
        n, w = cost.shape
        finite = np.isfinite(cost)
        gpus = np.append(self.counts, 0).astype(float)
        whole = np.append(np.where(self.counts >= self.size, self.counts // self.size, 0), 0).astype(float)
        alone = self._each_alone(np.where(finite, cost * (1.0 if self.p < 0 else -1.0), np.inf), gpus, whole)
        if alone is not None:
            return alone
        c = (np.where(finite, cost, 0.0) * (1.0 if self.p < 0 else -1.0)).ravel()
        upper = finite.astype(float).ravel()
        rows = np.repeat(np.arange(n), w)
        one_each = csr_matrix((np.ones(n * w), (rows, np.arange(n * w))), shape=(n, n * w))
        capacity = csr_matrix(np.vstack([np.tile(gpus, n), np.tile(whole, n)]))
        result = milp(c, integrality=np.ones(n * w), bounds=Bounds(np.zeros(n * w), upper),
                      constraints=[LinearConstraint(one_each, 1, 1),
                                   LinearConstraint(capacity, 0, [len(self.vnodes) * self.size, len(self.vnodes)])],
                      options={"mip_rel_gap": 1e-4})
        if result.x is None:
            raise RuntimeError(f"Pollux's integer program failed: {result.message}")
        x = np.round(result.x).reshape(n, w)
        return [int(gpus[int(np.argmax(x[i]))]) for i in range(n)]

    def _each_alone(self, cost: np.ndarray, gpus: np.ndarray, whole: np.ndarray) -> list | None:
        """Every job's strictly cheapest option on its own, if together they fit the GPUs and the
        virtual nodes (then it is the program's one optimum); None otherwise."""
        order = np.argsort(cost, axis=1, kind="stable")[:, :2]
        best = np.take_along_axis(cost, order, axis=1)
        if (best[:, 1] - best[:, 0] < 1e-9).any():
            return None
        pick = order[:, 0]
        if gpus[pick].sum() > len(self.vnodes) * self.size or whole[pick].sum() > len(self.vnodes):
            return None
        return [int(gpus[k]) for k in pick]

    def _place(self, jobs: list, counts: list) -> dict:
        """Virtual GPU slots per job: a job with an unchanged count keeps its slots (unless they were
        cut across kinds), the others take whole free virtual nodes (distributed jobs) or the
        fullest node with room (smaller ones), else free slots in node order; each allocation is
        then cut to its main kind. Returns {seq: (kind, real node per GPU)}."""
        size = self.size
        free = [[True] * size for _ in self.vnodes]
        slots: dict[int, list] = {}
        for job, count in zip(jobs, counts):
            prev = self.prev.get(job.seq, ())
            if count and len(prev) == count and len({self.vnodes[v][0] for v, _ in prev}) == 1:
                slots[job.seq] = list(prev)  # same count, all of one kind: it keeps its GPUs
                for v, g in prev:
                    free[v][g] = False
        order = sorted((i for i, job in enumerate(jobs) if counts[i] and jobs[i].seq not in slots),
                       key=lambda i: -counts[i])
        for i in order:
            need, taken = counts[i], []
            if need >= size:  # whole virtual nodes for its whole-node part
                for v in range(len(self.vnodes)):
                    if need - len(taken) >= size and all(free[v]):
                        taken += [(v, g) for g in range(size)]
            else:  # the fullest virtual node it fits on
                fits = [v for v in range(len(self.vnodes)) if sum(free[v]) >= need]
                if fits:
                    v = min(fits, key=lambda v: (sum(free[v]), v))
                    taken = [(v, g) for g in range(size) if free[v][g]][:need]
            if len(taken) < need:  # no room of that shape: what is free, in order
                taken += [(v, g) for v in range(len(self.vnodes)) for g in range(size)
                          if free[v][g] and (v, g) not in taken][:need - len(taken)]
            for v, g in taken:
                free[v][g] = False
            slots[jobs[i].seq] = taken
        self.prev = {seq: tuple(s) for seq, s in slots.items()}
        out = {}
        for seq, s in slots.items():
            kinds = Counter(self.vnodes[v][0] for v, _ in s)
            main = max(kinds, key=lambda k: (kinds[k], -k))
            nodes = sorted(self.vnodes[v][1] for v, _ in s if self.vnodes[v][0] == main)
            out[seq] = (self.kinds.names[main], tuple(nodes))
        return out
