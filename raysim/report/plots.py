"""Plots people look at: JCT CDF, queue per VC, GPU utilisation (per GPU type too) and pending jobs
over time (PNG). Each plot's title says what it shows and what was run (`run_description`: the
policy, the semantics mode, the command-line overrides); axes are labelled with their units; time
axes start where the activity starts and pick their unit from its span (a two-minute burst is not
drawn on 145 days of axis); a long series is drawn as the means of hourly (or coarser) bins, and
says so, rather than as a block of round-by-round flips; the queue per VC stays legible with
dozens of VCs (horizontal bars, one row per VC; no plot for a single VC) and shows a VC without
queueing as "0"; a legend appears only to tell several runs apart, outside the data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from raysim.forking import forked_map
from raysim.report.describe import time_axis

#: (bin width in seconds, name) of the bins a long series is averaged into: the narrowest that leaves
#: at most MAX_POINTS bins; a series of at most MAX_POINTS samples is drawn as sampled.
BINS = ((3600, "hourly"), (6 * 3600, "6-hour"), (86400, "daily"), (7 * 86400, "weekly"))
MAX_POINTS = 1000


def run_plots(jobs: pd.DataFrame, series: pd.DataFrame, summary: pd.DataFrame, out: Path, label: str = "",
              title: str = "") -> list[Path]:
    """The plots of one run, into `out` (created); `title` says what was run (run_description)."""
    return compare_plots({label or "run": (jobs, series, summary)}, out, title=title or label)


def compare_plots(runs: dict[str, tuple], out: Path, title: str = "") -> list[Path]:
    """The same plots with one line/bar per run: {label: (jobs, series, summary)}; `title` (default:
    the run labels) is each plot's second line. The queue per VC is left out where there is one VC
    (its one bar is the summary's avg_queue). The plots are drawn one per CPU at a time where this
    process may fork (raysim.forking)."""
    return forked_map(plot_tasks(runs, out, title))


def plot_tasks(runs: dict[str, tuple], out: Path, title: str = "") -> list[tuple]:
    """compare_plots' plots as `(function, args)` pieces for raysim.forking, each drawing one plot
    and returning its path (`out` is created here)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    what = title or ", ".join(runs)
    tasks = [(jct_cdf, ({label: jobs["jct"] for label, (jobs, _, _) in runs.items()}, out / "jct_cdf.png", what))]
    if len(vc_names(runs)) > 1:
        tasks.append((drawn, (queue_per_vc, (runs, what), out / "queue_per_vc.png")))
    tasks += [(drawn, (over_time, (runs, ["gpu_utilization"], "fraction of GPUs busy", "GPU utilisation (cluster)",
                                   what), out / "gpu_utilization.png")),
              (drawn, (over_time, (runs, ["pending_gpujob_num"], "jobs waiting", "pending jobs (cluster)", what),
                       out / "pending_jobs.png"))]
    series = next(iter(runs.values()))[1]
    per_type = [c for c in series.columns if c.startswith("gpu_utilization_")]
    if per_type and len(runs) == 1:
        tasks.append((drawn, (over_time, (runs, per_type, "fraction of the type's GPUs busy",
                                          "GPU utilisation per GPU type (cluster)", what),
                              out / "gpu_utilization_per_type.png")))
    return tasks


def drawn(figure, args: tuple, path: Path) -> Path:
    """`figure(*args)` (a function making a Figure) saved to `path`."""
    return save_figure(figure(*args), path)


def vc_names(runs: dict[str, tuple]) -> list[str]:
    """The VCs of the first run's summary, in its order ("all" left out)."""
    return [vc for vc in next(iter(runs.values()))[2]["vc"] if vc != "all"]


def bin_width(times) -> tuple[float | None, str]:
    """(seconds, name) of the BINS to average a series sampled at `times` into, or (None, "") to
    draw it as sampled (at most MAX_POINTS samples)."""
    times = np.asarray(times, dtype=float)
    if len(times) <= MAX_POINTS:
        return None, ""
    span = float(times.max() - times.min())
    return next(((w, name) for w, name in BINS if span / w <= MAX_POINTS), BINS[-1])


def bin_means(times, values, width: float | None, origin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(each bin's start, the mean of `values` in it) for bins of `width` seconds from `origin`
    (empty bins left out); `width` None: the samples as they are."""
    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    if width is None:
        return times, values
    index = ((times - origin) // width).astype(np.int64)
    bins, inverse = np.unique(index, return_inverse=True)
    return origin + bins * width, np.bincount(inverse, weights=values) / np.bincount(inverse)


def jct_cdf(jcts: dict, path: Path, title: str = "") -> Path:
    """Empirical CDF of job completion times (s, log scale), one line per {label: JCTs} (NaN: the
    job never finished, left out); `title`: what was run."""
    fig, ax = subplots(figsize=(6.5, 4))
    for label, values in jcts.items():
        jct = np.asarray(values, dtype=float)
        jct = np.sort(jct[~np.isnan(jct)])
        if len(jct):
            ax.plot(np.maximum(jct, 1), np.arange(1, len(jct) + 1) / len(jct), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s, log scale)")
    ax.set_ylabel("fraction of jobs finished within it")
    set_title(ax, "JCT distribution", title)
    ax.grid(alpha=0.3)
    if len(jcts) > 1:
        _legend(ax)
    return save_figure(fig, path)


def queue_per_vc(runs, what):
    """Average queueing delay per VC: horizontal bars (one row per VC, a bar per run), so that any
    number of VCs stays legible; a symlog scale (linear below 1 s) when the delays span orders of
    magnitude, said in the axis label; a VC whose jobs never waited is marked "0" (its bar has no
    length)."""
    vcs = vc_names(runs)
    height = 0.8 / max(1, len(runs))
    fig, ax = subplots(figsize=(7, max(2.5, 0.5 + len(vcs) * 0.22 * max(1, len(runs) ** 0.5))))
    y = np.arange(len(vcs))
    top = 0.0
    for i, (label, (_, _, summary)) in enumerate(runs.items()):
        values = summary.set_index("vc")["avg_queue"].reindex(vcs).to_numpy(dtype=float)
        ax.barh(y + i * height, np.nan_to_num(values), height=height, label=label)
        for row in np.flatnonzero(values == 0):
            ax.annotate("0", (0, y[row] + i * height), xytext=(2, 0), textcoords="offset points", va="center",
                        fontsize=7)
        top = max(top, float(np.nanmax(values)) if len(values) else 0.0)
    ax.set_yticks(y + height * (len(runs) - 1) / 2, vcs, fontsize=max(5, min(9, 400 // max(1, len(vcs)))))
    ax.invert_yaxis()
    positive = [v for _, (_, _, s) in runs.items() for v in s["avg_queue"] if v and v > 0]
    scale = ""
    if positive and max(positive) / max(min(positive), 1.0) > 100:
        ax.set_xscale("symlog", linthresh=1.0)
        scale = ", symlog scale: linear below 1 s"
    ax.set_xlim(0, top * 1.1 if top > 0 else 1)
    ax.set_xlabel(f"average queueing delay (s{scale})")
    ax.set_ylabel("VC")
    set_title(ax, "queueing delay per VC", what)
    ax.grid(alpha=0.3, axis="x")
    if len(runs) > 1:
        _legend(ax)
    return fig


def over_time(runs, columns, ylabel, name, what):
    """Cluster-wide `columns` over time, a line per run (per column where one run shows several,
    labelled by the column's suffix: the GPU type); a long series as bin means (bin_width), said in
    the axis label."""
    fig, ax = subplots(figsize=(7, 3.5))
    times = np.concatenate([series.loc[series["vc"] == "all", "time"].to_numpy(dtype=float)
                            for _, series, _ in runs.values()])
    width, means = bin_width(times)
    origin, per, label = time_axis(times)
    for run, (_, series, _) in runs.items():
        s = series[series["vc"] == "all"]
        for column in columns:
            start, values = bin_means(s["time"], s[column], width, origin)
            ax.plot((start - origin) / per, values, label=column.removeprefix("gpu_utilization_") if len(columns) > 1
                    else run, linewidth=0.8, drawstyle="steps-post" if width else "default")
    ax.set_xlabel(label)
    ax.set_ylabel(f"{ylabel} ({means} means)" if width else ylabel)
    set_title(ax, name, what)
    ax.grid(alpha=0.3)
    if len(runs) > 1 or len(columns) > 1:
        _legend(ax, **({"title": "GPU type"} if len(columns) > 1 else {}))
    return fig


def set_title(target, name: str, run: str = "") -> None:
    """Title an Axes (or a whole Figure of several): what it shows (`name`), then what was run
    (`run`, see run_description). Every plot of a run or a sweep is titled here."""
    text = f"{name}\n{run}" if run else name
    if isinstance(target, Figure):
        target.suptitle(text, fontsize=9)
    else:
        target.set_title(text, fontsize=9)


def _legend(ax, **kwargs):
    """A legend beside the axes, not over the data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, **kwargs)


def subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """(figure, axes) as pyplot.subplots makes them, without pyplot: a bare Figure drawn by Agg when
    saved (no pyplot import or backend set-up, no global list of open figures to close)."""
    fig = Figure(figsize=kwargs.pop("figsize", None))
    return fig, fig.subplots(nrows, ncols, **kwargs)


def save_figure(fig, path):
    """Write `fig` to `path` (its folder made if need be)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path
