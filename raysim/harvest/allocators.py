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

from raysim.harvest.milp import node_milp
from raysim.harvest.problem import Problem


def choices(p: Problem, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Feasible node counts of job `j` (ascending) and each one's objective contribution."""
    c = int(p.current[j])
    hi = min(int(p.jmax[j]), p.pool)
    n = np.concatenate([[0], np.arange(int(p.jmin[j]), hi + 1)]).astype(np.int64)
    if p.cap is not None:
        n = n[np.abs(n - c) <= p.cap]
    rate_c = p.current_obj[j]
    cost = np.where(n > c, p.tcup[j] * rate_c, np.where(n < c, p.tcdw[j] * rate_c, 0.0))
    return n, p.tfwd * p.obj[j, n] - cost


def exact(p: Problem) -> np.ndarray:
    """Optimal counts by dynamic programming over jobs; O(jobs x choices x min(pool, sum Jmax))."""
    rows = [choices(p, j) for j in range(len(p.current))]
    if any(len(n) == 0 for n, _ in rows):
        return p.current.copy()
    size = min(p.pool, sum(int(n[-1]) for n, _ in rows)) + 1
    m = np.arange(size)
    best = np.full(size, -np.inf)
    best[0] = 0.0
    picks = []
    for n, val in rows:
        src = m[None, :] - n[:, None]
        cand = np.where(src >= 0, best[np.maximum(src, 0)] + val[:, None], -np.inf)
        pick = cand.argmax(axis=0)  # first maximum: the fewest nodes for this job
        best = cand[pick, m]
        picks.append(pick)
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


ALLOCATORS = {"exact": exact, "heuristic": heuristic, "milp": node_milp}


def get_allocator(name: str, *, milp_time_limit: float = 60.0):
    """The allocator function registered under `name` (options bound)."""
    if name not in ALLOCATORS:
        raise ValueError(f"harvest.allocator={name!r}: expected one of {sorted(ALLOCATORS)}")
    if name == "milp":
        return partial(node_milp, time_limit=milp_time_limit)
    return ALLOCATORS[name]
