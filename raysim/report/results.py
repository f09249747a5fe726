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
    """Per-VC samples plus cluster-wide rows (vc = "all") at every sample time.

    Every VC is sampled on the same grid up to the cluster's last event (see the runtimes), so the
    cluster rows are plain sums (GPU-weighted means for the utilisation columns).
    """
    names = list(per_vc)
    series = [per_vc[v] for v in names]
    if not series:
        return pa.table({"vc": pa.array([], pa.dictionary(pa.int32(), pa.string())),
                         "time": pa.array([], pa.int64())})
    grid = series[0]["time"]
    if any(not np.array_equal(s["time"], grid) for s in series):
        raise AssertionError("VC time series are not on one grid")
    total = np.sum([s["total_gpu_num"] for s in series], axis=0)
    cluster = {"time": grid}
    for name in SERIES_COLUMNS:
        stacked = np.stack([s[name] for s in series])
        if name in ("sm_util", "gmem_mb"):  # GPU-weighted means
            weighted = (stacked * np.stack([s["total_gpu_num"] for s in series])).sum(axis=0)
            cluster[name] = np.divide(weighted, total, out=np.zeros(len(grid)), where=total > 0)
        else:
            cluster[name] = stacked.sum(axis=0)
    blocks = series + [cluster]
    m = len(grid)
    codes = np.repeat(np.arange(len(blocks), dtype=np.int32), m)
    out = {"vc": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names + ["all"]))}
    for col in ("time", *SERIES_COLUMNS):
        out[col] = pa.array(np.concatenate([b[col] for b in blocks]))
    tot = np.concatenate([b["total_gpu_num"] for b in blocks])
    idle = np.concatenate([b["idle_gpu_num"] for b in blocks])
    out["gpu_utilization"] = pa.array(np.divide(tot - idle, tot, out=np.zeros(len(tot)), where=tot > 0))
    return pa.table(out)
