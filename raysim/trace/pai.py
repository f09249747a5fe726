"""Alibaba PAI GPU traces (clusterdata, cluster-trace-gpu-v2020): ``pai_job_table.csv`` and
``pai_task_table.csv`` beside it.

The public files are headerless (column names ship in separate ``.header`` files; a header line is
accepted too): jobs ``job_name,inst_id,user,status,start_time,end_time`` (start_time is the
submission), tasks ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,
plan_gpu,gpu_type`` (plan_gpu and plan_cpu in percent of one GPU / core). Times are integer seconds
offset by a constant; shifted to UTC+8 they keep the original time of day and weekday. Errors name
the file, the line of a headerless file (``row N (line N+1)`` with a header) and the column.
Rules:

- one raysim job per job-table row; job_id is that row's number.
- gpu_num = ceil(sum over the job's tasks of inst_num * plan_gpu / 100), cpu_num likewise from
  plan_cpu (empty plan_gpu / plan_cpu count as 0).
- submit_time = the job's start_time; duration = last end_time - first start_time over the job's GPU
  tasks (the time it held GPUs, without the queueing the job table's times include).
- times: shifted to UTC+8 and counted from midnight of the first submit day; the origin is that
  (fake) date. state: Terminated -> COMPLETED, Failed -> FAILED.
- VC: the gpu_type of the job's GPU tasks (the one with the most GPUs if they differ; empty ->
  "unspecified"), renamed through `vc_groups` ({gpu_type: VC}) to merge types.
- dropped and counted, not errors: jobs still Running or Waiting, without GPUs, without tasks,
  without a submit time, whose GPU tasks lack a start or end time, or with duration 0.
- VC sizes: a ``vc_config.csv`` beside the trace wins; else each VC gets enough nodes for its peak
  concurrent GPU demand (and its largest job), recorded in the metadata.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.csvfile import RAGGED, read_csv_text
from raysim.errors import SkipReport, TraceError
from raysim.settings import setting
from raysim.trace.layout import trace_layout, with_layout
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

TASK_FILE = "pai_task_table.csv"
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                "plan_mem", "plan_gpu", "gpu_type")
STATES = {"Terminated": "COMPLETED", "Failed": "FAILED"}
UNFINISHED = ("Running", "Waiting")
UTC8 = 8 * 3600
DAY = 86400
COLUMNS = {"job_id": "(row number)", "submit_time": "start_time", "state": "status",
           "gpu_num": f"plan_gpu ({TASK_FILE})", "cpu_num": f"plan_cpu ({TASK_FILE})",
           "duration": f"end_time - start_time ({TASK_FILE})", "vc": f"gpu_type ({TASK_FILE})"}


@dataclass(frozen=True)
class PaiOptions:
    """The PAI reader's options (trace.reader_options)."""

    vc_groups: dict[str, str] | None = setting(None, "VC of the jobs of a GPU type, {gpu_type: VC}, to merge types "
                                               "(a type not named is its own VC)")


