"""Gavel's heterogeneity-aware max-sum-throughput policy on elastic jobs run rigidly, the baseline of
Sia's comparison (raysim.elastic.gavel). Constants: conf/policy/gavel_elastic.yaml."""

from __future__ import annotations

from raysim.elastic.gavel import GavelAllocator
from raysim.policy.elastic import Elastic


class GavelElastic(Elastic):
    name = "gavel_elastic"
    tune_bsz = False  # jobs keep their own batch size and GPU count

    @classmethod
    def check_constants(cls, policy) -> None:
        from raysim.errors import ConfigError
        from raysim.rounds.policies.base import LP_METHODS

        super().check_constants(policy)
        if policy.lp_method not in LP_METHODS:
            raise ConfigError("policy.lp_method", f"must be one of {', '.join(LP_METHODS)}", policy.lp_method)

    def make_allocator(self, kinds):
        return GavelAllocator(kinds, round_s=self.round_s, **self.constants)
