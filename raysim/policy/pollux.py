"""Pollux (OSDI'21, Qiao et al.): goodput-optimised, heterogeneity-unaware scheduling of elastic
jobs, as Sia's comparison runs it (raysim.elastic.pollux). Constants: conf/policy/pollux.yaml."""

from __future__ import annotations

from raysim.elastic.pollux import PolluxAllocator
from raysim.policy.elastic import Elastic


class Pollux(Elastic):
    name = "pollux"
    positive = ("round_s", "max_replicas_cap", "max_nodes_per_job")
    nonzero = ("p",)
    pooled = True  # one goodput model per job, whatever the GPU kind

    def make_allocator(self, kinds):
        return PolluxAllocator(kinds, sizes=self.inputs.rigid_sizes, **self.constants)