def read_pai(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
             on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
             bounds: Bounds = Bounds(), vc_groups: dict[str, str] | None) -> tuple[pa.Table, SkipReport]:
    """Read ``pai_job_table.csv`` and the task table beside it; `vc_nodes` None derives the layout."""
    name = str(path)
    jobs, job_src, ragged = _read(path, JOB_COLUMNS)
    job_src.columns = COLUMNS
    report = SkipReport(file=name)
    tasks = _tasks(Path(path).parent / TASK_FILE, report, on_error)

    rows = np.arange(1, len(jobs) + 1)
    checks = RowChecks(job_src, rows)
    checks.flag(pd.notna(ragged), RAGGED, None, ragged)
    submit = _number(jobs["start_time"])
    checks.flag(np.isnan(submit) & (jobs["start_time"] != "").to_numpy(), "start_time is not a number",
                "start_time", jobs["start_time"])
    status = jobs["status"].to_numpy(dtype=object)
    known = np.isin(status, list(STATES) + list(UNFINISHED))
    checks.flag(~known, f"unknown status (expected one of {[*STATES, *UNFINISHED]})", "status", status)
    checks.flag(jobs["job_name"].duplicated().to_numpy(), "duplicate job_name", "job_name", jobs["job_name"])
    keep = checks.finish(report, on_error)

    per_job = tasks.reindex(jobs["job_name"])
    has_tasks = per_job["gpu"].notna().to_numpy()
    gpu = np.ceil(per_job["gpu"].fillna(0).to_numpy() / 100 - 1e-9).astype(np.int64)
    start, end = per_job["start"].to_numpy(), per_job["end"].to_numpy()
    duration = np.rint(end - start)
    report.drop(keep, (
        (np.isin(status, UNFINISHED), "filtered: unfinished (status Running or Waiting)"),
        (per_job["bad"].eq(True).to_numpy(), f"skipped: job has an invalid row in {TASK_FILE}"),
        (~has_tasks, f"filtered: no tasks in {TASK_FILE}"),
        (gpu == 0, "filtered: CPU-only job (gpu_num = 0)"),
        (np.isnan(submit), "filtered: no submit time (start_time empty)"),
        (np.isnan(duration), "filtered: never ran or unfinished (a GPU task has no start or end time)"),
        (duration == 0, "filtered: never ran (duration 0)"),
    ))

    idx = np.flatnonzero(keep)
    job_src.rows = rows[idx]
    local = submit[idx] + UTC8
    day0 = float(np.floor(local.min() / DAY) * DAY) if len(idx) else 0.0
    vc = per_job["gpu_type"].to_numpy(dtype=object)[idx]
    if vc_groups:
        vc = np.array([vc_groups.get(v, v) for v in vc], dtype=object)
    frame = pd.DataFrame({
        "job_id": rows[idx], "user": jobs["user"].to_numpy(dtype=object)[idx], "vc": vc,
        "gpu_num": gpu[idx], "cpu_num": np.ceil(per_job["cpu"].to_numpy()[idx] / 100 - 1e-9).astype(np.int64),
        "state": [STATES[s] for s in status[idx]],
        "submit_time": np.rint(local - day0).astype(np.int64), "duration": duration[idx].astype(np.int64),
    })
    if origin == "auto":
        origin = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=day0)).isoformat()
    if vc_nodes is None:
        vc_nodes = trace_layout(frame["vc"], start[idx], end[idx], frame["gpu_num"], frame["vc"],
                                frame["gpu_num"], gpus_per_node)
    table, report = validate_mapped(frame, job_src, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    return with_layout(table, vc_nodes), report


read_pai.Settings = PaiOptions


def _read(path, columns) -> tuple[pd.DataFrame, Source, np.ndarray]:
    """A PAI table as stripped strings, with or without a header line, the Source naming its rows,
    and the rows with the wrong number of values (see `read_csv_text`)."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline().strip().split(",")
    except FileNotFoundError:
        raise TraceError(str(path), "trace file not found") from None
    except UnicodeDecodeError as exc:
        raise TraceError(str(path), f"not a readable CSV file: {exc}") from None
    header = first[0] == columns[0]
    df, ragged = read_csv_text(path, names=None if header else columns)
    source = Source(str(path), unit="row" if header else "line")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise source.error(f"missing column; the file has {list(df.columns)}", column=missing[0])
    return df.apply(lambda c: c.str.strip()), source, ragged


def _number(raw: pd.Series) -> np.ndarray:
    return pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)


def _tasks(path: Path, report: SkipReport, on_error: str) -> pd.DataFrame:
    """Per job_name: gpu and cpu demand (percent), GPU-task run span (start, end; NaN if a GPU task
    lacks a time), dominant gpu_type, and `bad` (has an invalid task row, with on_error="skip")."""
    if not path.exists():
        raise TraceError(str(path), f"task table not found: PAI jobs get their GPUs from {TASK_FILE} "
                                    "beside pai_job_table.csv")
    tasks, source, ragged = _read(path, TASK_COLUMNS)
    checks = RowChecks(source, np.arange(1, len(tasks) + 1))
    checks.flag(pd.notna(ragged), RAGGED, None, ragged)
    num = {}
    for col, empty in (("inst_num", "error"), ("plan_gpu", 0.0), ("plan_cpu", 0.0),
                       ("start_time", np.nan), ("end_time", np.nan)):
        raw = tasks[col]
        value = _number(raw)
        blank = (raw == "").to_numpy()
        checks.flag(np.isnan(value) & (~blank | (empty == "error")), f"{TASK_FILE}: value is not a number",
                    col, raw)
        checks.flag(value < 0, f"{TASK_FILE}: value must not be negative", col, raw)
        num[col] = value if empty == "error" else np.where(blank, empty, value)
    good = checks.finish(report, on_error)

    gpu = num["inst_num"] * num["plan_gpu"]
    uses_gpu = good & (gpu > 0)
    frame = pd.DataFrame({
        "job": tasks["job_name"], "bad": ~good, "gpu": np.where(good, gpu, 0.0),
        "cpu": np.where(good, num["inst_num"] * num["plan_cpu"], 0.0),
        "start": np.where(uses_gpu, num["start_time"], np.nan),
        "end": np.where(uses_gpu, num["end_time"], np.nan),
        "timeless": uses_gpu & (np.isnan(num["start_time"]) | np.isnan(num["end_time"])),
        "gpu_type": tasks["gpu_type"].replace("", "unspecified"),
    })
    by_job = frame.groupby("job", sort=False)
    out = by_job.agg(gpu=("gpu", "sum"), cpu=("cpu", "sum"), start=("start", "min"), end=("end", "max"),
                     timeless=("timeless", "any"), bad=("bad", "any"))
    out.loc[out["timeless"], ["start", "end"]] = np.nan
    gpu_tasks = frame[uses_gpu]
    dominant = (gpu_tasks.groupby(["job", "gpu_type"], sort=False)["gpu"].sum().reset_index()
                .sort_values("gpu", ascending=False, kind="stable").drop_duplicates("job"))
    out["gpu_type"] = dominant.set_index("job")["gpu_type"].reindex(out.index).fillna("unspecified")
    return out
