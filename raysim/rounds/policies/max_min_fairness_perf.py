"""Gavel's MaxMinFairness_Perf (heterogeneity-aware least attained service): maximise the minimum
over jobs of  sum_k T_jk s_j x_jk / (w_j * T^prop_j),  T^prop_j being the job's throughput under a
share of every type proportional to its size. One max-min LP (HiGHS), as Gavel solves it."""

from __future__ import annotations

import numpy as np

from raysim.rounds import lp
from raysim.rounds.policies.base import AllocationInput, RoundPolicy, proportional_throughput, singles


class MaxMinFairnessPerf(RoundPolicy):
    name = "max_min_fairness_perf"

    def allocate(self, state: AllocationInput) -> dict:
        return singles(state, max_min_fairness(state, state.throughputs, self.lp_method))


def max_min_fairness(state: AllocationInput, throughputs: np.ndarray, method: str = "ipm") -> np.ndarray:
    """The max-min LP's allocation for the given throughput matrix (LP method `method`)."""
    normal = state.priority_weights * proportional_throughput(throughputs, state.gpus)
    coefficients = throughputs * state.scale_factors[:, None] / normal[:, None]
    x, _ = lp.max_min(coefficients, state.scale_factors, state.gpus, method)
    return x
