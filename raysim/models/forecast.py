"""Throughput forecasts on the trace clock, and the packing switch Lucid derives from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from raysim.csvfile import read_csv_columns
from raysim.errors import TraceError

COLUMNS = ("time", "pred_gpu_job", "pred_gpu_num")


def load_forecast(path: str | Path, origin: str) -> dict:
    """{"times", "pred_gpu_job", "pred_gpu_num"}: bin start times in seconds on the trace clock."""
    df = read_csv_columns(path, COLUMNS, "forecast file")
    stamps = pd.to_datetime(df["time"], errors="coerce", utc=True)
    if stamps.isna().any():
        row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise TraceError(str(path), "time is not a datetime", row=row + 1, column="time", value=df["time"].iloc[row])
    base = pd.Timestamp(origin)
    base = base.tz_localize("UTC") if base.tzinfo is None else base
    times = ((stamps - base).dt.total_seconds()).to_numpy().astype(np.int64)
    return {"times": times, "pred_gpu_job": df["pred_gpu_job"].to_numpy(dtype=float),
            "pred_gpu_num": df["pred_gpu_num"].to_numpy(dtype=float)}


class PackingSwitch:
    """Packing on/off as a step function of time.

    `times` are the times at which the value changes; before the first one the value is `initial`.
    """

    def __init__(self, times=(), values=(), initial: bool = True):
        self.times = np.asarray(times, dtype=np.int64)
        self.values = np.asarray(values, dtype=bool)
        self.initial = initial

    def at(self, t: int) -> bool:
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        return self.initial if i < 0 else bool(self.values[i])

    def next_change(self, t: int) -> float:
        i = int(np.searchsorted(self.times, t, side="right"))
        return int(self.times[i]) if i < len(self.times) else np.inf


def packing_switch(forecast: dict | None, *, threshold: float, bins: int, period_s: int) -> PackingSwitch:
    """Lucid's switch: at multiples of `period_s`, pack iff the mean forecast of submitted GPU jobs
    over the next `bins` bins (strictly after now) exceeds `threshold`; once the forecast has run out
    (or without one) packing stays on."""
    if forecast is None or len(forecast["times"]) == 0:
        return PackingSwitch()
    times, pred = forecast["times"], forecast["pred_gpu_job"]
    grid = np.arange((times[0] // period_s - 1) * period_s, times[-1] + period_s, period_s)
    first = np.searchsorted(times, grid, side="right")
    csum = np.concatenate(([0.0], np.cumsum(pred)))
    left = len(times) - first
    take = np.where(left > bins, bins, left)
    mean = np.divide(csum[np.minimum(first + take, len(times))] - csum[first], take,
                     out=np.full(len(grid), np.nan), where=take > 0)
    on = ~(mean <= threshold)  # NaN (no bins left) -> on
    change = np.flatnonzero(np.diff(np.concatenate(([True], on))) != 0)
    return PackingSwitch(grid[change], on[change], initial=True)
