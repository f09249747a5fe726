"""Gavel's ThroughputSumWithPerf: maximise the total throughput sum_jk T_jk x_jk (raw steps/s)."""

from __future__ import annotations

from raysim.rounds import lp
from raysim.rounds.policies.base import AllocationInput, RoundPolicy, singles


class MaxSumThroughputPerf(RoundPolicy):
    name = "max_sum_throughput_perf"

    def allocate(self, state: AllocationInput) -> dict:
        return singles(state, lp.max_linear(state.throughputs, state.scale_factors, state.gpus, self.lp_method))
