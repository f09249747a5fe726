"""Allocators: how many of the idle pool's nodes each active job gets at one decision.

Each allocator is a function ``f(problem) -> counts`` (`raysim.harvest.problem.Problem`; the
engine maps counts to nodes) registered in `ALLOCATORS`:

- ``exact``: maximises the problem's objective over its constraints by dynamic programming over
  jobs (a multiple-choice knapsack). Exact; ties go to earlier-admitted jobs and then to fewer
  nodes.
- ``heuristic``: the reference's equal share (see `heuristic`).
- ``milp``: the node-level MILP (`raysim.harvest.milp`), a cross-check for small pools.

When no allocation satisfies the constraints (possible only with the compat cap), an allocator
returns the current counts, as the reference replayer keeps its map when the solve fails.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from raysim.harvest.milp import node_milp
from raysim.harvest.problem import Problem
from raysim.registry import Registry


def choices(p: Problem, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Feasible node counts of job `j` (ascending) and each one's objective contribution."""
    c, lo, hi = int(p.current[j]), int(p.jmin[j]), min(int(p.jmax[j]), p.pool)
    zero = True
    if p.cap is not None:
        zero, lo, hi = c <= p.cap, max(lo, c - p.cap), min(hi, c + p.cap)
    n = np.arange(lo - 1, hi + 1) if hi >= lo else np.zeros(1, np.int64)
    n[0] = 0
    if not zero:
        n = n[1:]
    rate_c = p.obj[j, c]  # (current_obj's entry for job j)
    cost = np.where(n > c, p.tcup[j] * rate_c, np.where(n < c, p.tcdw[j] * rate_c, 0.0))
    return n, p.tfwd * p.obj[j, n] - cost


def exact(p: Problem) -> np.ndarray:
    """Optimal counts by dynamic programming over jobs; O(jobs x choices x min(pool, sum Jmax))."""
    rows = [choices(p, j) for j in range(len(p.current))]
    if any(len(n) == 0 for n, _ in rows):
        return p.current.copy()
    size = min(p.pool, sum(int(n[-1]) for n, _ in rows)) + 1
    # best[u]: the best value of the jobs so far on u nodes, kept after `widest` cells of -inf, so
    # that the row of a choice of n nodes (best[u - n] for every u, -inf below n) is a window of it
    widest = max(int(n[-1]) for n, _ in rows)
    padded = np.full(widest + size, -np.inf)
    best = padded[widest:]
    best[0] = 0.0
    windows = sliding_window_view(padded, size)
    picks = []
    for n, val in rows:
        if n[-1] - n[0] == len(n) - 1:  # consecutive counts: one slice
            rows_n = windows[widest - n[-1]:widest - n[0] + 1][::-1]
        else:  # 0, then Jmin.. (a slice each)
            rows_n = np.concatenate([windows[widest:widest + 1], windows[widest - n[-1]:widest - n[1] + 1][::-1]])
        cand = rows_n + val[:, None]
        picks.append(cand.argmax(axis=0))  # first maximum: the fewest nodes for this job
        best[:] = cand.max(axis=0)
    if not np.isfinite(best.max()):
        return p.current.copy()
    used = int(best.argmax())
    counts = np.zeros(len(rows), np.int64)
    for j in range(len(rows) - 1, -1, -1):
        counts[j] = rows[j][0][picks[j][used]]
        used -= counts[j]
    return counts


def heuristic(p: Problem) -> np.ndarray:
    """The reference's equal share: q = pool // jobs, min(q, Jmax) if q > Jmin else 0; leftovers FCFS.

    A leftover grant brings a job up to Jmax if there are enough nodes, and is skipped when it would
    leave the job below Jmin. Rescale costs, Tfwd and the cap play no part.
    """
    jobs = len(p.current)
    q = p.pool // jobs
    share = np.where(q > p.jmin, np.minimum(q, p.jmax), 0).astype(np.int64)
    left = p.pool - int(share.sum())
    for j in range(jobs):
        if left <= 0:
            break
        if share[j] < p.jmax[j]:
            inc = min(int(p.jmax[j] - share[j]), left)
            if share[j] + inc < p.jmin[j]:
                continue
            share[j] += inc
            left -= inc
    return share


#: harvest.allocator -> its allocator (raysim.registry)
ALLOCATORS = Registry({"exact": exact, "heuristic": heuristic, "milp": node_milp}, what="allocator")


def get_allocator(name: str, *, milp_time_limit: float = 60.0):
    """The allocator function registered under `name` (options bound)."""
    if name not in ALLOCATORS:
        raise ValueError(f"harvest.allocator={name!r}: expected one of {sorted(ALLOCATORS)}")
    if name == "milp":
        return partial(node_milp, time_limit=milp_time_limit)
    return ALLOCATORS[name]
