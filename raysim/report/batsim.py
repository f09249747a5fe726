"""`out_jobs.csv`: a run's jobs in Batsim's job table, so that evalys (`JobSet.from_csv`) and Batsim
users' scripts read raysim's results unchanged (the mapping: docs/outputs.md, "out_jobs.csv").

It is derived from the run folder alone (jobs.parquet, and the VC layout in trace_report.json), a
row group at a time, so every kind of run gets it and `raysim report <run folder>` rebuilds it.
The resources are GPUs, numbered across the cluster VC by VC (`GpuIds`); a job's
`allocated_resources` are `gpu_num` GPU ids from the first GPU of its first node, because
jobs.parquet records a placement's first node and node count, not its GPUs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from raysim.errors import UserError
from raysim.report.run_files import read_trace_report
from raysim.report.schema import check_jobs_file, reading, reads

#: Batsim's columns of out_jobs.csv, in Batsim's order.
COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
           "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
           "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata")
#: The file's name in a run folder.
FILE = "out_jobs.csv"
#: Batsim's job states for raysim's three outcomes: finished, started but not finished, never started.
FINISHED, STOPPED, NEVER_RAN = "COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "REJECTED"
#: jobs.parquet columns the table is made of (and first_gpu where the run records it).
SOURCE = ["job_id", "vc", "gpu_num", "submit_time", "duration", "start_time", "end_time", "queue", "preemptions",
          "first_node", "num_nodes"]


@dataclass(frozen=True)
class GpuIds:
    """The cluster's GPU ids: each VC (layout order) has one range, its own nodes' GPUs (pool by
    pool, node by node) and then those of the node slots past its layout that the run used (nodes
    joined with cluster.capacity, lent by Lucid's profiler), each as wide as a node of its first
    pool; a node borrowed under quota=borrow is counted in its lender's range instead (jobs.parquet
    `ran_on_vc`), so the ids stay the cluster's GPUs. Under quota=global the one merged VC holds
    every VC's pools in layout order: its range numbers the GPUs as quota=none's ranges do. Jobs
    that ran outside any VC (Lucid's profiling pool, `first_node` -1) share one range after the VCs'."""

    #: VC -> (first id of its range, its end, first id of each of its own nodes, end of its own nodes'
    #: ids, width of a slot past them)
    vcs: dict
    #: first id of the profiling pool's range
    pool: int


@reads
def gpu_ids(jobs_path: Path, layout: dict) -> GpuIds:
    """The GPU ids of a run with `layout` (trace_report.json's: VC -> pools with `gpus_per_node`
    and `nodes`), sized by the node slots its jobs (`jobs_path`, jobs.parquet) used."""
    slots = {vc: 0 for vc in layout}
    file = pq.ParquetFile(jobs_path)
    loans = ["ran_on_vc"] if "ran_on_vc" in file.schema_arrow.names else []
    for batch in file.iter_batches(columns=["vc", "first_node", "num_nodes", *loans]):
        table = pa.Table.from_batches([batch])
        last = (table.column("first_node").fill_null(-1).to_numpy().astype(np.int64)
                + table.column("num_nodes").to_numpy())
        codes, names = _codes(table.column("vc"))
        own_slots = ~_borrowed(table, layout)
        for code in np.unique(codes[own_slots]):
            simulated = simulated_vc(names[code], layout)
            slots[simulated] = max(slots[simulated], int(last[own_slots & (codes == code)].max()))
    out, begin = {}, 0
    for vc, pools in layout.items():
        starts = np.concatenate([[0], np.cumsum([p["gpus_per_node"] for p in pools for _ in range(p["nodes"])])])
        own = len(starts) - 1
        width = pools[0]["gpus_per_node"] if pools else 1
        end = begin + int(starts[-1]) + max(slots[vc] - own, 0) * width
        out[vc] = (begin, end, begin + starts[:-1], begin + int(starts[-1]), width)
        begin = end
    return GpuIds(out, begin)


def write_out_jobs(run_dir, *, chunk_rows: int = 1 << 17) -> Path:
    """Write `run_dir`/out_jobs.csv from its jobs.parquet and trace_report.json, one row per job in
    trace order, `chunk_rows` jobs at a time; returns its path."""
    run_dir = Path(run_dir)
    report = read_trace_report(run_dir)
    check_jobs_file(run_dir / "jobs.parquet")
    ids = gpu_ids(run_dir / "jobs.parquet", report["layout"])
    workload = Path(report.get("source") or "raysim").parent.name or "raysim"
    file = pq.ParquetFile(run_dir / "jobs.parquet")
    columns = SOURCE + [c for c in ("first_gpu", "ran_on_vc") if c in file.schema_arrow.names]
    path = run_dir / FILE
    options = pacsv.WriteOptions(quoting_style="needed")
    writer = None
    try:
        with reading(run_dir / "jobs.parquet"):
            for batch in file.iter_batches(batch_size=chunk_rows, columns=columns):
                table = batsim_rows(pa.Table.from_batches([batch]), ids, workload)
                if writer is None:
                    writer = pacsv.CSVWriter(path, table.schema, write_options=options)
                writer.write_table(table)
    except BaseException:
        path.unlink(missing_ok=True)  # no table cut short (`raysim report` would take it as written)
        raise
    finally:
        if writer is not None:
            writer.close()
    return path


def batsim_rows(jobs: pa.Table, ids: GpuIds, workload: str) -> pa.Table:
    """Batsim's columns (`COLUMNS`) for the rows of `jobs` (jobs.parquet's `SOURCE` columns). Times
    are seconds on the trace clock; a time a job does not have (it never started, or did not
    finish) is -1, evalys' and Batsim's value for it."""
    n = jobs.num_rows
    col = {name: jobs.column(name) for name in jobs.column_names}
    started = pc.is_valid(col["start_time"])
    finished = pc.is_valid(col["end_time"])
    submit, start, end = col["submit_time"], col["start_time"], col["end_time"]
    execution = pc.subtract(end, start)
    turnaround = pc.subtract(end, submit)
    stretch = pc.divide(pc.cast(turnaround, pa.float64()), pc.cast(execution, pa.float64()))
    stretch = pc.if_else(pc.greater(execution, 0), stretch, None)
    state = pc.if_else(finished, FINISHED, pc.if_else(started, STOPPED, NEVER_RAN))
    metadata = pc.binary_join_element_wise(
        '{"vc":', _json_strings(col["vc"]),
        ',"queue":', pc.cast(col["queue"], pa.string()), ',"preemptions":', pc.cast(col["preemptions"], pa.string()),
        "}", "")
    return pa.table({
        "job_id": col["job_id"],
        "workload_name": pa.array([workload] * n, pa.string()),
        "profile": pa.array(["delay"] * n, pa.string()),
        "submission_time": submit,
        "requested_number_of_resources": col["gpu_num"],
        "requested_time": pc.fill_null(col["duration"], -1),
        "success": pc.cast(finished, pa.int8()),
        "final_state": state,
        "starting_time": pc.fill_null(start, -1),
        "execution_time": pc.fill_null(execution, -1),
        "finish_time": pc.fill_null(end, -1),
        "waiting_time": pc.fill_null(pc.subtract(start, submit), -1),
        "turnaround_time": pc.fill_null(turnaround, -1),
        "stretch": pc.fill_null(stretch, -1.0),
        "allocated_resources": allocated_resources(jobs, ids),
        "consumed_energy": pa.array(np.full(n, -1.0)),
        "metadata": metadata,
    })


def allocated_resources(jobs: pa.Table, ids: GpuIds) -> pa.Array:
    """Each job's GPU ids as an interval set ("8-15", "0-3 8-11"; empty: it never ran): `gpu_num`
    consecutive ids from the first GPU of its first node (its `first_gpu` there where the run
    records it), over the following nodes of its VC's range and, past the range's end, from the
    range's start (never more ids than the range has). A job whose first node was borrowed under
    quota=borrow starts in its lender's (`ran_on_vc`) own nodes, at the borrowed slot's place
    modulo their GPUs (which of the lender's nodes it was is not recorded), and goes on over the
    cluster's next GPUs."""
    n = jobs.num_rows
    codes, names = _codes(jobs.column("vc"))
    first = jobs.column("first_node").fill_null(-2).to_numpy().astype(np.int64)
    gpus = jobs.column("gpu_num").to_numpy().astype(np.int64)
    offset = (jobs.column("first_gpu").fill_null(0).to_numpy().astype(np.int64)
              if "first_gpu" in jobs.column_names else np.zeros(n, np.int64))
    begin = np.full(n, ids.pool, np.int64)
    end = ids.pool + gpus  # Lucid's profiling pool (first_node -1): one range the pool's jobs share
    start = begin.copy()
    for code, vc in enumerate(names):
        rows = (codes == code) & (first >= 0)
        if not rows.any():
            continue
        b, e, node_start, own_end, width = ids.vcs[simulated_vc(vc, ids.vcs)]
        k = first[rows]
        own = len(node_start)
        begin[rows], end[rows] = b, e
        start[rows] = np.where(k < own, node_start[np.minimum(k, own - 1)] if own else b, own_end + (k - own) * width)
    lent = _borrowed(jobs, ids.vcs) & (first >= 0)
    if lent.any():
        lender_codes, lenders = _codes(jobs.column("ran_on_vc").fill_null(""))
        for code, lender_code in set(zip(codes[lent].tolist(), lender_codes[lent].tolist())):
            own = len(ids.vcs[simulated_vc(names[code], ids.vcs)][2])
            # its first node is a held one
            rows = lent & (codes == code) & (lender_codes == lender_code) & (first >= own)
            b, _, _, own_end, width = ids.vcs[lenders[lender_code]]
            begin[rows], end[rows] = 0, ids.pool  # a job on several lenders' nodes goes on past this one's
            start[rows] = b + ((first[rows] - own) * width) % max(own_end - b, 1)
    start = np.minimum(start + offset, end - 1)
    size = np.minimum(gpus, end - begin)
    head = np.minimum(size, end - start)
    tail = size - head
    text = _interval(start, start + head - 1)
    text = pc.if_else(pa.array(tail > 0), pc.binary_join_element_wise(text, _interval(begin, begin + tail - 1), " "),
                      text)
    return pc.if_else(pa.array((first == -2) | (size <= 0)), "", text)


def _interval(lo: np.ndarray, hi: np.ndarray) -> pa.Array:
    """"lo-hi", or "lo" where they are equal."""
    lo_text, hi_text = pc.cast(pa.array(lo), pa.string()), pc.cast(pa.array(hi), pa.string())
    return pc.if_else(pa.array(lo == hi), lo_text, pc.binary_join_element_wise(lo_text, hi_text, "-"))


def _borrowed(jobs: pa.Table, layout) -> np.ndarray:
    """Per job, whether its latest run used nodes its VC held on loan under quota=borrow: its
    `ran_on_vc` names a VC of `layout` (trace_report.json's, or GpuIds.vcs) other than its own. All
    False for runs without loans, and under quota=global, where `ran_on_vc` names the VC whose pool
    of the one merged VC held its first node, which `first_node` already counts. A `ran_on_vc`
    naming no VC of the run is a ValueError."""
    if "ran_on_vc" not in jobs.column_names:
        return np.zeros(jobs.num_rows, bool)
    codes, names = _codes(jobs.column("vc"))
    ran_codes, ran_on = _codes(jobs.column("ran_on_vc").fill_null(""))
    pair = codes.astype(np.int64) * len(ran_on) + ran_codes
    borrowed = np.zeros(jobs.num_rows, bool)
    for key in np.unique(pair).tolist():
        vc, lender = names[key // len(ran_on)], ran_on[key % len(ran_on)]
        if vc not in layout or lender in ("", vc):  # (not in it: quota=global's merged VC ran the job)
            continue
        if lender not in layout:
            raise ValueError(f"jobs.parquet says a job of VC {vc!r} ran on VC {lender!r} (ran_on_vc), "
                             f"which trace_report.json's layout lacks")
        borrowed |= pair == key
    return borrowed


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """A string column (plain or dictionary-encoded, without nulls) as (each row's index into the
    names, the distinct names): rows are then told apart by integer, not string, comparisons."""
    text = pc.cast(column, pa.string())
    encoded = pc.dictionary_encode(text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text)
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()


def _json_strings(column) -> pa.Array:
    """Each value of a string column as a JSON string literal (encoded once per distinct value)."""
    encoded = pc.dictionary_encode(pa.chunked_array([pc.cast(column, pa.string())]).combine_chunks())
    return pa.array([json.dumps(v) for v in encoded.dictionary.to_pylist()], pa.string()).take(encoded.indices)


def simulated_vc(vc: str, layout) -> str:
    """The VC whose nodes `first_node` counts: the job's own, or under quota=global the one merged VC."""
    if vc in layout:
        return vc
    if len(layout) == 1:
        return next(iter(layout))
    raise UserError(f"jobs.parquet names VC {vc!r}, which trace_report.json's layout lacks (files of two runs?)")
