"""Assemble simulator output into the run's tables and files (jobs.parquet, timeseries.parquet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.sim.recorder import FLOAT_COLUMNS


def jobs_table(trace: pa.Table, records: pa.Table) -> pa.Table:
    """One row per trace job, in trace order: inputs, start/end/queue/jct, preemptions, placement.

    `records` holds one simulator record per job (seq = trace row). Times are seconds on the trace
    clock; start/end/jct are null for jobs that had not started/finished at the horizon.
    """
    r = _records_in_trace_order(trace.num_rows, records)
    return _jobs_rows(trace, r)


def write_jobs(trace: pa.Table, records: pa.Table, path, *, chunk_rows: int = 1 << 18) -> None:
    """`jobs_table(trace, records)` written to `path` `chunk_rows` trace rows at a time (one row group
    each), so the whole joined table never sits in memory."""
    r = _records_in_trace_order(trace.num_rows, records)
    writer = None
    try:
        for a in range(0, max(trace.num_rows, 1), chunk_rows):
            part = _jobs_rows(trace.slice(a, chunk_rows), {k: v[a:a + chunk_rows] for k, v in r.items()})
            if writer is None:
                writer = pq.ParquetWriter(path, part.schema, compression="zstd")
            writer.write_table(part, row_group_size=chunk_rows)
    finally:
        if writer is not None:
            writer.close()


def merge_profiling(records: pa.Table, stage: pa.Table | None) -> pa.Table:
    """Combine VC job records with the profiler stage's: jobs finished while profiled take the
    profiler's record; the others add their profiling wait to their queue."""
    if stage is None or not stage.num_rows:
        return records
    finished = stage.column("finished").to_numpy(zero_copy_only=False)
    seq = stage.column("seq").to_numpy()
    k = int(finished.sum())
    in_profiler = pa.table({
        "seq": seq[finished], "start_time": stage.column("prof_start").to_numpy()[finished],
        "end_time": stage.column("prof_end").to_numpy()[finished],
        "queue": stage.column("prof_queue").to_numpy()[finished],
        "preemptions": np.zeros(k, np.int64), "first_node": np.full(k, -1),
        "num_nodes": np.zeros(k, np.int64), "shared": np.zeros(k, np.int64),
    }).cast(records.schema)
    merged = pa.concat_tables([records, in_profiler])
    wait = np.zeros(int(merged.column("seq").to_numpy().max()) + 1 if merged.num_rows else 0, np.int64)
    profiled = np.zeros_like(wait)
    wait[seq[~finished]] = stage.column("prof_queue").to_numpy()[~finished]
    profiled[seq] = 1
    mseq = merged.column("seq").to_numpy()
    queue = merged.column("queue").to_numpy() + wait[mseq]
    merged = merged.set_column(merged.schema.get_field_index("queue"), "queue", pa.array(queue))
    return merged.append_column("profiled", pa.array(profiled[mseq]))


def merge_series(paths, out, *, row_group_rows: int = 1 << 17) -> None:
    """The series segments a ResultSink wrote, as one timeseries.parquet of `row_group_rows`-row
    groups, so that a run gives the same bytes however its segments were cut (read and written a
    row group at a time)."""
    paths = list(paths)
    if not paths:
        pq.write_table(timeseries_table({}), out, compression="zstd")
        return
    if len(paths) == 1:  # the sink already wrote row_group_rows-row groups
        Path(paths[0]).replace(out)
        return
    writer, held = None, None
    for p in paths:
        f = pq.ParquetFile(p)
        for i in range(f.num_row_groups):
            part = f.read_row_group(i)
            held = part if held is None else pa.concat_tables([held, part]).combine_chunks()
            while held.num_rows >= row_group_rows:
                writer = writer or pq.ParquetWriter(out, held.schema, compression="zstd")
                writer.write_table(held.slice(0, row_group_rows), row_group_size=row_group_rows)
                held = held.slice(row_group_rows)
        Path(p).unlink()
    writer = writer or pq.ParquetWriter(out, held.schema, compression="zstd")
    if held.num_rows:
        writer.write_table(held, row_group_size=row_group_rows)
    writer.close()


