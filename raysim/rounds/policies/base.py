"""What a round-based policy sees and returns.

A policy is called when the allocation is recomputed (Gavel: a job arrived or finished, and at
least ``reset_min_s`` passed since the last recompute). It gets an :class:`AllocationInput` (the
active jobs, ascending ids) and returns the target allocation: for each combination it wants run
-- a job ``(j,)`` or, for packing policies, a pair ``(a, b)`` sharing GPUs -- the fraction of time
it should run on each GPU type. Jobs it leaves out get no GPUs until the next recompute.

Class attributes select the round mechanism's Gavel switches: ``shuffle_types`` (the type order of
the greedy pass is reshuffled every round, Gavel's rule for heterogeneity-agnostic policies),
``fifo`` (jobs of priority 0 are never scheduled) and ``packing`` (pairs are candidates).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from raysim.errors import ConfigError
from raysim.settings import setting

Combo = tuple  # (j,) or (a, b) with a < b: job positions

#: How the LPs are solved (policy.lp_method; raysim.rounds.lp): interior point or simplex. Here, so
#: that checking a setting does not import the solver.
LP_METHODS = ("ipm", "simplex")
#: The shortest round (policy.round_s, and the elastic policies' policy.round_s): the trace clock
#: counts whole seconds; a shorter round makes too few steps to progress (a nanosecond round
#: finished no job) or only multiplies rounds (an elastic nanosecond round never ended).
MIN_ROUND_S = 1.0
#: The longest: ten years (a round past any trace's span only delays every decision to its end).
MAX_ROUND_S = 10 * 365 * 86_400.0


def first_last(window: list, key: str) -> list:
    """policy.window: two job ids, the first not after the last."""
    if len(window) != 2:
        raise ConfigError(key, "must be [first, last]: two job ids", window)
    if window[0] > window[1]:
        raise ConfigError(key, "first job id after the last: write [first, last]", window)
    return window


def column_names(value, key: str):
    """policy.job_type_column: one column name, or a list of them (joined by "/")."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(c, str) and c.strip() for c in names):
        raise ConfigError(key, "must be a column name or a list of column names", value)
    return value if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class RoundSettings:
    """Gavel's round mechanism, as every round-based policy runs it (docs/gavel.md)."""

    round_s: float = setting(360.0, "seconds per round (Gavel's time_per_iteration)", minimum=MIN_ROUND_S,
                             maximum=MAX_ROUND_S, input=True)
    reset_min_s: float = setting(1920.0, "an arrival or completion recomputes the allocation at most this often, "
                                 "seconds", minimum=0, input=True)
    type_order: list[str] | None = setting(None, "the greedy pass's GPU type order (null: by name; reshuffled each "
                                           "round for agnostic policies)", input=True)
    lp_method: str = setting("ipm", "ipm (interior point, no crossover: inside the optimal face, like Gavel's ECOS) "
                             "| simplex (a vertex)", choices=LP_METHODS, input=True)
    window: list[int] | None = setting(None, "[first, last] job ids whose average JCT the summary also reports "
                                       "(avg_jct_window)", check=first_last, input=True)
    job_type_column: object = setting("job_type", "raysim-schema traces: the column naming each job's type (e.g. "
                                      "model on Venus), or a list of columns joined by /", check=column_names,
                                      input=True, what="name or list of names")
    job_type_map: dict[str, str] | None = setting(None, "... and its values -> throughput-table job types "
                                                  "(unmapped values are used as they are)", input=True)


@dataclass
class AllocationInput:
    """State at an allocation recompute. Arrays are per active job (ascending id) x GPU type."""

    jobs: np.ndarray              # positions of the active jobs, ascending
    throughputs: np.ndarray       # (m, n) whole-job throughput on each type (0: cannot run there)
    reference: np.ndarray         # (m,) throughput on the reference type (Gavel: v100)
    scale_factors: np.ndarray     # (m,) GPUs each job needs
    priority_weights: np.ndarray  # (m,)
    times_since_start: np.ndarray  # (m,) now - arrival
    steps_remaining: np.ndarray   # (m,)
    gpus: np.ndarray              # (n,) GPUs of each type
    pairs: list = field(default_factory=list)  # packing: candidate pairs (a, b), same scale factor
    pair_throughputs: np.ndarray | None = None  # (len(pairs), n, 2) each job's throughput when packed


class RoundPolicy:
    """Base class: subclasses set the switches and implement :meth:`allocate`."""

    name = ""
    shuffle_types = False
    fifo = False
    packing = False
    #: how its LPs are solved (LP_METHODS; policy.lp_method)
    lp_method = "ipm"
    #: its settings (raysim.settings; conf/policy/<name>.yaml): the round mechanism's, and its own
    #: constants (keyword arguments of the constructor)
    Settings: type = RoundSettings

    def __init__(self, seed: int = 0, **constants):
        if constants:
            raise ValueError(f"policy {self.name}: unknown constants {sorted(constants)}")
        self.seed = seed

    def allocate(self, state: AllocationInput) -> dict[Combo, np.ndarray]:
        raise NotImplementedError


def singles(state: AllocationInput, x: np.ndarray) -> dict[Combo, np.ndarray]:
    """{(j,): row of x} for the active jobs, clipped to [0, 1] as Gavel clips solver output."""
    x = np.clip(x, 0.0, 1.0)
    return {(int(j),): x[i] for i, j in enumerate(state.jobs)}


def equal_share(gpus: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Gavel's isolated split: every job gets 1/m of every type, per GPU it needs; a row summing to
    more than 1 is scaled down to 1 (no job gets more than all of its time)."""
    m = len(scale)
    x = np.tile(gpus / m, (m, 1)) / scale[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def proportional_throughput(throughputs: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Throughput of each job under Gavel's proportional share: x_k = N_k / sum(N)."""
    return throughputs @ (gpus / gpus.sum())
