"""Gavel's Isolated: every job gets an equal share of every GPU type (per GPU it needs), scaled so
that no job gets more than all of its time. No solver."""

from __future__ import annotations

from raysim.rounds.policies.base import AllocationInput, RoundPolicy, equal_share, singles


class Isolated(RoundPolicy):
    name = "isolated"
    shuffle_types = True

    def allocate(self, state: AllocationInput) -> dict:
        return singles(state, equal_share(state.gpus, state.scale_factors))
