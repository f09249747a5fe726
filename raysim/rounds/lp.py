"""The LPs of the round-based policies, solved with HiGHS (through ``highspy``, HiGHS's own bindings).

Variables are the allocation x (jobs x types, row-major), plus one scalar where the objective is
a max-min. Gavel's base constraints are always added: x >= 0, sum_j s_j x_jk <= N_k (a type's GPUs)
and sum_k x_jk <= 1 (a job runs at most all of the time).

Which optimum: many of these LPs have a whole face of optimal allocations. Gavel's simulator takes
the point its interior-point solver (ECOS) returns; :data:`SOLVER` ``"ipm"`` (the default) runs
HiGHS's interior-point method without crossover, which also returns a point inside the optimal face,
``"simplex"`` returns a vertex (docs/gavel.md compares the two). Solve times accumulate in
:data:`SOLVE_TIME` so runs can report them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import highspy
import numpy as np
from scipy import sparse

#: Seconds spent building and solving LPs, and the number solved, since reset_solve_time().
SOLVE_TIME = {"seconds": 0.0, "lps": 0}
#: "ipm" (interior point, no crossover) or "simplex".
SOLVER = {"method": "ipm"}


@contextlib.contextmanager
def method(name: str):
    """Solve with `name` ("ipm" or "simplex") inside the block; the previous method after it."""
    if name not in ("ipm", "simplex"):
        raise ValueError(f"rounds.lp_method must be ipm or simplex, not {name!r}")
    saved = SOLVER["method"]
    SOLVER["method"] = name
    try:
        yield
    finally:
        SOLVER["method"] = saved


def reset_solve_time() -> None:
    SOLVE_TIME.update(seconds=0.0, lps=0)


def base_constraints(scale: np.ndarray, gpus: np.ndarray):
    """(A_ub, b_ub) of the capacity rows (one per type) and time rows (one per job) over x."""
    m, n = len(scale), len(gpus)
    cols = np.arange(m * n)
    capacity = sparse.csr_matrix((np.repeat(scale, n).astype(float), (cols % n, cols)), shape=(n, m * n))
    time_rows = sparse.csr_matrix((np.ones(m * n), (cols // n, cols)), shape=(m, m * n))
    return sparse.vstack([capacity, time_rows]).tocsr(), np.concatenate([gpus.astype(float), np.ones(m)])


def max_min(coefficients: np.ndarray, scale: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, float]:
    """Maximise min_j sum_k c_jk x_jk under the base constraints; returns (x, the optimal minimum).

    Built column by column (the hot LP of the fairness policies): x_jk has s_j in capacity row k, 1
    in time row j and -c_jk in level row j; the last column, t, has 1 in every level row."""
    m, n = coefficients.shape
    jobs = np.repeat(np.arange(m), n)
    types = np.tile(np.arange(n), m)
    index = np.stack([types, n + jobs, n + m + jobs], axis=1).ravel()
    value = np.stack([np.repeat(scale, n).astype(float), np.ones(m * n), -coefficients.ravel()], axis=1).ravel()
    start = np.append(np.arange(0, 3 * m * n + 1, 3), 3 * m * n + m)
    index = np.concatenate([index, n + m + np.arange(m)])
    value = np.concatenate([value, np.ones(m)])
    objective = np.zeros(m * n + 1)
    objective[-1] = 1.0
    upper = np.concatenate([gpus.astype(float), np.ones(m), np.zeros(m)])
    v = _run(objective, upper, start, index, value)
    return v[:-1].reshape(m, n), float(v[-1])


def max_min_rows(level, a_ub, b_ub) -> tuple[np.ndarray, float]:
    """Maximise min_i (level @ v)_i subject to a_ub @ v <= b_ub, v >= 0; returns (v, the minimum)."""
    m, size = level.shape
    # variables [v, t]; rows: a_ub @ v <= b_ub, then t - (level @ v)_i <= 0
    a_all = sparse.vstack([sparse.hstack([a_ub, sparse.csr_matrix((a_ub.shape[0], 1))]),
                           sparse.hstack([-level, sparse.csr_matrix(np.ones((m, 1)))])])
    objective = np.zeros(size + 1)
    objective[-1] = 1.0
    solution = _solve(objective, a_all, np.concatenate([b_ub, np.zeros(m)]))
    return solution[:-1], float(solution[-1])


def max_linear(objective: np.ndarray, scale: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Maximise sum_jk c_jk x_jk under the base constraints; returns x."""
    m, n = objective.shape
    a_ub, b_ub = base_constraints(scale, gpus)
    return _solve(objective.ravel(), a_ub, b_ub).reshape(m, n)


def feasible_point(a_ub, b_ub) -> np.ndarray:
    """A point of {v >= 0 : a_ub @ v <= b_ub} (objective 0: with the interior-point method, a point
    inside the set rather than on its boundary)."""
    return _solve(np.zeros(a_ub.shape[1]), a_ub, b_ub)


def _solve(objective: np.ndarray, a_ub, b_ub) -> np.ndarray:
    """Maximise objective @ v subject to a_ub @ v <= b_ub, v >= 0."""
    a = sparse.csc_matrix(a_ub)
    return _run(objective, np.asarray(b_ub, dtype=float), a.indptr, a.indices, a.data)


def _run(objective, upper, start, index, value) -> np.ndarray:
    """Maximise objective @ v subject to A v <= upper, v >= 0, A given column-wise (CSC arrays)."""
    clock = time.perf_counter()
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = len(objective), len(upper)
    model.sense_ = highspy.ObjSense.kMaximize
    model.col_cost_ = objective
    model.col_lower_ = np.zeros(len(objective))
    model.col_upper_ = np.full(len(objective), highspy.kHighsInf)
    model.row_lower_ = np.full(len(upper), -highspy.kHighsInf)
    model.row_upper_ = upper
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = start
    model.a_matrix_.index_ = index
    model.a_matrix_.value_ = value
    solver = _highs()
    solver.passModel(model)
    solver.run()
    status = solver.getModelStatus()
    SOLVE_TIME["seconds"] += time.perf_counter() - clock
    SOLVE_TIME["lps"] += 1
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS could not solve the allocation LP: {solver.modelStatusToString(status)}")
    return np.array(solver.getSolution().col_value)


_SOLVERS: dict[str, highspy.Highs] = {}


def _highs() -> highspy.Highs:
    """One quiet HiGHS instance per method, reused (building one costs more than a small solve)."""
    method = SOLVER["method"]
    if method not in _SOLVERS:
        with _stdout_silenced():      # HiGHS prints a banner from its constructor, before any option
            solver = highspy.Highs()
        solver.setOptionValue("output_flag", False)
        if method == "ipm":
            solver.setOptionValue("solver", "ipm")
            solver.setOptionValue("run_crossover", "off")
        elif method != "simplex":
            raise ValueError(f"LP method must be ipm or simplex, not {method!r}")
        _SOLVERS[method] = solver
    solver = _SOLVERS[method]
    solver.clearModel()
    return solver


@contextlib.contextmanager
def _stdout_silenced():
    """Point file descriptor 1 at /dev/null for the duration (C++ code writes there directly)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
