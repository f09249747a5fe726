"""The repair pipeline of a node that goes down (`repair=pipeline`, docs/failures.md), as AIReSim
defines it: an *automated* repair (mean `auto_s`), escalated with probability `escalate` to a
*manual* repair after it (mean `manual_s`); the stage that ends the repair reports success, but
falsely with probability `auto_false` (automated) or `manual_false` (manual). A true success makes a
bad node good; a false one leaves it as it was (a good node stays good either way). Times are fixed
or exponential (`times`).

A node draws its repairs from a generator of its own (seeded by [run seed, VC, node, REPAIR]), apart
from its failure times, so that `repair=fixed` runs draw exactly what they drew before the pipeline
existed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: How a repair stage's time is drawn: its mean itself, or exponential of that mean.
TIMES = ("fixed", "exponential")
#: The last word of a node's repair seed ([seed, VC, node, REPAIR]; raysim.sim.failures.HEALTH is 1).
REPAIR = 2


@dataclass(frozen=True)
class Repair:
    """One repair's outcome: its time (s), whether it went on to a manual repair, and whether its
    reported success was false (the node's fault, if it was bad, stays)."""

    time_s: float
    manual: bool
    false: bool


@dataclass(frozen=True)
class Pipeline:
    """The automated-then-manual repair pipeline (see the module docs)."""

    auto_s: float
    escalate: float
    manual_s: float
    auto_false: float
    manual_false: float
    times: str = "exponential"

    def draw(self, rng: np.random.Generator) -> Repair:
        """One repair drawn from `rng`, in AIReSim's order: the automated time, whether it escalates,
        then (manual time and) whether the success it reports is false."""
        auto = self.time(rng, self.auto_s)
        if rng.random() < self.escalate:
            manual = self.time(rng, self.manual_s)
            return Repair(auto + manual, True, bool(rng.random() < self.manual_false))
        return Repair(auto, False, bool(rng.random() < self.auto_false))

    def time(self, rng: np.random.Generator, mean: float) -> float:
        return rng.exponential(mean) if self.times == "exponential" and mean > 0 else mean

    def mean_s(self) -> float:
        """The mean repair time: auto + escalate x manual."""
        return self.auto_s + self.escalate * self.manual_s
