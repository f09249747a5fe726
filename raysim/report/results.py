"""Assemble per-VC simulator output into the run's Arrow tables (jobs and time series)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.sim.recorder import COLUMNS as SERIES_COLUMNS
from raysim.sim.recorder import FLOAT_COLUMNS


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


def series_by_vc(samples: list, vc_order, last: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Per-VC numpy columns from sample tables in time order (vc column + SERIES_COLUMNS), keeping
    samples at times <= `last`. Consumes the list (tables are released as they are read)."""
    chunks: dict[str, list] = {}
    while samples:
        part = samples.pop(0)
        vc = part.column("vc").combine_chunks()
        vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
        codes = vc.indices.to_numpy(zero_copy_only=False)
        cols = {c: part.column(c).to_numpy() for c in ("time", *SERIES_COLUMNS)}
        keep = np.ones(len(codes), dtype=bool) if last is None else cols["time"] <= last
        for code, name in enumerate(vc.dictionary.to_pylist()):
            idx = np.flatnonzero((codes == code) & keep)
            if len(idx):
                chunks.setdefault(name, []).append({c: v[idx] for c, v in cols.items()})
    out = {}
    for name in vc_order:
        parts = chunks.pop(name, None)
        if parts:
            out[name] = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    return out


def timeseries_table(per_vc: dict[str, dict[str, np.ndarray]]) -> pa.Table:
    """Per-VC samples plus cluster-wide rows (vc = "all") at every sample time.

    Every VC is sampled on the same grid up to the cluster's last event (see the coordinator), so
    the cluster rows are plain sums (GPU-weighted means for the utilisation columns). Consumes
    `per_vc` column by column to keep long runs' memory down.
    """
    names = list(per_vc)
    if not names:
        return pa.table({"vc": pa.array([], pa.dictionary(pa.int32(), pa.string())),
                         "time": pa.array([], pa.int64())})
    blocks = [per_vc[v] for v in names]
    grid = blocks[0]["time"]
    if any(not np.array_equal(b["time"], grid) for b in blocks):
        raise AssertionError("VC time series are not on one grid")
    m = len(grid)
    total = np.zeros(m, dtype=np.int64)
    for b in blocks:
        total += b["total_gpu_num"]
    cluster = {"time": grid}
    for name in SERIES_COLUMNS:
        acc = np.zeros(m, dtype=np.float64 if name in FLOAT_COLUMNS else np.int64)
        for b in blocks:
            acc += b[name] * b["total_gpu_num"] if name in FLOAT_COLUMNS else b[name]
        if name in FLOAT_COLUMNS:  # GPU-weighted means
            acc = np.divide(acc, total, out=np.zeros(m), where=total > 0)
        cluster[name] = acc.astype(blocks[0][name].dtype)
    blocks.append(cluster)
    codes = np.repeat(np.arange(len(blocks), dtype=np.int32), m)
    out = {"vc": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names + ["all"]))}
    busy = np.zeros(len(codes))
    for col in ("time", *SERIES_COLUMNS):
        out[col] = pa.array(np.concatenate([b.pop(col) for b in blocks]))
    tot = out["total_gpu_num"].to_numpy()
    idle = out["idle_gpu_num"].to_numpy()
    np.divide(tot - idle, tot, out=busy, where=tot > 0)
    out["gpu_utilization"] = pa.array(busy.astype(np.float32))
    return pa.table(out)
