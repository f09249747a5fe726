"""Gavel's MaxMinFairness (least attained service, heterogeneity-agnostic): the max-min LP of
max_min_fairness_perf with every throughput set to 1, so a job's share of GPU time is equalised."""

from __future__ import annotations

import numpy as np

from raysim.rounds.policies.base import AllocationInput, RoundPolicy, singles
from raysim.rounds.policies.max_min_fairness_perf import max_min_fairness


class MaxMinFairness(RoundPolicy):
    name = "max_min_fairness"
    shuffle_types = True

    def allocate(self, state: AllocationInput) -> dict:
        return singles(state, max_min_fairness(state, np.ones_like(state.throughputs), self.lp_method))
