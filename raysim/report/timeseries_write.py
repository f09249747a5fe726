"""Writing timeseries.parquet (its two layouts: raysim.report.timeseries) from the VCs' change rows.

The rows arrive a part at a time, in time order; each VC's latest sample is kept, and the file's
rows are made about a row group at a time: memory stays within a few row groups, whatever the
span, and time follows the change rows (plus the grid rows of a grid file, whose span is bounded).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.report import timeseries
from raysim.sim.recorder import FLOAT_COLUMNS, changed_rows


def timeseries_table(per_vc: dict[str, dict[str, np.ndarray]]) -> pa.Table:
    """Per-VC samples plus cluster-wide rows (vc = "all") at every sample time, in time order.

    Every VC must be sampled at the same times, so the cluster rows are plain sums (GPU-weighted
    means for the utilisation columns). Adds `gpu_utilization` (busy / total GPUs) and, in
    clusters of several GPU types, one `gpu_utilization_<type>` per type; where VCs count GPU
    shares (`used_gpu_milli`), `gpu_utilization` is the allocated GPU milli over the GPUs. Consumes `per_vc`
    column by column to keep memory down.
    """
    names = list(per_vc)
    if not names:
        return pa.table({"vc": pa.array([], pa.dictionary(pa.int32(), pa.string())),
                         "time": pa.array([], pa.int64())})
    blocks = [per_vc[v] for v in names]
    grid = blocks[0]["time"]
    if any(not np.array_equal(b["time"], grid) for b in blocks):
        raise AssertionError("VC time series are not on one grid")
    m = len(grid)
    total = np.zeros(m, dtype=np.int64)
    for b in blocks:
        total += b["total_gpu_num"]
    cluster = {"time": grid}
    columns = [c for c in blocks[0] if c != "time"]
    for name in columns:
        acc = np.zeros(m, dtype=np.float64 if name in FLOAT_COLUMNS else np.int64)
        for b in blocks:
            acc += b[name] * b["total_gpu_num"] if name in FLOAT_COLUMNS else b[name]
        if name in FLOAT_COLUMNS:  # GPU-weighted means
            acc = np.divide(acc, total, out=np.zeros(m), where=total > 0)
        cluster[name] = acc.astype(blocks[0][name].dtype)
    blocks.append(cluster)
    # time-major rows (each sample time: the VCs in layout order, then "all"), so that a run's rows
    # come out in the same order however its windows cut the time axis
    codes = np.tile(np.arange(len(blocks), dtype=np.int32), m)
    out = {"vc": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names + ["all"]))}
    for col in ("time", *columns):
        out[col] = pa.array(np.stack([b.pop(col) for b in blocks], axis=1).ravel())
    for suffix in [""] + [c[len("total_gpu_num"):] for c in columns if c.startswith("total_gpu_num_")]:
        tot = out["total_gpu_num" + suffix].to_numpy()
        if not suffix and "used_gpu_milli" in out:  # GPU shares: allocated milli, not GPUs with a share
            allocated = out["used_gpu_milli"].to_numpy() / 1000.0
        else:
            allocated = tot - out["idle_gpu_num" + suffix].to_numpy()
        busy = np.zeros(len(codes))
        np.divide(allocated, tot, out=busy, where=tot > 0)
        out["gpu_utilization" + suffix] = pa.array(busy.astype(np.float32))
    return pa.table(out)


def write_timeseries(parts, out, vc_order, *, interval: int, end: int, row_group_rows: int = 1 << 17) -> bool:
    """Write timeseries.parquet from the VCs' change rows, read a part at a time: `parts` yields
    record batches of columns vc (the VC's index in `vc_order`), time and the sampled ones, in
    time order, every VC with a row at the first grid time. The grid ends at the last grid time
    <= `end`.

    Writes the grid when it has at most GRID_MAX_SAMPLES times, else change-points (see
    raysim.report.timeseries). Returns False (and writes nothing) when there are no rows."""
    parts = (p for p in parts if p.num_rows)
    head = next(parts, None)
    if head is None:
        return False
    first = int(head.column("time")[0].as_py())
    last = end - (end - first) % interval
    changes = (last - first) // interval + 1 > timeseries.GRID_MAX_SAMPLES
    grid = {"interval": interval, "first": first, "last": last}
    meta = {timeseries.META_KEY: json.dumps(grid).encode()} if changes else None
    writer = _RowGroups(out, row_group_rows, meta)
    rows = _Rows(list(vc_order), interval, first, last, changes, max(1, row_group_rows // (len(vc_order) + 1)))
    carry = None
    for part in itertools.chain([head], parts):
        table = pa.Table.from_batches([part])
        table = table if carry is None else pa.concat_tables([carry, table])
        time = table.column("time").to_numpy()
        cut = int(np.searchsorted(time, time[-1], side="left"))  # the last time may go on in the next part
        rows.write(table.slice(0, cut), int(time[-1]), writer)
        carry = table.slice(cut)
    rows.write(carry, last + interval, writer)
    writer.close()
    return True


class _Rows:
    """Turns change rows, a part at a time, into the file's rows: the grid, or change-points with
    cluster rows. Keeps each VC's latest sample (and the cluster's, for change-points)."""

    def __init__(self, names, interval, first, last, changes, times_per_table):
        self.names, self.interval, self.last, self.changes = names, interval, last, changes
        self.times_per_table = times_per_table
        self.cursor = first  # next grid time to write (grid)
        self.state: dict[str, dict[str, np.ndarray]] = {}  # vc -> its latest sample (1-element columns)
        self.cluster: tuple | None = None  # the last cluster row written (change-points)

    def write(self, rows: pa.Table, upto: int, writer) -> None:
        """Add the file's rows for change rows `rows`, all before `upto` (later parts hold no row
        before it): their cluster rows, or the whole grid up to `upto`."""
        per_vc = self._split(rows)
        if self.changes:
            times = np.unique(rows.column("time").to_numpy())
        else:
            times = np.arange(self.cursor, min(upto, self.last + self.interval), self.interval, dtype=np.int64)
            self.cursor = upto
        for a in range(0, len(times), self.times_per_table):
            at = times[a:a + self.times_per_table]
            table = timeseries_table({vc: self._fill(vc, per_vc.get(vc), at) for vc in self.names})
            writer.add(self._changed(table, per_vc, at) if self.changes else table)
        for vc, (_, cols) in per_vc.items():
            self.state[vc] = {c: v[-1:] for c, v in cols.items()}

    def _split(self, rows: pa.Table) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
        """vc -> (times, sampled columns) of its rows."""
        if not rows.num_rows:
            return {}
        codes = rows.column("vc").to_numpy()
        time = rows.column("time").to_numpy()
        cols = {c: rows.column(c).to_numpy() for c in rows.column_names if c not in ("vc", "time")}
        out = {}
        for code in np.unique(codes):
            idx = np.flatnonzero(codes == code)
            out[self.names[code]] = (time[idx], {c: v[idx] for c, v in cols.items()})
        return out

    def _fill(self, vc: str, rows, at: np.ndarray) -> dict[str, np.ndarray]:
        """VC `vc`'s samples at times `at`: its latest row at or before each."""
        before = self.state.get(vc)
        if rows is None:
            return {"time": at, **{c: np.repeat(v, len(at)) for c, v in before.items()}}
        times, cols = rows
        idx = np.searchsorted(times, at, side="right")  # 0: the sample from before this part
        if before is None:
            if idx.min() == 0:
                raise AssertionError(f"VC {vc} has no sample at the first grid time")
            return {"time": at, **{c: v[idx - 1] for c, v in cols.items()}}
        return {"time": at, **{c: np.concatenate([before[c], v])[idx] for c, v in cols.items()}}

    def _changed(self, table: pa.Table, per_vc, at: np.ndarray) -> pa.Table:
        """Keep each VC's own rows and the cluster rows that differ from the one before."""
        width = len(self.names) + 1
        keep = np.zeros((len(at), width), dtype=bool)
        for v, vc in enumerate(self.names):
            if vc in per_vc:
                keep[:, v] = np.isin(at, per_vc[vc][0])
        cluster = [table.column(c).to_numpy()[width - 1::width] for c in table.column_names[2:]]
        keep[:, -1] = changed_rows(cluster, self.cluster)
        self.cluster = tuple(col[-1] for col in cluster)
        return table.filter(pa.array(keep.ravel()))


class _RowGroups:
    """Writes tables to `path` in row groups of exactly `rows` rows (the last one shorter), so the
    file depends on its rows, not on how they were cut."""

    def __init__(self, path, rows: int, metadata: dict | None):
        self.path, self.rows, self.metadata = path, rows, metadata
        self._pending: list[pa.Table] = []
        self._count = 0
        self._writer: pq.ParquetWriter | None = None

    def add(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._count += table.num_rows
        if self._count >= self.rows:
            self._flush(final=False)

    def close(self) -> None:
        self._flush(final=True)
        self._writer.close()

    def _flush(self, final: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending).combine_chunks()
        n = table.num_rows if final else table.num_rows - table.num_rows % self.rows
        if self._writer is None:
            schema = table.schema.with_metadata(self.metadata) if self.metadata else table.schema
            self._writer = pq.ParquetWriter(self.path, schema, compression="zstd")
        if n:
            self._writer.write_table(table.slice(0, n), row_group_size=self.rows)
        self._pending = [table.slice(n)] if n < table.num_rows else []
        self._count = table.num_rows - n
