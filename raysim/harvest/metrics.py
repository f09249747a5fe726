"""Summary figures and result tables of a harvest replay.

Definitions (samples are the tasks' work unit):

- ``total_samples`` (net): samples the tasks processed, = sum of the step log's Thr.
- ``gross_samples``: what the allocated nodes would have processed at the allocation's rates,
  = sum over steps of Rate x time to the next event = net + ``precost`` (preemptions) + ``rescost``
  (rescaling) + ``overshoot`` (progress past Pmax, trimmed: a finished task holds its nodes until
  the next event; ~0 in precise mode).
- ``efficiency`` = net / gross.
- ``makespan_h``: from the first task's arrival (its submit time, or the replay start if earlier)
  to the last completion; null when some task did not finish before the log ended.
- ``idle_node_hours``: integral of the slice's idle pool from the replay start to its end (the last
  step); ``busy_node_hours``: integral of the nodes allocated to tasks; ``harvested_fraction`` is
  their ratio.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.harvest.engine import HarvestResult
from raysim.harvest.replay import to_datetime64


def summarize(res: HarvestResult) -> dict:
    """Summary dict (JSON-ready) of a replay."""
    st = res.steps
    dt = np.diff(st["evtTime"])
    idle_nh = float(np.sum(st["nNd"][:-1] * dt) / 3600)
    busy_nh = float(np.sum(st["nNrun"][:-1] * dt) / 3600)
    net = float(res.samples.sum())
    precost, rescost = float(res.precost.sum()), float(res.rescost.sum())
    gross = float(np.sum(st["Rate"][:-1] * dt))
    done = ~np.isnan(res.finished)
    all_done = bool(done.all())
    first = max(0.0, float(res.tsub.min())) if len(res.tsub) else 0.0
    makespan = float(res.finished.max() - first) / 3600 if all_done and len(res.tsub) else None
    end = float(st["evtTime"][-1])
    return {
        "makespan_h": makespan,
        "efficiency": net / gross if gross > 0 else None,
        "total_samples": net,
        "gross_samples": gross,
        "jobs_total": len(res.tasks),
        "jobs_finished": int(done.sum()),
        "precost": precost,
        "rescost": rescost,
        "overshoot": float(res.overshoot.sum()),
        "preemptions": int(res.preemptions.sum()),
        "rescales": int(res.rescales.sum()),
        "busy_node_hours": busy_nh,
        "idle_node_hours": idle_nh,
        "harvested_fraction": busy_nh / idle_nh if idle_nh > 0 else None,
        "start": str(to_datetime64(res.t0_ns, [0.0])[0]),
        "end": str(to_datetime64(res.t0_ns, [end])[0]),
        "replay_h": end / 3600,
        "events": int(len(st["evt"])),
        "decisions": res.decisions,
        "allocator_seconds": res.alloc_seconds,
    }


#: Sample interval (s) of a harvest replay's timeseries.parquet, as the trace replays' default.
SAMPLE_INTERVAL_S = 60
#: timeseries.parquet column -> the step log's column it samples
SERIES = {"idle_pool_nodes": "nNd", "running_nodes": "nNrun", "active_tasks": "nJob", "running_tasks": "nJrun",
          "samples_per_s": "Rate"}


def timeseries_table(res: HarvestResult, interval: int = SAMPLE_INTERVAL_S) -> pa.Table:
    """The replay's state every `interval` seconds (as every run with a clock writes it): the idle
    pool, the nodes running tasks, active and running tasks and the aggregate rate, each the value
    after the last event at or before the sample time; `vc` = "all" (the one pool), `time` in
    seconds since the replay's start."""
    t = np.asarray(res.steps["evtTime"], dtype=float)
    end = float(t[-1]) if len(t) else 0.0
    grid = np.arange(0, int(end) + 1, interval, dtype=np.int64)
    row = np.maximum(np.searchsorted(t, grid, side="right") - 1, 0)
    columns = {name: np.asarray(res.steps[step])[row] for name, step in SERIES.items()} if len(t) else \
        {name: np.zeros(0) for name in SERIES}
    return pa.table({"vc": pa.array(["all"] * len(grid), pa.string()).dictionary_encode(), "time": grid, **columns})


def steps_table(res: HarvestResult) -> pa.Table:
    """The per-event step log (reference column names; evtTime as a timestamp, plus t_s in seconds)."""
    cols = dict(res.steps)
    t = cols.pop("evtTime")
    return pa.table({"evt": cols.pop("evt"), "evtTime": to_datetime64(res.t0_ns, t), "t_s": t, **cols})


def jobs_table(res: HarvestResult) -> pa.Table:
    """One row per task in raysim's result schema (raysim.report.schema): times in seconds since the
    replay's start (a task submitted before it counts from it), start = admission; tasks are
    elastic, so `gpu_num`, `duration` and the placement columns are null; then the harvest group
    (name, samples, Pmax, preemption and rescale costs, rescales)."""
    tk = res.tasks
    n = len(tk.names)
    arrive = np.maximum(res.tsub, 0.0)
    started, done = ~np.isnan(res.admitted), ~np.isnan(res.finished)
    label = pa.array(["harvest"] * n, pa.string()).dictionary_encode()
    return pa.table({
        "job_id": pa.array(np.arange(n, dtype=np.int64)),
        "vc": label,
        "user": pa.nulls(n, pa.string()),
        "gpu_num": pa.nulls(n, pa.int32()),
        "submit_time": pa.array(arrive),
        "duration": pa.nulls(n, pa.int64()),
        "start_time": pa.array(np.where(started, res.admitted, 0.0), mask=~started),
        "end_time": pa.array(np.where(done, res.finished, 0.0), mask=~done),
        "queue": pa.array(np.where(started, res.admitted - arrive, 0.0), mask=~started),
        "jct": pa.array(np.where(done, res.finished - arrive, 0.0), mask=~done),
        "preemptions": pa.array(np.asarray(res.preemptions, dtype=np.int32)),
        "first_node": pa.nulls(n, pa.int32()),
        "num_nodes": pa.nulls(n, pa.int32()),
        "shared": pa.array(np.zeros(n, dtype=bool)),
        "profiled": pa.array(np.zeros(n, dtype=bool)),
        "finished": pa.array(done),
        "task": pa.array(list(tk.names), pa.string()),
        "samples": pa.array(res.samples),
        "max_nodes": pa.array(tk.pmax),
        "precost": pa.array(res.precost),
        "rescost": pa.array(res.rescost),
        "rescales": pa.array(res.rescales),
    })
