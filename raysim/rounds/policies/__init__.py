"""Round-based policies (Gavel's family), one per file; :data:`POLICIES` names them for configs."""

from __future__ import annotations

from raysim.rounds.policies.base import AllocationInput, RoundPolicy
from raysim.rounds.policies.fifo import Fifo
from raysim.rounds.policies.fifo_perf import FifoPerf
from raysim.rounds.policies.finish_time_fairness import FinishTimeFairness
from raysim.rounds.policies.finish_time_fairness_perf import FinishTimeFairnessPerf
from raysim.rounds.policies.gandiva import Gandiva
from raysim.rounds.policies.isolated import Isolated
from raysim.rounds.policies.max_min_fairness import MaxMinFairness
from raysim.rounds.policies.max_min_fairness_packed import MaxMinFairnessPacked
from raysim.rounds.policies.max_min_fairness_perf import MaxMinFairnessPerf
from raysim.rounds.policies.max_sum_throughput_perf import MaxSumThroughputPerf
from raysim.rounds.policies.min_total_duration_perf import MinTotalDurationPerf

POLICIES: dict[str, type[RoundPolicy]] = {cls.name: cls for cls in (
    Fifo, FifoPerf, Isolated, MaxMinFairness, MaxMinFairnessPerf, MaxMinFairnessPacked, FinishTimeFairness,
    FinishTimeFairnessPerf, MaxSumThroughputPerf, MinTotalDurationPerf, Gandiva)}


def round_policy(name: str, seed: int = 0, lp_method: str = "ipm", **constants) -> RoundPolicy:
    """An instance of the round-based policy `name` solving its LPs with `lp_method`; ValueError
    listing the known ones."""
    from raysim.rounds.lp import METHODS

    if name not in POLICIES:
        raise ValueError(f"unknown round-based policy {name!r}; known: {', '.join(sorted(POLICIES))}")
    if lp_method not in METHODS:
        raise ValueError(f"rounds.lp_method must be one of {', '.join(METHODS)}, not {lp_method!r}")
    policy = POLICIES[name](seed=seed, **constants)
    policy.lp_method = lp_method
    return policy


__all__ = ["POLICIES", "AllocationInput", "RoundPolicy", "round_policy"]
