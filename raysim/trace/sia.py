"""Sia's workloads (`trace.format=sia`): the job lists of Sia's simulator (SOSP'23, siasosp23/artifacts,
``sia-simulator/workloads/<trace>/workload-N.csv``; fetch them with ``raysim data fetch sia_workloads``).

A CSV with a header line and the columns ``name,time,application,num_replicas,batch_size`` (any
order; other columns, e.g. the ``category`` some of Sia's workloads have, are ignored): the job's
name, its submission in seconds from the start of the workload, its application (a folder of Sia's
profiles, e.g. cifar10), and the replicas (GPUs) and global batch size it asks for at submission.
Errors name the file, the row (``row N (line N+1)``) and the column. Rules:

- one raysim job per row; job_id is the 0-based row number (Sia names its jobs ``<app>-<row>``).
- gpu_num = num_replicas; cpu_num = 0; user ``sia``; state ``COMPLETED`` (the workloads record no
  outcome); vc = the cluster's one VC (with several, name it: ``trace.reader_options.vc``).
- submit_time = time in whole seconds; a fractional time is rounded up (a job submitted at t is first
  seen at the first round boundary >= t, and rounds start at whole seconds, so this keeps the round
  it joins) and counted in the report as converted.
- kept per job: ``job_name`` = name, ``model`` = application, ``batchsize`` = batch_size, and
  ``max_replicas`` where the optional column of that name gives one (the most GPUs the job may use).
- duration: elastic jobs have none (they end when their training progress, from the profiles, is
  done), but raysim's job schema requires a positive one. Every job gets a placeholder,
  :func:`placeholder_duration`: the longest duration the plausibility bounds accept
  (``trace.max_duration_s``, one year by default), with ``duration_source = placeholder``: a simulator
  of elastic jobs must not read ``duration``, and results of a duration-driven policy on these jobs
  mean nothing.
- bad rows (an error, or with ``trace.on_error=skip`` dropped and counted): a wrong number of values,
  an empty or repeated name, an empty application, a time that is not a finite non-negative number,
  num_replicas or batch_size not a positive integer.
- VC sizes: the cluster layout (``cluster=sia_default``) or a ``vc_config.csv`` beside the workload;
  without either, one VC ``cluster`` just big enough for the largest job (recorded in the metadata).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.csvfile import RAGGED, read_csv_text
from raysim.errors import SkipReport, TraceError
from raysim.settings import setting
from raysim.trace.layout import nodes_from_gpus, with_layout
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

#: The columns of a Sia workload, in the artifact's order.
COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
#: an optional column: the most GPUs the job may be given (elastic policies respect it)
MAX_REPLICAS = "max_replicas"
#: raysim column -> the Sia column it is read from (for error messages).
SOURCE_COLUMNS = {"job_name": "name", "submit_time": "time", "model": "application",
                  "gpu_num": "num_replicas", "batchsize": "batch_size", "job_id": "(row number)"}
#: The VC of the jobs when the layout is derived (no cluster layout, no vc_config.csv).
DEFAULT_VC = "cluster"
USER = "sia"
STATE = "COMPLETED"
#: Marks the placeholder duration (column duration_source).
PLACEHOLDER = "placeholder"
ROUNDED = "submit_time: fractional seconds rounded up to whole seconds"
INT32_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class SiaOptions:
    """The Sia reader's options (trace.reader_options)."""

    vc: str | None = setting(None, "the VC of every job (null: the cluster's only VC)")