def _records_in_trace_order(n: int, records: pa.Table) -> dict[str, np.ndarray]:
    """Record columns ordered by trace row, after checking every trace job has exactly one record."""
    seq = records.column("seq").to_numpy()
    if len(seq) != n:
        raise AssertionError(f"conservation violated: {len(seq)} job records for {n} trace jobs")
    order = np.argsort(seq, kind="stable")
    if not np.array_equal(seq[order], np.arange(n)):
        raise AssertionError("conservation violated: some trace job appears twice or not at all")
    return {name: records.column(name).to_numpy()[order] for name in records.column_names}


def _jobs_rows(trace: pa.Table, r: dict[str, np.ndarray]) -> pa.Table:
    n = trace.num_rows
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
    """Per-VC numpy columns from sample tables in time order (a vc column + the sampled ones), keeping
    samples at times <= `last`. Consumes the list (tables are released as they are read)."""
    chunks: dict[str, list] = {}
    while samples:
        part = samples.pop(0)
        vc = part.column("vc").combine_chunks()
        vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
        codes = vc.indices.to_numpy(zero_copy_only=False)
        cols = {c: part.column(c).to_numpy() for c in part.column_names if c != "vc"}
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
    """Per-VC samples plus cluster-wide rows (vc = "all") at every sample time, in time order.

    Every VC is sampled on the same grid up to the cluster's last event (see the coordinator), so
    the cluster rows are plain sums (GPU-weighted means for the utilisation columns). Adds
    `gpu_utilization` (busy / total GPUs) and, in clusters of several GPU types, one
    `gpu_utilization_<type>` per type. Consumes `per_vc` column by column to keep long runs'
    memory down.
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
    columns = [c for c in blocks[0] if c != "time"]
    for name in columns:
        acc = np.zeros(m, dtype=np.float64 if name in FLOAT_COLUMNS else np.int64)
        for b in blocks:
            acc += b[name] * b["total_gpu_num"] if name in FLOAT_COLUMNS else b[name]
        if name in FLOAT_COLUMNS:  # GPU-weighted means
            acc = np.divide(acc, total, out=np.zeros(m), where=total > 0)
        cluster[name] = acc.astype(blocks[0][name].dtype)
    blocks.append(cluster)
    # time-major rows (each sample time: the VCs in layout order, then "all"), so that a run's rows
    # come out in the same order however its windows cut the time axis
    codes = np.tile(np.arange(len(blocks), dtype=np.int32), m)
    out = {"vc": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names + ["all"]))}
    for col in ("time", *columns):
        out[col] = pa.array(np.stack([b.pop(col) for b in blocks], axis=1).ravel())
    for suffix in [""] + [c[len("total_gpu_num"):] for c in columns if c.startswith("total_gpu_num_")]:
        tot = out["total_gpu_num" + suffix].to_numpy()
        idle = out["idle_gpu_num" + suffix].to_numpy()
        busy = np.zeros(len(codes))
        np.divide(tot - idle, tot, out=busy, where=tot > 0)
        out["gpu_utilization" + suffix] = pa.array(busy.astype(np.float32))
    return pa.table(out)


def cluster_series(path):
    """The cluster-wide rows (vc == "all") of a timeseries.parquet as a DataFrame: what the
    over-time plots show, read without the per-VC rows."""
    names = pq.ParquetFile(path).schema_arrow.names
    columns = ["vc", "time", "pending_gpujob_num"] + [c for c in names if c.startswith("gpu_utilization")]
    ts = pq.read_table(path, columns=columns, filters=[("vc", "==", "all")]).to_pandas()
    ts["vc"] = ts["vc"].astype(str)
    return ts
