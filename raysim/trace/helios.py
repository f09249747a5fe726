"""SenseTime Helios traces (HeliosData): ``cluster_log.csv`` plus ``cluster_gpu_number.csv``.

``cluster_log.csv`` has one row per Slurm job (job_id, user, vc, gpu_num, cpu_num, node_num, state,
submit_time, start_time, end_time, duration, queue; Venus also has jobname), datetimes as
``YYYY-MM-DD HH:MM:SS`` and durations in seconds. Rules:

- CPU-only jobs (gpu_num 0, about half of Helios) are dropped before validation and counted, as are
  GPU jobs that never ran (duration 0, or no duration and no start_time: cancelled while queued).
  Everything else goes through :func:`raysim.trace.readers.validate_frame`.
- VC sizes: a ``vc_config.csv`` beside the trace (or trace.vc_config) wins. Otherwise they come from
  ``cluster_gpu_number.csv`` (a ``date`` column, one column of GPUs per VC, a ``total`` column) by
  `vc_size`: ``"mode"`` (default: the most common daily value, larger on ties), ``"last"`` (the last
  day's value) or ``"max"``, each over the days on which the VC has GPUs; nodes = GPUs / 8 rounded up.
  VCs that never have GPUs are left out (their jobs are reported as unknown VCs).
"""

from __future__ import annotations

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
from raysim.trace.mapping import Source, csv_row_checks, validate_mapped
from raysim.trace.readers import Bounds
from raysim.trace.schema import REQUIRED

GPU_NUMBER_FILE = "cluster_gpu_number.csv"
VC_SIZE_RULES = ("mode", "last", "max")
CPU_ONLY = "filtered: CPU-only job (gpu_num = 0)"  # the same reason validate_frame uses
NEVER_RAN = "filtered: never ran (duration 0 or no start_time)"


@dataclass(frozen=True)
class HeliosOptions:
    """The Helios reader's options (trace.reader_options)."""

    vc_size: str = setting("mode", "a VC's size from cluster_gpu_number.csv (no vc_config.csv): its most common "
                           "daily GPUs, the last day's or the most", choices=VC_SIZE_RULES)


def read_helios(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
                bounds: Bounds = Bounds(), vc_size: str) -> tuple[pa.Table, SkipReport]:
    """Read a Helios ``cluster_log.csv``; `vc_nodes` None derives the layout from
    ``cluster_gpu_number.csv`` beside it (rule `vc_size`), stored in the metadata as ``vc_nodes``."""
    name = str(path)
    if vc_nodes is None:
        vc_nodes = read_gpu_numbers(Path(path).parent / GPU_NUMBER_FILE, rule=vc_size,
                                    gpus_per_node=gpus_per_node)
    df, ragged = read_csv_text(path)
    source = Source(name)
    report, rows, checks = csv_row_checks(source, df, ragged, REQUIRED, f"the file has {list(df.columns)}")
    whole = checks.finish(report, on_error)
    gpu = pd.to_numeric(df["gpu_num"].str.strip(), errors="coerce").to_numpy()
    duration = pd.to_numeric(df["duration"].str.strip(), errors="coerce").to_numpy()
    cpu_only = whole & (gpu == 0)
    no_start = (df["start_time"].str.strip() == "").to_numpy() if "start_time" in df.columns else False
    never_ran = whole & ~cpu_only & ((duration == 0) | (np.isnan(duration) & no_start))
    if cpu_only.any():
        report.counts[CPU_ONLY] += int(cpu_only.sum())
    source.skip(report, NEVER_RAN, rows[never_ran], "duration", df["duration"].to_numpy()[never_ran])
    keep = whole & ~(cpu_only | never_ran)
    source.rows = rows[keep]
    table, report = validate_mapped(df[keep].reset_index(drop=True), source, report, vc_nodes=vc_nodes,
                                    gpus_per_node=gpus_per_node, on_error=on_error,
                                    state_filter=state_filter, origin=origin, cluster=cluster,
                                    bounds=bounds)
    return with_layout(table, vc_nodes), report


read_helios.Settings = HeliosOptions


def read_gpu_numbers(path, *, rule: str = "mode", gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, int]:
    """VC -> nodes from a Helios ``cluster_gpu_number.csv`` (see the module docstring for `rule`)."""
    if rule not in VC_SIZE_RULES:
        raise ValueError(f"vc_size must be one of {VC_SIZE_RULES}, not {rule!r}")
    path = Path(path)
    if not path.exists():
        raise TraceError(str(path), "VC sizes not found: put a vc_config.csv or the Helios "
                                    f"{GPU_NUMBER_FILE} beside the trace (or set trace.vc_config)")
    df, ragged = read_csv_text(path)
    if "date" not in df.columns:
        raise TraceError(str(path), f"missing column; the file has {list(df.columns)}", column="date")
    if pd.notna(ragged).any():
        row = int(np.flatnonzero(pd.notna(ragged))[0])
        raise TraceError(str(path), RAGGED, row=row + 1, value=ragged[row])
    dates = pd.to_datetime(df["date"].str.strip(), errors="coerce")
    if dates.isna().any():
        row = int(np.flatnonzero(dates.isna())[0])
        raise TraceError(str(path), "date is not a date", row=row + 1, column="date", value=df["date"][row])
    order = np.argsort(dates.to_numpy(), kind="stable")
    gpus = {}
    for col in (c for c in df.columns if c != "date" and c.strip().lower() != "total"):
        raw = df[col].str.strip()
        num = pd.to_numeric(raw, errors="coerce").to_numpy()
        bad = np.isnan(num) | (num < 0) | (num != np.round(num))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TraceError(str(path), "GPU count is not a non-negative integer", row=row + 1,
                             column=col, value=raw[row])
        used = num[order][num[order] > 0].astype(np.int64)
        if not len(used):
            continue
        if rule == "mode":
            values, counts = np.unique(used, return_counts=True)
            gpus[col.strip()] = int(values[counts == counts.max()].max())
        else:
            gpus[col.strip()] = int(used[-1] if rule == "last" else used.max())
    if not gpus:
        raise TraceError(str(path), "no VC with GPUs")
    return nodes_from_gpus(gpus, gpus_per_node)
