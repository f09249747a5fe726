"""The LPs of the round-based policies, solved with HiGHS (through ``highspy``, HiGHS's own bindings).

Variables are the allocation x (jobs x types, row-major), plus one scalar where the objective is
a max-min. Gavel's base constraints are always added: x >= 0, sum_j s_j x_jk <= N_k (a type's GPUs)
and sum_k x_jk <= 1 (a job runs at most all of the time).

Which optimum: many of these LPs have a whole face of optimal allocations. Gavel's simulator takes
the point its interior-point solver (ECOS) returns; method ``"ipm"`` (the default; a policy's
``lp_method``, from ``policy.lp_method``) runs HiGHS's interior-point method without crossover, which
also returns a point inside the optimal face, ``"simplex"`` returns a vertex (docs/gavel.md compares
the two). Solve times accumulate in
:data:`SOLVE_TIME` so runs can report them.
"""

from __future__ import annotations

import functools
import time

import highspy
import numpy as np
from scipy import sparse
from scipy.linalg import lapack

from raysim.blas import one_blas_thread
from raysim.highs import quiet

#: Seconds spent building and solving LPs, and the number solved, since reset_solve_time().
SOLVE_TIME = {"seconds": 0.0, "lps": 0}


def reset_solve_time() -> None:
    SOLVE_TIME.update(seconds=0.0, lps=0)


def max_min(coefficients: np.ndarray, scale: np.ndarray, gpus: np.ndarray,
            method: str = "ipm") -> tuple[np.ndarray, float]:
    """Maximise min_j sum_k c_jk x_jk under the base constraints; returns (x, the optimal minimum).
    `method`: one of raysim.rounds.policies.base.LP_METHODS (``"simplex"``: the optimum to machine precision, where the interior
    point without crossover stops up to a few 1e-3 below it).

    Built column by column (the hot LP of the fairness policies): x_jk has s_j in capacity row k, 1
    in time row j and -c_jk in level row j; the last column, t, has 1 in every level row."""
    m, n = coefficients.shape
    start, index, ones, objective = _max_min_structure(m, n)
    value = ones.copy()
    value[0:3 * m * n:3] = np.repeat(scale, n)
    value[2:3 * m * n:3] = -coefficients.ravel()
    upper = np.concatenate([gpus, np.ones(m), np.zeros(m)]).astype(float)
    v = _run(objective, upper, start, index, value, method)
    return v[:-1].reshape(m, n), float(v[-1])


@functools.lru_cache(maxsize=256)
def _max_min_structure(m: int, n: int):
    """What max_min's LP shares between calls with m jobs and n types (read-only arrays): column
    starts, row indices, the values with 1 where the data go, and the objective (the level t)."""
    jobs, types = np.repeat(np.arange(m), n), np.tile(np.arange(n), m)
    index = np.concatenate([np.stack([types, n + jobs, n + m + jobs], axis=1).ravel(), n + m + np.arange(m)])
    start = np.append(np.arange(0, 3 * m * n + 1, 3), 3 * m * n + m)
    objective = np.zeros(m * n + 1)
    objective[-1] = 1.0
    arrays = (start.astype(np.int32), index.astype(np.int32), np.ones(3 * m * n + m), objective)
    for array in arrays:
        array.flags.writeable = False
    return arrays


def max_min_rows(level, a_ub, b_ub, method: str = "ipm") -> tuple[np.ndarray, float]:
    """Maximise min_i (level @ v)_i subject to a_ub @ v <= b_ub, v >= 0; returns (v, the minimum)."""
    m, size = level.shape
    # variables [v, t]; rows: a_ub @ v <= b_ub, then t - (level @ v)_i <= 0
    a_all = sparse.vstack([sparse.hstack([a_ub, sparse.csr_matrix((a_ub.shape[0], 1))]),
                           sparse.hstack([-level, sparse.csr_matrix(np.ones((m, 1)))])])
    objective = np.zeros(size + 1)
    objective[-1] = 1.0
    solution = _solve(objective, a_all, np.concatenate([b_ub, np.zeros(m)]), method)
    return solution[:-1], float(solution[-1])


