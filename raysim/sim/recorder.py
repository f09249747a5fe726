"""Time-series recorder: state snapshots at event times, sampled on a fixed grid.

Between events nothing changes, so the sample at grid time g is the last snapshot taken at or
before g. Snapshots are cheap tuples; sampling is vectorised (one searchsorted per emit).
"""

from __future__ import annotations

import numpy as np

#: Sampled columns (besides time), in order; see LUCID_SEMANTICS.md §Metrics.
COLUMNS = (
    "total_gpu_num",
    "idle_gpu_num",
    "pending_gpu_num",
    "running_gpujob_num",
    "pending_gpujob_num",
    "pending_job_num_less_8",
    "total_node_num",
    "consolidate_node_num",  # nodes running exactly one job
    "shared_node_num",  # nodes running two or more jobs
    "sm_util",  # mean GPU utilisation (%) over the VC's GPUs
    "gmem_mb",  # mean GPU memory in use (MB) over the VC's GPUs
)
FLOAT_COLUMNS = ("sm_util", "gmem_mb")  # stored as float32, the counts as int32 (long runs keep millions of rows)


class Recorder:
    """Collects snapshots and turns them into samples every `interval` seconds of the trace clock."""

    def __init__(self, interval: int, t0: int):
        self.interval = interval
        self._times: list[int] = []
        self._rows: list[tuple] = []
        self._next_sample = -(-t0 // interval) * interval  # first grid time >= t0

    def snapshot(self, t: int, row: tuple) -> None:
        """Record the state after everything that happens at time t (replaces an earlier one at t)."""
        if self._times and self._times[-1] == t:
            self._rows[-1] = row
        else:
            self._times.append(t)
            self._rows.append(row)

    def emit(self, last: int) -> dict[str, np.ndarray]:
        """Samples for every grid time <= `last` not emitted yet; keeps the latest snapshot."""
        if last < self._next_sample or not self._times:
            return _empty()
        grid = np.arange(self._next_sample, last + 1, self.interval, dtype=np.int64)
        times = np.asarray(self._times, dtype=np.int64)
        idx = np.searchsorted(times, grid, side="right") - 1
        keep = idx >= 0
        grid, idx = grid[keep], idx[keep]
        rows = np.asarray(self._rows, dtype=np.float64)[idx]
        out = {"time": grid}
        for i, name in enumerate(COLUMNS):
            col = rows[:, i]
            out[name] = col.astype(np.float32 if name in FLOAT_COLUMNS else np.int32)
        if len(grid):
            self._next_sample = int(grid[-1]) + self.interval
            cut = int(idx[-1])  # earlier snapshots can no longer be the latest before a future sample
            self._times, self._rows = self._times[cut:], self._rows[cut:]
        return out


def _empty() -> dict[str, np.ndarray]:
    out = {"time": np.empty(0, dtype=np.int64)}
    for name in COLUMNS:
        out[name] = np.empty(0, dtype=np.float32 if name in FLOAT_COLUMNS else np.int32)
    return out
