"""Interference of jobs sharing a GPU: measured pair table, learned model, analytic overlap model.

One interface, `interference_pairs(keys, mode, ...)`, builds the pair dict a Lucid run uses,
(id_a, id_b) -> (speed_a, speed_b, joint GPU util %, joint memory MB), as
`colocation.pair_table` does:

- ``measured``: the measured pairs only (Lucid's table and rule); other pairs run at speed 1/1.
- ``learned``: measured pairs where available, the learned model (pairspeed.SpeedModel, trained
  on the same colocation file joined with single_data.csv) for every other pair of `keys`.
- ``analytic``: measured pairs where available, the analytic overlap model for every other pair.

For predicted pairs the joint utilisation is min(100, util_a x speed_a + util_b x speed_b) (busy
time that no longer overlaps adds up) and the joint memory is the sum of both footprints.

Analytic overlap model (profiles from `resources`): each job alternates bursts at level P with idle
time. While the summed levels of the jobs bursting at the same time exceed the resource's capacity
(100 %), every bursting job progresses at capacity / summed levels of its speed (time-slicing gives
each the same share); otherwise at full speed. Idle phases take their normal time. A job's speed is
its slowest resource's. The phases of colocated jobs are unknown, so two closed forms exist:

- ``interleaved`` (used for pairs): bursts are arranged to overlap as little as possible, so jobs
  slow down only once their summed mean use exceeds the capacity, and then all by capacity / sum.
  The measured pairs support it: pairs whose summed gpu_util is below 100 % keep speed ~1.
- ``random``: independent uniform phases; a job's bursts meet each partner's bursts in proportion
  to that partner's (stretched) duty cycle. Reported as the alternative.

`simulate_overlap` computes the same model for explicit phases. nvidia-smi utilisations add up
sub-linearly (kernels of colocated jobs partly run concurrently), so the capacity in utilisation
units can exceed 100 %; `AnalyticModel.fit` calibrates it on measured pairs (one number).
"""

from __future__ import annotations

import itertools
import logging
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from raysim.models import packing as pk
from raysim.models import pairspeed as ps
from raysim.models.colocation import pair_table
from raysim.models.features import KINDS, accuracy, check_kind, mae
from raysim.models.resources import BURST_LEVEL, RESOURCE_COLUMNS, Burst, JobProfile, key_profiles

log = logging.getLogger("raysim")

MODES = ("measured", "learned", "analytic")
PHASES = ("interleaved", "random")
#: capacity of a resource in percent of its utilisation counter
CAPACITY = 100.0
#: capacities AnalyticModel.fit tries
CAPACITY_GRID = np.arange(50.0, 200.5, 1.0)
#: learned model family interference_pairs uses by default
DEFAULT_KIND = "lightgbm"
#: most jobs the random-phase closed form enumerates (2^(k-1) burst overlaps per job)
MAX_RANDOM_JOBS = 12


def overlap_speeds(bursts, *, capacity: float = CAPACITY, phases: str = "interleaved") -> np.ndarray:
    """Speeds (relative to running alone) of k jobs sharing one resource, each given as a Burst.

    ``interleaved``: min(1, capacity / sum of mean uses) for every job that uses the resource.
    ``random``: fixed point of the stretched duty cycles D_j; job i's bursts progress at the mean
    of capacity / (P_i + sum of P_j bursting with it), capped at 1, over which partners burst at
    the same time (independently, with probabilities D_j).
    """
    bursts = list(bursts)
    if phases not in PHASES:
        raise ValueError(f"phases must be one of {PHASES}, not {phases!r}")
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, not {capacity!r}")
    mean = np.array([b.mean for b in bursts], dtype=np.float64)
    if phases == "interleaved":
        return np.where(mean > 0, min(1.0, capacity / mean.sum()) if mean.sum() > 0 else 1.0, 1.0)
    if len(bursts) > MAX_RANDOM_JOBS:
        raise ValueError(f"random phases: at most {MAX_RANDOM_JOBS} jobs, not {len(bursts)}")
    duty = np.array([[b.duty if b.level > 0 else 0.0 for b in bursts]], dtype=np.float64)
    level = np.array([[b.level for b in bursts]], dtype=np.float64)
    return _random_phase_speeds(duty, level, capacity)[0]


