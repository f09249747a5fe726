"""Assemble simulator output into the run's tables and files (jobs.parquet, timeseries.parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from raysim.report.timeseries import META_KEY
from raysim.report.timeseries_write import timeseries_table
from raysim.trace.attempts import COLUMN as ATTEMPTS
from raysim.trace.attempts import FAILED_STATES, attempts_of
from raysim.trace.schema import REQUEST_COLUMNS

#: A Gavel trace's columns that jobs.parquet keeps (its `rounds` group, raysim.report.schema).
ROUNDS_COLUMNS = ("job_type", "total_steps", "priority_weight")
#: The checkpoint group's columns (raysim.sim.jobs.JobTable.checkpoint_results).
CHECKPOINT_COLUMNS = ("lost_gpu_s", "overhead_gpu_s")


def jobs_table(trace: pa.Table, records: pa.Table) -> pa.Table:
    """One row per trace job, in trace order: inputs, start/end/queue/jct, preemptions, placement,
    for a trace whose jobs ask for GPU shares, CPU and memory those requests and the first GPU the
    job got on its first node (`first_gpu`; shares of one GPU name the same), and, from a run with
    quotas between VCs, its own VC (`home_vc`, the same as `vc`), on which VC's nodes
    its latest run was (`ran_on_vc`) and how often a lender reclaimed nodes from under it (`reclaims`).

    `records` holds one simulator record per job (seq = trace row). Times are seconds on the trace
    clock; start/end/jct are null for jobs that had not started/finished at the horizon.
    """
    r = _records_in_trace_order(trace.num_rows, records)
    return _jobs_rows(trace, r)


def write_jobs(trace: pa.Table, records: pa.Table, path, *, chunk_rows: int = 1 << 18, ticks_per_s: int = 1,
               gpu_types: tuple = (), causes: tuple | None = None, checkpoint: bool = False,
               attempts: bool = False, spot: bool = False, policy_columns: tuple = ()) -> None:
    """`jobs_table(trace, records)` written to `path` `chunk_rows` trace rows at a time (one row group
    each), so the whole joined table never sits in memory. Records of a simulator whose clock
    counts `ticks_per_s` ticks per second become seconds (floats; see `_in_seconds`). With several
    `gpu_types` (the run's) the GPU-type group: `gpu_type`, the type of a job's latest placement,
    and `run_s_<type>`, the seconds it held GPUs of each type. With `causes` (a run with capacity
    events, raysim.sim.capacity) the capacity group: `interruptions` and `interruptions_<cause>`. With
    `checkpoint` (checkpoint-restart, raysim.sim.checkpoint) the checkpoint group: `lost_gpu_s` and
    `overhead_gpu_s`, and with `causes` too `lost_gpu_s_<cause>`. With `attempts` (trace.failed=replay)
    the failures group: `retries`, `failed` and `failed_gpu_s` (`_with_failures`). With `spot` (a
    trace with priority classes, raysim.sim.spot) the spot group: `priority_class`, `evictions` and
    `hours_kept`, and
    with `checkpoint` too `lost_gpu_s_evictions`. The policy's own
    columns (`policy_columns`, Policy.result_columns) follow, of the types they were given."""
    r = _records_in_trace_order(trace.num_rows, records)

    def rows(t, rec):
        table = _jobs_rows(t, rec) if ticks_per_s == 1 else _in_seconds(t, rec, ticks_per_s)
        if "gpu_type" in rec:
            table = _with_types(table, rec, gpu_types, ticks_per_s)
        if causes is not None:
            table = _with_interruptions(table, rec, causes)
        for name in CHECKPOINT_COLUMNS if checkpoint else ():  # (GPU x ticks: GPU x seconds)
            table = table.append_column(name, pa.array(rec[name] / ticks_per_s))
        for k, cause in enumerate(causes or ()) if checkpoint else ():
            table = table.append_column(f"lost_gpu_s_{cause}", pa.array(rec[f"lost_{k}"] / ticks_per_s))
        if attempts:
            table = _with_failures(table, t, rec)
        if spot:
            table = table.append_column("priority_class", t.column("priority_class"))
            table = table.append_column("evictions", pa.array(rec["evictions"].astype(np.int32)))
            table = table.append_column("hours_kept", pa.array(rec["hours_kept"].astype(np.int32)))
            if checkpoint:
                table = table.append_column("lost_gpu_s_evictions", pa.array(rec["lost_evictions"] / ticks_per_s))
        for name in policy_columns:
            table = table.append_column(name, pa.array(rec[name]))
        return table

    writer = None
    try:
        for a in range(0, max(trace.num_rows, 1), chunk_rows):
            part = rows(trace.slice(a, chunk_rows), {k: v[a:a + chunk_rows] for k, v in r.items()})
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
    loans = {"ran_on_vc": pa.nulls(k, pa.string()), "reclaims": np.zeros(k, np.int64)}
    in_profiler = pa.table({
        "seq": seq[finished], "start_time": stage.column("prof_start").to_numpy()[finished],
        "end_time": stage.column("prof_end").to_numpy()[finished],
        "queue": stage.column("prof_queue").to_numpy()[finished],
        "preemptions": np.zeros(k, np.int64), "first_node": np.full(k, -1),
        "num_nodes": np.zeros(k, np.int64), "shared": np.zeros(k, np.int64), "first_gpu": np.full(k, -1),
        **{name: col for name, col in loans.items() if name in records.column_names},
        **{name: np.full(k, -1 if name == "gpu_type" else 0, np.int64) for name in records.column_names
           if name in ("gpu_type", "interruptions") or name.startswith(("held_", "intr_", "lost_"))},
        **{name: np.zeros(k) for name in CHECKPOINT_COLUMNS if name in records.column_names},
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


def merge_series(paths, out, *, ticks_per_s: int = 1) -> None:
    """The time series file a ResultSink's close() wrote (`paths`: it, or nothing when the run
    sampled nothing), moved to `out` (raysim.report.timeseries describes it); with a clock of
    `ticks_per_s` ticks per second, its times (whole seconds on the sample grid) become seconds."""
    paths = list(paths)
    if not paths:
        pq.write_table(timeseries_table({}), out, compression="zstd")
        return
    (path,) = paths
    if ticks_per_s == 1:
        Path(path).replace(out)
        return
    table = pq.read_table(path)
    meta = dict(table.schema.metadata or {})
    if META_KEY in meta:
        grid = json.loads(meta[META_KEY])
        meta[META_KEY] = json.dumps({k: v // ticks_per_s for k, v in grid.items()}).encode()
    time = table.column("time").to_numpy() // ticks_per_s
    table = table.set_column(table.schema.get_field_index("time"), "time", pa.array(time))
    pq.write_table(table.replace_schema_metadata(meta), out, compression="zstd", row_group_size=1 << 17)
    Path(path).unlink()


def _with_types(table: pa.Table, r: dict[str, np.ndarray], gpu_types: tuple, ticks: int) -> pa.Table:
    """`table` with the GPU-type group: `gpu_type` (null: never ran) and `run_s_<type>`."""
    kind = r["gpu_type"]
    names = np.asarray(list(gpu_types) + [None], dtype=object)
    table = table.append_column("gpu_type", pa.array(names[np.where(kind >= 0, kind, len(gpu_types))],
                                                     pa.string()).dictionary_encode())
    for k, name in enumerate(gpu_types):
        held = r.get(f"held_{k}", np.zeros(len(kind), np.int64))
        table = table.append_column(f"run_s_{name}", pa.array(held / ticks if ticks != 1 else held))
    return table


def _with_interruptions(table: pa.Table, r: dict[str, np.ndarray], causes: tuple) -> pa.Table:
    """`table` with the capacity group: `interruptions` (times a node going down stopped the job)
    and `interruptions_<cause>` per cause of the run."""
    table = table.append_column("interruptions", pa.array(r["interruptions"].astype(np.int32)))
    for k, cause in enumerate(causes):
        table = table.append_column(f"interruptions_{cause}", pa.array(r[f"intr_{k}"].astype(np.int32)))
    return table


def _with_failures(table: pa.Table, trace: pa.Table, r: dict[str, np.ndarray]) -> pa.Table:
    """`table` with the failures group of trace.failed=replay: `retries` (its runs that failed and
    were retried), `failed` (it finished and its trace's state says its last run failed too) and
    `failed_gpu_s` (GPUs x seconds of work of its runs that failed)."""
    finished = r["end_time"] >= 0
    n = len(finished)
    retries = r.get("retries", np.zeros(n, np.int64))
    state = trace.column("state").cast(pa.string())
    failed = finished & pc.is_in(state, pa.array(FAILED_STATES)).fill_null(False).to_numpy(zero_copy_only=False)
    last = trace.column("duration").to_numpy().astype(np.float64)
    done = np.zeros(n)  # work of the runs that failed before the last
    if ATTEMPTS in trace.column_names:
        texts = trace.column(ATTEMPTS)
        for i in np.flatnonzero(texts.is_valid().to_numpy(zero_copy_only=False)).tolist():
            got = attempts_of(texts[i].as_py())
            if got is not None:
                done[i], last[i] = sum(got[0][:retries[i]]), got[0][-1]
    gpus = trace.column("gpu_num").to_numpy().astype(np.float64)
    table = table.append_column("retries", pa.array(retries.astype(np.int32)))
    table = table.append_column("failed", pa.array(failed))
    return table.append_column("failed_gpu_s", pa.array(gpus * (done + np.where(failed, last, 0.0))))


def _in_seconds(trace: pa.Table, r: dict[str, np.ndarray], ticks: int) -> pa.Table:
    """`_jobs_rows` of a simulator counting `ticks` per second: submit, start, end, queue and JCT
    in seconds (floats; submit times the trace's exact arrivals where it has them, ``arrival_s``)."""
    table = _jobs_rows(trace, r)
    submit = (trace.column("arrival_s") if "arrival_s" in trace.column_names else trace.column("submit_time")
              ).to_numpy(zero_copy_only=False).astype(float)
    start, end = r["start_time"] / ticks, r["end_time"] / ticks
    started, finished = r["start_time"] >= 0, r["end_time"] >= 0
    columns = {"submit_time": pa.array(submit), "start_time": pa.array(start, mask=~started),
               "end_time": pa.array(end, mask=~finished), "queue": pa.array(r["queue"] / ticks),
               "jct": pa.array(end - submit, mask=~finished)}
    for name, column in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


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
    loans = {"home_vc": trace.column("vc"), "ran_on_vc": pa.array(r["ran_on_vc"], pa.string()),
             "reclaims": pa.array(r["reclaims"].astype(np.int32))} if "reclaims" in r else {}
    requests = {}
    if "gpu_milli" in trace.column_names:  # jobs that ask for GPU shares, CPU and memory (0 where not given)
        requests = {name: trace.column(name) if name in trace.column_names else pa.array(np.zeros(n, np.int64))
                    for name in REQUEST_COLUMNS}
        requests["first_gpu"] = pa.array(r["first_gpu"].astype(np.int32), mask=~started | (r["first_gpu"] < 0))
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
        **loans,
        **requests,
        **{name: trace.column(name) for name in ROUNDS_COLUMNS if "total_steps" in trace.column_names},
        **({"task": trace.column("task")} if "task" in trace.column_names else {}),
    })
