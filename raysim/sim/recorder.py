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
#: With capacity events (raysim.sim.capacity): GPUs of the VC's own nodes out of service (down or
#: left, wherever they are: lent out too; a node that has not joined yet is not counted).
CAPACITY_COLUMNS = ("down_gpu_num",)
#: With repair=pipeline (raysim.sim.repairs): automated repairs, manual repairs and false successes
#: begun so far on the VC's own nodes (cumulative counts).
REPAIR_COLUMNS = ("auto_repairs", "manual_repairs", "false_successes")
#: With failures.diagnosis < 1, failures.wrong_node > 0, failures.bad_regen_h or a retirement policy
#: (retire=threshold | scored): a failure stream's count -> its column, the failures not diagnosed, the
#: nodes sent to repair for another node's failure, the good nodes turned bad and the nodes retired so
#: far on the VC's own nodes (cumulative counts).
COUNT_COLUMNS = {"undiagnosed": "undiagnosed", "wrong_node": "wrong_node_blamed", "turned_bad": "nodes_turned_bad",
                 "retired": "retired_nodes"}
#: With a spare pool (spares.nodes > 0, raysim.sim.spares): spares pulled into service so far (cumulative).
SPARE_COLUMNS = ("spares_pulled",)
#: With warm standbys (spares.standbys > 0, raysim.sim.standbys): standbys swapped in for failed nodes, host
#: selections (placements of jobs that hold standbys) and stalls (a failed job that found no standby, no
#: node and no spare) so far (cumulative).
STANDBY_COLUMNS = ("standby_swaps", "host_selections", "stalls")
#: On VCs that count GPU shares, CPU and memory (VCState.res): GPU milli allocated to jobs, and FGD's
#: fragment amount in GPU milli (free GPU milli that the run's typical requests cannot use; see
#: raysim.placement.frag), both summed over the VC's GPUs.
RESOURCE_COLUMNS = ("used_gpu_milli", "frag_gpu_milli")
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

    _settled = False  # (see __init__; a class default keeps recorders pickled before it existed valid)

    def __init__(self, interval: int, t0: int, extra: tuple[str, ...] = ()):
        self.interval = interval
        self.columns = COLUMNS + tuple(extra)
        self._times: list[int] = []
        self._rows: list[tuple] = []
        self._next_sample = -(-t0 // interval) * interval  # first grid time >= t0
        self._last: tuple | None = None  # the last grid sample emitted (column values, as stored)
        #: the only snapshot kept is the one `_last` was sampled from: until the next snapshot,
        #: every grid sample equals `_last`, so emit has nothing to say
        self._settled = False

    def snapshot(self, t: int, row: tuple) -> None:
        """Record the state after everything that happens at time t (replaces an earlier one at t)."""
        if self._times and self._times[-1] == t:
            self._rows[-1] = row
        else:
            self._times.append(t)
            self._rows.append(row)
        self._settled = False

    def emit(self, last: int) -> dict[str, np.ndarray]:
        """Change rows for the grid times <= `last` not emitted yet: the sample at the first grid
        time, then the sample at every grid time where it differs from the one before. Keeps the
        latest snapshot. Costs per snapshot, whatever the number of grid times."""
        times, rows = self.emit_rows(last)
        return rows_to_columns(times, rows, self.columns)

    def emit_rows(self, last: int) -> tuple[list[int], list[tuple]]:
        """`emit` as (grid times, rows of column values as stored: int32 counts, float32 means):
        plain Python, so that a window in which a VC took a few snapshots costs a few steps."""
        if last < self._next_sample or not self._times:
            return [], []
        iv, first = self.interval, self._next_sample
        stop = last - (last - first) % iv  # the last grid time <= last
        self._next_sample = int(stop) + iv
        if self._settled:  # no snapshot since the last emit (a window without events): no change
            return [], []
        times, rows, floats = self._times, self._rows, self._float_columns
        out_times, out_rows = [], []
        prev, cut = self._last, -1
        at = max(-(-times[0] // iv) * iv, first)  # the first grid time snapshot 0 could be sampled at
        for i in range(len(times)):
            if at > stop:
                break
            nxt = max(-(-times[i + 1] // iv) * iv, first) if i + 1 < len(times) else None
            if nxt != at:  # snapshot i is the latest before grid time `at`: it is sampled there
                row = rows[i]
                if floats:  # as stored (float32), so that equal samples compare equal
                    row = list(row)
                    for c in floats:
                        row[c] = float(np.float32(row[c]))
                    row = tuple(row)
                if row != prev:
                    out_times.append(at)
                    out_rows.append(row)
                    prev = row
                cut = i
            at = nxt
        if cut < 0:
            return [], []
        self._last = prev
        # earlier snapshots can no longer be the latest before a future sample
        self._times, self._rows = times[cut:], rows[cut:]
        self._settled = len(self._times) == 1
        return out_times, out_rows

    @property
    def settled(self) -> bool:
        """True when every future grid sample equals the last one emitted, until the next snapshot."""
        return self._settled

    @property
    def _float_columns(self) -> list[int]:
        """Positions of the columns stored as float32 (the others are int32)."""
        return [i for i, name in enumerate(self.columns) if name in FLOAT_COLUMNS]


def rows_to_columns(times: list[int], rows: list[tuple], columns) -> dict[str, np.ndarray]:
    """Change rows (see Recorder.emit_rows) as one array per column: `time` (int64) and `columns`."""
    if not times:
        return _empty(tuple(columns))
    values = np.asarray(rows, dtype=np.float64)
    out = {"time": np.asarray(times, dtype=np.int64)}
    for i, name in enumerate(columns):
        out[name] = values[:, i].astype(_dtype(name))
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
    """No change rows (shared, read-only arrays: emit is called every window, mostly with nothing to say)."""
    out = _EMPTY.get(columns)
    if out is None:
        out = {"time": np.empty(0, dtype=np.int64)}
        for name in columns:
            out[name] = np.empty(0, dtype=_dtype(name))
        for arr in out.values():
            arr.flags.writeable = False
        _EMPTY[columns] = out
    return dict(out)


_EMPTY: dict[tuple, dict[str, np.ndarray]] = {}