def _random_phase_speeds(duty: np.ndarray, level: np.ndarray, capacity: float) -> np.ndarray:
    """Random-phase speeds for n groups of k jobs at once: duty and level arrays of shape (n, k)."""
    n, k = duty.shape
    stretched = duty.copy()
    for _ in range(1000):
        rate = np.zeros((n, k))
        for i in range(k):
            others = [j for j in range(k) if j != i]
            for busy in itertools.product((False, True), repeat=k - 1):
                prob = np.ones(n)
                load = level[:, i].copy()
                for j, b in zip(others, busy):
                    prob *= stretched[:, j] if b else 1 - stretched[:, j]
                    load += level[:, j] if b else 0.0
                rate[:, i] += prob * np.minimum(1.0, np.divide(capacity, load, out=np.ones(n), where=load > 0))
        burst = np.divide(duty, rate, out=np.zeros((n, k)), where=duty > 0)
        new = np.divide(burst, burst + 1 - duty, out=np.zeros((n, k)), where=duty > 0)
        if np.abs(new - stretched).max() < 1e-12:
            break
        stretched = 0.5 * stretched + 0.5 * new
    return 1.0 / (burst + 1 - duty)


def simulate_overlap(bursts, offsets, *, capacity: float = CAPACITY, cycles: int = 200) -> np.ndarray:
    """Speeds of k jobs sharing one resource for explicit phases: job i starts `offsets[i]` seconds
    into its burst/idle cycle (bursts first). Fluid event simulation over `cycles` periods of the
    longest job; a job's speed is its solo period times the cycles it completes between its first
    and last burst end in the second half, over that time (1 for a job that never bursts)."""
    bursts = list(bursts)
    if len(offsets) != len(bursts):
        raise ValueError(f"{len(bursts)} jobs but {len(offsets)} offsets")
    k = len(bursts)
    burst = np.array([b.burst_s for b in bursts], dtype=np.float64)
    idle = np.array([b.idle_s for b in bursts], dtype=np.float64)
    level = np.array([b.level for b in bursts], dtype=np.float64)
    period = burst + idle
    horizon = cycles * float(period.max())
    bursting, left = np.zeros(k, dtype=bool), np.zeros(k)
    for i, o in enumerate(offsets):
        pos = float(o) % period[i]
        bursting[i] = pos < burst[i]
        left[i] = burst[i] - pos if bursting[i] else period[i] - pos
    ends: list[list[float]] = [[] for _ in range(k)]
    t = 0.0
    while t < horizon:
        load = level[bursting].sum()
        speed = np.where(bursting, min(1.0, capacity / load) if load > 0 else 1.0, 1.0)
        dt = float((left / speed).min())
        left -= speed * dt
        t += dt
        for i in np.flatnonzero(left <= 1e-12 * period):
            if bursting[i] and t >= horizon / 2:
                ends[i].append(t)
            # next non-empty phase: a job without idle time keeps bursting, one without bursts idles
            bursting[i] = not bursting[i] if (idle[i] > 0 and burst[i] > 0) else burst[i] > 0
            left[i] = burst[i] if bursting[i] else idle[i]
    return np.array([(len(e) - 1) * period[i] / (e[-1] - e[0]) if len(e) > 1 else 1.0 for i, e in enumerate(ends)])


def profile_speeds(profiles, *, capacity: float = CAPACITY, phases: str = "interleaved") -> np.ndarray:
    """Speeds of k colocated jobs given as JobProfiles: per job, the slowest of its resources'
    overlap_speeds (a resource a job's profile lacks counts as unused)."""
    profiles = list(profiles)
    speeds = np.ones(len(profiles))
    resources = dict.fromkeys(r for p in profiles for r in p.bursts)
    for r in resources:
        bursts = [p.bursts.get(r, Burst(0.0, 1.0, 0.0)) for p in profiles]
        speeds = np.minimum(speeds, overlap_speeds(bursts, capacity=capacity, phases=phases))
    return speeds


def interleaved_pair_speeds(own: pd.DataFrame, partner: pd.DataFrame, capacity: float = CAPACITY) -> np.ndarray:
    """Vectorised `profile_speeds` (interleaved phases) of the `own` job of each pair: frames with
    the mean utilisation columns of RESOURCE_COLUMNS (%)."""
    speed = np.ones(len(own))
    for col in RESOURCE_COLUMNS.values():
        a = own[col].to_numpy(dtype=np.float64).clip(0, 100)
        total = a + partner[col].to_numpy(dtype=np.float64).clip(0, 100)
        slow = np.divide(capacity, total, out=np.ones(len(own)), where=total > 0)
        speed = np.minimum(speed, np.where(a > 0, np.minimum(1.0, slow), 1.0))
    return speed