def read_sia(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
             on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
             bounds: Bounds = Bounds(), vc: str | None) -> tuple[pa.Table, SkipReport]:
    """Read a Sia workload CSV; `vc_nodes` None derives a one-VC layout (see the module's rules).
    `vc`: the VC of every job (default: the layout's only VC)."""
    name = str(path)
    vc = _job_vc(name, vc_nodes, vc)
    df, ragged = read_csv_text(path)
    for column in COLUMNS:
        if column not in df.columns:
            raise TraceError(name, f"missing column; a Sia workload has {list(COLUMNS)}, the file has "
                                   f"{list(df.columns)}", column=column)
    text = {c: df[c].astype(str).str.strip() for c in COLUMNS}
    n = len(df)
    rows = np.arange(1, n + 1)
    source = Source(name, unit="row", columns=SOURCE_COLUMNS)
    report = SkipReport(file=name)
    checks = RowChecks(source, rows)

    checks.flag(pd.notna(ragged), RAGGED, None, ragged)
    job_name = text["name"]
    checks.flag((job_name == "").to_numpy(), "empty name", "name", job_name)
    checks.flag(job_name.duplicated().to_numpy() & (job_name != "").to_numpy(), "duplicate name", "name",
                job_name)
    time = pd.to_numeric(text["time"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    checks.flag(np.isnan(time), "time is not a number", "time", text["time"])
    checks.flag(~np.isfinite(time) & ~np.isnan(time), "time must be finite", "time", text["time"])
    checks.flag(time < 0, "time must not be negative", "time", text["time"])
    checks.flag(time > 2.0 ** 53, "time is too large (integer overflow)", "time", text["time"])
    checks.flag((text["application"] == "").to_numpy(), "empty application", "application", text["application"])
    replicas = _positive_integers(checks, text["num_replicas"], "num_replicas", "GPUs (replicas)")
    batch = _positive_integers(checks, text["batch_size"], "batch_size", "samples")
    limit = None
    if MAX_REPLICAS in df.columns:  # optional: the most GPUs the job may use (empty: no limit of its own)
        given = df[MAX_REPLICAS].astype(str).str.strip()
        limit = _positive_integers(checks, given.where(given != "", "1"), MAX_REPLICAS, "GPUs (replicas)")
        limit = np.where((given == "").to_numpy(), 0, limit)
        checks.flag((limit > 0) & (limit < replicas), "max_replicas is below num_replicas", MAX_REPLICAS, given)
    keep = checks.finish(report, on_error)

    idx = np.flatnonzero(keep)
    source.rows = rows[idx]
    seconds = np.ceil(np.where(keep, time, 0.0))
    rounded = int((keep & (seconds != np.where(keep, time, 0.0))).sum())
    if rounded:
        report.converted[ROUNDED] += rounded
    placeholder = placeholder_duration(bounds)
    frame = pd.DataFrame({
        "job_id": rows[idx] - 1, "vc": [vc] * len(idx), "user": [USER] * len(idx),
        "gpu_num": replicas[idx], "cpu_num": np.zeros(len(idx), dtype=np.int64),
        "state": [STATE] * len(idx), "submit_time": seconds[idx].astype(np.int64),
        "duration": np.full(len(idx), placeholder, dtype=np.int64),
        "model": text["application"].to_numpy(dtype=object)[idx],
        "batchsize": batch[idx], "job_name": job_name.to_numpy(dtype=object)[idx],
        "duration_source": [PLACEHOLDER] * len(idx),
    })
    if limit is not None:
        frame["max_replicas"] = [int(x) if x > 0 else None for x in limit[idx]]
    if vc_nodes is None:
        largest = int(frame["gpu_num"].max()) if len(frame) else 1
        vc_nodes = nodes_from_gpus({vc: largest}, gpus_per_node)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    return with_layout(table, vc_nodes), report


read_sia.Settings = SiaOptions


def _job_vc(name: str, vc_nodes: dict[str, int] | None, vc: str | None) -> str:
    """The VC every job of the workload goes to."""
    if vc is not None:
        if vc_nodes is not None and vc not in vc_nodes:
            raise TraceError(name, f"trace.reader_options.vc {vc!r} is not a VC of the cluster "
                                   f"({', '.join(vc_nodes)})")
        return vc
    if vc_nodes is None:
        return DEFAULT_VC
    if len(vc_nodes) != 1:
        raise TraceError(name, f"a Sia workload names no VC and the cluster has {len(vc_nodes)} "
                               f"({', '.join(vc_nodes)}): choose one with +trace.reader_options.vc=NAME")
    (only,) = vc_nodes
    return only


def _positive_integers(checks: RowChecks, raw: pd.Series, column: str, what: str) -> np.ndarray:
    """A column of positive integers that fit 32 bits (0 where bad, and flagged)."""
    numbers = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(numbers)
    checks.flag(~finite, f"{column} is not a number", column, raw)
    checks.flag(finite & (numbers != np.round(numbers)), f"{column} is not a whole number of {what}", column, raw)
    checks.flag(finite & (numbers < 1), f"{column} must be at least 1", column, raw)
    checks.flag(finite & (numbers > INT32_MAX), f"{column} is too large (integer overflow)", column, raw)
    ok = finite & (numbers >= 1) & (numbers <= INT32_MAX)
    return np.where(ok, numbers, 0).astype(np.int64)


def is_sia_workload(path: str | Path) -> bool:
    """Does the CSV file's header line name every column of a Sia workload (trace.format=auto)?"""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError):
        return False
    names = {cell.strip() for cell in header}
    return set(COLUMNS) <= names and "submit_time" not in names  # not a trace in raysim's own columns


def placeholder_duration(bounds: Bounds = Bounds()) -> int:
    """The duration every Sia job gets (see the module's rules): the bounds' maximum, in seconds."""
    return max(1, math.floor(bounds.max_duration_s))
