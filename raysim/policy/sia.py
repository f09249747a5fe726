"""Sia (SOSP'23, Jayaram Subramanya et al.): heterogeneity-aware, goodput-optimised scheduling of
elastic jobs; each round one integer program chooses every job's GPU kind and count
(raysim.elastic.sia). Constants: conf/policy/sia.yaml."""

from __future__ import annotations

from raysim.elastic.sia import SiaAllocator
from raysim.policy.elastic import Elastic


class Sia(Elastic):
    name = "sia"
    positive = ("round_s", "clip", "max_replicas_cap")
    nonzero = ("p",)

    def make_allocator(self, kinds):
        return SiaAllocator(kinds, self.configs, **self.constants)
