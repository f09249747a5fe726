"""Sia (SOSP'23): each round, one integer program over jobs x configurations (GPU kind, GPU count).

Per job and configuration the goodput comes from the job's fitted goodput model on that kind (Pollux's
model, batch size chosen to maximise it); a kind the job has not run on is projected from a kind it
has, scaled by the ratio of the application's one-GPU throughputs on the two kinds. A job that has
not run yet knows nothing: one GPU of any kind is worth 1 to it. Each job's row is divided by its
smallest non-zero goodput, configurations other than its current one are scaled down by its restart
factor (Pollux's: the share of its age not lost to restarts), raised to the power ``p`` and rounded
to two decimals. The program picks at most one configuration per job within each kind's GPUs,
keeping jobs that are still restoring a checkpoint where they are (rigid jobs, which keep their GPU
count and batch size, choose only among configurations of that count), and

    sum(X * G**p) + lambda_n * (jobs without a configuration) + lambda_a * (jobs whose configuration changes),

minimised for p < 0 (Sia's default, -0.5) and maximised for p > 0 (then the lambdas should be
negative, as Sia's notes say). Sia's artifact passes lambda_a = 0.01 but its objective never reads
it, so its runs are lambda_a = 0 (conf/policy/sia.yaml). Solved with HiGHS (scipy.optimize.milp).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint
from scipy.sparse import csr_matrix

from raysim.elastic.configs import Configs, Kinds, place_round_robin
from raysim.elastic.goodput import speedup
from raysim.highs import milp

#: goodput given to configurations a job cannot use (Sia's ZERO_ALLOC_GAIN)
ZERO_GAIN = np.float32(1e-4)
#: objective values closer than this are a tie (left to the solver)
TIE = 1e-9


class SiaAllocator:
    """The integer program of one VC's rounds; remembers each job's configuration between rounds."""

    def __init__(self, kinds: Kinds, configs: Configs, *, p: float, lambda_n: float, lambda_a: float,
                 clip: float, restart_penalty_s: dict, max_replicas_cap: int):
        if p == 0:
            raise ValueError("policy.p must not be 0")
        self.kinds, self.configs = kinds, configs
        self.p, self.lambda_n, self.lambda_a, self.clip = p, lambda_n, lambda_a, clip
        self.penalty = restart_penalty_s
        self.cap = max_replicas_cap
        self.prev: dict[int, int | None] = {}   # job seq -> configuration index last round
        self.rows: dict[int, tuple] = {}         # job seq -> (what its goodput row depends on, the row)

    def carry_over(self, old: "SiaAllocator") -> None:
        """Continue the rounds of `old`, an allocator of the same VC before its nodes changed: each
        job's last configuration, where this one's kinds still offer it."""
        index = {(self.kinds.names[k], int(g)): c for c, (k, g) in enumerate(zip(self.configs.kind, self.configs.gpus))}
        before = old.configs
        self.prev = {seq: None if c is None else index.get((old.kinds.names[int(before.kind[c])], int(before.gpus[c])))
                     for seq, c in old.prev.items()}

    def allocate(self, jobs: list, now: float, ratios) -> dict:
        """{seq: (GPU kind, node index per GPU)} for the active `jobs` (in arrival order) at `now`,
        jobs without GPUs left out; `ratios(app, kind, dest)` is the one-GPU throughput ratio used to
        project goodputs."""
        shapes = self.configs
        n, m = len(jobs), len(shapes.gpus)
        if not n or not m:  # (no job, or no configuration: every node is down)
            self.prev = {}
            return {}
        gains = np.zeros((n, m), dtype=np.float32)
        factors = np.ones(n)
        rows = {}
        for i, job in enumerate(jobs):
            limit = self._max_replicas(job)
            basis = (tuple(job.perf.values()), job.grad, limit)
            cached = self.rows.get(job.seq)
            rows[job.seq] = cached if cached is not None and cached[0] == basis else (basis, self._row(job, ratios, limit))
            gains[i] = rows[job.seq][1]
            factors[i] = self._restart_factor(job, now)
        self.rows = rows
        keep = {}
        for i, job in enumerate(jobs):
            prev = self.prev.get(job.seq)
            if prev is not None:
                kept = gains[i, prev]
                gains[i] *= np.float32(factors[i])
                gains[i, prev] = kept
                if job.rescale_left > 0:
                    keep[i] = prev
        with np.errstate(divide="ignore"):  # a zero gain raised to p < 0: infinite, clipped below
            powered = np.round(np.power(gains, np.float32(self.p)), 2)
        powered[powered > self.clip] = self.clip
        cost = powered.astype(float)
        if self.lambda_a:
            for i, job in enumerate(jobs):
                prev = self.prev.get(job.seq)
                if prev is not None:
                    cost[i] += self.lambda_a
                    cost[i, prev] -= self.lambda_a
        choice = self._solve(cost, keep)
        self.prev = {job.seq: choice[i] for i, job in enumerate(jobs)}
        per_kind: dict[int, list] = {}
        for job in jobs:
            c = self.prev[job.seq]
            if c is not None:
                per_kind.setdefault(int(shapes.kind[c]), []).append((job.seq, int(shapes.gpus[c])))
        placed = {}
        for k, allocs in per_kind.items():
            name = self.kinds.names[k]
            for seq, ids in place_round_robin(allocs, self.kinds.per_node[k], self.kinds.nodes[k]).items():
                placed[seq] = (name, tuple(ids))
        return placed

    # -- one job's row -------------------------------------------------------------------------
    def _row(self, job, ratios, limit: int) -> np.ndarray:
        shapes, kinds = self.configs, self.kinds
        row = np.zeros(len(shapes.gpus), dtype=np.float32) + ZERO_GAIN
        known = [k for k, name in enumerate(kinds.names) if job.model(name) is not None]
        unknown = set()
        for k, name in enumerate(kinds.names):
            idx = shapes.of_kind(k)
            valid = idx[shapes.gpus[idx] == limit] if job.rigid else idx[shapes.gpus[idx] <= limit]
            valid = valid[shapes.gpus[valid] <= job.apps[name].max_replicas]  # what the profiles price
            if k in known:
                row[valid] = self._goodput(job, name, shapes.nodes[valid], shapes.gpus[valid])
            elif known:  # projected from the first kind it has run on
                dest = kinds.names[known[0]]
                nodes = -(-shapes.gpus[valid] // kinds.per_node[known[0]])
                row[valid] = self._goodput(job, dest, nodes, shapes.gpus[valid]) * np.float32(ratios(job.app, name, dest))
            else:
                unknown.add(k)
        mins = [row[shapes.of_kind(k)][row[shapes.of_kind(k)] > ZERO_GAIN].min() for k in range(len(kinds.names))
                if k not in unknown and (row[shapes.of_kind(k)] > ZERO_GAIN).any()]
        row *= np.float32(1.0 / min(mins)) if mins else np.float32(1.0)
        for k in unknown:  # nothing known: one GPU (a rigid job: its own count) of this kind is worth 1
            idx = shapes.of_kind(k)
            row[idx[shapes.gpus[idx] == (job.target_replicas if job.rigid else 1)]] = 1.0
        row[row <= ZERO_GAIN] = ZERO_GAIN
        return row

    def _goodput(self, job, kind: str, nodes, gpus) -> np.ndarray:
        app = job.apps[kind]
        return np.asarray(speedup(job.model(kind), nodes.astype(float), gpus.astype(float),
                                  max_batch_size=job.target_batch, atomic_bsz_range=(app.min_local_bsz, app.max_local_bsz),
                                  accumulation=True, tune_bsz=job.tune_bsz), dtype=np.float32)

    def _max_replicas(self, job) -> int:
        """Twice the most GPUs the job has been profiled on, over all kinds (Sia shares the maximum
        across kinds when it projects goodputs), at least 1, at most the cap, the batch limit and
        the job's own maximum; a rigid job's own count."""
        if job.rigid:
            return job.target_replicas
        limit = max(min(max(2 * job.max_profiled_replicas(name), 1), self.cap,
                        job.apps[name].max_batch_size // job.apps[name].min_local_bsz) for name in self.kinds.names)
        return min(limit, job.max_replicas or limit)

    def _restart_factor(self, job, now: float) -> float:
        """Pollux's re-allocation factor: (age - restarts x penalty) / (age + penalty), 1 while the
        job is younger than one penalty."""
        penalty = self.penalty.get(job.app, self.penalty["default"])
        age = now - job.submit
        if age < penalty:
            return 1.0
        return max(age - (job.restarts or 0) * penalty, 0.0) / (age + penalty)

    # -- the program ---------------------------------------------------------------------------
    def _solve(self, cost: np.ndarray, keep: dict) -> list:
        """The chosen configuration per job (None: none): each job's own best when those fit and
        are each the only best (then they are the program's one optimum), else by HiGHS."""
        n, m = cost.shape
        shapes, kinds = self.configs, self.kinds
        alone = self._each_alone(cost, keep)
        if alone is not None:
            return alone
        # sum(X*A) + lambda_n*(n - sum X): minimised for p < 0, maximised for p > 0 (Sia's objective)
        c = (cost.ravel() - self.lambda_n) * (1.0 if self.p < 0 else -1.0)
        rows = np.repeat(np.arange(n), m)
        one_each = csr_matrix((np.ones(n * m), (rows, np.arange(n * m))), shape=(n, n * m))
        per_kind = csr_matrix((np.tile(shapes.gpus, n).astype(float), (np.tile(shapes.kind, n), np.arange(n * m))),
                              shape=(len(kinds.names), n * m))
        lower = np.zeros(n * m)
        for i, k in keep.items():
            lower[i * m + k] = 1.0
        result = milp(c, integrality=np.ones(n * m), bounds=Bounds(lower, np.ones(n * m)),
                      constraints=[LinearConstraint(one_each, 0, 1),
                                   LinearConstraint(per_kind, 0, kinds.capacity.astype(float))],
                      options={"mip_rel_gap": 1e-4})
        if result.x is None:
            raise RuntimeError(f"Sia's integer program failed: {result.message}")
        x = np.round(result.x).reshape(n, m)
        return [int(np.argmax(x[i])) if x[i].sum() > 0 else None for i in range(n)]

    def _each_alone(self, cost: np.ndarray, keep: dict) -> list | None:
        """Every job's strictly best option on its own (a configuration or none), if together they
        fit every kind; None when they do not fit or some job has tied options."""
        gain = (cost - self.lambda_n) * (1.0 if self.p < 0 else -1.0)  # < 0: better than no GPUs
        choice: list = []
        used = np.zeros(len(self.kinds.names))
        for i, row in enumerate(gain):
            if i in keep:
                c = keep[i]
            else:
                order = np.argsort(row, kind="stable")[:2]
                best = row[order[0]]
                second = row[order[1]] if len(order) > 1 else np.inf
                if abs(best) < TIE or abs(second - best) < TIE:
                    return None
                c = int(order[0]) if best < 0 else None
            choice.append(c)
            if c is not None:
                used[self.configs.kind[c]] += self.configs.gpus[c]
        return choice if (used <= self.kinds.capacity).all() else None
