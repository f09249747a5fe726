"""Gavel's heterogeneity-aware baseline on elastic jobs, as Sia's simulator runs it (its gavel.py).

Jobs stay rigid: their own GPU count and batch size (no batch-size tuning). Each round an LP gives each job a share of
time per GPU kind from its iterations per second there (the profiles' step time of the job's
placement and batch size), maximising their sum (Gavel's max_sum_throughput_perf, the baseline Sia
compares with); a job's priority on a kind is its share over the fraction of the kind's
time it has received (time starts at half a round per job), and the jobs with the highest
priorities run, one kind each, while GPUs last. A job keeps its GPUs when it runs on the same kind
again and they are still free; otherwise it takes free GPUs server by server.
"""

from __future__ import annotations

import math

import numpy as np

from raysim.elastic.configs import Kinds
from raysim.rounds import lp

#: throughput Sia's Gavel gives a job on a kind with fewer GPUs than it needs
TOO_SMALL = 1e-1


class GavelAllocator:
    def __init__(self, kinds: Kinds, *, round_s: float, lp_method: str = "ipm"):
        self.kinds = kinds
        self.round_s = round_s
        self.lp_method = lp_method
        n = len(kinds.names)
        self.job_time: dict[int, np.ndarray] = {}
        self.kind_time = np.zeros(n)
        self.workers: dict[int, tuple] = {}   # seq -> (kind index, worker ids) of the last round

    def carry_over(self, old: "GavelAllocator") -> None:
        """Continue the rounds of `old`, an allocator of the same VC (same kinds) before its nodes
        changed: the time each job ran per kind (its priorities); its workers name other nodes now."""
        self.job_time, self.kind_time = old.job_time, old.kind_time

    def allocate(self, jobs: list, now: float, ratios) -> dict:
        kinds = self.kinds
        n = len(kinds.names)
        for job in jobs:
            if job.seq not in self.job_time:
                self.job_time[job.seq] = np.full(n, self.round_s / 2)
                self.kind_time += self.round_s / 2
        live = {job.seq for job in jobs}
        self.workers = {s: w for s, w in self.workers.items() if s in live}
        if not jobs:
            return {}
        rates = np.array([[self._rate(job, k) for k in range(n)] for job in jobs])
        scale = np.array([job.target_replicas for job in jobs], dtype=float)
        capacity = kinds.capacity.astype(float)
        share = np.clip(lp.max_linear(rates, scale, capacity, self.lp_method), 0.0, 1.0)
        queue = []
        for k in range(n):
            for i, job in enumerate(jobs):
                x = share[i, k]
                fraction = self.job_time[job.seq][k] / self.kind_time[k] if self.kind_time[k] else 0.0
                priority = 0.0 if x == 0 else (x / fraction if fraction > 0 else x * 1e9)
                queue.append((priority, 0.0, x, i, k))
        queue.sort(key=lambda e: (e[0], e[1], e[2]), reverse=True)  # stable: kind order, then job order
        left = capacity.astype(int).copy()
        chosen: dict[int, list] = {k: [] for k in range(n)}
        done = set()
        for _, _, _, i, k in queue:
            if left[k] == 0 or i in done:
                continue
            need = jobs[i].target_replicas
            if need > left[k]:
                continue
            left[k] -= need
            done.add(i)
            chosen[k].append((jobs[i].seq, need))
        placed = self._place(chosen)
        for seq, (k, _) in placed.items():
            self.job_time[seq][k] += self.round_s
            self.kind_time[k] += self.round_s
        self.workers = placed
        per_node = kinds.per_node
        return {seq: (kinds.names[k], tuple(w // per_node[k] for w in ids)) for seq, (k, ids) in placed.items()}

    def _rate(self, job, k: int) -> float:
        """Iterations per second of the rigid job on kind k (Sia's Gavel predict_throughput)."""
        kinds = self.kinds
        gpus, per = job.target_replicas, kinds.per_node[k]
        if gpus > kinds.capacity[k]:
            return TOO_SMALL
        placement = tuple([per] * (gpus // per) + ([gpus % per] if gpus % per else []))
        app = job.apps[kinds.names[k]]
        local = math.ceil(job.target_batch / gpus - 1e-8)
        accum = math.ceil(local / app.max_local_bsz_for(placement) - 1e-8) - 1
        if gpus == 1:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        atomic = min(atomic, int(app.max_batch_size / (gpus * (accum + 1))))
        step, sync = app.step_time(placement, atomic)
        return 1.0 / (step + (step - sync) * accum)

    def _place(self, chosen: dict) -> dict:
        """Worker ids per chosen job, per kind: the largest jobs first; a job on the same kind as last
        round keeps its workers if none is taken yet, the others take free workers in order."""
        out = {}
        for k, allocs in chosen.items():
            per, servers = self.kinds.per_node[k], self.kinds.nodes[k]
            free = [list(range(s * per, (s + 1) * per)) for s in range(servers)]
            taken: set = set()
            pointer = 0
            allocs = sorted(allocs, key=lambda a: a[1], reverse=True)
            for size in sorted({a[1] for a in allocs}, reverse=True):
                group = [a for a in allocs if a[1] == size]
                for seq, _ in group:
                    prev = self.workers.get(seq)
                    if prev is not None and prev[0] == k and not taken.intersection(prev[1]):
                        out[seq] = (k, prev[1])
                        taken.update(prev[1])
                for seq, _ in group:
                    ids = list(out[seq][1]) if seq in out else []
                    while len(ids) < size and pointer < servers:
                        if not free[pointer]:
                            pointer += 1
                            continue
                        worker = free[pointer].pop(0)
                        if worker not in taken:
                            ids.append(worker)
                            taken.add(worker)
                    out[seq] = (k, tuple(ids))
        return out