class AnalyticModel:
    """The interleaved overlap model with a capacity (100 % unless fitted), predicting like SpeedModel."""

    def __init__(self, capacity: float = CAPACITY):
        self.capacity = float(capacity)

    def fit(self, data: pd.DataFrame) -> AnalyticModel:
        """Set the capacity (CAPACITY_GRID) with the least absolute error on an `oriented` frame."""
        own, partner = ps.sides(data)
        y = data["speed"].to_numpy(dtype=np.float64)
        errors = [mae(y, interleaved_pair_speeds(own, partner, c)) for c in CAPACITY_GRID]
        self.capacity = float(CAPACITY_GRID[int(np.argmin(errors))])
        return self

    def predict(self, own: pd.DataFrame, partner: pd.DataFrame) -> np.ndarray:
        """Speed of each `own` job next to the aligned `partner` job."""
        return interleaved_pair_speeds(own, partner, self.capacity)


def interference_pairs(keys, mode: str, *, colocation_csv=None, single_csv=None, profiles=None,
                       kind: str = DEFAULT_KIND, seed: int = 0) -> dict:
    """Pair dict for a run over workload `keys` (colocation.workload_ids): see the module docstring.

    `profiles` maps each key to a JobProfile (e.g. resources.key_profiles(keys, trace.table,
    single_csv)); by default they come from single_csv, predicted where it lacks a key. The learned
    mode needs colocation_csv and single_csv; the analytic mode fits its capacity on them when both
    are given and uses 100 % otherwise.
    """
    if mode not in MODES:
        raise ValueError(f"interference mode must be one of {MODES}, not {mode!r}")
    if mode == "learned" and not (colocation_csv and single_csv):
        raise ValueError("interference mode 'learned' needs the colocation and single-job profile files "
                         "(policy.profiles.colocation, policy.profiles.single) to train on")
    keys = [tuple(k) for k in keys]
    pairs = pair_table(keys, colocation_csv) if colocation_csv else {}
    if mode == "measured" or not keys:
        return pairs
    profiles = key_profiles(keys, single_csv=single_csv) if profiles is None else profiles
    absent = [k for k in keys if k not in profiles]
    if absent:
        raise ValueError(f"profiles lack {len(absent)} workload key(s), e.g. {absent[0]}")
    if mode == "learned":
        model = ps.SpeedModel(kind, seed).fit(ps.oriented(ps.read_pairs(colocation_csv, single_csv)))
    elif colocation_csv and single_csv:
        model = AnalyticModel().fit(ps.oriented(ps.read_pairs(colocation_csv, single_csv)))
    else:
        model = AnalyticModel()
    todo = [(i, j) for i in range(len(keys)) for j in range(i, len(keys))
            if (i, j) not in pairs and (j, i) not in pairs]
    if not todo:
        return pairs
    table = _feature_table(keys, profiles)
    a = table.iloc[[i for i, _ in todo]].reset_index(drop=True)
    b = table.iloc[[j for _, j in todo]].reset_index(drop=True)
    speed_a, speed_b = model.predict(a, b), model.predict(b, a)
    util = np.minimum(100.0, a["gpu_util"] * speed_a + b["gpu_util"] * speed_b).to_numpy()
    gmem = (a["gmem"] + b["gmem"]).to_numpy()
    for n, pair in enumerate(todo):
        pairs[pair] = (float(speed_a[n]), float(speed_b[n]), float(util[n]), float(gmem[n]))
    log.info("interference %s: %d measured pair(s), %d predicted (%s)", mode, len(pairs) - len(todo), len(todo),
             f"{kind} model" if mode == "learned" else f"capacity {model.capacity:g} %")
    return pairs


