"""The Arrow job schema every trace reader produces.

A trace is one Arrow table, one row per job, sorted by submit time (row order of the source is the
final tie-breaker), with metadata naming the cluster, the time origin and the source file.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

DICT_STR = pa.dictionary(pa.int32(), pa.string())

#: The largest time (s) or node number an input may hold (about 31,700 years in seconds: a time
#: still fits the engine's int64 clock at a million ticks per second).
LARGEST = 10**12

#: Columns every trace has, with their Arrow types.
REQUIRED = {
    "job_id": pa.int64(),
    "vc": DICT_STR,
    "user": DICT_STR,
    "gpu_num": pa.int32(),
    "cpu_num": pa.int32(),
    "submit_time": pa.int64(),  # seconds since the trace origin
    "duration": pa.int64(),  # seconds
    "state": DICT_STR,
}

#: Optional workload-profile columns (Lucid's full log). Missing ones are filled with nulls.
OPTIONAL = {
    "model": DICT_STR,
    "dataset": DICT_STR,
    "batchsize": pa.int32(),
    "amp": pa.int8(),
    "speed": pa.float64(),
    "gpu_util": pa.float64(),
    "gmem_util": pa.float64(),
    "gmem": pa.float64(),
}

#: Optional columns of traces from heterogeneous clusters (docs/heterogeneity.md), kept only when
#: the source has them.
GPU_TYPE_COLUMNS = {
    "job_type": DICT_STR,  # the workload, a key of the run's throughput table (e.g. resnet50-bs64)
    "gpu_type": DICT_STR,  # the GPU type `duration` was recorded on (null: the cluster's reference type)
    "gpu_constraint": DICT_STR,  # GPU types the job may use: one, or several joined by "|" (null: any)
}

#: Optional columns of the Alibaba GPU 2023 ("openb") pods (raysim/trace/alibaba2023_jobs.py): the
#: pod's own request and times that the job columns do not already hold, kept only when the source
#: has them. The VC engine does not read them.
#: Trace columns of what a job asks besides whole GPUs -> the job input columns that carry them
#: (raysim.sim.jobs.REQUEST_INPUTS; raysim.run.requests).
REQUEST_COLUMNS = {"gpu_milli": "gpu_milli", "cpu_milli": "cpu_milli", "memory_mib": "mem_mib"}

OPENB_COLUMNS = {
    "pod_name": pa.string(),
    "cpu_milli": pa.int64(),
    "memory_mib": pa.int64(),
    "gpu_milli": pa.int32(),  # thousandths of each GPU (< 1000: a share of one GPU)
    "qos": DICT_STR,
    "scheduled_time": pa.int64(),  # null for Pending pods
    "deletion_time": pa.int64(),
    "duration_source": DICT_STR,  # observed | cutoff | median (raysim.trace.alibaba2023.pod_durations)
}

#: Optional columns of elastic-job workloads (Sia's and Pollux's, raysim/trace/sia.py), kept only
#: when the source has them.
ELASTIC_COLUMNS = {
    "job_name": pa.string(),  # the job's name in the source workload (e.g. cifar10-0)
    "max_replicas": pa.int32(),  # the most GPUs an elastic job may use (null: no limit of its own)
}

#: Optional column of harvesting runs' task sets (raysim/harvest/inputs.py), kept when present.
HARVEST_COLUMNS = {
    "task": pa.string(),  # the task's name in its task set
}

#: Optional column of LLM-development traces (AcmeTrace, raysim/trace/acme.py), kept when present.
LLM_COLUMNS = {
    "workload_type": DICT_STR,  # the job's stage: Pretrain, SFT, Evaluation, Debug, MLLM, Other
}

#: Optional column of traces whose jobs ran several times (raysim/trace/attempts.py), kept when present.
ATTEMPT_COLUMNS = {
    "attempts_s": pa.string(),  # runs and gaps, seconds: "run gap run ... run"; null: the job ran once
}

#: Optional column of traces with priority classes (docs/spot.md), kept when present: `hp` (high
#: priority: may evict spot jobs) or `spot` (may be evicted), lowercase (the readers accept any case).
PRIORITY_COLUMNS = {
    "priority_class": DICT_STR,
}
#: Optional column of traces whose jobs are several equal workers (docs/spot.md), kept when present: a
#: job's `gpu_num` GPUs are `workers` workers of gpu_num / workers GPUs, each worker's on one node
#: (raysim.placement.workers); 1: a job of one piece, placed as any job is.
WORKER_COLUMNS = {
    "workers": pa.int32(),
}
#: The priority classes a trace may name, in the order jobs are ranked by (raysim.sim.spot.HP, SPOT).
PRIORITY_CLASSES = ("hp", "spot")

JOB_SCHEMA = pa.schema([pa.field(n, t) for n, t in {**REQUIRED, **OPTIONAL}.items()])

META_KEY = b"raysim"


def arrival_seconds(table: pa.Table) -> np.ndarray:
    """Arrival times in seconds: a trace's exact ones where it has them (``arrival_s``, Gavel's
    traces: submit_time holds whole seconds), else the submit times."""
    column = "arrival_s" if "arrival_s" in table.column_names else "submit_time"
    return table.column(column).to_numpy(zero_copy_only=False).astype(float)


def with_metadata(table: pa.Table, *, cluster: str, origin: str, source: str, **extra) -> pa.Table:
    """Attach raysim's trace metadata (cluster name, ISO time origin, source file)."""
    meta = {"cluster": cluster, "origin": origin, "source": source, **extra}
    return table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode()})


def metadata(table: pa.Table) -> dict:
    """Return the raysim metadata of a trace table ({} when absent)."""
    raw = (table.schema.metadata or {}).get(META_KEY)
    return json.loads(raw) if raw else {}


def conform(table: pa.Table) -> pa.Table:
    """Cast a table with the required columns to JOB_SCHEMA, adding absent optional columns as
    nulls; the GPU_TYPE_COLUMNS, OPENB_COLUMNS, ELASTIC_COLUMNS, HARVEST_COLUMNS, LLM_COLUMNS,
    ATTEMPT_COLUMNS, PRIORITY_COLUMNS and WORKER_COLUMNS the table has follow."""
    cols = []
    kept = {**GPU_TYPE_COLUMNS, **OPENB_COLUMNS, **ELASTIC_COLUMNS, **HARVEST_COLUMNS, **LLM_COLUMNS,
            **ATTEMPT_COLUMNS, **PRIORITY_COLUMNS, **WORKER_COLUMNS}
    fields = list(JOB_SCHEMA) + [pa.field(n, t) for n, t in kept.items() if n in table.column_names]
    for field in fields:
        if field.name in table.column_names:
            col = table.column(field.name)
            if col.type != field.type:
                col = col.cast(field.type)
        else:
            if field.name in REQUIRED:
                raise KeyError(field.name)
            col = pa.nulls(table.num_rows, field.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields).with_metadata(table.schema.metadata))
