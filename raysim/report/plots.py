"""Plots people look at: JCT CDF, queue per VC, GPU utilisation (per GPU type too) and pending jobs
over time (PNG). Each plot's title says what was run; axes are labelled with their units; time axes
start where the activity starts and pick their unit from its span (a two-minute burst is not drawn
on 145 days of axis); the queue per VC stays legible with dozens of VCs (horizontal bars, one row
per VC); a legend appears only to tell several runs apart, outside the data."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

#: (longest span in seconds, unit name, seconds per unit) for time axes
TIME_UNITS = ((2 * 3600, "minutes", 60.0), (3 * 86400, "hours", 3600.0), (float("inf"), "days", 86400.0))


def run_plots(jobs: pd.DataFrame, series: pd.DataFrame, summary: pd.DataFrame, out: Path, label: str = "",
              title: str = "") -> list[Path]:
    """The plots of one run, into `out` (created); `title` says what was run."""
    return compare_plots({label or "run": (jobs, series, summary)}, out, title=title or label)


def compare_plots(runs: dict[str, tuple], out: Path, title: str = "") -> list[Path]:
    """The same plots with one line/bar per run: {label: (jobs, series, summary)}; `title` (default:
    the run labels) prefixes each plot's title."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    what = title or ", ".join(runs)
    paths = [jct_cdf({label: jobs["jct"] for label, (jobs, _, _) in runs.items()}, out / "jct_cdf.png",
                     title=f"{what}: JCT distribution"),
             _queue_per_vc(runs, out / "queue_per_vc.png", what),
             _over_time(runs, "gpu_utilization", "fraction of GPUs busy", f"{what}: GPU utilisation (cluster)",
                        out / "gpu_utilization.png"),
             _over_time(runs, "pending_gpujob_num", "jobs waiting", f"{what}: pending jobs (cluster)",
                        out / "pending_jobs.png")]
    series = next(iter(runs.values()))[1]
    per_type = [c for c in series.columns if c.startswith("gpu_utilization_")]
    if per_type and len(runs) == 1:
        paths.append(_per_type(series, per_type, out / "gpu_utilization_per_type.png", what))
    return paths


def time_axis(times) -> tuple[float, float, str]:
    """(origin, seconds per unit, axis label) for times in seconds: the axis starts at the earliest
    time and counts minutes, hours or days, whichever suits the span."""
    times = np.asarray(times, dtype=float)
    if not len(times):
        return 0.0, 86400.0, "simulated time (days)"
    first, span = float(times.min()), float(times.max() - times.min())
    name, per = next((name, per) for most, name, per in TIME_UNITS if span <= most)
    if not first:
        return first, per, f"simulated time ({name})"
    start = f"day {first / 86400:.1f} of the trace" if first >= 86400 else f"t = {first:,.0f} s"
    return first, per, f"simulated time ({name} since {start})"


def _per_type(series, columns, path, what):
    """One run's cluster utilisation of each GPU type over time."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    s = series[series["vc"] == "all"]
    origin, per, label = time_axis(s["time"])
    for column in columns:
        ax.plot((s["time"] - origin) / per, s[column], label=column[len("gpu_utilization_"):], linewidth=0.8)
    ax.set_xlabel(label)
    ax.set_ylabel("fraction of the type's GPUs busy")
    ax.set_title(f"{what}: GPU utilisation per GPU type (cluster)", fontsize=9)
    ax.grid(alpha=0.3)
    _legend(ax, title="GPU type")
    return save_figure(fig, path)


def jct_cdf(jcts: dict, path: Path, title: str = "") -> Path:
    """Empirical CDF of job completion times (s, log scale), one line per {label: JCTs} (NaN: the
    job never finished, left out)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, values in jcts.items():
        jct = np.asarray(values, dtype=float)
        jct = np.sort(jct[~np.isnan(jct)])
        if len(jct):
            ax.plot(np.maximum(jct, 1), np.arange(1, len(jct) + 1) / len(jct), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s, log scale)")
    ax.set_ylabel("fraction of jobs finished within it")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    if len(jcts) > 1:
        _legend(ax)
    return save_figure(fig, path)


def _queue_per_vc(runs, path, what):
    """Average queueing delay per VC: horizontal bars (one row per VC, a bar per run), so that any
    number of VCs stays legible; a log scale from 1 s when the delays span orders of magnitude."""
    vcs = [vc for vc in next(iter(runs.values()))[2]["vc"] if vc != "all"]
    height = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.5 + len(vcs) * 0.22 * max(1, len(runs) ** 0.5))))
    y = np.arange(len(vcs))
    top = 0.0
    for i, (label, (_, _, summary)) in enumerate(runs.items()):
        values = summary.set_index("vc")["avg_queue"].reindex(vcs).to_numpy(dtype=float)
        ax.barh(y + i * height, np.nan_to_num(values), height=height, label=label)
        top = max(top, float(np.nanmax(values)) if len(values) else 0.0)
    ax.set_yticks(y + height * (len(runs) - 1) / 2, vcs, fontsize=max(5, min(9, 400 // max(1, len(vcs)))))
    ax.invert_yaxis()
    positive = [v for _, (_, _, s) in runs.items() for v in s["avg_queue"] if v and v > 0]
    if positive and max(positive) / max(min(positive), 1.0) > 100:
        ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, top * 1.1 if top > 0 else 1)
    ax.set_xlabel("average queueing delay (s)")
    ax.set_ylabel("VC")
    ax.set_title(f"{what}: queueing delay per VC", fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    if len(runs) > 1:
        _legend(ax)
    return save_figure(fig, path)


def _over_time(runs, column, ylabel, title, path):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    times = np.concatenate([series.loc[series["vc"] == "all", "time"].to_numpy(dtype=float)
                            for _, series, _ in runs.values()])
    origin, per, label = time_axis(times)
    for name, (_, series, _) in runs.items():
        s = series[series["vc"] == "all"]
        ax.plot((s["time"] - origin) / per, s[column], label=name, linewidth=0.8)
    ax.set_xlabel(label)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    if len(runs) > 1:
        _legend(ax)
    return save_figure(fig, path)


def _legend(ax, **kwargs):
    """A legend beside the axes, not over the data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, **kwargs)


def save_figure(fig, path):
    """Write `fig` to `path` (its folder made if need be) and close it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
