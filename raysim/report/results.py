"""Assemble per-VC simulator output into the run's Arrow tables (jobs and time series)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.sim.recorder import COLUMNS as SERIES_COLUMNS


def jobs_table(trace: pa.Table, per_vc: dict[str, dict[str, np.ndarray]]) -> pa.Table:
    """One row per trace job, in trace order: inputs, start/end/queue/jct, preemptions, placement.

    Times are seconds on the trace clock; end_time and jct are null for jobs unfinished at the horizon.
    """
    n = trace.num_rows
    parts = [r for r in per_vc.values() if len(r["seq"])]
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    if len(merged.get("seq", [])) != n:
        raise AssertionError(f"conservation violated: {len(merged.get('seq', []))} results for {n} trace jobs")
    order = np.argsort(merged["seq"], kind="stable")
    r = {k: v[order] for k, v in merged.items()}
    if not np.array_equal(r["seq"], np.arange(n)):
        raise AssertionError("conservation violated: some trace job appears twice or not at all")
    finished = r["end_time"] >= 0
    started = r["start_time"] >= 0
    end = pa.array(r["end_time"], mask=~finished)
    jct = pa.array(r["end_time"] - r["submit_time"], mask=~finished)
    return pa.table({
        "job_id": trace.column("job_id"),
        "vc": trace.column("vc"),
        "user": trace.column("user"),
        "gpu_num": trace.column("gpu_num"),
        "submit_time": trace.column("submit_time"),
        "duration": trace.column("duration"),
        "start_time": pa.array(r["start_time"], mask=~started),
        "end_time": end,
        "queue": pa.array(r["queue"]),
        "jct": jct,
        "preemptions": pa.array(r["preemptions"]),
        "first_node": pa.array(r["first_node"], mask=~started),
        "num_nodes": pa.array(r["num_nodes"]),
        "shared": pa.array(np.zeros(n, dtype=bool)),
        "profiled": pa.array(np.zeros(n, dtype=bool)),
        "finished": pa.array(finished),
    })


def timeseries_table(per_vc: dict[str, dict[str, np.ndarray]]) -> pa.Table:
    """Per-VC samples plus cluster-wide rows (vc = "all") at every sample time."""
    frames = []
    for vc, s in per_vc.items():
        frames.append({"vc": np.full(len(s["time"]), vc, dtype=object), **s})
    if not frames:
        return pa.table({"vc": pa.array([], pa.string()), "time": pa.array([], pa.int64())})
    cols = {k: np.concatenate([f[k] for f in frames]) for k in frames[0]}
    times, inv = np.unique(cols["time"], return_inverse=True)
    total = np.bincount(inv, weights=cols["total_gpu_num"], minlength=len(times))
    allrows = {"vc": np.full(len(times), "all", dtype=object), "time": times}
    for name in SERIES_COLUMNS:
        if name in ("sm_util", "gmem_mb"):  # GPU-weighted means
            w = np.bincount(inv, weights=cols[name] * cols["total_gpu_num"], minlength=len(times))
            allrows[name] = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
        else:
            allrows[name] = np.bincount(inv, weights=cols[name], minlength=len(times)).astype(np.int64)
    out = {k: np.concatenate([cols[k], allrows[k]]) for k in cols}
    util = np.divide(out["total_gpu_num"] - out["idle_gpu_num"], out["total_gpu_num"],
                     out=np.zeros(len(out["time"])), where=out["total_gpu_num"] > 0)
    out["gpu_utilization"] = util
    table = pa.table({k: (pa.array(v.tolist(), pa.string()) if k == "vc" else pa.array(v)) for k, v in out.items()})
    return table.cast(table.schema.set(0, pa.field("vc", pa.dictionary(pa.int32(), pa.string()))))
