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


def round_policy(name: str, seed: int = 0, **constants) -> RoundPolicy:
    """An instance of the round-based policy `name`; ValueError listing the known ones."""
    if name not in POLICIES:
        raise ValueError(f"unknown round-based policy {name!r}; known: {', '.join(sorted(POLICIES))}")
    return POLICIES[name](seed=seed, **constants)


__all__ = ["POLICIES", "AllocationInput", "RoundPolicy", "round_policy"]
