"""Quota sharing between VCs (`sharing=none|borrow|global`): settings, where each cohort is decided,
the lending policy and the epoch decisions, and the cluster-wide queue. The VC side is
raysim.sim.quota."""

from __future__ import annotations

#: The one VC of a run with sharing=global: every VC's pools, every VC's jobs.
GLOBAL_VC = "global"


def merged_layout(layout: dict) -> tuple[dict, tuple]:
    """(the layout of one cluster-wide VC holding every VC's pools in layout order, the VC each
    of its pools came from)."""
    pools = [pool for vc_pools in layout.values() for pool in vc_pools]
    homes = tuple(vc for vc, vc_pools in layout.items() for _ in vc_pools)
    return {GLOBAL_VC: pools}, homes
