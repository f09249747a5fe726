"""Capacity from a run's files: a plot of the GPUs out of service over time per VC (runs with
capacity events: a node log or failures, raysim.sim.capacity)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from raysim.report.timeseries import column_hours, column_names, read_timeseries, series_layout
from raysim.sim.recorder import CAPACITY_COLUMNS


def has_capacity(series) -> bool:
    """Whether a timeseries.parquet (path or table) comes from a run with capacity events."""
    return all(c in column_names(series) for c in CAPACITY_COLUMNS)


def down_plot(series_path, out: Path, interval: int, *, top: int = 8, points: int = 2000) -> Path:
    """GPUs out of service over time, stacked for the `top` VCs with the most down GPU-hours and the
    others (PNG); `interval`: the series' sampling interval in seconds."""
    from raysim.report.plots import plt, save_figure  # (pyplot with the Agg backend)

    hours = column_hours(series_path, CAPACITY_COLUMNS, interval)
    names = [vc for vc in sorted(hours, key=lambda vc: -hours[vc][0]) if hours[vc][0] > 0][:top]
    layout = series_layout(series_path)
    every = interval
    if layout.changes:  # a long span: about `points` samples
        every = layout.interval * max(1, -(-layout.samples // points))
    table = read_timeseries(series_path, vcs=names + ["all"], columns=list(CAPACITY_COLUMNS), every=every)
    vcs = np.asarray(table.column("vc").to_pylist(), dtype=object)
    time = table.column("time").to_numpy()
    days = (time - (time.min() if len(time) else 0)) / 86_400
    down = table.column(CAPACITY_COLUMNS[0]).to_numpy()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if names:  # stacked per VC (the VCs beyond `top` as "other"): the top edge is the cluster's
        first = vcs == names[0]
        stack = [down[vcs == name].astype(np.float64) for name in names]
        other = down[vcs == "all"].astype(np.float64) - np.sum(stack, axis=0)
        labels = [f"{name} ({hours[name][0]:,.0f} GPU-h)" for name in names]
        if other.max(initial=0) > 0:
            stack.append(other)
            labels.append("other VCs")
        ax.stackplot(days[first], *stack, labels=labels, step="post", alpha=0.8)
        ax.legend(fontsize=7, ncol=2, title=f"cluster: {sum(v[0] for v in hours.values()):,.0f} GPU-h",
                  title_fontsize=7)
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel("GPUs out of service")
    ax.set_title("GPUs on nodes that are down, stacked per VC")
    ax.grid(alpha=0.3)
    return save_figure(fig, out)
