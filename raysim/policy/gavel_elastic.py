"""Gavel's heterogeneity-aware max-sum-throughput policy on elastic jobs run rigidly, the baseline of
Sia's comparison (raysim.elastic.gavel). Constants: conf/policy/gavel_elastic.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.elastic.gavel import GavelAllocator
from raysim.elastic.settings import ElasticSettings, round_setting
from raysim.policy.elastic import Elastic
from raysim.rounds.policies.base import LP_METHODS
from raysim.settings import setting


@dataclass(frozen=True)
class GavelElasticSettings(ElasticSettings):
    """Gavel's rounds and LPs, as Sia's simulator runs its Gavel baseline."""

    round_s: float = round_setting(360.0, "seconds between rounds (Sia's --interval=360 for Gavel)")
    lp_method: str = setting("ipm", "ipm (interior point, like Gavel's ECOS) | simplex", choices=LP_METHODS)


class GavelElastic(Elastic):
    name = "gavel_elastic"
    Settings = GavelElasticSettings
    tune_bsz = False  # jobs keep their own batch size and GPU count

    def make_allocator(self, kinds):
        return GavelAllocator(kinds, round_s=self.round_s, **self.constants)
