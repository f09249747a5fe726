"""Arrow batch codec: what travels between the coordinator, the profiler and the VC actors.

Jobs go out as Arrow tables (one row per job: the simulator's input columns plus `vc`); finished-job
records and time-series change rows come back as Arrow tables. Ray moves Arrow buffers without copies.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from raysim.sim.jobs import INPUT_COLUMNS, OPTIONAL_INPUTS, RESULT_COLUMNS, SPARSE_INPUTS
from raysim.sim.recorder import rows_to_columns

#: Schema metadata key of a samples table: the interval of the grid its change rows lie on.
SAMPLE_INTERVAL = b"raysim.sample_interval"
RESULT_SCHEMA = pa.schema([pa.field("seq", pa.int64())] + [pa.field(c, pa.int64()) for c in RESULT_COLUMNS])
#: Records of a run with quota=borrow or global: also the VC whose nodes the job ran on, and its reclaims.
LOAN_RESULT_SCHEMA = pa.schema(list(RESULT_SCHEMA) + [pa.field("ran_on_vc", pa.string()),
                                                       pa.field("reclaims", pa.int64())])


def jobs_batch(table: pa.Table, estimates: np.ndarray | None, extra: dict | None = None) -> pa.Table:
    """The trace as one job batch: simulator input columns (+ vc), `seq` = trace row index.

    `extra` may supply per-row columns of jobs.OPTIONAL_INPUTS (GPU-type constraint and speed-profile
    ids, workload ids, share scores, requests, checkpoint kinds); absent ones take their defaults,
    except requests and checkpoint kinds (jobs.SPARSE_INPUTS), which a batch carries only when `extra`
    has them."""
    n = table.num_rows
    extra = extra or {}
    est = np.full(n, np.nan) if estimates is None else np.asarray(estimates, dtype=np.float64)
    cols = {
        "vc": table.column("vc"),
        "job_id": table.column("job_id"),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "submit_time": table.column("submit_time"),
        "duration": table.column("duration"),
        "gpu_num": table.column("gpu_num").cast(pa.int64()),
        "gpu_util": table.column("gpu_util").cast(pa.float64()).fill_null(0.0),
        "gmem": table.column("gmem").cast(pa.float64()).fill_null(0.0),
        "estimate": pa.array(est),
    }
    for name, default in OPTIONAL_INPUTS.items():
        if name in extra or name not in SPARSE_INPUTS:
            cols[name] = pa.array(np.asarray(extra.get(name, np.full(n, default)), dtype=np.int64))
    return pa.table(cols)


def split_by_vc(batch: pa.Table) -> dict[str, dict[str, np.ndarray]]:
    """Per-VC numpy column dicts (row order kept) from a job batch."""
    if batch.num_rows == 0:
        return {}
    vc = batch.column("vc").combine_chunks()
    if pa.types.is_dictionary(vc.type):
        codes, names = vc.indices.to_numpy(zero_copy_only=False), vc.dictionary.to_pylist()
    else:
        names, codes = np.unique(np.asarray(vc.to_pylist(), dtype=object), return_inverse=True)
        names = list(names)
    cols = {k: batch.column(k).to_numpy() for k in INPUT_COLUMNS if k in batch.column_names}
    codes = np.asarray(codes, dtype=np.int64)
    order = np.argsort(codes, kind="stable")  # rows grouped by VC, each group in row order
    counts = np.bincount(codes, minlength=len(names))
    ends = np.cumsum(counts)
    out = {}
    for code in np.flatnonzero(counts):  # only the VCs present: a batch costs its rows, not the VC count
        idx = order[ends[code] - counts[code]:ends[code]]
        out[names[code]] = {k: np.ascontiguousarray(v[idx], dtype=INPUT_COLUMNS[k]) for k, v in cols.items()}
    return out


_NO_RESULTS = RESULT_SCHEMA.empty_table()


def results_table(parts: list[dict[str, np.ndarray]]) -> pa.Table:
    """Finished-job records (numpy column dicts, see VCSimulator.results) as one Arrow table; the
    columns beyond the base and loan schemas keep their numpy types: in runs with several GPU types
    `gpu_type` and `held_<k>` (JobTable.type_results), with capacity events `interruptions` and
    `intr_<k>` (JobTable.interruption_results), and the policy's own (Policy.result_columns)."""
    if not parts:
        return _NO_RESULTS
    schema = LOAN_RESULT_SCHEMA if "reclaims" in parts[0] else RESULT_SCHEMA
    extra = [name for name in parts[0] if name not in schema.names]
    if extra:
        schema = pa.schema(list(schema) + [pa.field(name, pa.from_numpy_dtype(np.asarray(parts[0][name]).dtype))
                                           for name in extra])
    return pa.table({f.name: np.concatenate([p[f.name] for p in parts]) for f in schema}, schema=schema)


def samples_table(per_vc: dict[str, tuple[list, list]], columns, interval: int) -> pa.Table:
    """Time-series change rows of several VCs (per VC: (times, rows) from Recorder.emit_rows, rows
    holding `columns`) as one Arrow table with a `vc` column; the schema metadata SAMPLE_INTERVAL
    gives their grid's interval (seconds)."""
    per_vc = {vc: tr for vc, tr in per_vc.items() if tr[0]}
    if not per_vc:
        return _no_samples(interval)
    names = list(per_vc)
    codes = np.repeat(np.arange(len(names), dtype=np.int32), [len(per_vc[v][0]) for v in names])
    merged = rows_to_columns([t for v in names for t in per_vc[v][0]], [r for v in names for r in per_vc[v][1]],
                             columns)
    return pa.table({"vc": pa.array(np.asarray(names, dtype=object)[codes], pa.string()), **merged},
                    metadata={SAMPLE_INTERVAL: str(interval)})


def _no_samples(interval: int) -> pa.Table:
    """An empty samples table (shared: most windows of most VCs change nothing)."""
    table = _NO_SAMPLES.get(interval)
    if table is None:
        table = _NO_SAMPLES[interval] = pa.table({"vc": pa.array([], pa.string())},
                                                 metadata={SAMPLE_INTERVAL: str(interval)})
    return table


_NO_SAMPLES: dict[int, pa.Table] = {}
