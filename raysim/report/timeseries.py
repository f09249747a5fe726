"""The run's time series file (timeseries.parquet): its two layouts, and reading it back as a grid.

The VC simulators emit change rows (raysim.sim.recorder): a VC's sample at the first grid time
and at every later grid time where it differs from the one before. From them
raysim.report.timeseries_write writes one of two layouts, each in time order (at each time: the
VCs in layout order, then `all`), in row groups of 131,072 rows, with the same columns:

- the grid (runs whose samples span at most GRID_MAX_SAMPLES grid times, 366 days at 60 s):
  every grid time has a row for every VC and one for `all`. The file carries no extra metadata;
- change-points (longer spans): each VC, and `all`, has a row at the first grid time and at every
  grid time where its sample differs from the one before; a row's values hold at every grid time
  up to its VC's next row (the last one up to the last grid time). The schema metadata
  `raysim.timeseries` (JSON: interval, first, last) describes the grid.

Writing costs per change row, plus per grid row only within the bounded span of a grid file, so
idle simulated time costs nothing. `read_timeseries` returns the grid from either layout
(expanded on request, optionally on a coarser step), `series_layout` tells which one a file has,
`change_runs` gives each change-point row with the grid times it stands for (for time-weighted
means) and `cluster_series` what the plots show (means over at most PLOT_POINTS spans).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.report.schema import reads

#: Longest grid written as such: 366 days of 60-s samples. Longer spans are written as change-points.
GRID_MAX_SAMPLES = 366 * 1_440
#: Schema metadata key of a change-points file.
META_KEY = b"raysim.timeseries"
#: Points a plot of a change-points file shows, at most (each the mean over its share of the span).
PLOT_POINTS = 4_000


@dataclass(frozen=True)
class SeriesLayout:
    """How a timeseries.parquet stores its samples: a plain grid (`changes` False), or
    change-points of the grid `first`, `first + interval`, ..., `last`."""

    changes: bool = False
    interval: int = 0
    first: int = 0
    last: int = 0

    @property
    def samples(self) -> int:
        """Grid times of a change-points file (0 for a grid file: its rows are its grid)."""
        return (self.last - self.first) // self.interval + 1 if self.changes else 0


def series_layout(source) -> SeriesLayout:
    """The layout of a timeseries.parquet (a path) or of a table read from one."""
    schema = source.schema if isinstance(source, pa.Table) else pq.read_schema(source)
    raw = (schema.metadata or {}).get(META_KEY)
    return SeriesLayout() if raw is None else SeriesLayout(changes=True, **json.loads(raw))


def read_timeseries(path, *, vcs=None, columns=None, every: int | None = None) -> pa.Table:
    """The time series of a timeseries.parquet as grid rows, whatever its layout: all rows, or
    those of the VCs `vcs` ("all" for the cluster), all columns or `columns` (vc and time always).

    A change-points file is expanded to its grid, or to every `every` seconds from its first
    time (a multiple of its interval, e.g. 3600 for hourly samples of a long span); a grid file is
    read as stored. Expanding all VCs of a long span is as large as its grid: choose VCs and
    columns, or a coarser step."""
    layout = series_layout(path)
    if columns is not None:
        columns = ["vc", "time"] + [c for c in columns if c not in ("vc", "time")]
    filters = [("vc", "in", list(vcs))] if vcs is not None else None
    table = pq.read_table(path, columns=columns, filters=filters)
    return to_grid(table, layout, every) if layout.changes else table


def to_grid(table: pa.Table, layout: SeriesLayout, every: int | None = None) -> pa.Table:
    """Change-point rows (of a file of `layout`) expanded to grid rows every `every` seconds
    (default: the file's interval) from its first grid time to its last, in the grid file's order."""
    step = every or layout.interval
    if step % layout.interval:
        raise ValueError(f"every={step} is not a multiple of the series' interval ({layout.interval} s)")
    table = table.unify_dictionaries().combine_chunks()
    codes = table.column("vc").chunk(0).indices.to_numpy(zero_copy_only=False) if table.num_rows else np.empty(0)
    first_rows = np.sort(np.unique(codes, return_index=True)[1])
    present = codes[first_rows]  # in the file's order: the first grid time has a row for each
    grid = np.arange(layout.first, layout.last + 1, step, dtype=np.int64)
    time = table.column("time").to_numpy()
    picks = []
    for code in present:
        rows = np.flatnonzero(codes == code)
        picks.append(rows[np.searchsorted(time[rows], grid, side="right") - 1])
    order = np.stack(picks, axis=1).ravel() if picks else np.empty(0, np.int64)
    out = table.take(pa.array(order))
    return out.set_column(out.schema.get_field_index("time"), "time", pa.array(np.repeat(grid, len(present))))


def change_runs(source, columns):
    """Each row of a change-points file (a path, read batch by batch, or a table read from one)
    with the grid times it stands for: yields (vc, time, until, {column: values}) per VC and
    batch, the row's values holding at the grid times in [time, until)."""
    layout = series_layout(source)
    if isinstance(source, pa.Table):
        batches = source.select(["vc", "time", *columns]).to_batches()
    else:
        batches = pq.ParquetFile(source).iter_batches(batch_size=1 << 18, columns=["vc", "time", *columns])
    pending: dict[str, tuple[np.ndarray, dict]] = {}
    for batch in batches:
        vc = batch.column(0)
        codes, names = vc.indices.to_numpy(zero_copy_only=False), vc.dictionary.to_pylist()
        time = batch.column(1).to_numpy()
        values = {c: batch.column(c).to_numpy() for c in columns}
        for code in np.unique(codes):
            idx = np.flatnonzero(codes == code)
            name = names[code]
            t, vals = time[idx], {c: v[idx] for c, v in values.items()}
            if name in pending:
                t0, v0 = pending[name]
                t, vals = np.concatenate([t0, t]), {c: np.concatenate([v0[c], v]) for c, v in vals.items()}
            pending[name] = (t[-1:], {c: v[-1:] for c, v in vals.items()})
            if len(t) > 1:
                yield name, t[:-1], t[1:], {c: v[:-1] for c, v in vals.items()}
    for name, (t, vals) in pending.items():
        yield name, t, np.full_like(t, layout.last + layout.interval), vals


def column_hours(series, columns, interval: int) -> dict[str, np.ndarray]:
    """VC -> per column of `columns`, its integral over the run in (column unit) x hours: each grid
    sample stands for one sampling `interval` (seconds; a change-points file knows its own),
    whichever layout the file (path or table) has. The cluster's "all" rows are left out."""
    layout = series_layout(series)
    interval = layout.interval or interval
    columns = list(columns)
    totals: dict[str, np.ndarray] = {}
    if layout.changes:
        for name, time, until, values in change_runs(series, columns):
            weight = ((until - time) // layout.interval).astype(np.float64)
            totals[name] = totals.get(name, np.zeros(len(columns))) + [
                np.dot(values[c].astype(np.float64), weight) for c in columns]
    else:
        batches = series.select(["vc", *columns]).to_batches() if isinstance(series, pa.Table) else \
            pq.ParquetFile(series).iter_batches(batch_size=1 << 18, columns=["vc", *columns])
        for batch in batches:
            vc = batch.column(0)
            vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
            codes = vc.indices.to_numpy(zero_copy_only=False)
            cols = [batch.column(c).to_numpy().astype(np.float64) for c in columns]
            for code, name in enumerate(vc.dictionary.to_pylist()):
                pick = codes == code
                totals[name] = totals.get(name, np.zeros(len(columns))) + [col[pick].sum() for col in cols]
    return {vc: v * (interval / 3600.0) for vc, v in totals.items() if vc != "all"}


def column_names(series) -> list[str]:
    """The columns of a timeseries.parquet (path) or of a table read from one."""
    return series.column_names if isinstance(series, pa.Table) else pq.ParquetFile(series).schema_arrow.names


def grid_count(time: np.ndarray, until: np.ndarray, start: int, end: int, interval: int) -> np.ndarray:
    """For rows at grid times `time` holding until `until`: how many of their grid times lie in [start, end]."""
    lo, hi = np.maximum(time, start), np.minimum(until - 1, end)
    return np.maximum((hi - time) // interval + (time - lo) // interval + 1, 0)


@reads
def cluster_series(path):
    """The cluster-wide rows (vc == "all") of a timeseries.parquet as a DataFrame: what the
    over-time plots show, read without the per-VC rows. A change-points file gives at most
    PLOT_POINTS rows: the means over equal spans of its grid, at each span's start."""
    layout = series_layout(path)
    names = pq.read_schema(path).names
    columns = ["pending_gpujob_num"] + [c for c in names if c.startswith("gpu_utilization")]
    if not layout.changes:
        ts = read_timeseries(path, vcs=["all"], columns=columns).to_pandas()
        ts["vc"] = ts["vc"].astype(str)
        return ts
    rows = pq.read_table(path, columns=["time", *columns], filters=[("vc", "==", "all")])
    return pd.DataFrame({"vc": "all", **span_means(rows, layout, columns, PLOT_POINTS)})


def span_means(rows: pa.Table, layout: SeriesLayout, columns, spans: int) -> dict[str, np.ndarray]:
    """The mean of each of `columns` over at most `spans` equal spans of the grid (the last one
    may be shorter), from one VC's change-point rows: {"time": each span's first grid time, column: means}."""
    per = -(-layout.samples // spans)  # grid times a span
    start = (rows.column("time").to_numpy() - layout.first) // layout.interval  # each row's first grid index
    length = np.diff(np.append(start, layout.samples))
    edges = np.append(np.arange(0, layout.samples, per), layout.samples)
    row = np.searchsorted(start, edges, side="right") - 1  # the row holding at each edge
    out = {"time": layout.first + edges[:-1] * layout.interval}
    for name in columns:
        value = rows.column(name).to_numpy().astype(np.float64)
        before = np.append(0.0, np.cumsum(value * length))  # sum over the grid up to each row
        total = before[row] + value[row] * (edges - start[row])  # sum over the grid up to each edge
        out[name] = np.diff(total) / np.diff(edges)
    return out
