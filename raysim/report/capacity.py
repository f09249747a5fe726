"""Capacity from a run's files (runs with capacity events: a node log or failures,
raysim.sim.capacity): a plot of the GPUs out of service over time per VC and, under
checkpoint-restart, the interruptions and lost GPU-hours by cause."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.report.timeseries import column_hours, column_names, read_timeseries, series_layout
from raysim.sim.capacity import STOP_CAUSES
from raysim.sim.recorder import CAPACITY_COLUMNS


def has_capacity(series) -> bool:
    """Whether a timeseries.parquet (path or table) comes from a run with capacity events."""
    return all(c in column_names(series) for c in CAPACITY_COLUMNS)


def down_plot(series_path, out: Path, interval: int, *, top: int = 8, points: int = 2000, title: str = "") -> Path:
    """GPUs out of service over time, stacked for the `top` VCs with the most down GPU-hours and the
    others (PNG); `interval`: the series' sampling interval in seconds; `title`: what was run."""
    from raysim.report.plots import save_figure, set_title, subplots

    hours = column_hours(series_path, CAPACITY_COLUMNS, interval)
    names = [vc for vc in sorted(hours, key=lambda vc: -hours[vc][0]) if hours[vc][0] > 0][:top]
    layout = series_layout(series_path)
    every = layout.interval * max(1, -(-layout.samples // points)) if layout.changes else None
    table = read_timeseries(series_path, vcs=names + ["all"], columns=list(CAPACITY_COLUMNS), every=every)
    vc = table.column("vc").combine_chunks()
    vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
    vcs = np.asarray(vc.dictionary.to_pylist(), dtype=object)[vc.indices.to_numpy(zero_copy_only=False)]
    time = table.column("time").to_numpy()
    down = table.column(CAPACITY_COLUMNS[0]).to_numpy().astype(np.float64)
    fig, ax = subplots(figsize=(8, 4.5))
    if names:  # stacked per VC (the VCs beyond `top` as "other"): the top edge is the cluster's
        first = vcs == names[0]
        stack = [down[vcs == name] for name in names]
        other = down[vcs == "all"] - np.sum(stack, axis=0)
        labels = [f"{name} ({hours[name][0]:,.0f} GPU-h)" for name in names]
        if other.max(initial=0) > 0:
            stack.append(other)
            labels.append("other VCs")
        start, means = _binned(time[first], stack, points)  # (a grid file of a long span: bin means)
        ax.stackplot((start - start[0]) / 86_400, *means, labels=labels, step="post", alpha=0.8)
        ax.legend(loc="upper right", fontsize=7, ncol=2,
                  title=f"cluster: {sum(v[0] for v in hours.values()):,.0f} GPU-h", title_fontsize=7)
    ax.set_xlabel("simulated time (days)")
    ax.set_ylabel("GPUs out of service")
    set_title(ax, "GPUs on nodes that are down, stacked per VC", title)
    ax.grid(alpha=0.3)
    return save_figure(fig, out)


def _binned(time: np.ndarray, series: list, points: int) -> tuple[np.ndarray, list]:
    """At most `points` samples of equally spaced grid `time` and each of `series`: the means over
    equal bins of consecutive samples, at each bin's first time."""
    per = max(1, -(-len(time) // points))
    if per == 1:
        return time, series
    edges = np.arange(0, len(time), per)
    counts = np.diff(np.append(edges, len(time)))
    return time[edges], [np.add.reduceat(values, edges) / counts for values in series]


#: The causes of stops that no capacity event made, as lost_by_cause calls them: the policy's own
#: preemptions (jobs.parquet's `preemptions`), quota reclaims (`reclaims`), and both where a job
#: had both (jobs.parquet does not split the work such a job lost between the two); and high-priority
#: jobs' evictions of spot jobs (`evictions`, `lost_gpu_s_evictions`: counted apart, like a capacity cause).
PREEMPTIONS, RECLAIMS, OTHER_STOPS, EVICTIONS = STOP_CAUSES


def lost_by_cause(jobs: pa.Table) -> pd.DataFrame:
    """Per VC and for the cluster ("all"), per cause: interruptions and GPU-hours of work lost.

    The causes of capacity events (node log causes, failure categories) from jobs.parquet's
    `interruptions_<cause>` and, under checkpoint-restart, `lost_gpu_s_<cause>`, and with priority
    classes EVICTIONS from `evictions` and `lost_gpu_s_evictions`; then the stops no
    capacity event made, each job's counted by what stopped it: PREEMPTIONS (jobs only its policy
    preempted), RECLAIMS (jobs only quota reclaims stopped) and OTHER_STOPS (jobs both stopped: their
    stops counted together, the work they lost not split). The work lost to those is the rest of a
    job's `lost_gpu_s`. Without checkpoints (no `lost_gpu_s`) `lost_gpu_h` is NaN. A cause without an
    interruption or lost work in a VC has no row there. Rows by VC (layout order, then "all"), then
    most lost, then most interruptions."""
    names = jobs.column_names
    checkpoints = "lost_gpu_s" in names
    causes = [c[len("interruptions_"):] for c in names if c.startswith("interruptions_")]
    evictions = [EVICTIONS] if EVICTIONS in names else []
    df = jobs.select(["vc", "preemptions", *(["reclaims"] if "reclaims" in names else []), *(
        f"interruptions_{c}" for c in causes), *evictions, *((["lost_gpu_s"] + [
            f"lost_gpu_s_{c}" for c in causes + evictions]) if checkpoints else [])]).to_pandas()
    df["vc"] = df["vc"].astype(str)
    if evictions:  # (counted per job, like a capacity cause's stops)
        df[f"interruptions_{EVICTIONS}"] = df.pop(EVICTIONS)
        causes += evictions
    preempted = df["preemptions"] > 0
    reclaimed = df["reclaims"] > 0 if "reclaims" in df else pd.Series(False, index=df.index)
    rest = (df["lost_gpu_s"] - df[[f"lost_gpu_s_{c}" for c in causes]].sum(axis=1)) if checkpoints else None
    stops = {PREEMPTIONS: preempted & ~reclaimed, RECLAIMS: reclaimed & ~preempted, OTHER_STOPS: reclaimed & preempted}
    other = df["preemptions"] + (df["reclaims"] if "reclaims" in df else 0)
    for cause, who in stops.items():  # a job's stops of no capacity event under one of the three
        df[f"interruptions_{cause}"] = np.where(who, other, 0)
        if checkpoints:
            df[f"lost_gpu_s_{cause}"] = np.where(who, rest, 0.0)
    rows = []
    for vc, g in [*df.groupby("vc", sort=False), ("all", df)]:
        part = [{"vc": vc, "cause": c, "interruptions": int(g[f"interruptions_{c}"].sum()),
                 "lost_gpu_h": float(g[f"lost_gpu_s_{c}"].sum()) / 3600 if checkpoints else np.nan}
                for c in [*causes, *stops]]
        rows += sorted((r for r in part if r["interruptions"] or (checkpoints and r["lost_gpu_h"])),
                       key=lambda r: (-np.nan_to_num(r["lost_gpu_h"]), -r["interruptions"]))
    return pd.DataFrame(rows, columns=["vc", "cause", "interruptions", "lost_gpu_h"])


def write_lost_by_cause(jobs: pa.Table, run_dir: Path, title: str = "", plot: bool = True) -> None:
    """`lost_by_cause.csv` (lost_by_cause) and, with `plot`, `plots/lost_by_cause.png`: the
    cluster's lost GPU-hours per cause, with each cause's interruptions (without checkpoints, the
    interruptions alone); `title`: what was run."""
    table = lost_by_cause(jobs)
    table.to_csv(run_dir / "lost_by_cause.csv", index=False)
    if not plot:
        return
    from raysim.report.plots import save_figure, set_title, subplots

    cluster = table[table.vc == "all"].iloc[::-1]
    lost = cluster.lost_gpu_h.notna().all()
    fig, ax = subplots(figsize=(7, 0.8 + 0.28 * len(cluster)))
    ax.barh(cluster.cause, cluster.lost_gpu_h if lost else cluster.interruptions, color="C3")
    for y, (hours, n) in enumerate(zip(cluster.lost_gpu_h, cluster.interruptions)):
        ax.annotate(f"{hours:,.0f} ({n} stops)" if lost else f"{n}", (hours if lost else n, y), fontsize=7,
                    xytext=(3, -3), textcoords="offset points")
    ax.set_xlabel("GPU-hours of work lost (since the last completed checkpoint)" if lost else "interruptions")
    set_title(ax, f"{'work lost' if lost else 'interruptions'} per cause, whole cluster", title)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(alpha=0.3, axis="x")
    ax.margins(x=0.15)
    save_figure(fig, run_dir / "plots" / "lost_by_cause.png")
