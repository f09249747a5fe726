"""The one result schema of jobs.parquet (docs/results.md), and its reader.

Every run that replays jobs in time writes jobs.parquet with the COMMON columns, one row per job in
trace order, plus the optional GROUPS its run has: several GPU types, requests beyond whole GPUs,
quotas between VCs, round-based policies on Gavel's traces, harvesting. Times are seconds on the
trace clock: integers, or floats where the simulator's clock is finer (round-based policies).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from raysim.errors import TraceError

#: Columns every jobs.parquet has: name -> what it holds.
COMMON = {
    "job_id": "the trace's job id",
    "vc": "the VC the job was submitted to",
    "user": "the submitting user (null where the trace has none)",
    "gpu_num": "GPUs the job asks for",
    "submit_time": "when it was submitted (s)",
    "duration": "its duration in the trace (s; its work on the reference GPU type)",
    "start_time": "when it first started (s; null: never)",
    "end_time": "when it ended (s; null: did not finish)",
    "queue": "time it spent waiting, before its first start and between runs (s)",
    "jct": "end_time - submit_time (s; null: did not finish)",
    "preemptions": "times a policy stopped it to run others",
    "first_node": "the first node of its latest placement (null: never ran)",
    "num_nodes": "nodes its latest placement spans",
    "shared": "whether it ever shared GPUs with another job",
    "profiled": "whether it went through Lucid's profiling stage",
    "finished": "whether it finished",
}

#: Optional groups: name -> (when a run has it, its columns -> what they hold). A name ending in
#: "_<type>" stands for one column per GPU type of the run, "_<cause>" for one per interruption cause.
GROUPS = {
    "gpu_types": ("the cluster has several GPU types", {
        "gpu_type": "the GPU type of its latest placement (null: never ran)",
        "run_s_<type>": "seconds it ran on GPUs of that type",
    }),
    "requests": ("jobs ask for GPU shares, CPU or memory (the Alibaba 2023 pods)", {
        "gpu_milli": "milli of each GPU it asks (1000: whole GPUs)",
        "cpu_milli": "CPU it asks (milli-cores)",
        "memory_mib": "memory it asks (MiB)",
        "first_gpu": "the lowest GPU id of its latest placement on its first node",
    }),
    "quota": ("quota=borrow or quota=global", {
        "home_vc": "its own VC",
        "ran_on_vc": "whose nodes its latest run used",
        "reclaims": "times a lender's reclaim stopped it",
    }),
    "rounds": ("Gavel's traces (trace.format=gavel or rounds.generate)", {
        "job_type": "its job type (a key of the throughput table)",
        "total_steps": "steps it must run",
        "priority_weight": "its priority weight",
    }),
    "elastic": ("elastic policies (policy=sia, pollux, gavel_elastic)", {
        "restarts": "times its allocation changed kind or shape after its first start (each costs a checkpoint-restore)",
        "gpu_seconds": "GPU-seconds it held (restores included)",
    }),
    "capacity": ("nodes go down, come back, join or leave (cluster.capacity), or fail (failures)", {
        "interruptions": "times a node going down, or a failure, stopped it",
        "interruptions_<cause>": "those for that cause (one column per cause of the run)",
    }),
    "checkpoint": ("checkpoint-restart (checkpoint.interval_s)", {
        "lost_gpu_s": "work lost to stops since the last completed checkpoint x its GPUs (GPU x job seconds)",
        "overhead_gpu_s": "restores after stops and checkpoint writes x its GPUs (GPU x job seconds)",
        "lost_gpu_s_<cause>": "the work lost to stops for that capacity cause (with capacity events), or to "
                              "evictions (lost_gpu_s_evictions, with priority classes); the rest of lost_gpu_s was "
                              "lost to preemptions and quota reclaims",
    }),
    "spot": ("priority classes (a trace's priority_class column, docs/spot.md)", {
        "priority_class": "its class: hp (high priority) or spot",
        "evictions": "times a high-priority job evicted it (each broke one guarantee hour)",
        "hours_kept": "guarantee hours it kept, as GFS counts them: one per full hour of each run, one for "
                      "finishing (spot jobs; 0 for high-priority ones)",
    }),
    "failures": ("failed runs replayed from the trace (trace.failed=replay)", {
        "retries": "its runs that failed and were retried, as its trace shows (Philly's attempts)",
        "failed": "it finished and its trace says its last run failed too (state FAILED, NODE_FAIL or TIMEOUT)",
        "failed_gpu_s": "work of its runs that failed x its GPUs (GPU x job seconds)",
    }),
    "harvest": ("idle-node harvesting (policy=bftrainer, +experiment=harvest_summit): tasks are elastic", {
        "task": "the task's name",
        "samples": "samples it processed",
        "max_nodes": "the most nodes it may use (Jmax)",
        "precost": "samples lost to preemptions (nodes going busy under it)",
        "rescost": "samples lost to rescaling",
        "overshoot": "progress past its samples (Pmax) before its completion was noticed",
        "rescales": "times its node count changed",
    }),
}


#: Columns of a group that only a run with another group has: `lost_gpu_s_<cause>` (per capacity cause)
#: exists where checkpoint-restart meets capacity events, not in a run with checkpoints alone.
ONLY_WITH = {"lost_gpu_s_<cause>": "capacity"}


def groups_of(names) -> list[str]:
    """The optional groups a jobs table with columns `names` has (any of their columns present)."""
    names = set(names)
    out = []
    for group, (_, columns) in GROUPS.items():
        if any(_matches(c, names) for c in columns):
            out.append(group)
    return out


#: The type of each COMMON column (docs/results.md): integer, number (integer or float), text or boolean.
KINDS = {"job_id": "integer", "vc": "text", "user": "text", "gpu_num": "integer", "submit_time": "number",
         "duration": "number", "start_time": "number", "end_time": "number", "queue": "number", "jct": "number",
         "preemptions": "integer", "first_node": "integer", "num_nodes": "integer", "shared": "boolean",
         "profiled": "boolean", "finished": "boolean"}


#: COMMON columns every job has a value in (the others are null where docs/results.md says so).
NOT_NULL = ("job_id", "vc", "gpu_num", "submit_time", "preemptions", "num_nodes", "shared", "profiled", "finished")


def check_jobs(table: pa.Table | pa.Schema) -> list[str]:
    """Problems of a jobs table (or its schema) against the schema: missing common columns, a common
    column of another type (KINDS; a column of nulls only is any type), a group present in part (but
    for ONLY_WITH), columns the schema does not know. Empty when it conforms."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    names = list(schema.names)
    problems = [f"missing column {c!r}" for c in COMMON if c not in names]
    problems += [f"column {c!r} holds {schema.field(c).type}, not {KINDS[c]} values" for c in COMMON
                 if c in names and not _of_kind(schema.field(c).type, KINDS[c])]
    known = set(COMMON)
    present = groups_of(names)
    for group in present:
        for column in GROUPS[group][1]:
            if not _matches(column, set(names)) and ONLY_WITH.get(column, group) in present:
                problems.append(f"group {group!r} lacks {column!r}")
            known |= {n for n in names if _is(column, n)}
    problems += [f"column {n!r} is not in the result schema (docs/results.md)" for n in names if n not in known]
    return problems


