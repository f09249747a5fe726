"""Quota-lending accounting from a run's files: borrowed and lent GPU-hours per VC (from the time
series' loan columns), and a plot of them over time."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from raysim.report.timeseries import column_hours, column_names, read_timeseries, series_layout
from raysim.quota.ledger import LOAN_COLUMNS

HOUR = 3600.0


def has_loans(series) -> bool:
    """Whether a timeseries.parquet (path or table) comes from a run with quota=borrow."""
    return all(c in column_names(series) for c in LOAN_COLUMNS)


def loan_gpu_hours(series, interval: int) -> dict[str, tuple[float, float]]:
    """VC -> (borrowed, lent) GPU-hours over the run (raysim.report.timeseries.column_hours)."""
    return {vc: (float(v[0]), float(v[1])) for vc, v in column_hours(series, LOAN_COLUMNS, interval).items()}


def loans_plot(series_path, out: Path, interval: int, *, top: int = 8, points: int = 2000, title: str = "") -> Path:
    """Cumulative borrowed (solid) and lent (dashed) GPU-hours over time of the `top` VCs that
    borrowed or lent most (PNG); `interval` as for loan_gpu_hours; `title`: what was run."""
    from raysim.report.plots import save_figure, set_title, subplots

    hours = loan_gpu_hours(series_path, interval)
    names = sorted(hours, key=lambda vc: -(hours[vc][0] + hours[vc][1]))[:top]
    layout = series_layout(series_path)
    every = interval
    if layout.changes:  # a long span: about `points` samples, each standing for `every` seconds
        every = layout.interval * max(1, -(-layout.samples // points))
    table = read_timeseries(series_path, vcs=names, columns=list(LOAN_COLUMNS), every=every)
    fig, ax = subplots(figsize=(8, 4.5))
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
    set_title(ax, "borrowed (solid) and lent (dashed) GPU-hours per VC", title)
    if names:
        ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return save_figure(fig, out)
