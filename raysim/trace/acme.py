"""Shanghai AI Lab's AcmeTrace (NSDI'24): ``trace_seren.csv`` and ``trace_kalos.csv``.

One row per job with columns job_id, user, node_num, gpu_num, cpu_num, type, state, submit_time,
start_time, end_time, duration, queue, gpu_time (Kalos adds mem_per_pod_GB, shared_mem_per_pod,
fail_time and stop_time); datetimes are ISO text with a UTC offset, durations and queues seconds.
Rules:

- The trace has no VCs: every job goes to one VC named after the file, without ``trace_`` and
  ``.csv`` (``seren``, ``kalos``).
- job_id is the row's number (Kalos' ids are strings); the source id is kept in ``job_name``.
- states are kept as written: COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL (the last two are
  rare; the trace's authors count them as failed). ``trace.state_filter`` selects among them.
- ``type`` (the job's stage in LLM development: Pretrain, SFT, Evaluation, Debug, MLLM, Other) is
  kept as ``workload_type``.
- Dropped and counted, not errors: CPU-only jobs (gpu_num 0, most of the rows), jobs that never ran
  (duration 0, or no duration and no start_time). A job's GPUs must split evenly over its
  ``node_num`` nodes (else the row is an error, or skipped with ``trace.on_error=skip``).
- VC size: a ``vc_config.csv`` beside the trace wins; else enough nodes for the trace's peak
  concurrent GPU use (from start_time and end_time) and for its largest job, recorded in the metadata.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.csvfile import read_csv_text
from raysim.errors import SkipReport
from raysim.settings import NoSettings
from raysim.trace.layout import trace_layout, with_layout
from raysim.trace.mapping import Source, csv_row_checks, validate_mapped
from raysim.trace.readers import Bounds

#: The columns both clusters' files have.
COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time", "start_time",
           "end_time", "duration")
#: Job states the trace uses.
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
CPU_ONLY = "filtered: CPU-only job (gpu_num = 0)"  # the same reason validate_frame uses
NEVER_RAN = "filtered: never ran (duration 0 or no start_time)"


def read_acme(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
              on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
              bounds: Bounds = Bounds()) -> tuple[pa.Table, SkipReport]:
    """Read an AcmeTrace job table (see the module docstring); `vc_nodes` None derives the layout
    from the trace."""
    name = str(path)
    vc = cluster_name(path)
    df, ragged = read_csv_text(path)
    source = Source(name, columns={"workload_type": "type", "job_name": "job_id"})
    report, rows, checks = csv_row_checks(source, df, ragged, COLUMNS,
                                          f"an AcmeTrace job table has {', '.join(COLUMNS)}")
    state = df["state"].str.strip()
    checks.flag(~state.isin(STATES).to_numpy(), f"unknown state (expected one of {', '.join(STATES)})", "state",
                df["state"])
    gpu = pd.to_numeric(df["gpu_num"].str.strip(), errors="coerce").to_numpy()
    nodes = pd.to_numeric(df["node_num"].str.strip(), errors="coerce").to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        uneven = (gpu > 0) & ~((nodes >= 1) & (np.fmod(gpu, nodes) == 0))
    checks.flag(uneven, "gpu_num does not split evenly over node_num nodes", "node_num", df["node_num"])
    whole = checks.finish(report, on_error)

    duration = pd.to_numeric(df["duration"].str.strip(), errors="coerce").to_numpy()
    cpu_only = whole & (gpu == 0)
    no_start = (df["start_time"].str.strip() == "").to_numpy()
    never_ran = whole & ~cpu_only & ((duration == 0) | (np.isnan(duration) & no_start))
    if cpu_only.any():
        report.counts[CPU_ONLY] += int(cpu_only.sum())
    source.skip(report, NEVER_RAN, rows[never_ran], "duration", df["duration"].to_numpy()[never_ran])
    keep = whole & ~(cpu_only | never_ran)
    kept = df[keep].reset_index(drop=True)
    source.rows = rows[keep]
    frame = pd.DataFrame({
        "job_id": source.rows, "vc": vc, "user": kept["user"], "gpu_num": kept["gpu_num"],
        "cpu_num": kept["cpu_num"], "submit_time": kept["submit_time"], "duration": kept["duration"],
        "state": state[keep].reset_index(drop=True), "workload_type": kept["type"].str.strip(),
        "job_name": kept["job_id"].str.strip(),
    })
    if vc_nodes is None:
        start = _seconds(kept["start_time"])
        end = _seconds(kept["end_time"])
        ran = ~np.isnan(start) & ~np.isnan(end) & (end >= start)
        job_gpus = pd.to_numeric(kept["gpu_num"].str.strip(), errors="coerce").fillna(0).to_numpy(np.int64)
        vc_nodes = trace_layout(np.full(ran.sum(), vc, dtype=object), start[ran], end[ran], job_gpus[ran],
                                np.full(len(kept), vc, dtype=object), job_gpus, gpus_per_node)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    return with_layout(table, vc_nodes), report


read_acme.Settings = NoSettings


def cluster_name(path) -> str:
    """The cluster a job table's file name says: ``trace_seren.csv`` -> ``seren``."""
    stem = Path(path).stem
    return stem[len("trace_"):] if stem.startswith("trace_") and len(stem) > len("trace_") else stem


def _seconds(text: pd.Series) -> np.ndarray:
    """ISO datetimes with a UTC offset as POSIX seconds (NaN where empty or not a datetime)."""
    stamps = pd.to_datetime(text.str.strip().replace("", None), errors="coerce", format="ISO8601", utc=True)
    out = np.full(len(text), np.nan)
    ok = stamps.notna().to_numpy()
    out[ok] = stamps[ok].astype("int64").to_numpy() / 1e9
    return out
