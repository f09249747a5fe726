"""Time-series recorder: state snapshots at event times, sampled on a fixed grid, kept as change rows.

Between events nothing changes, so the sample at grid time g is the last snapshot taken at or
before g. The recorder does not hand out every grid sample: it emits a row only at grid times
whose sample differs from the one before (and at the first grid time), so its output grows with
the events, not with simulated seconds (a job running alone for three years adds two rows, not
1.6 million). Expanding the rows back to the grid (each one holds until the VC's next row) gives
the samples exactly; see raysim.report.timeseries.
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
    """Collects snapshots and turns them into change rows on a grid of `interval` seconds of the
    trace clock (grid times are multiples of `interval`, from the first one >= t0)."""

    def __init__(self, interval: int, t0: int, extra: tuple[str, ...] = ()):
        self.interval = interval
        self.columns = COLUMNS + tuple(extra)
        self._times: list[int] = []
        self._rows: list[tuple] = []
        self._next_sample = -(-t0 // interval) * interval  # first grid time >= t0
        self._last: tuple | None = None  # the last grid sample emitted (column values, as stored)

    def snapshot(self, t: int, row: tuple) -> None:
        """Record the state after everything that happens at time t (replaces an earlier one at t)."""
        if self._times and self._times[-1] == t:
            self._rows[-1] = row
        else:
            self._times.append(t)
            self._rows.append(row)

    def emit(self, last: int) -> dict[str, np.ndarray]:
        """Change rows for the grid times <= `last` not emitted yet: the sample at the first grid
        time, then the sample at every grid time where it differs from the one before. Keeps the
        latest snapshot. Costs per snapshot, whatever the number of grid times."""
        if last < self._next_sample or not self._times:
            return _empty(self.columns)
        iv, first = self.interval, self._next_sample
        stop = last - (last - first) % iv  # the last grid time <= last
        times = np.asarray(self._times, dtype=np.int64)
        at = np.maximum(-(-times // iv) * iv, first)  # the first grid time each snapshot could be sampled at
        # a snapshot is sampled from `at` on, unless a later one comes before that grid time
        sampled = np.flatnonzero((at <= stop) & np.append(at[1:] != at[:-1], True))
        if not len(sampled):
            return _empty(self.columns)
        rows = np.asarray([self._rows[i] for i in sampled], dtype=np.float64)
        cast = [rows[:, i].astype(_dtype(name)) for i, name in enumerate(self.columns)]
        changed = changed_rows(cast, self._last)
        self._last = tuple(col[-1] for col in cast)
        out = {"time": at[sampled][changed]}
        for name, col in zip(self.columns, cast):
            out[name] = col[changed]
        self._next_sample = int(stop) + iv
        cut = int(sampled[-1])  # earlier snapshots can no longer be the latest before a future sample
        self._times, self._rows = self._times[cut:], self._rows[cut:]
        return out


def changed_rows(columns: list[np.ndarray], before: tuple | None) -> np.ndarray:
    """Whether each row of `columns` differs from the row before it (the first row: from the
    values `before`, or always when None)."""
    changed = np.zeros(len(columns[0]), dtype=bool)
    for col in columns:
        changed[1:] |= col[1:] != col[:-1]
    if len(changed):
        changed[0] = before is None or any(col[0] != prev for col, prev in zip(columns, before))
    return changed


def _dtype(name: str):
    return np.float32 if name in FLOAT_COLUMNS else np.int32


def _empty(columns) -> dict[str, np.ndarray]:
    out = {"time": np.empty(0, dtype=np.int64)}
    for name in columns:
        out[name] = np.empty(0, dtype=_dtype(name))
    return out
