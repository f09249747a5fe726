"""Time-series recorder: state snapshots at event times, sampled on a fixed grid.

Between events nothing changes, so the sample at grid time g is the last snapshot taken at or
before g. Snapshots are cheap tuples; sampling is vectorised (one searchsorted per emit).
"""

from __future__ import annotations

import numpy as np

#: Sampled columns (besides time), in order: the metrics of the Lucid simulator's cluster log.
COLUMNS = (
    "total_gpu_num",
    "idle_gpu_num",
    "pending_gpu_num",
    "running_gpujob_num",
    "pending_gpujob_num",
    "pending_job_num_less_8",  # pending jobs asking for less than the VC's largest node
    "total_node_num",
    "consolidate_node_num",  # nodes running exactly one job
    "shared_node_num",  # nodes running two or more jobs
    "sm_util",  # mean GPU utilisation (%) over the VC's GPUs
    "gmem_mb",  # mean GPU memory in use (MB) over the VC's GPUs
)
FLOAT_COLUMNS = ("sm_util", "gmem_mb")  # stored as float32, the counts as int32 (long runs keep millions of rows)
#: Per GPU type, in clusters of several types: total and idle GPUs of that type (int32).
TYPE_COLUMNS = ("total_gpu_num", "idle_gpu_num")


def per_type_columns(gpu_types) -> tuple[str, ...]:
    """The extra sampled columns of a cluster with several GPU types (none for a single type):
    `total_gpu_num_<type>` for every type, then `idle_gpu_num_<type>`."""
    if len(gpu_types) < 2:
        return ()
    return tuple(f"{c}_{t}" for c in TYPE_COLUMNS for t in gpu_types)


class Recorder:
    """Collects snapshots and turns them into samples every `interval` seconds of the trace clock."""

    def __init__(self, interval: int, t0: int, extra: tuple[str, ...] = ()):
        self.interval = interval
        self.columns = COLUMNS + tuple(extra)
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
            return _empty(self.columns)
        grid = np.arange(self._next_sample, last + 1, self.interval, dtype=np.int64)
        times = np.asarray(self._times, dtype=np.int64)
        idx = np.searchsorted(times, grid, side="right") - 1
        keep = idx >= 0
        grid, idx = grid[keep], idx[keep]
        rows = np.asarray(self._rows, dtype=np.float64)[idx]
        out = {"time": grid}
        for i, name in enumerate(self.columns):
            col = rows[:, i]
            out[name] = col.astype(np.float32 if name in FLOAT_COLUMNS else np.int32)
        if len(grid):
            self._next_sample = int(grid[-1]) + self.interval
            cut = int(idx[-1])  # earlier snapshots can no longer be the latest before a future sample
            self._times, self._rows = self._times[cut:], self._rows[cut:]
        return out


def _empty(columns) -> dict[str, np.ndarray]:
    out = {"time": np.empty(0, dtype=np.int64)}
    for name in columns:
        out[name] = np.empty(0, dtype=np.float32 if name in FLOAT_COLUMNS else np.int32)
    return out
