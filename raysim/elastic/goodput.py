"""Pollux's goodput model (OSDI'21), as Sia's simulator (SOSP'23) uses it.

Goodput = throughput x statistical efficiency. Throughput comes from a fitted model of one step:

- compute time of one atomic batch of ``b`` samples per GPU: ``T_c = alpha_c + beta_c b``;
- all-reduce time over ``R`` GPUs: ``T_n = alpha + beta max(R - 2, 1e-8)``, with (alpha_n, beta_n)
  when the job spans nodes, (alpha_r, beta_r) when it spans GPUs of one node, ~0 on one GPU;
- a step overlaps the last compute with the all-reduce: ``T_o = (T_c^g + T_n^g)^(1/g)``, g in [1, 10];
- with ``s`` gradient-accumulation steps a step takes ``s T_c + T_o`` for ``R b (s + 1)`` samples.

Efficiency of a batch ``M`` (initial batch ``M0``, gradient statistics sqr and var, scale
``k = M / M0``): ``(var + sqr) / (var / k + sqr) / k``, 1 at ``M0``.

:func:`fit_perf_params` fits the step model to measured step times by Pollux's objective, with a
hand-derived gradient (no autograd).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.optimize

from raysim.blas import one_blas_thread

#: Batch sizes :meth:`GoodputModel.optimize` tries between its smallest and largest (geometric).
CANDIDATE_BATCH_SIZES = 50
_EPS = 1e-8  # slack of ceil/floor on batch sizes; the network time of a single GPU
_LOWER = 1e-8  # lower bound of the alpha and beta parameters
#: Pollux's initial point and regularisation weights of the fit.
_INITIAL = (1e-1, 1e-2) * 3 + (1.0 + 1e-3,)
_GAMMA_WEIGHT, _RETROGRESS_WEIGHT = 1e-3, 1e-2


class PerfParams(NamedTuple):
    """Parameters of the step-time model (seconds; see the module doc)."""

    alpha_c: float  # compute: constant
    beta_c: float   # compute: per sample
    alpha_n: float  # all-reduce across nodes: constant
    beta_n: float   # all-reduce across nodes: per GPU beyond 2
    alpha_r: float  # all-reduce within a node: constant
    beta_r: float   # all-reduce within a node: per GPU beyond 2
    gamma: float    # overlap of compute and all-reduce (1: none; 10: ~full)


class GradParams(NamedTuple):
    """Gradient statistics: squared norm of the mean gradient and its variance."""

    sqr: float
    var: float


def _compute_time(perf: PerfParams, atomic_bsz):
    return perf.alpha_c + perf.beta_c * atomic_bsz


def _network_time(perf: PerfParams, num_nodes, num_replicas):
    across_nodes, within_node = num_nodes > 1, num_replicas > 1
    alpha = np.where(across_nodes, perf.alpha_n, np.where(within_node, perf.alpha_r, _EPS))
    beta = np.where(across_nodes, perf.beta_n, np.where(within_node, perf.beta_r, _EPS))
    return alpha + beta * np.maximum(num_replicas - 2, _EPS)


def _log_optim_time(gamma: float, compute_time, network_time):
    """Log of the last step's time: compute and all-reduce overlapped by `gamma`."""
    return np.log(compute_time ** gamma + network_time ** gamma) / gamma


