"""Gavel's FinishTimeFairness (heterogeneity-agnostic Themis): finish_time_fairness_perf with every
GPU type's throughput set to the job's throughput on the reference type (Gavel: v100)."""

from __future__ import annotations

import numpy as np

from raysim.rounds.policies.base import AllocationInput, singles
from raysim.rounds.policies.finish_time_fairness_perf import FinishTimeFairnessPerf


class FinishTimeFairness(FinishTimeFairnessPerf):
    name = "finish_time_fairness"
    shuffle_types = True

    def allocate(self, state: AllocationInput) -> dict:
        same = np.repeat(state.reference[:, None], len(state.gpus), axis=1)
        return singles(state, self.solve(state, same))
