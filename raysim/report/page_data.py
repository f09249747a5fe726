"""The numbers an HTML page (raysim.report.page) draws, cut down so that a page stays small whatever
the run's size: distributions as their empirical CDF at a few hundred points, time series as the
means over at most SERIES_POINTS equal spans, per VC for the largest VCs only (pending jobs: for
the VCs that queue most, and the others summed). Each is exact for what it says it is (a CDF's
points lie on the run's CDF; a span's value is the time-weighted mean of the series over that
span, and a sum of VCs' the sum of theirs)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from raysim.report.schema import reads
from raysim.report.timeseries import column_names, series_layout

#: Points of a CDF curve, at most (quantiles 0, 1/(n-1), ..., 1 of the values)
CDF_POINTS = 201
#: Spans a time series is averaged over, at most (a run with fewer samples keeps each sample)
SERIES_POINTS = 1000
#: VCs drawn one line each in the over-time charts, at most (the largest by GPUs; the table has every VC)
TOP_VCS = 10
#: VCs drawn one line each in the pending-jobs chart, at most (those whose queue peaks highest; the
#: others' sum is one more line)
PENDING_VCS = 5


def cdf_points(values, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, F(x)) of the empirical CDF of `values` (NaN left out: jobs that never finished) at up to
    `points` quantiles; F(x) is the fraction of the values at most x. Empty input: two empty arrays."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    v = v[~np.isnan(v)]
    if not len(v):
        return v, v
    x = np.unique(np.quantile(v, np.linspace(0.0, 1.0, points), method="inverted_cdf"))
    return x, np.searchsorted(v, x, side="right") / len(v)


def cdf_on(x: np.ndarray, values) -> np.ndarray:
    """The empirical CDF of `values` (NaN left out) at each of `x` (to draw several runs' CDFs on
    one x axis); NaN everywhere where there is no value."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    v = v[~np.isnan(v)]
    if not len(v):
        return np.full(len(x), np.nan)
    return np.searchsorted(v, x, side="right") / len(v)


def step_means(time: np.ndarray, value: np.ndarray, end: float, edges: np.ndarray) -> np.ndarray:
    """The time-weighted mean over each span [edges[i], edges[i+1]) of a step series: `value[k]`
    holds from `time[k]` (ascending) to the next row's time, the last one to `end`. Spans (or their
    parts) outside [time[0], end] do not count; a span wholly outside is NaN."""
    time = np.asarray(time, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    if not len(time):
        return np.full(len(edges) - 1, np.nan)
    bounds = np.append(time, end)
    area = np.append(0.0, np.cumsum(value * np.diff(bounds)))  # integral up to each row's start
    x = np.clip(edges, bounds[0], bounds[-1])
    row = np.clip(np.searchsorted(time, x, side="right") - 1, 0, len(time) - 1)
    integral = area[row] + value[row] * (x - time[row])
    covered = np.diff(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(covered > 0, np.diff(integral) / covered, np.nan)


@reads
def series_edges(path, points: int = SERIES_POINTS) -> tuple[np.ndarray, float]:
    """(span edges, seconds a sample stands for) of a timeseries.parquet: `points` equal spans from
    its first sample to the end of its last one, or one span per sample where it has fewer."""
    layout = series_layout(path)
    if layout.changes:
        first, end, step = layout.first, layout.last + layout.interval, layout.interval
    else:  # a grid file: rows in time order, so its first row group gives the step, its last the end
        file = pq.ParquetFile(path)
        if not file.metadata.num_rows:
            return np.array([0.0, 1.0]), 1.0
        times = np.unique(file.read_row_group(0, columns=["time"]).column("time").to_numpy())
        last_group = file.read_row_group(file.num_row_groups - 1, columns=["time"]).column("time")
        first, last = int(times[0]), int(pc.max(last_group).as_py())
        step = float(times[1] - times[0]) if len(times) > 1 else 60.0
        end = last + step
    samples = int(round((end - first) / step))
    return np.linspace(float(first), float(end), min(points, max(samples, 1)) + 1), float(step)


@reads
def vc_series(path, vcs: list[str], columns: list[str], edges: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """{vc: {column: the mean over each span of `edges`}} for each of `vcs` (e.g. "all" and the
    largest VCs) of a timeseries.parquet, grid or change-points alike."""
    present = [c for c in columns if c in column_names(path)]
    layout = series_layout(path)
    table = pq.read_table(path, columns=["vc", "time", *present])  # (filters= would import pyarrow.dataset: 0.5 s)
    end = float(edges[-1]) if not layout.changes else float(layout.last + layout.interval)
    names = table.unify_dictionaries().column("vc").combine_chunks()  # one dictionary for every row group
    if not pa.types.is_dictionary(names.type):
        names = pc.dictionary_encode(names)
    codes, known = names.indices.to_numpy(), names.dictionary.to_pylist()
    order = np.argsort(codes, kind="stable")  # each VC's rows together, in time order
    bounds = np.searchsorted(codes[order], np.arange(len(known) + 1))
    time = table.column("time").to_numpy()[order]
    values = {c: table.column(c).to_numpy()[order] for c in present}
    out = {}
    for vc in vcs:
        if vc not in known:
            continue
        rows = slice(bounds[known.index(vc)], bounds[known.index(vc) + 1])
        out[vc] = {c: step_means(time[rows], v[rows], end, edges) for c, v in values.items()}
    return out


def largest_vcs(layout: dict, top: int = TOP_VCS) -> list[str]:
    """The `top` VCs with the most GPUs of a run's layout (trace_report.json's), layout order kept."""
    gpus = {vc: sum(p["gpus_per_node"] * p["nodes"] for p in pools) for vc, pools in layout.items()}
    keep = set(sorted(gpus, key=lambda vc: -gpus[vc])[:top])
    return [vc for vc in layout if vc in keep]


def peaks_and_others(lines: dict[str, np.ndarray], top: int = PENDING_VCS) -> dict[str, np.ndarray]:
    """Of per-VC series of an additive count (`lines`, VC -> values over the same spans): the `top`
    VCs whose values peak highest (ties: layout order), in layout order, and "other N VCs", the sum
    of the rest span by span (NaN where none of them has a value); every VC alone where they are at
    most `top` + 1."""
    if len(lines) <= top + 1:
        return dict(lines)
    peak = {vc: np.nanmax(v) if np.isfinite(v).any() else -np.inf for vc, v in lines.items()}
    order = list(lines)
    keep = set(sorted(order, key=lambda vc: (-peak[vc], order.index(vc)))[:top])
    rest = np.array([lines[vc] for vc in order if vc not in keep], dtype=np.float64)
    others = np.where(np.isfinite(rest).any(axis=0), np.nansum(rest, axis=0), np.nan)
    return {**{vc: lines[vc] for vc in order if vc in keep}, f"other {len(rest)} VCs": others}