class GoodputModel:
    """Goodput (samples of progress per second) of one job under Pollux's model."""

    def __init__(self, perf: PerfParams, grad: GradParams, init_batch_size: float):
        self.perf, self.grad, self.init_batch_size = PerfParams(*perf), GradParams(*grad), init_batch_size

    def throughput(self, num_nodes, num_replicas, atomic_bsz, accum_steps):
        """Samples per second with `atomic_bsz` samples per GPU per pass and `accum_steps`
        accumulation passes before each all-reduce (arrays broadcast)."""
        compute = _compute_time(self.perf, atomic_bsz)
        network = _network_time(self.perf, num_nodes, num_replicas)
        optim = np.exp(_log_optim_time(self.perf.gamma, compute, network))
        return num_replicas * atomic_bsz * (accum_steps + 1) / (accum_steps * compute + optim)

    def efficiency(self, batch_size):
        """Statistical efficiency of `batch_size` relative to the initial batch size (1 there)."""
        sqr, var = np.float64(self.grad.sqr), np.float64(self.grad.var)  # 0 / 0: nan, not an exception
        scale = batch_size / self.init_batch_size
        denominator = var / scale + sqr
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(denominator > 0, (var + sqr) / denominator, 1.0)
        return gain / scale

    def evaluate(self, num_nodes, num_replicas, atomic_bsz, accum_steps):
        """Goodput: throughput x efficiency of the resulting batch size (at least the initial one)."""
        batch_size = num_replicas * atomic_bsz * (accum_steps + 1)
        if not np.all(self.init_batch_size <= batch_size):
            raise ValueError(f"batch size below the initial {self.init_batch_size}: {batch_size}")
        return self.throughput(num_nodes, num_replicas, atomic_bsz, accum_steps) * self.efficiency(batch_size)

    def optimize(self, num_nodes, num_replicas, max_batch_size: float | None = None,
                 atomic_bsz_range: tuple[float | None, float | None] | None = None,
                 accumulation: bool = False, tune_bsz: bool = True):
        """(goodput, atomic_bsz, accum_steps) of the best batch size for each (num_nodes,
        num_replicas) (arrays broadcast; scalars in, scalars out).

        Tries 50 batch sizes spaced geometrically from max(initial, smallest atomic size x GPUs) to
        `max_batch_size` (default: the initial one); without `tune_bsz`, `max_batch_size` only. With
        `accumulation`, a per-GPU batch larger than the largest atomic size is split into
        accumulation passes, and a single GPU beyond the initial batch size accumulates at least
        once (its gradient statistics need two batches). A candidate whose atomic size falls
        outside `atomic_bsz_range` (default 1 .. `max_batch_size`) has goodput 0."""
        if not (np.all(np.greater_equal(num_nodes, 1)) and np.all(np.less_equal(num_nodes, num_replicas))):
            raise ValueError(f"need 1 <= num_nodes <= num_replicas: {num_nodes}, {num_replicas}")
        if max_batch_size is None:
            max_batch_size = self.init_batch_size
        if self.init_batch_size > max_batch_size:
            raise ValueError(f"max_batch_size {max_batch_size} below the initial {self.init_batch_size}")
        low, high = atomic_bsz_range or (None, None)
        min_atomic, max_atomic = low or 1, high or max_batch_size
        shape = np.broadcast(num_nodes, num_replicas).shape
        nodes = np.broadcast_to(num_nodes, shape).flatten()
        replicas = np.broadcast_to(num_replicas, shape).flatten()
        if tune_bsz:
            smallest = np.maximum(self.init_batch_size, min_atomic * replicas)
        else:
            smallest = np.asarray([max_batch_size])
        batch_size = np.geomspace(smallest, max_batch_size, CANDIDATE_BATCH_SIZES)  # (candidates, configs)
        local_bsz = batch_size / replicas
        if accumulation:
            accum_steps = np.ceil(local_bsz / max_atomic - _EPS) - 1
            single_gpu_growing = (replicas == 1) & (local_bsz > self.init_batch_size + _EPS)
            accum_steps = np.where(single_gpu_growing, np.maximum(accum_steps, 1), accum_steps).astype(int)
        else:
            accum_steps = np.zeros_like(local_bsz, dtype=int)
        atomic_bsz = np.ceil(local_bsz / (accum_steps + 1) - _EPS).astype(int)
        goodput = self.evaluate(nodes, replicas, atomic_bsz, accum_steps)
        goodput = np.where((min_atomic <= atomic_bsz) & (atomic_bsz <= max_atomic), goodput, 0.0)
        best = np.argmax(goodput, axis=0), np.arange(goodput.shape[1])
        goodput, atomic_bsz, accum_steps = (goodput[best].reshape(shape), atomic_bsz[best].reshape(shape),
                                            accum_steps[best].reshape(shape))
        if shape == ():
            return goodput.item(), atomic_bsz.item(), accum_steps.item()
        return goodput, atomic_bsz, accum_steps


