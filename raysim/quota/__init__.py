"""Quotas between VCs (`quota=none|borrow|global`).

- `ledger`: the VC side, the loan operations and bookkeeping of raysim.sim.engine.VCSimulator. It
  belongs to the pure simulation core: it imports no Ray and nothing of raysim's runtime.
- `settings`: the checked settings; `cohorts`: where each cohort is decided; `lending`: the lending
  policy; `exchange`: the decisions at epochs; `reports`: the quota reports as Arrow.
- here: the cluster-wide queue of mode global. This module imports nothing, so that the engine
  imports `ledger` without pulling in the rest of the package.
"""

from __future__ import annotations

#: The one VC of a run with quota=global: every VC's pools, every VC's jobs.
GLOBAL_VC = "global"


def merged_layout(layout: dict) -> tuple[dict, tuple]:
    """(the layout of one cluster-wide VC holding every VC's pools in layout order, the VC each
    of its pools came from)."""
    pools = [pool for vc_pools in layout.values() for pool in vc_pools]
    homes = tuple(vc for vc, vc_pools in layout.items() for _ in vc_pools)
    return {GLOBAL_VC: pools}, homes
