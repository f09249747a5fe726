"""Quota-lending accounting from a run's files: borrowed and lent GPU-hours per VC (from the time
series' loan columns), and a plot of them over time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.report.timeseries import change_runs, read_timeseries, series_layout
from raysim.sim.recorder import LOAN_COLUMNS

HOUR = 3600.0


def has_loans(series) -> bool:
    """Whether a timeseries.parquet (path or table) comes from a run with quota=borrow."""
    names = series.column_names if isinstance(series, pa.Table) else pq.ParquetFile(series).schema_arrow.names
    return all(c in names for c in LOAN_COLUMNS)


def loan_gpu_hours(series, interval: int) -> dict[str, tuple[float, float]]:
    """VC -> (borrowed, lent) GPU-hours over the run: each grid sample of the loan columns stands
    for one sampling `interval` (seconds; a change-points file knows its own), whichever layout
    the file has (raysim.report.timeseries)."""
    layout = series_layout(series)
    interval = layout.interval or interval
    totals: dict[str, np.ndarray] = {}
    if layout.changes:
        for name, time, until, values in change_runs(series, list(LOAN_COLUMNS)):
            weight = ((until - time) // layout.interval).astype(np.float64)
            totals[name] = totals.get(name, np.zeros(2)) + [np.dot(values[c].astype(np.float64), weight)
                                                            for c in LOAN_COLUMNS]
    else:
        batches = series.select(["vc", *LOAN_COLUMNS]).to_batches() if isinstance(series, pa.Table) else \
            pq.ParquetFile(series).iter_batches(batch_size=1 << 18, columns=["vc", *LOAN_COLUMNS])
        for batch in batches:
            vc = batch.column(0)
            vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
            codes = vc.indices.to_numpy(zero_copy_only=False)
            cols = [batch.column(c).to_numpy().astype(np.float64) for c in LOAN_COLUMNS]
            for code, name in enumerate(vc.dictionary.to_pylist()):
                pick = codes == code
                totals[name] = totals.get(name, np.zeros(2)) + [col[pick].sum() for col in cols]
    scale = interval / HOUR
    return {vc: (float(v[0] * scale), float(v[1] * scale)) for vc, v in totals.items() if vc != "all"}


def loans_plot(series_path, out: Path, interval: int, *, top: int = 8, points: int = 2000) -> Path:
    """Cumulative borrowed (solid) and lent (dashed) GPU-hours over time of the `top` VCs that
    borrowed or lent most (PNG); `interval` as for loan_gpu_hours."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours = loan_gpu_hours(series_path, interval)
    names = sorted(hours, key=lambda vc: -(hours[vc][0] + hours[vc][1]))[:top]
    layout = series_layout(series_path)
    every = interval
    if layout.changes:  # a long span: about `points` samples, each standing for `every` seconds
        every = layout.interval * max(1, -(-layout.samples // points))
    table = read_timeseries(series_path, vcs=names, columns=list(LOAN_COLUMNS), every=every)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    vcs = np.asarray(table.column("vc").to_pylist(), dtype=object)
    time = table.column("time").to_numpy()
    days = (time - (time.min() if len(time) else 0)) / 86_400
    for i, name in enumerate(names):
        pick = vcs == name
        color = f"C{i % 10}"
        for column, style in zip(LOAN_COLUMNS, ("-", "--")):
            gpu_h = np.cumsum(table.column(column).to_numpy()[pick].astype(np.float64)) * every / HOUR
            ax.plot(days[pick], gpu_h, style, color=color, label=f"{name} {column.split('_')[0]}")
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel("GPU-hours (cumulative)")
    ax.set_title("borrowed (solid) and lent (dashed) GPU-hours per VC")
    if names:
        ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