def speedup(model: GoodputModel, num_nodes, num_replicas, *, max_batch_size: float | None,
            atomic_bsz_range: tuple[float | None, float | None] | None, accumulation: bool = True,
            tune_bsz: bool = True) -> np.ndarray:
    """Best goodput on each (num_nodes, num_replicas) (Sia's speedup function, which hands policies
    goodputs, not ratios); 0 where both are 0 (no GPUs)."""
    nodes, replicas = np.broadcast_arrays(np.asarray(num_nodes), np.asarray(num_replicas))
    if np.any((nodes == 0) != (replicas == 0)):
        raise ValueError(f"nodes and GPUs must be 0 together: {num_nodes}, {num_replicas}")
    goodput = np.zeros(nodes.shape)
    used = replicas > 0
    if np.any(used):
        goodput[used] = model.optimize(nodes[used], replicas[used], max_batch_size, atomic_bsz_range,
                                       accumulation, tune_bsz)[0]
    return goodput


# -- fitting the step model ----------------------------------------------------------------------
class _Observations(NamedTuple):
    """Measured steps, prepared for the objective."""

    atomic_bsz: np.ndarray
    across_nodes: np.ndarray    # 1.0 where the step spans nodes
    within_node: np.ndarray     # 1.0 where it spans GPUs of one node only
    retrogression: np.ndarray   # max(replicas - 2, 1e-8)
    log_compute: np.ndarray     # log of the measured compute (accumulation) time
    log_optim: np.ndarray       # log of the measured whole-step time


def _observations(num_nodes, num_replicas, atomic_bsz, accum_step_time, optim_step_time) -> _Observations:
    nodes, replicas = np.asarray(num_nodes, dtype=float), np.asarray(num_replicas, dtype=float)
    across = nodes > 1
    return _Observations(np.asarray(atomic_bsz, dtype=float), across.astype(float),
                         (~across & (replicas > 1)).astype(float), np.maximum(replicas - 2, _EPS),
                         np.log(np.asarray(accum_step_time, dtype=float)),
                         np.log(np.asarray(optim_step_time, dtype=float)))


def _rms_and_gradient(residual: np.ndarray, jacobian: np.ndarray) -> tuple[float, np.ndarray]:
    """sqrt(mean(residual^2)) and its gradient, given d residual / d params (params x points);
    gradient 0 at a perfect fit."""
    rms = float(np.sqrt(np.mean(residual ** 2)))
    if rms == 0.0:
        return rms, np.zeros(jacobian.shape[0])
    return rms, jacobian @ residual / (residual.size * rms)


