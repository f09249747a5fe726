"""Assemble per-VC simulator output into the run's Arrow tables (jobs and time series)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.sim.recorder import COLUMNS as SERIES_COLUMNS


def jobs_table(trace: pa.Table, records: pa.Table) -> pa.Table:
    """One row per trace job, in trace order: inputs, start/end/queue/jct, preemptions, placement.

    `records` holds one simulator record per job (seq = trace row). Times are seconds on the trace
    clock; start/end/jct are null for jobs that had not started/finished at the horizon.
    """
    n = trace.num_rows
    seq = records.column("seq").to_numpy()
    if len(seq) != n:
        raise AssertionError(f"conservation violated: {len(seq)} job records for {n} trace jobs")
    order = np.argsort(seq, kind="stable")
    if not np.array_equal(seq[order], np.arange(n)):
        raise AssertionError("conservation violated: some trace job appears twice or not at all")
    r = {name: records.column(name).to_numpy()[order] for name in records.column_names}
    finished = r["end_time"] >= 0
    started = r["start_time"] >= 0
    submit = trace.column("submit_time").to_numpy()
    return pa.table({
        "job_id": trace.column("job_id"),
        "vc": trace.column("vc"),
        "user": trace.column("user"),
        "gpu_num": trace.column("gpu_num"),
        "submit_time": trace.column("submit_time"),
        "duration": trace.column("duration"),
        "start_time": pa.array(r["start_time"], mask=~started),
        "end_time": pa.array(r["end_time"], mask=~finished),
        "queue": pa.array(r["queue"]),
        "jct": pa.array(r["end_time"] - submit, mask=~finished),
        "preemptions": pa.array(r["preemptions"].astype(np.int32)),
        "first_node": pa.array(r["first_node"].astype(np.int32), mask=~started),
        "num_nodes": pa.array(r["num_nodes"].astype(np.int32)),
        "shared": pa.array(r["shared"].astype(bool) if "shared" in r else np.zeros(n, dtype=bool)),
        "profiled": pa.array(r["profiled"].astype(bool) if "profiled" in r else np.zeros(n, dtype=bool)),
        "finished": pa.array(finished),
    })


def series_by_vc(samples: pa.Table, vc_order, last: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Split a samples table (vc column + SERIES_COLUMNS) into per-VC numpy dicts, time-sorted,
    keeping samples at times <= `last`."""
    if not samples.num_rows:
        return {}
    vc = samples.column("vc").combine_chunks()
    vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
    codes = vc.indices.to_numpy(zero_copy_only=False)
    names = vc.dictionary.to_pylist()
    cols = {c: samples.column(c).to_numpy() for c in ("time", *SERIES_COLUMNS)}
    keep = np.ones(len(codes), dtype=bool) if last is None else cols["time"] <= last
    out = {}
    for vc_name in vc_order:
        if vc_name not in names:
            continue
        idx = np.flatnonzero((codes == names.index(vc_name)) & keep)
        order = idx[np.argsort(cols["time"][idx], kind="stable")]
        out[vc_name] = {c: v[order] for c, v in cols.items()}
    return out


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
