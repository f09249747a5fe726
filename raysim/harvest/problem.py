"""The allocation problem the harvester solves at each decision, and its objective.

Nodes are interchangeable, so a decision is a vector of node counts N_j, one per active job:
maximise ``Tfwd * sum_j O_j(N_j) - sum_j rescale_j(N_j)`` over N_j in {0} U [Jmin_j, Jmax_j],
sum_j N_j <= pool (optionally |N_j - C_j| <= cap). ``rescale_j`` is Tcup_j * O_j(C_j) for growing
and Tcdw_j * O_j(C_j) for shrinking, as in the reference MILP (objective units, O_j(C_j) = 0 below
Jmin). The solvers are in `raysim.harvest.allocators` and `raysim.harvest.milp`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """One allocation decision for the active jobs, in admission order."""

    pool: int  # idle nodes of the slice (used or free)
    current: np.ndarray  # int64 nodes each job holds now (after this event's preemptions)
    jmin: np.ndarray
    jmax: np.ndarray
    obj: np.ndarray  # [job, n] objective table (0 outside {0} U [jmin, jmax])
    tcup: np.ndarray
    tcdw: np.ndarray
    tfwd: float
    cap: int | None = None  # max |N_j - C_j| per decision; None for no cap

    @property
    def current_obj(self) -> np.ndarray:
        """Objective rate of each job at its current count (0 when below Jmin)."""
        return self.obj[np.arange(len(self.current)), self.current]


def compat_cap(pool: int) -> int:
    """Largest change per job and event the reference MILP allows: its big-M (pool + 1) halved."""
    return (pool + 1) // 2


def objective(p: Problem, counts: np.ndarray) -> float:
    """Objective value of `counts` (no feasibility check beyond the table's range)."""
    counts = np.asarray(counts, np.int64)
    rate_c = p.current_obj
    cost = np.where(counts > p.current, p.tcup * rate_c, np.where(counts < p.current, p.tcdw * rate_c, 0.0))
    return float(np.sum(p.tfwd * p.obj[np.arange(len(counts)), counts] - cost))
