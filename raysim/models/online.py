"""Duration estimates learned while the simulation runs: retrained every period on the jobs that
have finished in the simulated schedule by the period's start, so no future information leaks."""

from __future__ import annotations

import logging
import time

import numpy as np
import pyarrow as pa

from raysim.models.duration import DurationModel

log = logging.getLogger("raysim")


class PeriodicDurationEstimator:
    """Fills in estimates for the jobs submitted in [W, W + period) with a model trained at W.

    The coordinator calls `fill` for a window's trace rows once every job that finished before the
    window's period start is known (it holds back the first window of each period until then).
    """

    def __init__(self, trace: pa.Table, origin: str, *, period_s: int = 7 * 86_400, t0: int = 0,
                 kind: str = "ebm", seed: int = 0, target: str = "log"):
        self.trace, self.origin = trace, origin
        self.period_s, self.t0 = int(period_s), int(t0)
        self.kind, self.seed, self.target = kind, seed, target
        self.submit = trace.column("submit_time").to_numpy()
        self.estimates = np.full(trace.num_rows, np.nan)
        self._models: dict[int, DurationModel] = {}
        self.fits: list[dict] = []  # one line per retraining: period start, jobs, seconds

    def period_of(self, t: int) -> int:
        return self.t0 + ((t - self.t0) // self.period_s) * self.period_s

    def fill(self, lo: int, hi: int, finished_seq: np.ndarray, finished_end: np.ndarray) -> np.ndarray:
        """Estimates for trace rows lo..hi-1 (all in one period); trains that period's model if needed."""
        if hi <= lo:
            return self.estimates[lo:hi]
        start = self.period_of(int(self.submit[lo]))
        if self.period_of(int(self.submit[hi - 1])) != start:
            raise ValueError("a window must not span two estimator periods")
        model = self._models.get(start)
        if model is None:
            done = finished_seq[finished_end < start]
            t = time.perf_counter()
            model = DurationModel(kind=self.kind, seed=self.seed, target=self.target)
            model.fit(self.trace.take(pa.array(np.sort(done))), self.origin)
            self._models = {start: model}  # earlier periods are never asked for again
            self.fits.append({"period_start": start, "trained_on": int(len(done)),
                              "seconds": round(time.perf_counter() - t, 2)})
            log.info("duration estimator (%s) retrained at t=%d on %d finished jobs in %.1f s",
                     self.kind, start, len(done), self.fits[-1]["seconds"])
        self.estimates[lo:hi] = model.predict(self.trace.slice(lo, hi - lo))
        return self.estimates[lo:hi]
