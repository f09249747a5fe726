"""The figures of a harvesting run (policy=bftrainer), from its jobs.parquet and timeseries.parquet.

Definitions (samples are the tasks' work unit):

- ``total_samples`` (net): samples the tasks processed (jobs.parquet ``samples``).
- ``gross_samples``: what the allocated nodes would have processed at the allocation's rates =
  net + ``precost`` (samples lost to nodes going busy) + ``rescost`` (to rescaling) + ``overshoot``
  (progress past Pmax, trimmed: a finished task holds its nodes until the next decision; ~0 with
  ``harvest.precise``).
- ``efficiency`` = net / gross.
- ``makespan_h``: from the first task's arrival to the last completion (null when a task did not
  finish before the node log ended).
- ``idle_node_hours``: the nodes present (idle for the batch scheduler) over the run, and
  ``busy_node_hours`` those used by tasks, from the time series (every ``sim.sample_interval``
  seconds, as its GPU utilisation); ``harvested_fraction`` is their ratio.
- ``preemptions``: times a node going busy stopped a task (jobs.parquet ``interruptions``);
  ``rescales``: times a task's node count changed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from raysim.report.timeseries import read_timeseries

#: The figures `harvest_figures` returns, in the order summary.csv shows them.
FIGURES = ("makespan_h", "efficiency", "harvested_fraction", "total_samples", "gross_samples", "precost",
           "rescost", "overshoot", "busy_node_hours", "idle_node_hours", "rescales")
#: jobs.parquet columns they need
JOB_COLUMNS = ("submit_time", "end_time", "finished", "samples", "precost", "rescost", "overshoot", "rescales")


def harvest_figures(jobs_path, series_path, interval: int) -> dict:
    """The run's harvest figures (module doc) from its result files; `interval`: the series' sample
    interval (s)."""
    jobs = pq.read_table(jobs_path, columns=list(JOB_COLUMNS)).to_pandas()
    net = float(jobs["samples"].sum())
    gross = net + float(jobs["precost"].sum() + jobs["rescost"].sum() + jobs["overshoot"].sum())
    done = bool(jobs["finished"].all()) and len(jobs)
    series = read_timeseries(series_path, vcs=["all"], columns=["total_gpu_num", "idle_gpu_num"])
    total = series.column("total_gpu_num").to_numpy().astype(float) if series.num_rows else np.zeros(0)
    idle = series.column("idle_gpu_num").to_numpy().astype(float) if series.num_rows else np.zeros(0)
    present = float(total.sum()) * interval / 3600
    used = float((total - idle).sum()) * interval / 3600
    return {
        "makespan_h": (float(jobs["end_time"].max()) - max(0.0, float(jobs["submit_time"].min()))) / 3600
        if done else np.nan,
        "efficiency": net / gross if gross > 0 else np.nan,
        "harvested_fraction": used / present if present > 0 else np.nan,
        "total_samples": net,
        "gross_samples": gross,
        "precost": float(jobs["precost"].sum()),
        "rescost": float(jobs["rescost"].sum()),
        "overshoot": float(jobs["overshoot"].sum()),
        "busy_node_hours": used,
        "idle_node_hours": present,
        "rescales": int(jobs["rescales"].sum()),
    }


def with_harvest_figures(summary: pd.DataFrame, run_dir, interval: int) -> pd.DataFrame:
    """`summary` (one row per VC and "all"; a harvesting run has one VC) with the harvest figures."""
    figures = harvest_figures(run_dir / "jobs.parquet", run_dir / "timeseries.parquet", interval)
    summary = summary.copy()
    for name in FIGURES:
        summary[name] = figures[name]
    return summary