def max_linear(objective: np.ndarray, scale: np.ndarray, gpus: np.ndarray, method: str = "ipm") -> np.ndarray:
    """Maximise sum_jk c_jk x_jk under the base constraints; returns x."""
    m, n = objective.shape
    start, index = _base_structure(m, n)
    value = np.ones(2 * m * n)
    value[0::2] = np.repeat(scale, n)
    upper = np.concatenate([gpus, np.ones(m)]).astype(float)
    return _run(objective.ravel().astype(float), upper, start, index, value, method).reshape(m, n)


@functools.lru_cache(maxsize=256)
def _base_structure(m: int, n: int):
    """Column starts and row indices of the base constraints alone, column-wise (x_jk: capacity
    row k, time row n + j)."""
    jobs, types = np.repeat(np.arange(m), n), np.tile(np.arange(n), m)
    arrays = (np.arange(0, 2 * m * n + 1, 2).astype(np.int32),
              np.stack([types, n + jobs], axis=1).ravel().astype(np.int32))
    for array in arrays:
        array.flags.writeable = False
    return arrays


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
    ECOS's default tolerances (residuals and gap s'z below 1e-8). Dense (`a_ub` a numpy array):
    meant for the policies' small LPs (jobs x types variables).

    G is never formed: its -I block is kept as the diagonal `e` it becomes under equilibration, so
    products with G are a diagonal and a product with the equilibrated a_ub, and the Schur
    complement G'D^-1 G is diag(e^2 / d_I) + A'D_A^-1 A, whose upper triangle (all dpotrf reads)
    is summed from the products of a_ub's nonzeros that share a row (a capacity row couples all
    jobs of its type, a job's rows its own types). The same terms as the dense product, summed in
    another order: points agree with the dense version's to within ~1e-9, with the same iteration
    counts. BLAS and LAPACK run on one thread here: OpenBLAS threads a 150 x 150 Cholesky or
    product, and at these sizes waking its threads costs ten times the work (more on a busy
    machine)."""
    clock = time.perf_counter()
    with one_blas_thread():
        v = _ecos_feasible_point(np.asarray(a_ub, dtype=float), np.asarray(b_ub, dtype=float))
    SOLVE_TIME["seconds"] += time.perf_counter() - clock
    SOLVE_TIME["lps"] += 1
    return v


def _ecos_feasible_point(a, b):
    n, count = a.shape[1], a.shape[1] + len(b)
    # Ruiz equilibration of G = [-I; a]: the -I block stays diagonal (e), a's nonzeros are scaled
    rr, cc = np.nonzero(a)                                   # by row, then column
    by_column = np.lexsort((rr, cc))
    row_starts, column_starts = _starts(rr, len(b)), _starts(cc[by_column], n)
    value = a[rr, cc]
    e, rows, cols = -np.ones(n), np.ones(count), np.ones(n)
    for _ in range(_EQUILIBRATION_PASSES):
        size = np.abs(value)
        row_scale = np.concatenate([np.abs(e), _segment_max(size, row_starts)])
        col_scale = np.maximum(np.abs(e), _segment_max(size[by_column], column_starts))
        row_scale = np.where(row_scale < 1e-6, 1.0, np.sqrt(row_scale))
        col_scale = np.where(col_scale < 1e-6, 1.0, np.sqrt(col_scale))
        e = e / row_scale[:n] / col_scale
        value = value / row_scale[n:][rr] / col_scale[cc]
        rows, cols = rows * row_scale, cols * col_scale
    a = np.zeros(a.shape)
    a[rr, cc] = value
    at, upper = a.T, _upper_pairs(rr, cc, row_starts, n)
    h = np.concatenate([np.zeros(n), b / rows[n:]])
    h_a = h[n:]

    def g_times(x):                                          # G @ x
        return np.concatenate([e * x, a @ x])

    def schur(diagonal, scaled):                             # the upper triangle of reg I + G' D^-1 G
        flat = np.bincount(upper[2], value[upper[0]] * scaled[upper[1]], minlength=n * n).reshape(n, n)
        flat[_diagonal(n)] += diagonal
        return _cholesky(flat)

    v, _ = _POTRS(schur(e * e, value), at @ h_a, lower=False)       # least squares
    s = h - g_times(v)
    if s.min() <= 0.0:
        s = s + 1.0 - s.min()
    z = np.ones(count)
    tau = kappa = 1.0
    h_norm = max(1.0, float(np.linalg.norm(h)))
    for _ in range(_MAX_ITERATIONS):
        r_v = e * z[:n] + at @ z[n:]      # dual residual G'z (the objective is 0)
        r_z = g_times(v) + s - h * tau    # primal residual
        r_tau = kappa + h @ z
        gap = float(s @ z)
        mu = (gap + tau * kappa) / (count + 1)
        if (gap < _TOLERANCE and np.linalg.norm(r_z) / h_norm / tau < _TOLERANCE
                and np.linalg.norm(r_v) / tau < _TOLERANCE):
            break
        # Regularised KKT system [[d I, G'], [G, -(S/Z + d I)]] by its Schur complement on v, with
        # the tau row eliminated by two solves.
        d = s / z + _STATIC_REGULARIZATION
        ed, ad = e / d[:n], a / d[n:, None]
        factor = schur(_STATIC_REGULARIZATION + e * ed, ad[rr, cc])

        def solve(x, factor=factor):                         # (reg I + G'D^-1 G)^-1 x
            return _POTRS(factor, x, lower=False)[0]

        def gd_t_times(x, ed=ed, ad=ad):                     # (D^-1 G)' x
            return ed * x[:n] + ad.T @ x[n:]

        q = solve(ad.T @ h_a)
        w = (g_times(q) - h) / d
        kkt = (g_times, gd_t_times, solve, h, d, q, w, h @ w - kappa / tau)
        point, residuals = (s, z, tau, kappa), (r_v, r_z, r_tau)
        affine = _direction(kkt, point, residuals, 1.0, -s * z, -tau * kappa)
        sigma = min(max((1.0 - min(1.0, _step_to_boundary(point, affine))) ** 3, _SIGMA_MIN), _SIGMA_MAX)
        dv, ds, dz, dt, dk = step_dir = _direction(kkt, point, residuals, 1.0 - sigma,
                                                   -s * z + sigma * mu - affine[1] * affine[2],
                                                   -tau * kappa + sigma * mu - affine[3] * affine[4])
        step = _STEP_FRACTION * min(_STEP_MAX, _step_to_boundary(point, step_dir))
        v, s, z = v + step * dv, s + step * ds, z + step * dz
        tau, kappa = tau + step * dt, kappa + step * dk
    return v / tau / cols


def _direction(kkt, point, residuals, eta, r_s, r_k):
    """Newton direction (dv, ds, dz, dtau, dkappa) of the embedding: eta of the residuals removed,
    complementarity right-hand sides r_s (s o z) and r_k (tau kappa)."""
    g_times, gd_t_times, solve, h, d, q, w, tau_pivot = kkt
    s, z, tau, kappa = point
    r_v, r_z, r_tau = residuals
    rhs_z = -eta * r_z - r_s / z
    p = solve(-eta * r_v + gd_t_times(rhs_z))
    u = (g_times(p) - rhs_z) / d
    d_tau = (-eta * r_tau - r_k / tau - h @ u) / tau_pivot
    d_z = u + d_tau * w
    return p + d_tau * q, (r_s - s * d_z) / z, d_z, d_tau, (r_k - kappa * d_tau) / tau


def _step_to_boundary(point, step) -> float:
    """The largest a with s + a ds, z + a dz, tau + a dtau and kappa + a dkappa all >= 0."""
    s, z, tau, kappa = point
    _, ds, dz, dt, dk = step
    values, moves = np.concatenate([s, z, [tau, kappa]]), np.concatenate([ds, dz, [dt, dk]])
    down = moves < 0
    return float((-values[down] / moves[down]).min()) if down.any() else np.inf


def _starts(sorted_index, size: int) -> np.ndarray:
    """Where each of 0..size-1 starts in a sorted index array (its first position, or the next one's)."""
    return np.searchsorted(sorted_index, np.arange(size + 1))


def _segment_max(values, starts) -> np.ndarray:
    """The maximum of each segment values[starts[i]:starts[i + 1]]; 0 for an empty one."""
    out = np.zeros(len(starts) - 1)
    full = starts[:-1] < starts[1:]
    if full.any():
        out[full] = np.maximum.reduceat(values, starts[:-1][full])
    return out


def _upper_pairs(rr, cc, row_starts, n: int):
    """The pairs of nonzeros (t1, t2) in the same row with t1's column <= t2's (nonzeros by row, then
    column), and where their product goes in an n x n matrix (t1's column * n + t2's): the terms of
    the upper triangle of a'a."""
    nnz = len(rr)
    partners = row_starts[1:][rr] - np.arange(nnz)           # nonzeros from t1 to its row's end
    first = np.repeat(np.arange(nnz), partners)
    second = first + np.arange(len(first)) - np.repeat(np.cumsum(partners) - partners, partners)
    return first, second, cc[first] * n + cc[second]


@functools.lru_cache(maxsize=256)
def _diagonal(n: int):
    """The index of an n x n matrix's diagonal (for in-place adds)."""
    index = np.arange(n)
    return index, index


def _cholesky(matrix):
    """The upper Cholesky factor (LAPACK's dpotrf, as cho_factor calls it, without its checks; the
    lower triangle left as it was); `matrix` is overwritten where it is Fortran-ordered."""
    factor, info = _POTRF(matrix, lower=False, overwrite_a=True, clean=False)
    if info != 0:
        raise np.linalg.LinAlgError(f"ecos_feasible_point: KKT matrix not positive definite (dpotrf info {info})")
    return factor


_POTRF, _POTRS = lapack.dpotrf, lapack.dpotrs
def _solve(objective: np.ndarray, a_ub, b_ub, method: str = "ipm") -> np.ndarray:
    """Maximise objective @ v subject to a_ub @ v <= b_ub, v >= 0."""
    a = sparse.csc_matrix(a_ub)
    return _run(objective, np.asarray(b_ub, dtype=float), a.indptr, a.indices, a.data, method)


def _run(objective, upper, start, index, value, method: str = "ipm") -> np.ndarray:
    """Maximise objective @ v subject to A v <= upper, v >= 0, A given column-wise (CSC arrays)."""
    clock = time.perf_counter()
    columns, rows = len(objective), len(upper)
    solver = _highs(method)
    # the array form of passModel: one call, no HighsLp object to fill attribute by attribute
    solver.passModel(columns, rows, len(value), _COLUMN_WISE, _MAXIMIZE, 0.0, objective, np.zeros(columns),
                     np.full(columns, highspy.kHighsInf), np.full(rows, -highspy.kHighsInf), upper,
                     start, index, value, np.zeros(columns, dtype=np.int32))  # all continuous
    solver.run()
    status = solver.getModelStatus()
    SOLVE_TIME["seconds"] += time.perf_counter() - clock
    SOLVE_TIME["lps"] += 1
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS could not solve the allocation LP: {solver.modelStatusToString(status)}")
    return np.array(solver.getSolution().col_value)


_SOLVERS: dict[str, highspy.Highs] = {}
_COLUMN_WISE = int(highspy.MatrixFormat.kColwise)
_MAXIMIZE = int(highspy.ObjSense.kMaximize)


def _highs(method: str) -> highspy.Highs:
    """One quiet HiGHS instance per method, reused (building one costs more than a small solve)."""
    if method not in _SOLVERS:
        with quiet():  # HiGHS prints a banner from its constructor, before any option
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
