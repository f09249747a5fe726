"""Node-level MILP of the reference (one binary per job and node), solved with HiGHS via scipy.

A cross-check of the count-level optimiser for small pools. The current map gives job j its C_j
nodes (which ones does not matter: nodes are interchangeable). Variables: x[j,n] (job j runs on
node n), y[j,k] (job j runs on exactly k nodes, for the piecewise-linear objective; k in
1..Jmin-1 forbidden), u[j]/d[j] (job grows / shrinks: pays Tcup / Tcdw x O_j(C_j)), g[j] (1: job
may only release nodes, 0: may only add nodes; the reference's no-migration constraint).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint
from scipy.sparse import csr_array

from raysim.harvest.problem import Problem
from raysim.highs import milp


def node_milp(p: Problem, *, time_limit: float = 60.0) -> np.ndarray:
    """Optimal counts of the node-level MILP; the current counts when infeasible or not solved."""
    jobs, nodes = len(p.current), p.pool
    kmax = [min(int(p.jmax[j]), nodes) for j in range(jobs)]
    # variable layout: x (jobs*nodes) | y (sum(kmax+1)) | u, d, g (jobs each)
    y_off = np.cumsum([0] + [k + 1 for k in kmax]) + jobs * nodes
    u0 = int(y_off[-1])
    d0, g0, nvar = u0 + jobs, u0 + 2 * jobs, u0 + 3 * jobs

    def xi(j, n):
        return j * nodes + n

    held = np.zeros((jobs, nodes), bool)
    start = np.concatenate([[0], np.cumsum(p.current)])
    for j in range(jobs):
        held[j, start[j]:start[j + 1]] = True

    cost = np.zeros(nvar)
    upper = np.ones(nvar)
    r_idx, c_idx, vals, lo, hi = [], [], [], [], []

    def add(coefs: dict, lb: float, ub: float):
        r_idx.extend([len(lo)] * len(coefs))
        c_idx.extend(coefs)
        vals.extend(coefs.values())
        lo.append(lb)
        hi.append(ub)

    rate_c = p.current_obj
    for n in range(nodes):
        add({xi(j, n): 1 for j in range(jobs)}, 0, 1)
    for j in range(jobs):
        ks = np.arange(kmax[j] + 1)
        ys = y_off[j] + ks
        cost[ys] = -p.tfwd * p.obj[j, ks]
        upper[ys[(ks > 0) & (ks < p.jmin[j])]] = 0
        add({int(y): 1 for y in ys}, 1, 1)
        count = {xi(j, n): 1 for n in range(nodes)}
        add({**count, **{int(y): -k for y, k in zip(ys, ks)}}, 0, 0)
        c = int(p.current[j])
        for n in range(nodes):
            if held[j, n]:
                add({xi(j, n): 1, g0 + j: 1}, 1, np.inf)
            else:
                add({xi(j, n): 1, g0 + j: 1}, -np.inf, 1)
        add({**count, u0 + j: -(nodes - c)}, -np.inf, c)
        add({**count, d0 + j: c}, c, np.inf)
        if p.cap is not None:
            add(count, c - p.cap, c + p.cap)
        cost[u0 + j] = p.tcup[j] * rate_c[j]
        cost[d0 + j] = p.tcdw[j] * rate_c[j]

    a = csr_array((vals, (r_idx, c_idx)), shape=(len(lo), nvar))
    res = milp(cost, constraints=LinearConstraint(a, lo, hi), integrality=np.ones(nvar),
               bounds=Bounds(np.zeros(nvar), upper), options={"time_limit": time_limit})
    if res.status != 0:
        return p.current.copy()
    x = res.x[: jobs * nodes].reshape(jobs, nodes)
    return np.round(x).sum(axis=1).astype(np.int64)
