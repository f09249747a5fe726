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


def reset_solve_time() -> None:
    SOLVE_TIME.update(seconds=0.0, lps=0)


def base_constraints(scale: np.ndarray, gpus: np.ndarray):
    """(A_ub, b_ub) of the capacity rows (one per type) and time rows (one per job) over x."""
    m, n = len(scale), len(gpus)
    cols = np.arange(m * n)
    capacity = sparse.csr_matrix((np.repeat(scale, n).astype(float), (cols % n, cols)), shape=(n, m * n))
    time_rows = sparse.csr_matrix((np.ones(m * n), (cols // n, cols)), shape=(m, m * n))
    return sparse.vstack([capacity, time_rows]).tocsr(), np.concatenate([gpus.astype(float), np.ones(m)])


def max_min(coefficients: np.ndarray, scale: np.ndarray, gpus: np.ndarray,
            method: str | None = None) -> tuple[np.ndarray, float]:
    """Maximise min_j sum_k c_jk x_jk under the base constraints; returns (x, the optimal minimum).
    `method` overrides :data:`SOLVER` for this LP (``"simplex"``: the optimum to machine precision,
    where the interior point without crossover stops up to a few 1e-3 below it).

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
    v = _run(objective, upper, start, index, value, method)
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


# The constants of ECOS's defaults (Domahidi, Chu and Boyd, ECC 2013), which Gavel's cvxpy calls use.
_EQUILIBRATION_PASSES = 3
_STATIC_REGULARIZATION = 7e-8
_STEP_MAX, _STEP_FRACTION = 0.999, 0.99
_SIGMA_MIN, _SIGMA_MAX = 1e-4, 1.0
_TOLERANCE = 1e-8
_MAX_ITERATIONS = 100


def ecos_feasible_point(a_ub, b_ub) -> np.ndarray:
    """The point of {v >= 0 : a_ub @ v <= b_ub} that ECOS returns for a constant objective.

    Gavel's feasibility problems (min-total-duration's "can every job finish by T") have no
    objective, so its allocation is wherever ECOS's interior-point iterations stop: neither a vertex
    (simplex) nor the analytic centre, and HiGHS's interior point stops elsewhere again. This runs
    the same method on the same data: the homogeneous self-dual embedding of
    ``min 0 s.t. G v + s = h, s >= 0`` (G = [-I; a_ub], h = [0; b_ub]) after three passes of Ruiz
    equilibration (rows and columns divided by the square roots of their largest entries), started
    from the least-squares point (slacks shifted into the positive orthant, duals 1, tau = kappa = 1),
    with Mehrotra predictor-corrector steps (sigma = (1 - affine step)^3, the corrected step takes
    (1 - sigma) of the residuals), steps of 0.99 x min(0.999, distance to the boundary), and the
    KKT systems solved with ECOS's static regularisation (7e-8) and no refinement; it stops at
    ECOS's default tolerances (residuals and gap s'z below 1e-8). Dense: meant for the policies'
    small LPs (jobs x types variables)."""
    g = np.vstack([-np.eye(a_ub.shape[1]), sparse.csr_matrix(a_ub).toarray()])
    h = np.concatenate([np.zeros(a_ub.shape[1]), np.asarray(b_ub, dtype=float)])
    clock = time.perf_counter()
    rows, cols = np.ones(len(h)), np.ones(g.shape[1])
    for _ in range(_EQUILIBRATION_PASSES):
        size = np.abs(g)
        row_scale, col_scale = size.max(axis=1), size.max(axis=0)
        row_scale = np.where(row_scale < 1e-6, 1.0, np.sqrt(row_scale))
        col_scale = np.where(col_scale < 1e-6, 1.0, np.sqrt(col_scale))
        g = g / row_scale[:, None] / col_scale[None, :]
        rows, cols = rows * row_scale, cols * col_scale
    h = h / rows
    v = np.linalg.lstsq(g, h, rcond=None)[0]
    s = h - g @ v
    if s.min() <= 0.0:
        s = s + 1.0 - s.min()
    z = np.ones(len(h))
    tau = kappa = 1.0
    h_norm = max(1.0, float(np.linalg.norm(h)))
    for _ in range(_MAX_ITERATIONS):
        r_v = g.T @ z                     # dual residual (the objective is 0)
        r_z = g @ v + s - h * tau         # primal residual
        r_tau = kappa + h @ z
        gap = float(s @ z)
        mu = (gap + tau * kappa) / (len(h) + 1)
        if (gap < _TOLERANCE and np.linalg.norm(r_z) / h_norm / tau < _TOLERANCE
                and np.linalg.norm(r_v) / tau < _TOLERANCE):
            break
        # Regularised KKT system [[d I, G'], [G, -(S/Z + d I)]] by its Schur complement on v, with
        # the tau row eliminated by two solves.
        d = s / z + _STATIC_REGULARIZATION
        gd = g / d[:, None]
        factor = _cholesky(_STATIC_REGULARIZATION * np.eye(g.shape[1]) + g.T @ gd)
        q = _cho_solve(factor, gd.T @ h)
        w = (g @ q - h) / d
        tau_pivot = h @ w - kappa / tau

        def direction(eta, r_s, r_k):
            rhs_z = -eta * r_z - r_s / z
            p = _cho_solve(factor, -eta * r_v + gd.T @ rhs_z)
            u = (g @ p - rhs_z) / d
            d_tau = (-eta * r_tau - r_k / tau - h @ u) / tau_pivot
            d_z = u + d_tau * w
            return p + d_tau * q, (r_s - s * d_z) / z, d_z, d_tau, (r_k - kappa * d_tau) / tau

        affine = direction(1.0, -s * z, -tau * kappa)
        sigma = min(max((1.0 - min(1.0, _step_to_boundary(s, z, tau, kappa, affine))) ** 3, _SIGMA_MIN), _SIGMA_MAX)
        dv, ds, dz, dt, dk = direction(1.0 - sigma, -s * z + sigma * mu - affine[1] * affine[2],
                                       -tau * kappa + sigma * mu - affine[3] * affine[4])
        step = _STEP_FRACTION * min(_STEP_MAX, _step_to_boundary(s, z, tau, kappa, (dv, ds, dz, dt, dk)))
        v, s, z = v + step * dv, s + step * ds, z + step * dz
        tau, kappa = tau + step * dt, kappa + step * dk
    SOLVE_TIME["seconds"] += time.perf_counter() - clock
    SOLVE_TIME["lps"] += 1
    return v / tau / cols


def _step_to_boundary(s, z, tau, kappa, step) -> float:
    """The largest a with s + a ds, z + a dz, tau + a dtau and kappa + a dkappa all >= 0."""
    _, ds, dz, dt, dk = step
    values, moves = np.concatenate([s, z, [tau, kappa]]), np.concatenate([ds, dz, [dt, dk]])
    down = moves < 0
    return float((-values[down] / moves[down]).min()) if down.any() else np.inf


def _cholesky(matrix):
    from scipy.linalg import cho_factor
    return cho_factor(matrix)


def _cho_solve(factor, rhs):
    from scipy.linalg import cho_solve
    return cho_solve(factor, rhs)


def _solve(objective: np.ndarray, a_ub, b_ub) -> np.ndarray:
    """Maximise objective @ v subject to a_ub @ v <= b_ub, v >= 0."""
    a = sparse.csc_matrix(a_ub)
    return _run(objective, np.asarray(b_ub, dtype=float), a.indptr, a.indices, a.data)


def _run(objective, upper, start, index, value, method: str | None = None) -> np.ndarray:
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
    solver = _highs(method or SOLVER["method"])
    solver.passModel(model)
    solver.run()
    status = solver.getModelStatus()
    SOLVE_TIME["seconds"] += time.perf_counter() - clock
    SOLVE_TIME["lps"] += 1
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS could not solve the allocation LP: {solver.modelStatusToString(status)}")
    return np.array(solver.getSolution().col_value)


_SOLVERS: dict[str, highspy.Highs] = {}


def _highs(method: str) -> highspy.Highs:
    """One quiet HiGHS instance per method, reused (building one costs more than a small solve)."""
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
