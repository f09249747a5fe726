"""Gavel's MinTotalDuration_Perf (makespan): the smallest T such that every job can finish its
remaining steps R_j within T, i.e. sum_k T_jk x_jk >= R_j / T for all j.

Gavel bisects on T in [100 s, 1e6 s] (x10 while infeasible) until max/min < 1.05, solving at each
probe the feasibility problem "base constraints and sum_k T_jk x_jk >= R_j / T" with a constant
objective, and returns the point its solver (ECOS) found at the smallest feasible T it probed.
Feasibility at T is equivalent to T >= T* = 1 / mu*, mu* = max_x min_j sum_k T_jk x_jk / R_j, so one
max-min LP (simplex: its optimum exactly; an interior point stopped short moves T* by up to 0.4 %,
enough to flip a probe) gives T*, the probes are replayed, and the feasibility problem at Gavel's
final T is solved once by :func:`raysim.rounds.lp.ecos_feasible_point`: with no objective the
allocation is wherever the solver's iterations stop, and that function stops where ECOS does."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raysim.rounds import lp
from raysim.rounds.policies.base import AllocationInput, RoundPolicy, RoundSettings, singles
from raysim.settings import setting


@dataclass(frozen=True)
class MinTotalDurationSettings(RoundSettings):
    """The round mechanism, and Gavel's bisection on the makespan T."""

    min_s: float = setting(100.0, "Gavel's bisection: starting interval for T (seconds) ...", above=0)
    max_s: float = setting(1000000.0, "... multiplied by 10 while infeasible ...", above=0)
    stop_ratio: float = setting(1.05, "... until max/min < this; the allocation is the one at the smallest "
                                "feasible T", above=1)


class MinTotalDurationPerf(RoundPolicy):
    name = "min_total_duration_perf"
    Settings = MinTotalDurationSettings

    def __init__(self, seed: int = 0, min_s: float = 100.0, max_s: float = 1e6, stop_ratio: float = 1.05):
        super().__init__(seed)
        self.min_s, self.max_s, self.stop_ratio = min_s, max_s, stop_ratio

    def allocate(self, state: AllocationInput) -> dict:
        remaining = state.steps_remaining
        _, mu = lp.max_min(state.throughputs / remaining[:, None], state.scale_factors, state.gpus, method="simplex")
        if not mu > 0.0:
            raise RuntimeError("min_total_duration_perf: a job can run on no GPU type, so no makespan is "
                               "feasible (Gavel's bisection would search forever)")
        horizon = gavel_bisection(1.0 / mu, self.min_s, self.max_s, self.stop_ratio)
        m, n = state.throughputs.shape
        # rows over x (row-major): capacity of each type, time of each job, each job's finish by T
        rows = np.zeros((n + 2 * m, m * n))
        cols = np.arange(m * n)
        rows[cols % n, cols] = np.repeat(state.scale_factors, n)
        rows[n + cols // n, cols] = 1.0
        rows[n + m + cols // n, cols] = -state.throughputs.ravel()
        bounds = np.concatenate([state.gpus, np.ones(m), -remaining / horizon])
        return singles(state, lp.ecos_feasible_point(rows, bounds).reshape(m, n))


def gavel_bisection(optimum: float, low: float, high: float, stop_ratio: float) -> float:
    """The T Gavel's bisection settles on when T is feasible exactly from `optimum` on."""
    last_high, found = high, None
    while found is None:
        while stop_ratio * low < high:
            middle = (low + high) / 2.0
            if middle >= optimum:
                found, high = middle, middle
            else:
                low = middle
        high, low = last_high * 10.0, last_high
        last_high *= 10.0
    return found
