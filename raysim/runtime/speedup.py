"""The speedup bound for k workers, from a run's measured costs (pure arithmetic, no clocks).

Per window, each VC group's cost is the CPU time its VCs took; groups run side by side, so a window
lasts at least its critical path: the most loaded of k CPUs once the groups are packed onto them
(longest first onto the least loaded, LPT; with no more groups than CPUs, the costliest group),
plus the coordinator's serial time. Summed over windows, with the run's serial time outside them:

    bound(k) = total serial work / (sum over windows of (critical path + coordinator) + outside)

where total serial work is every group's cost plus all serial time: what one process would do.
It is an upper bound on what k CPUs give: start-up, transfer between processes and CPUs shared with
other work only lengthen a window.
"""

from __future__ import annotations

import numpy as np

from raysim.packing import lpt


def critical_path(costs, k: int) -> float:
    """The most loaded of `k` CPUs after packing `costs` (one per group) onto them longest first,
    each onto the least loaded CPU so far (LPT: raysim.packing.lpt)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    costs = np.asarray(costs, dtype=float)
    if len(costs) <= k:
        return float(costs.max()) if len(costs) else 0.0
    return max(float(costs[b].sum()) for b in lpt(costs, k))


def spread(group_cpu: float, measured: np.ndarray) -> np.ndarray:
    """A group's CPU time `group_cpu` over its VCs: each VC its own measured time (`measured`, in
    the group's order; 0: not measured) and a share of the rest (the group's own work: splitting
    arrivals, building result tables) in proportion to it, or evenly when no VC was measured."""
    total = float(measured.sum())
    rest = max(0.0, group_cpu - total)
    if total > 0:
        return measured * (1.0 + rest / total)
    return np.full(len(measured), rest / len(measured)) if len(measured) else measured


def group_costs(vc_costs: np.ndarray, assignment: np.ndarray, groups: int) -> np.ndarray:
    """Per group, the summed costs of its VCs (`assignment[i]`: the group of VC i)."""
    return np.bincount(assignment, weights=vc_costs, minlength=groups)


def bound(work_s: float, critical_s: float, serial_s: float) -> float:
    """The speedup bound: (groups' total cost `work_s` + `serial_s`) / (summed critical paths
    `critical_s` + `serial_s`); 1 when nothing was measured."""
    span = critical_s + serial_s
    return (work_s + serial_s) / span if span > 0 else 1.0