def _feature_table(keys, profiles) -> pd.DataFrame:
    """packing.FEATURES (and the utilisation columns) per key, from the key and its JobProfile."""
    rows = []
    for key in keys:
        p: JobProfile = profiles[key]
        row = {"batchsize": float(key[2]), "amp": float(key[3]), "gmem": p.memory_mb}
        row.update({col: p.mean(r) for r, col in RESOURCE_COLUMNS.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def cross_validate(colocation_csv, single_csv, *, folds: int = 5, seed: int = 0,
                   kind: str = DEFAULT_KIND) -> tuple[dict, pd.DataFrame]:
    """Grouped k-fold evaluation of the colocation-speed models on the measured pairs.

    Folds are grouped by the unordered model pair (every configuration pair of two models is in
    the same fold). Per fold, each learned model (KINDS) and the analytic model's capacity are
    fitted on the training pairs; the analytic model at capacity 100 % (interleaved and random
    phases) and the "speed = 1" baseline need no fit. Returns the metrics (MAE over both sides of
    every pair; share-score tier accuracy, see `tier_accuracy`; `kind`'s is `tier_accuracy`) and
    the out-of-fold predictions (one row per pair side).
    """
    check_kind(kind)
    pairs = ps.read_pairs(colocation_csv, single_csv)
    data = ps.oriented(pairs)
    groups = data["group"].to_numpy()
    n_folds = min(folds, len(np.unique(groups)))
    if n_folds < 2:
        raise ValueError(f"{colocation_csv}: pairs of at least 2 model pairs are needed for grouped "
                         f"cross-validation, found {len(np.unique(groups))}")
    own, partner = ps.sides(data)
    pred = {k: np.zeros(len(data)) for k in KINDS}
    pred["analytic"] = np.zeros(len(data))
    capacities, seconds = [], dict.fromkeys(pred, 0.0)
    for train, test in GroupKFold(n_splits=n_folds).split(data, groups=groups):
        for name in pred:
            t0 = time.perf_counter()
            model = ps.SpeedModel(name, seed) if name in KINDS else AnalyticModel()
            model.fit(data.iloc[train])
            pred[name][test] = model.predict(own.iloc[test], partner.iloc[test])
            seconds[name] += time.perf_counter() - t0
            if name == "analytic":
                capacities.append(model.capacity)
    pred["analytic_capacity100"] = interleaved_pair_speeds(own, partner)
    pred["analytic_random"] = _random_pair_speeds(own, partner)
    pred["speed1"] = np.ones(len(data))
    y = data["speed"].to_numpy(dtype=np.float64)
    out = data[["pair", "group", *(f"own_{c}" for c in pk.KEY), "speed"]].copy()
    metrics = {}
    for name, p in pred.items():
        out[f"pred_{name}"] = p
        label = f"learned_{name}" if name in KINDS else name
        metrics[f"mae_{label}"] = mae(y, p)
        metrics[f"tier_accuracy_{name}"] = tier_accuracy(out, p)
    metrics["tier_accuracy"] = metrics[f"tier_accuracy_{kind}"]
    metrics.update(kind=kind, folds=n_folds, n_pairs=int(data["pair"].nunique()), n_pair_sides=len(data),
                   n_configurations=int(out.groupby([f"own_{c}" for c in pk.KEY]).ngroups),
                   n_model_pairs=int(len(np.unique(groups))), analytic_capacity_per_fold=capacities,
                   fit_s={("learned_" + k if k in KINDS else k): round(v, 3) for k, v in seconds.items()},
                   unprofiled_pairs=pairs.attrs["unprofiled"])
    return metrics, out


def tier_accuracy(data: pd.DataFrame, predicted) -> float:
    """Share of job configurations whose share-score tier from predicted speeds equals the tier
    from measured speeds. A configuration's tier comes from its mean speed over every pair side it
    is the own job of (packing.label_from_speed: < 0.85 -> 2, < 0.95 -> 1, else 0), as
    packing.colocation_speeds does for the measured labels."""
    cols = [f"own_{c}" for c in pk.KEY]
    means = data[cols].assign(measured=data["speed"].to_numpy(), predicted=np.asarray(predicted))
    means = means.groupby(cols)[["measured", "predicted"]].mean()
    return accuracy(pk.label_from_speed(means["measured"]), pk.label_from_speed(means["predicted"]))


def _random_pair_speeds(own: pd.DataFrame, partner: pd.DataFrame) -> np.ndarray:
    """Random-phase `profile_speeds` of the own job of each pair (capacity 100 %), with the
    resources rule (bursts at BURST_LEVEL, duty = mean / BURST_LEVEL)."""
    speed = np.ones(len(own))
    for col in RESOURCE_COLUMNS.values():
        mean = np.stack([own[col].to_numpy(dtype=np.float64), partner[col].to_numpy(dtype=np.float64)], axis=1)
        duty = np.clip(mean / BURST_LEVEL, 0.0, 1.0)
        speed = np.minimum(speed, _random_phase_speeds(duty, np.full(duty.shape, BURST_LEVEL), CAPACITY)[:, 0])
    return speed
