"""Pollux (OSDI'21, Qiao et al.): goodput-optimised, heterogeneity-unaware scheduling of elastic
jobs, as Sia's comparison runs it (raysim.elastic.pollux). Constants: conf/policy/pollux.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.elastic.pollux import PolluxAllocator
from raysim.elastic.settings import ElasticSettings, round_setting
from raysim.policy.elastic import Elastic
from raysim.settings import setting


@dataclass(frozen=True)
class PolluxSettings(ElasticSettings):
    """Pollux's power mean and its rounds; values of Sia's artifact (multi_simulator_unaware.py)."""

    round_s: float = round_setting(60.0, "seconds between rounds (--interval)")
    p: float = setting(-1.0, "power-mean exponent (--policy_p_val)", nonzero=True)
    restart_delay_s: float = setting(30.0, "seconds a restart costs, in the restart factor", minimum=0)
    max_replicas_cap: int = setting(64, "most GPUs a job may get", minimum=1)
    max_nodes_per_job: int = setting(16, "most (virtual) nodes a job may span", minimum=1)


class Pollux(Elastic):
    name = "pollux"
    Settings = PolluxSettings
    pooled = True  # one goodput model per job, whatever the GPU kind

    def make_allocator(self, kinds):
        return PolluxAllocator(kinds, sizes=self.inputs.rigid_sizes, **self.constants)
