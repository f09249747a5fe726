"""Retirement of nodes that keep failing (`retire=threshold | scored`, docs/failures.md), as AIReSim's
removal policies decide it: after each repair a node may be retired for good (its stream then ends
with the repair's ``down``, as a node log's ``leave``).

A policy gives each node a *record* of its own (`record()`), which its failure stream
(raysim.sim.failures.NodeFailures) keeps up to date: `failed(t, life_s, repaired)` at each failure
(at `t`, seconds, after a lifetime of `life_s`; `repaired`: the failure sends the node to repair),
and asks `retires(t)` once a repair is drawn (`t`: when it ends). Records are plain, picklable state.

- :class:`Threshold`: retired once `max_failures` of its failures, over its whole history, fall
  within `window_s` seconds before the repair ends.
- :class:`Scored`: a score that starts at `initial`, loses `penalty` per failure that sends the
  node to repair, gains `increment` per whole `period_s` of each lifetime (one per lifetime where
  `period_s` is 0), and retires the node once it is at or below `threshold`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    """Retire a node with `max_failures` failures within `window_s` seconds of a repair's end."""

    max_failures: int
    window_s: float

    def record(self) -> ThresholdRecord:
        return ThresholdRecord(self)


class ThresholdRecord:
    """One node's failure times (only those a later window can still hold are kept)."""

    def __init__(self, policy: Threshold):
        self.policy, self.times = policy, deque()

    def failed(self, t: float, life_s: float, repaired: bool) -> None:
        self.times.append(t)

    def retires(self, t: float) -> bool:
        cutoff = t - self.policy.window_s
        while self.times and self.times[0] < cutoff:  # (checks come later and later: an old time never counts again)
            self.times.popleft()
        return len(self.times) >= self.policy.max_failures


@dataclass(frozen=True)
class Scored:
    """Retire a node whose score falls to `threshold` or below (see the module docs)."""

    initial: float
    penalty: float
    increment: float
    period_s: float
    threshold: float

    def record(self) -> ScoredRecord:
        return ScoredRecord(self)


class ScoredRecord:
    """One node's score."""

    def __init__(self, policy: Scored):
        self.policy, self.score = policy, policy.initial

    def failed(self, t: float, life_s: float, repaired: bool) -> None:
        p = self.policy
        periods = 1 if p.period_s <= 0 else int(life_s // p.period_s)
        self.score += periods * p.increment - (p.penalty if repaired else 0)

    def retires(self, t: float) -> bool:
        return self.score <= self.policy.threshold
