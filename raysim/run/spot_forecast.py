"""A spot quota that follows a forecast of high-priority demand (`spot.quota_from`, docs/spot.md).

Every `interval` seconds (at multiples of it on the trace clock, as GFS updates its quota every
5 minutes) each VC's quota becomes

    floor(scale x (its GPUs - clip(floor(F), 0, its GPUs)))

where F is the forecast peak of the VC's high-priority (HP) demand over the next `horizon` seconds
and `scale` GFS's safety factor (its eta, fixed here). The demand is a step function of time, and
F comes from one of three sources:

- `file`: the user's forecast, a CSV of rows (vc, time, hp_gpus); each VC's demand is the value of
  its latest row at or before a time (0 before its first row);
- `oracle`: the demand the trace itself implies, D(t) = the GPUs of the VC's HP jobs submitted at
  or before t and not yet ended had each run from its submission (submit <= t < submit + duration);
  F is D's peak over the next `horizon` (it knows the future);
- `estimate`: from D's past only, the larger of D now and D's peak over the same `horizon` a day
  earlier ([t - 1 day, t - 1 day + horizon)). It reads no later submission, only the durations of
  past ones, as an estimate at submission would (raysim's SJF reads them the same way).

Since the demand changes only at its change points, the quota can change only at the grid times
where one of them enters a window: those are the only times computed (the cost grows with the
trace, not with simulated seconds), and the quota comes out as its changes, (time s, GPUs) in time
order, the first at or before the trace's first submission.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from raysim.errors import TraceError

#: Where a forecast quota comes from (`spot.quota_from`); `fixed`: spot.quota_gpus or quota_share.
SOURCES = ("fixed", "file", "oracle", "estimate")
#: The estimator looks back one day (the same hours yesterday).
DAY_S = 86400
FILE_COLUMNS = ("vc", "time", "hp_gpus")


def demand_steps(submit: np.ndarray, duration: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's demand D(t) as its change points: (times, D from each on), 0 before the first."""
    times = np.concatenate([submit, submit + duration]).astype(np.int64)
    delta = np.concatenate([gpus, -gpus]).astype(np.int64)
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(delta[order])
    if not len(times):
        return times, level.astype(np.float64)
    last = np.r_[times[1:] != times[:-1], True]  # (the level after every change at one time)
    times, level = times[last], level[last]
    keep = np.r_[True, level[1:] != level[:-1]]
    return times[keep], level[keep].astype(np.float64)


def read_forecast_file(path: str, vcs: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """VC -> its forecast demand as change points (times, hp_gpus) from the CSV at `path` (columns
    vc, time, hp_gpus: time in whole seconds on the trace clock, hp_gpus a number >= 0). A bad row
    (an unknown VC, a time or hp_gpus that is not such a number, a second row for one VC and time)
    is one TraceError naming the file, the row and the column; so is a VC of `vcs` without rows."""
    name = str(path)
    try:
        df = pd.read_csv(Path(path).expanduser(), dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise TraceError(name, "spot quota forecast file not found") from None
    for column in FILE_COLUMNS:
        if column not in df.columns:
            raise TraceError(name, f"missing column; the file has {list(df.columns)}", column=column)
    times = pd.to_numeric(df["time"], errors="coerce").to_numpy(dtype=np.float64)
    gpus = pd.to_numeric(df["hp_gpus"], errors="coerce").to_numpy(dtype=np.float64)
    bad_vc = ~df["vc"].isin(vcs).to_numpy()
    bad_time = ~np.isfinite(times) | (times != np.floor(times)) | (np.abs(times) > 2 ** 53)
    bad_gpus = ~np.isfinite(gpus) | (gpus < 0)
    dup = df.assign(t=times).duplicated(["vc", "t"]).to_numpy() & ~bad_time
    checks = ((bad_vc, "vc", f"not a VC of the run (one of {', '.join(vcs)})"),
              (bad_time, "time", "not a whole number of seconds"),
              (bad_gpus, "hp_gpus", "not a number of GPUs >= 0"),
              (dup, "time", "a second row for this VC and time"))
    found = [(int(np.flatnonzero(bad)[0]), column, says) for bad, column, says in checks if bad.any()]
    if found:
        row, column, says = min(found, key=lambda f: f[0])  # (the first bad row, its first bad column)
        raise TraceError(name, says, row=row + 1, column=column, value=df[column].iloc[row])
    out = {}
    for vc in vcs:
        mine = np.flatnonzero(df["vc"].to_numpy() == vc)
        if not len(mine):
            raise TraceError(name, f"no rows for VC {vc}: every VC needs its forecast", column="vc")
        order = mine[np.argsort(times[mine], kind="stable")]
        out[vc] = times[order].astype(np.int64), gpus[order]
    return out


class StepPeaks:
    """Peaks of a step function (0 before its first change point) over time windows, by a sparse
    table of range maxima over its change points."""

    def __init__(self, times: np.ndarray, values: np.ndarray):
        self.times = times
        levels = [np.asarray(values, dtype=np.float64)]
        while 2 ** len(levels) <= len(values):
            prev, half = levels[-1], 2 ** (len(levels) - 1)
            levels.append(np.maximum(prev[:-half], prev[half:]))
        self.levels = levels

    def peak(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """The function's peak over each window [start, end) (end > start)."""
        times = self.times
        first = np.searchsorted(times, start, side="right") - 1  # (the change in force at start; -1: none)
        stop = np.searchsorted(times, end, side="left")  # (changes before end)
        out = np.where(first < 0, 0.0, -np.inf)
        lo = np.maximum(first, 0)
        some = stop > lo
        n = np.where(some, stop - lo, 1)
        k = np.floor(np.log2(n)).astype(np.int64)
        for level in np.unique(k[some]):
            at = some & (k == level)
            table = self.levels[level]
            out[at] = np.maximum(out[at], np.maximum(table[lo[at]], table[stop[at] - 2 ** level]))
        return out


def forecast_peaks(source: str, times: np.ndarray, values: np.ndarray, horizon: int,
                   interval: int, first: int) -> tuple[np.ndarray, np.ndarray]:
    """(grid times, F at each) for `source` over a demand with change points (times, values): at
    every grid time (multiples of `interval`) where F may change, and the one at or before `first`."""
    peaks = StepPeaks(times, values)
    offsets = (0, -horizon + 1) if source != "estimate" else (0, DAY_S, DAY_S - horizon + 1)
    grid = [np.array([math.floor(first / interval) * interval], dtype=np.int64)]
    grid += [-((-(times + off)) // interval) * interval for off in offsets]  # (the first grid time from each)
    grid = np.unique(np.concatenate(grid))
    if source == "estimate":
        now = peaks.peak(grid, grid + 1)
        return grid, np.maximum(now, peaks.peak(grid - DAY_S, grid - DAY_S + horizon))
    return grid, peaks.peak(grid, grid + horizon)


def quota_steps(gpus: int, grid: np.ndarray, peaks: np.ndarray, scale: float) -> tuple[tuple[int, int], ...]:
    """A VC's quota as its changes ((time s, GPUs), ...; the first at grid[0]): floor(scale x (its
    `gpus` - clip(floor(F), 0, gpus))) at each grid time."""
    free = gpus - np.clip(np.floor(peaks), 0, gpus)
    quota = np.floor(scale * free).astype(np.int64)
    keep = np.r_[True, quota[1:] != quota[:-1]]
    return tuple(zip(grid[keep].tolist(), quota[keep].tolist()))
