"""Gavel's FinishTimeFairness_Perf (Themis): minimise the largest finish-time ratio

    rho_j = (t_j + R_j / sum_k T_jk x_jk) / (C_j + R_j / T^iso_j)

t_j: time since arrival, R_j: remaining steps, T^iso_j: the job's throughput under the isolated
equal share, C_j: the time the job would have needed so far in isolation (accumulated between
recomputes from the steps it made and its previous T^iso).

Not an LP in (x, rho), but for a fixed rho the constraints are linear: y_j >= R_j / (rho D_j - t_j)
with D_j the denominator. The policy starts from the equal share's rho (feasible) and repeats: solve
the max-min LP lambda = max_x min_j y_j / q_j(rho) (HiGHS), then move rho to the ratio that LP's
allocation achieves; rho decreases to the optimum, where lambda = 1. The allocation returned is
the last LP's (every job at or under the optimal ratio, slack spread uniformly).
"""

from __future__ import annotations

import numpy as np

from raysim.rounds import lp
from raysim.rounds.policies.base import AllocationInput, RoundPolicy, equal_share, singles

#: Stop when rho changes by less than this (relative) between two LPs, or after MAX_LPS LPs.
TOLERANCE = 1e-7
MAX_LPS = 50


class FinishTimeFairnessPerf(RoundPolicy):
    name = "finish_time_fairness_perf"

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.isolated_time: dict[int, float] = {}
        self.previous: dict[int, tuple[float, float]] = {}   # job -> (remaining steps, T^iso) at the last call

    def allocate(self, state: AllocationInput) -> dict:
        return singles(state, self.solve(state, state.throughputs))

    def solve(self, state: AllocationInput, throughputs: np.ndarray) -> np.ndarray:
        jobs = state.jobs.tolist()
        iso = (throughputs * equal_share(state.gpus, state.scale_factors)).sum(axis=1)
        remaining = state.steps_remaining
        for i, j in enumerate(jobs):
            before = self.previous.get(j)
            self.isolated_time[j] = self.isolated_time.get(j, 0.0) + (
                0.0 if before is None else (before[0] - remaining[i]) / before[1])
        self.previous = {j: (remaining[i], iso[i]) for i, j in enumerate(jobs)}
        denominator = np.array([self.isolated_time[j] for j in jobs]) + remaining / iso
        return min_max_ratio(throughputs, state, denominator, iso, self.lp_method)


def min_max_ratio(throughputs, state: AllocationInput, denominator, start_throughput,
                  method: str = "ipm") -> np.ndarray:
    """Allocation minimising max_j (t_j + R_j / y_j) / D_j (see the module docstring); LPs by `method`."""
    since, remaining = state.times_since_start, state.steps_remaining
    rho = float(((since + remaining / start_throughput) / denominator).max())
    x = None
    for _ in range(MAX_LPS):
        need = remaining / np.maximum(rho * denominator - since, 1e-12)
        x_new, level = lp.max_min(throughputs / need[:, None], state.scale_factors, state.gpus, method)
        if level < 1.0 - 1e-9 and x is not None:
            break       # numerical edge: keep the last feasible allocation
        x = x_new
        y = (throughputs * x).sum(axis=1)
        achieved = float(((since + remaining / np.maximum(y, 1e-300)) / denominator).max())
        if achieved >= rho * (1 - TOLERANCE):
            break
        rho = achieved
    return x
