"""What round-based policies need beyond the kernel's jobs: each job's throughput on every GPU type,
its steps, priority weight and exact arrival time, and Gavel's traces as raysim traces.

A job's throughput on a type is the throughput table's entry for its (job type, scale factor) on
that type: the whole job's steps per second on ``scale_factor`` GPUs of the type; 0 means it cannot
run there. A table without entries for that scale factor on any type (e.g. a CSV table, one GPU
only) scales linearly: s GPUs run s times the one-GPU throughput. GPU-type names match the table's
case-insensitively (Gavel's table says ``v100``, raysim's layouts ``V100``).

Jobs of a raysim-schema trace name their type in a column (``policy.job_type_column``, or several
joined by "/", e.g. ``[model, batchsize]`` -> ``ResNet18/32``; mapped with ``policy.job_type_map``); their steps are their duration times their throughput on the GPU type the
duration was recorded on (``gpu_type``, else the reference type). Jobs of a Gavel trace carry their
steps; the raysim trace made of them (:func:`gavel_trace_table`) keeps them in ``total_steps`` and
their arrival times, to the microsecond, in ``arrival_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from raysim.cluster.throughput import ThroughputTable
from raysim.errors import TraceError
from raysim.trace.schema import DICT_STR, JOB_SCHEMA, arrival_seconds, with_metadata

#: Columns a Gavel trace adds to the raysim schema: its steps, priority weights and exact arrivals.
GAVEL_COLUMNS = {"job_type": DICT_STR, "total_steps": pa.float64(), "priority_weight": pa.float64(),
                 "arrival_s": pa.float64()}


#: Steps per second of every job without a throughput table: milliseconds of work, so that a
#: micro-task's steps split over its GPUs (Gavel fails one with fewer steps than GPUs).
UNIFORM_RATE = 1000.0


@dataclass(frozen=True)
class RoundInputs:
    """Per trace row (``seq``) and per GPU type of the run (``types``, sorted by name as the
    policies' matrices are): what the round mechanism reads about the jobs."""

    types: tuple[str, ...]
    rows: np.ndarray          # (R, types) whole-job throughput per distinct job type, scale factor and
                              # GPU-type constraint (0 on a type the job may not use)
    keys: tuple               # per row of `rows`: (job type, scale factor, GPU-type constraint or None)
    row_of: np.ndarray        # per trace row: its row in `rows`
    steps: np.ndarray         # per trace row: steps to run
    weight: np.ndarray        # per trace row: priority weight
    arrival: np.ndarray       # per trace row: arrival time (s), exact
    last_arrival: dict        # VC -> its jobs' last arrival (s)
    pairs: ThroughputTable | None = None  # packing policies: the table (its pair entries)

    def rates(self, seq: int) -> np.ndarray:
        return self.rows[self.row_of[seq]]

    def pair_rates(self, a: int, b: int) -> np.ndarray:
        """(types x 2) throughputs of jobs a and b packed on the same GPUs (0: not measured)."""
        (ja, scale, _), (jb, _, _) = self.keys[self.row_of[a]], self.keys[self.row_of[b]]
        names = {t.lower(): t for t in self.pairs.gpu_types()}
        out = np.zeros((len(self.types), 2))
        for k, gpu in enumerate(self.types):
            name = names.get(gpu.lower())
            both = None if name is None else self.pairs.pair(ja, jb, name, scale)
            if both is not None:
                out[k] = both
        return out


def run_types(layout: dict) -> tuple[str, ...]:
    """The GPU types of a layout (VC -> pools), sorted by name case-insensitively."""
    return tuple(sorted({p.gpu_type for pools in layout.values() for p in pools}, key=str.lower))


def index_of(types, names, key: str) -> list[int]:
    """Positions of GPU types `names` (case-insensitive) in `types`; a ValueError naming `key`."""
    lower = [t.lower() for t in types]
    out = []
    for name in names:
        if str(name).lower() not in lower:
            raise ValueError(f"{key}: GPU type {name!r} is not in the cluster (types: {', '.join(types)})")
        out.append(lower.index(str(name).lower()))
    return out


def whole_job_rate(table: ThroughputTable, job_type: str, gpu_type: str, scale: int) -> float | None:
    """Throughput of `job_type` on `scale` GPUs of `gpu_type` (name matched case-insensitively):
    the table's entry, or `scale` x the one-GPU entry when the table has no entry of that size for
    the job type on any GPU type; None when unknown."""
    names = {t.lower(): t for t in table.gpu_types()}
    name = names.get(gpu_type.lower())
    if name is None:
        return None
    rate = table.get(job_type, name, scale)
    if rate is None and scale > 1 and all(table.get(job_type, t, scale) is None for t in names.values()):
        single = table.get(job_type, name, 1)
        rate = None if single is None else single * scale
    return rate


def round_inputs(trace: pa.Table, layout: dict, table: ThroughputTable | None, *, reference: str, source: str,
                 job_type_column: str | list = "job_type", job_type_map: dict | None = None,
                 packing: bool = False) -> RoundInputs:
    """The round inputs of every job of `trace` on the cluster `layout`; a TraceError naming the
    row for a job type without throughput, or one that runs on no GPU type of the cluster. Without
    a `table` every job runs UNIFORM_RATE steps per second on every GPU type."""
    types = run_types(layout)
    names = trace.column_names
    if table is None and packing:
        raise TraceError(source, "packing policies need a throughput table with pair entries (cluster.throughput)")
    columns = [job_type_column] if isinstance(job_type_column, str) else list(job_type_column)
    missing = [c for c in columns if c not in names]
    if table is not None and missing:
        raise TraceError(source, "round-based policies need this column naming a job type of the throughput "
                         "table (or mapped to one with policy.job_type_map; another column: "
                         "policy.job_type_column)", column=missing[0])
    mapping = job_type_map or {}
    if table is None:
        values = ["any"] * trace.num_rows
    elif len(columns) == 1:
        values = trace.column(columns[0]).to_pylist()
    else:  # several columns: their values joined by "/" (e.g. model/batchsize -> "ResNet18/32")
        values = ["/".join(str(v) for v in row) for row in zip(*(trace.column(c).to_pylist() for c in columns))]
    job_type_column = columns[0]
    scale = trace.column("gpu_num").to_numpy(zero_copy_only=False).astype(np.int64)
    constraint = (trace.column("gpu_constraint").to_pylist() if "gpu_constraint" in names
                  else [None] * len(values))
    row_of = np.empty(len(values), dtype=np.int64)
    ids: dict[tuple, int] = {}
    rows: list[np.ndarray] = []
    for i, (value, s, allowed) in enumerate(zip(values, scale.tolist(), constraint)):
        key = (str(mapping.get(value, value)), int(s), allowed or None)
        if key not in ids:
            row = np.zeros(len(types))
            permitted = None if not allowed else {t.lower() for t in str(allowed).split("|")}
            for k, gpu in enumerate(types):
                if permitted is not None and gpu.lower() not in permitted:
                    continue  # the job may not use this type: throughput 0
                rate = UNIFORM_RATE if table is None else whole_job_rate(table, key[0], gpu, key[1])
                if rate is None:
                    raise TraceError(source, f"the throughput table has no entry for ({key[0]!r}, {key[1]} GPUs) on "
                                     f"{gpu} (map trace job types with policy.job_type_map)", row=i + 1,
                                     column=job_type_column, value=value)
                row[k] = rate
            if not row.any():
                raise TraceError(source, f"({key[0]!r}, {key[1]} GPUs) has throughput 0 on every GPU type of the "
                                 "cluster it may use", row=i + 1, column=job_type_column, value=value)
            ids[key] = len(rows)
            rows.append(row)
        row_of[i] = ids[key]
    matrix = np.array(rows).reshape(len(rows), len(types))
    if table is None:
        steps = np.maximum(trace.column("duration").to_numpy(zero_copy_only=False).astype(float), 1.0) * UNIFORM_RATE
        weight = np.ones(len(values))
    elif "total_steps" in names:
        steps = trace.column("total_steps").to_numpy(zero_copy_only=False).astype(float)
        weight = trace.column("priority_weight").to_numpy(zero_copy_only=False).astype(float)
    else:
        steps = _steps_from_durations(trace, matrix[row_of], types, reference, source)
        weight = np.ones(len(values))
    return RoundInputs(types, matrix, tuple(sorted(ids, key=ids.get)), row_of, steps, weight, arrival_seconds(trace),
                       _last_arrivals(trace), table if packing else None)


def _last_arrivals(trace: pa.Table) -> dict[str, float]:
    """VC -> the last arrival time of its jobs."""
    last: dict[str, float] = {}
    for v, a in zip(trace.column("vc").to_pylist(), arrival_seconds(trace).tolist()):
        last[v] = a if a > last.get(v, -math.inf) else last[v]
    return last


def _steps_from_durations(trace: pa.Table, rates: np.ndarray, types, reference: str, source: str) -> np.ndarray:
    """Steps = duration (at least 1 s) x the throughput on the GPU type it was recorded on."""
    duration = np.maximum(trace.column("duration").to_numpy(zero_copy_only=False).astype(float), 1.0)
    recorded = trace.column("gpu_type").to_pylist() if "gpu_type" in trace.column_names else [None] * len(duration)
    lower = {t.lower(): k for k, t in enumerate(types)}
    col = np.empty(len(duration), dtype=np.int64)
    for i, t in enumerate(recorded):
        k = lower.get(str(t or reference).lower())
        if k is None:
            raise TraceError(source, f"GPU type not in the cluster ({', '.join(types)})", row=i + 1,
                             column="gpu_type", value=t)
        col[i] = k
    rate = rates[np.arange(len(duration)), col]
    bad = np.flatnonzero(rate <= 0)
    if len(bad):
        raise TraceError(source, f"the job's type has throughput 0 on {types[col[bad[0]]]}, where its duration "
                         "was recorded", row=int(bad[0]) + 1, column="gpu_type")
    return duration * rate


def gavel_trace_table(jobs: pa.Table, table: ThroughputTable, *, reference: str, vc: str, source: str,
                      max_duration_s: float | None = None) -> pa.Table:
    """A Gavel job table (:data:`raysim.trace.gavel.SCHEMA`, arrival order) as a raysim trace on VC
    `vc`: submit time = the arrival rounded up to the second, duration = the steps' time on
    `reference` GPUs rounded up (what event-driven policies read), plus :data:`GAVEL_COLUMNS`. A job
    without throughput there, or whose steps take longer than `max_duration_s` there
    (trace.max_duration_s), is a TraceError naming its row (= its line: a Gavel trace has no header)."""
    n = jobs.num_rows
    job_type = jobs.column("job_type").to_pylist()
    scale = jobs.column("scale_factor").to_numpy().astype(np.int64)
    steps = jobs.column("total_steps").to_numpy().astype(float)
    arrival = jobs.column("arrival_time").to_numpy().astype(float)
    duration = np.empty(n, dtype=np.int64)
    rates: dict[tuple, float | None] = {}
    for i, (jt, s) in enumerate(zip(job_type, scale.tolist())):
        key = (jt, s)
        if key not in rates:
            rates[key] = whole_job_rate(table, jt, reference, s)
        rate = rates[key]
        if not rate:
            raise TraceError(source, f"no throughput for ({jt!r}, {s} GPUs) on the reference type {reference} "
                             "(cluster.reference_gpu_type)", row=i + 1, line=i + 1, column="job_type", value=jt)
        if max_duration_s is not None and steps[i] / rate > max_duration_s:
            raise TraceError(source, f"its steps take {steps[i] / rate:.4g} s on the reference type {reference}, "
                             f"longer than trace.max_duration_s ({max_duration_s:,.0f} s)", row=i + 1, line=i + 1,
                             column="total_steps", value=float(steps[i]))
        duration[i] = max(1, math.ceil(steps[i] / rate))
    dict_of = lambda values: pa.array(values, pa.string()).dictionary_encode()  # noqa: E731
    columns = {
        "job_id": pa.array(jobs.column("job_id").to_numpy().astype(np.int64)),
        "vc": dict_of([vc] * n), "user": dict_of(["gavel"] * n),
        "gpu_num": pa.array(scale.astype(np.int32)), "cpu_num": pa.array(np.zeros(n, np.int32)),
        "submit_time": pa.array(np.ceil(arrival).astype(np.int64)), "duration": pa.array(duration),
        "state": dict_of(["COMPLETED"] * n),
    }
    out = pa.table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in JOB_SCHEMA}, schema=JOB_SCHEMA)
    for name, kind in GAVEL_COLUMNS.items():
        values = {"job_type": job_type, "total_steps": steps, "arrival_s": arrival,
                  "priority_weight": jobs.column("priority_weight").to_numpy()}[name]
        out = out.append_column(pa.field(name, kind), pa.array(values, pa.string()).dictionary_encode()
                                if kind == DICT_STR else pa.array(values, kind))
    return with_metadata(out, cluster="gavel", origin="0", source=source)
