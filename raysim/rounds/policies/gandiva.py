"""Gavel's Gandiva_Packing: while the jobs' GPUs fit the cluster, an equal time split per job; when
they do not, jobs are paired at random (same scale factor only, seeded) to share GPUs, pairs whose
packed throughput (normalised by isolated, summed over GPU types) is below 1 are dissolved at the
next recompute, and time is split equally among the resulting jobs and pairs."""

from __future__ import annotations

import random

import numpy as np

from raysim.rounds.policies.base import AllocationInput, RoundPolicy


class Gandiva(RoundPolicy):
    name = "gandiva"
    packing = True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.rng = random.Random(seed)
        self.grouped: dict[int, tuple] = {}   # job -> its combination (pair or single)

    def allocate(self, state: AllocationInput) -> dict:
        jobs = state.jobs.tolist()
        scale = dict(zip(jobs, state.scale_factors.tolist()))
        iso = {j: state.throughputs[i] for i, j in enumerate(jobs)}
        packed = {pair: state.pair_throughputs[p] for p, pair in enumerate(state.pairs)}
        stale = set()
        for job, combo in self.grouped.items():
            if any(j not in scale for j in combo) or _gain(combo, packed, iso) < 1.0:
                stale.update(combo)
        for job in stale:
            self.grouped.pop(job, None)
        if sum(scale.values()) <= state.gpus.sum():
            chosen = [(j,) for j in jobs]
        else:
            free = [j for j in jobs if j not in self.grouped]
            for _ in range(len(free)):
                if len(free) < 2:
                    break
                a, b = self.rng.sample(free, 2)
                if scale[a] != scale[b]:
                    continue
                free.remove(a)
                free.remove(b)
                self.grouped[a] = self.grouped[b] = (min(a, b), max(a, b))
            for j in free:
                self.grouped[j] = (j,)
            chosen = list(dict.fromkeys(self.grouped.values()))
        share = np.tile(state.gpus / len(chosen), (len(chosen), 1))
        share /= np.array([scale[c[0]] for c in chosen])[:, None]
        share /= np.maximum(share.sum(axis=1), 1.0)[:, None]
        out = {(j,): np.zeros(len(state.gpus)) for j in jobs}
        out.update({pair: np.zeros(len(state.gpus)) for pair in state.pairs})
        out.update(zip(chosen, share))
        return out


def _gain(combo: tuple, packed: dict, iso: dict) -> float:
    """Sum over GPU types of each job's packed / isolated throughput; 0 for a single job or a pair
    that cannot run packed on some type (Gavel's rule)."""
    if len(combo) == 1:
        return 0.0
    total = 0.0
    for k, both in enumerate(packed[combo]):
        for rate, j in zip(both, combo):
            if rate <= 0:
                return 0.0
            total += rate / iso[j][k]
    return total
