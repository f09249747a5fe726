"""Plots people look at: JCT CDF, queue per VC, GPU utilisation (per GPU type too) and pending jobs
over time (PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def run_plots(jobs: pd.DataFrame, series: pd.DataFrame, summary: pd.DataFrame, out: Path, label: str = "") -> list[Path]:
    """The plots of one run, into `out` (created)."""
    return compare_plots({label or "run": (jobs, series, summary)}, out)


def compare_plots(runs: dict[str, tuple], out: Path) -> list[Path]:
    """The same four plots with one line/bar per run: {label: (jobs, series, summary)}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [jct_cdf({label: jobs["jct"] for label, (jobs, _, _) in runs.items()}, out / "jct_cdf.png"), _queue_per_vc(runs, out / "queue_per_vc.png"),
             _over_time(runs, "gpu_utilization", "GPU utilisation (cluster)", out / "gpu_utilization.png"),
             _over_time(runs, "pending_gpujob_num", "pending jobs (cluster)", out / "pending_jobs.png")]
    series = next(iter(runs.values()))[1]
    per_type = [c for c in series.columns if c.startswith("gpu_utilization_")]
    if per_type and len(runs) == 1:
        paths.append(_per_type(series, per_type, out / "gpu_utilization_per_type.png"))
    return paths


def _per_type(series, columns, path):
    """One run's cluster utilisation of each GPU type over time."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    s = series[series["vc"] == "all"]
    for column in columns:
        ax.plot(s["time"] / 86400.0, s[column], label=column[len("gpu_utilization_"):], linewidth=0.8)
    ax.set_xlabel("simulated time (days since the trace origin)")
    ax.set_ylabel("fraction of the type's GPUs busy")
    ax.set_title("GPU utilisation per GPU type (cluster)")
    ax.grid(alpha=0.3)
    ax.legend(title="GPU type")
    return _save(fig, path)


def jct_cdf(jcts: dict, path: Path, title: str = "") -> Path:
    """Empirical CDF of job completion times (s, log scale), one line per {label: JCTs} (NaN: the
    job never finished, left out)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in jcts.items():
        jct = np.asarray(values, dtype=float)
        jct = np.sort(jct[~np.isnan(jct)])
        if len(jct):
            ax.plot(np.maximum(jct, 1), np.arange(1, len(jct) + 1) / len(jct), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def _queue_per_vc(runs, path):
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(next(iter(runs.values()))[2])), 4))
    width = 0.8 / max(1, len(runs))
    for i, (label, (_, _, summary)) in enumerate(runs.items()):
        s = summary[summary["vc"] != "all"]
        x = np.arange(len(s))
        ax.bar(x + i * width, s["avg_queue"], width=width, label=label)
        ax.set_xticks(x + width * (len(runs) - 1) / 2, s["vc"], rotation=45, ha="right")
    ax.set_ylabel("average queueing delay (s)")
    ax.set_yscale("symlog")
    ax.legend()
    return _save(fig, path)


def _over_time(runs, column, title, path):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for label, (_, series, _) in runs.items():
        s = series[series["vc"] == "all"]
        ax.plot(s["time"] / 86400.0, s[column], label=label, linewidth=0.8)
    ax.set_xlabel("simulated time (days since the trace origin)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