def read_jobs(path, columns: list[str] | None = None) -> pa.Table:
    """A run's jobs.parquet (a file or its run folder), all its columns or `columns`, checked against
    the schema: a TraceError naming the file and its first problem when it is missing, not readable
    Parquet (truncated, damaged) or does not conform (`check_jobs`)."""
    path = Path(path)
    if path.is_dir():
        path = path / "jobs.parquet"
    check_jobs_file(path)
    with reading(path):
        return pq.read_table(path, columns=columns)


def check_jobs_file(path) -> pa.Schema:
    """The schema of a jobs.parquet, checked as `read_jobs` checks it, and its NOT_NULL columns
    without a null where the file's statistics count them (without reading its rows)."""
    with reading(path, "the run's jobs"):
        schema = pq.read_schema(path)
        meta = pq.read_metadata(path)
    problems = check_jobs(schema)
    if problems:
        raise TraceError(str(path), problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    for group in range(meta.num_row_groups):
        chunks = meta.row_group(group)
        for j in range(chunks.num_columns):
            stats, name = chunks.column(j).statistics, chunks.column(j).path_in_schema
            if name in NOT_NULL and stats is not None and stats.has_null_count and stats.null_count:
                raise TraceError(str(path), f"{stats.null_count:,} null value(s) in row group {group}; every job "
                                            "has one", column=name)
    return schema


def _of_kind(kind: pa.DataType, expected: str) -> bool:
    if pa.types.is_null(kind):
        return True
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return {"integer": pa.types.is_integer(kind),
            "number": pa.types.is_integer(kind) or pa.types.is_floating(kind),
            "text": pa.types.is_string(kind) or pa.types.is_large_string(kind),
            "boolean": pa.types.is_boolean(kind)}[expected]


@contextmanager
def reading(path, what: str = "", kind: str = "Parquet"):
    """Reading the result file `path` (a `kind` file; `what`: what it holds): a file that is missing,
    or that Arrow cannot read (truncated, damaged, not of its kind) is a TraceError naming it. An
    OSError with an errno (a full disk, a file not allowed) stays itself: it names its own file."""
    try:
        yield
    except FileNotFoundError:
        raise TraceError(str(path), f"missing ({what})" if what else "missing") from None
    except (OSError, pa.ArrowException) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise
        raise TraceError(str(path), f"not a readable {kind} file ({first_line(exc)}): truncated or damaged") from None


def reads(function):
    """`function(path, ...)`, a reader of a result file, with `reading(path)`'s errors."""
    @functools.wraps(function)
    def read(path, *args, **kwargs):
        with reading(path):
            return function(path, *args, **kwargs)
    return read


def first_line(exc: BaseException) -> str:
    """An exception's message, its first line (or its type's name where it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is(column: str, name: str) -> bool:
    for each in ("<type>", "<cause>"):
        if column.endswith("_" + each):
            return name.startswith(column[: -len(each)])
    return name == column


def _matches(column: str, names: set) -> bool:
    return any(_is(column, n) for n in names)
