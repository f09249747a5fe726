"""Round-based policies (Gavel's family), one per file; :data:`POLICIES` names them for configs."""

from __future__ import annotations

from raysim.registry import Registry
from raysim.rounds.policies.base import LP_METHODS, AllocationInput, RoundPolicy

#: name -> RoundPolicy subclass, each module imported when its policy is first used
POLICIES: Registry = Registry({name: f"raysim.rounds.policies.{module}:{cls}" for name, module, cls in (
    ("gavel_fifo", "fifo", "Fifo"), ("fifo_perf", "fifo_perf", "FifoPerf"), ("isolated", "isolated", "Isolated"),
    ("max_min_fairness", "max_min_fairness", "MaxMinFairness"),
    ("max_min_fairness_perf", "max_min_fairness_perf", "MaxMinFairnessPerf"),
    ("max_min_fairness_packed", "max_min_fairness_packed", "MaxMinFairnessPacked"),
    ("finish_time_fairness", "finish_time_fairness", "FinishTimeFairness"),
    ("finish_time_fairness_perf", "finish_time_fairness_perf", "FinishTimeFairnessPerf"),
    ("max_sum_throughput_perf", "max_sum_throughput_perf", "MaxSumThroughputPerf"),
    ("min_total_duration_perf", "min_total_duration_perf", "MinTotalDurationPerf"),
    ("gandiva", "gandiva", "Gandiva"))}, what="round-based policy")


def round_policy(name: str, seed: int = 0, lp_method: str = "ipm", **constants) -> RoundPolicy:
    """An instance of the round-based policy `name` solving its LPs with `lp_method`; ValueError
    listing the known ones."""
    if name not in POLICIES:
        raise ValueError(f"unknown round-based policy {name!r}; known: {', '.join(sorted(POLICIES))}")
    if lp_method not in LP_METHODS:
        raise ValueError(f"policy.lp_method must be one of {', '.join(LP_METHODS)}, not {lp_method!r}")
    policy = POLICIES[name](seed=seed, **constants)
    policy.lp_method = lp_method
    return policy


__all__ = ["POLICIES", "AllocationInput", "RoundPolicy", "round_policy"]
