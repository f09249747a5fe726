"""Gavel's FIFO_Perf: recomputed from scratch at every recompute; in id order each job gets the
fastest GPU type with enough free GPUs; the queue stops at the first job that fits nowhere.
A job that fits only on types it cannot run on (throughput 0) waits and the queue goes on."""

from __future__ import annotations

from raysim.rounds.policies.base import AllocationInput, RoundPolicy
from raysim.rounds.policies.fifo import _one_type


class FifoPerf(RoundPolicy):
    name = "fifo_perf"
    fifo = True

    def allocate(self, state: AllocationInput) -> dict:
        free = state.gpus.astype(int).copy()
        assigned: dict[int, int] = {}
        for i, job in enumerate(state.jobs.tolist()):
            scale = int(state.scale_factors[i])
            fits = [k for k in range(len(free)) if free[k] > 0 and free[k] >= scale]
            if not fits:
                break
            k = max(fits, key=lambda t: (state.throughputs[i, t], -t))
            if state.throughputs[i, k] <= 0:
                continue        # fits only where it cannot run: it waits, the queue goes on
            assigned[job] = k
            free[k] -= scale
        return _one_type(state, assigned)