def _objective(params: np.ndarray, obs: _Observations) -> tuple[float, np.ndarray]:
    """Pollux's fit objective and its gradient: RMS log error of compute time + RMS log error of
    step time + 1e-3 (gamma - 1)^2 + 1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)."""
    alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma = params
    zero = np.zeros_like(obs.atomic_bsz)
    compute = alpha_c + beta_c * obs.atomic_bsz
    single = 1.0 - obs.across_nodes - obs.within_node  # one GPU: alpha = beta = 1e-8
    network = ((alpha_n + beta_n * obs.retrogression) * obs.across_nodes
               + (alpha_r + beta_r * obs.retrogression) * obs.within_node
               + (_EPS + _EPS * obs.retrogression) * single)
    compute_power, network_power = compute ** gamma, network ** gamma
    total = compute_power + network_power
    log_optim = np.log(total) / gamma

    # compute-time error: d log(compute) / d(alpha_c, beta_c)
    compute_jacobian = np.stack([1.0 / compute, obs.atomic_bsz / compute, zero, zero, zero, zero, zero])
    compute_error, compute_gradient = _rms_and_gradient(np.log(compute) - obs.log_compute, compute_jacobian)

    # step-time error: log_optim depends on compute, network and gamma
    compute_weight, network_weight = compute_power / total, network_power / total
    by_compute, by_network = compute_weight / compute, network_weight / network
    by_gamma = (compute_weight * np.log(compute) + network_weight * np.log(network) - log_optim) / gamma
    optim_jacobian = np.stack([by_compute, by_compute * obs.atomic_bsz,
                               by_network * obs.across_nodes, by_network * obs.across_nodes * obs.retrogression,
                               by_network * obs.within_node, by_network * obs.within_node * obs.retrogression,
                               by_gamma])
    optim_error, optim_gradient = _rms_and_gradient(log_optim - obs.log_optim, optim_jacobian)

    ratio_n, ratio_r = beta_n / alpha_n, beta_r / alpha_r
    value = (compute_error + optim_error + _GAMMA_WEIGHT * (gamma - 1) ** 2
             + _RETROGRESS_WEIGHT * (ratio_n ** 2 + ratio_r ** 2))
    regularisation = np.array([0.0, 0.0,
                               -2 * _RETROGRESS_WEIGHT * ratio_n ** 2 / alpha_n, 2 * _RETROGRESS_WEIGHT * ratio_n / alpha_n,
                               -2 * _RETROGRESS_WEIGHT * ratio_r ** 2 / alpha_r, 2 * _RETROGRESS_WEIGHT * ratio_r / alpha_r,
                               2 * _GAMMA_WEIGHT * (gamma - 1)])
    return value, compute_gradient + optim_gradient + regularisation


def fit_perf_params(num_nodes, num_replicas, atomic_bsz, accum_step_time, optim_step_time) -> PerfParams:
    """Pollux's step model fitted to measured steps: per step its nodes, GPUs, atomic batch size,
    compute (accumulation) time and whole-step time. Parameters the data cannot tell apart are
    held fixed: alpha_c at half the mean compute time when one atomic size was seen; the
    across-node terms without multi-node steps; the within-node terms without single-node
    multi-GPU steps; both retrogression terms without steps on more than 2 GPUs. Without multi-node
    steps the across-node terms are then raised to at least 1.1 x the within-node ones (a slower
    link between nodes)."""
    nodes, replicas = np.asarray(num_nodes), np.asarray(num_replicas)
    obs = _observations(nodes, replicas, atomic_bsz, accum_step_time, optim_step_time)
    params = np.array(_INITIAL)
    lower = np.array([_LOWER] * 6 + [1.0])
    upper = np.array([np.inf] * 6 + [10.0])
    fixed = []
    if np.unique(obs.atomic_bsz).size == 1:
        params[0] = lower[0] = upper[0] = np.mean(np.asarray(accum_step_time, dtype=float)) / 2
    if not np.any(nodes > 1):
        fixed += [2, 3]
    if not np.any((nodes == 1) & (replicas > 1)):
        fixed += [4, 5]
    if not np.any(replicas > 2):
        fixed += [3, 5]
    params[fixed] = upper[fixed] = lower[fixed]
    bounds = scipy.optimize.Bounds(lower, upper, keep_feasible=True)
    with one_blas_thread():  # L-BFGS-B's tiny matrices: threads cost 20-50x the fit itself
        result = scipy.optimize.minimize(_objective, params, args=(obs,), jac=True, bounds=bounds, tol=1e-5)
    fitted = result.x
    if not np.any(nodes > 1):
        fitted[2] = max(fitted[2], fitted[4] * 1.1)
        fitted[3] = max(fitted[3], fitted[5] * 1.1)
    return PerfParams(*(float(p) for p in fitted))
