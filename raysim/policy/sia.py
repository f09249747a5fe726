"""Sia (SOSP'23, Jayaram Subramanya et al.): heterogeneity-aware, goodput-optimised scheduling of
elastic jobs; each round one integer program chooses every job's GPU kind and count
(raysim.elastic.sia). Constants: conf/policy/sia.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.elastic.settings import ElasticSettings, round_setting
from raysim.elastic.sia import SiaAllocator
from raysim.policy.elastic import Elastic
from raysim.settings import setting

#: seconds a restart costs per application (Sia's sia.py get_restart_penalty); "default": the others
RESTART_PENALTY_S = {"cifar10": 30.0, "deepspeech2": 25.0, "bert": 120.0, "yolov3": 45.0, "imagenet": 250.0,
                     "default": 30.0}


@dataclass(frozen=True)
class SiaSettings(ElasticSettings):
    """Sia's integer program and its rounds; values of Sia's artifact (run_experiment.sh)."""

    round_s: float = round_setting(60.0, "seconds between rounds (--interval)")
    p: float = setting(-0.5, "fairness power (--policy_p_val)", nonzero=True)
    lambda_n: float = setting(1.1, "cost of leaving a job without GPUs (--mip_lambda_n)", minimum=0)
    lambda_a: float = setting(0.0, "cost of a change of allocation (Sia's run passes --mip_lambda_a=0.01, which "
                              "its objective never reads: 0 reproduces it)", minimum=0)
    clip: float = setting(3000.0, "cap on a powered goodput (sia_goodput_clip_val)", above=0)
    max_replicas_cap: int = setting(64, "most GPUs a job may get", minimum=1)
    restart_penalty_s: dict[str, float] = setting(RESTART_PENALTY_S, "seconds a restart costs, in the restart "
                                                  "factor, per application (default: the others)", minimum=0)


class Sia(Elastic):
    name = "sia"
    Settings = SiaSettings

    def make_allocator(self, kinds):
        return SiaAllocator(kinds, self.configs, **self.constants)
