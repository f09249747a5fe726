"""How a run's VCs are packed into VC groups (one process or Ray actor each), by count or by cost.

Every window waits for its slowest group, so groups of equal cost finish together. A VC's cost is
estimated from the trace before the run (`vc_costs`); packing by cost puts the VCs, costliest
first, onto the least loaded group (raysim.packing.lpt, the packing the speedup bound assumes for
k CPUs). Packing never changes results, only how the work is spread over processes.
"""

from __future__ import annotations

import sys

import pyarrow as pa

from raysim.packing import lpt
from raysim.quota.cohorts import cohort_groups
from raysim.quota.settings import QuotaSettings

#: ray.packing: how VCs are packed into groups
PACKINGS = ("cost", "count")


def vc_costs(table: pa.Table, layout: dict) -> dict[str, float]:
    """Per VC of `layout` (VC -> its node pools, raysim.cluster.layout.Pool), the estimated cost of
    simulating it: 1 + its jobs in the trace `table`, times the fourth root of its GPUs (at least
    1). Events, and so CPU time, follow the jobs, and an event costs more in a larger VC (more
    running jobs, queue and nodes to look through): on the Helios-like six months this estimate
    correlates 0.98 (FIFO) and 0.91 (Tiresias) with each VC's measured CPU time, the job count
    alone 0.96 and 0.76 (docs/runtime.md). Positive, so packing leaves no group empty."""
    jobs = dict.fromkeys(layout, 1)
    if table.num_rows:
        by = table.select(["vc"]).group_by("vc").aggregate([("vc", "count")])
        for vc, n in zip(by.column("vc").to_pylist(), by.column("vc_count").to_pylist()):
            if vc in jobs:
                jobs[vc] += n
    return {vc: jobs[vc] * max(1, sum(p.gpus for p in pools)) ** 0.25 for vc, pools in layout.items()}


def vc_groups(vcs: list[str], vcs_per_actor: int | str, quota: QuotaSettings | None = None,
              cpus: int | None = None, costs: dict[str, float] | None = None) -> list[list[str]]:
    """VCs in groups (one process/actor per group), each listing its VCs in layout order.

    By count (`costs` None): in layout order, `vcs_per_actor` to a group. By cost (`costs`: VC ->
    estimated cost, positive, e.g. `vc_costs`): as many groups as by count, costliest first onto
    the least loaded group (raysim.packing.lpt); groups are ordered by their first VC.

    "auto" packs by count `cpus` VCs' worth to a group (the VCs over `cpus`, rounded up, which may
    leave CPUs without a group), by cost one group per CPU; `cpus` is by default the Ray cluster's
    (one without Ray, which is not imported for this). With quota lending (`quota` mode borrow)
    "auto" keeps every cohort in one group, so that its loans are decided there rather than by a
    coordinator window per epoch (raysim.quota.cohorts.cohort_groups, cohorts weighing their VCs'
    summed cost, or by count their number of VCs)."""
    names = list(vcs)
    if vcs_per_actor == "auto":
        if cpus is None:
            ray = sys.modules.get("ray")  # (not imported: Ray is not running)
            cpus = int(ray.cluster_resources().get("CPU", 1)) if ray is not None and ray.is_initialized() else 1
        cpus = max(1, cpus)
        if quota is not None and quota.borrow:
            return cohort_groups(quota, names, cpus, costs)
        per, n_groups = max(1, -(-len(names) // cpus)), min(cpus, len(names))
    else:
        per = max(1, int(vcs_per_actor))
        n_groups = -(-len(names) // per)
    if costs is None:
        return [names[i:i + per] for i in range(0, len(names), per)]
    packed = lpt([costs[vc] for vc in names], max(1, n_groups))
    return [[names[i] for i in b] for b in sorted(sorted(b) for b in packed if b)]
