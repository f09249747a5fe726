"""Longest processing time first (LPT): items of known cost packed onto k bins, each item, costliest
first, onto the bin least loaded so far. raysim's one packing: VCs (or whole quota cohorts) into
VC groups (raysim.run.grouping) and VC groups onto CPUs for the speedup bound (raysim.runtime.speedup).
"""

from __future__ import annotations

import heapq


def lpt(costs, k: int) -> list[list[int]]:
    """The indices of `costs` packed onto `k` bins: costliest first (ties: the earlier item), each
    onto the bin least loaded so far (ties: the earlier bin). With positive costs no bin stays
    empty while another holds two items. Each bin lists its items in the order they were packed."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    costs = [float(c) for c in costs]
    bins: list[list[int]] = [[] for _ in range(k)]
    least = [(0.0, b) for b in range(k)]  # (load, bin): a heap
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        load, b = heapq.heappop(least)
        bins[b].append(i)
        heapq.heappush(least, (load + costs[i], b))
    return bins
