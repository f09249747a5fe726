"""Trace readers: CSV (Lucid's full log, Helios' cluster_log.csv) and Parquet in raysim's schema.

Both go through one validation: a bad row raises a TraceError naming file, row and column, or,
with ``on_error="skip"``, is dropped and counted in the SkipReport. Submit times may be datetimes
(converted to seconds since the trace origin) or integer seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.trace.errors import SkipReport, TraceError
from raysim.trace.schema import OPENB_COLUMNS, OPTIONAL, REQUIRED, conform, with_metadata

INT_COLUMNS = ("job_id", "gpu_num", "cpu_num", "duration")
#: Optional text columns: workload names, and the GPU type and constraint of heterogeneous traces.
TEXT_COLUMNS = ("model", "dataset", "job_type", "gpu_type", "gpu_constraint")
OPTIONAL_NUMERIC = ("batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem")
STRING_COLUMNS = ("vc", "user", "state")


def read_csv_trace(path: str | Path, **options) -> tuple[pa.Table, SkipReport]:
    """Read and validate a CSV trace (options: see `validate_frame`)."""
    name = str(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[])
    except FileNotFoundError:
        raise TraceError(name, "trace file not found") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TraceError(name, f"not a readable CSV file: {exc}") from None
    return validate_frame(df, name, **options)


def read_parquet_trace(path: str | Path, **options) -> tuple[pa.Table, SkipReport]:
    """Read and validate a Parquet trace in raysim's job schema (options: see `validate_frame`)."""
    import pyarrow.parquet as pq

    from raysim.trace.schema import metadata

    name = str(path)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TraceError(name, f"not a readable Parquet file: {exc}") from None
    if options.get("origin", "auto") == "auto":
        options["origin"] = metadata(table).get("origin", "0")
    df = table.to_pandas()
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object)
    return validate_frame(df, name, **options)


def _text(series: pd.Series) -> pd.Series:
    """Values as stripped strings (CSV input) or unchanged (typed Parquet input)."""
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        return series.astype(str).str.strip()
    return series


def validate_frame(df: pd.DataFrame, name: str, *, vc_nodes: dict[str, int],
                   gpus_per_node: int = DEFAULT_GPUS_PER_NODE, on_error: str = "raise", state_filter=None, origin: str = "auto",
                   cluster: str = "") -> tuple[pa.Table, SkipReport]:
    """Check every row of `df` and build the raysim job table (sorted by submit time, stable)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"trace.on_error must be 'raise' or 'skip', not {on_error!r}")
    for col in REQUIRED:
        if col not in df.columns:
            raise TraceError(name, f"missing column; the file has {list(df.columns)}", column=col)

    report = SkipReport(file=name)
    n = len(df)
    rows = np.arange(1, n + 1)
    bad = np.zeros(n, dtype=bool)
    problems: list[tuple[int, str, str, object]] = []  # (first bad row, reason, column, value)

    def flag(mask: np.ndarray, reason: str, column: str, values) -> None:
        mask = mask & ~bad
        if not mask.any():
            return
        idx = np.flatnonzero(mask)
        vals = np.asarray(values, dtype=object)[idx]
        problems.append((int(idx[0]), reason, column, vals[0]))
        report.add(reason, rows[idx], column, vals)
        bad[idx] = True

    parsed: dict[str, np.ndarray] = {}
    for col in INT_COLUMNS:
        raw = _text(df[col])
        num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        flag(np.isnan(num), "value is not a number", col, raw)
        flag(~np.isnan(num) & (num != np.round(num)), "value is not an integer", col, raw)
        parsed[col] = np.nan_to_num(num).astype(np.int64)
    for col in OPTIONAL_NUMERIC:
        if col in df.columns:
            raw = _text(df[col])
            num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
            flag(np.isnan(num) & (raw.astype(str) != "").to_numpy() & df[col].notna().to_numpy(),
                 "value is not a number", col, raw)
            parsed[col] = num

    submit, trace_origin = _parse_submit(_text(df["submit_time"]), origin, flag)
    duration, gpu = parsed["duration"], parsed["gpu_num"]
    flag(duration <= 0, "duration must be positive", "duration", df["duration"])
    flag(gpu < 0, "gpu_num must not be negative", "gpu_num", df["gpu_num"])
    flag(parsed["cpu_num"] < 0, "cpu_num must not be negative", "cpu_num", df["cpu_num"])
    vc = df["vc"].astype(str).str.strip().to_numpy(dtype=object)
    known = np.isin(vc, list(vc_nodes))
    flag(~known, f"unknown VC (not in the VC layout: {sorted(vc_nodes)})", "vc", vc)
    capacity = np.array([vc_nodes.get(v, 0) * gpus_per_node for v in vc], dtype=np.int64)
    flag(known & (gpu > capacity), "gpu_num larger than its VC can ever hold", "gpu_num", df["gpu_num"])
    dup = pd.Series(np.where(bad, -1, parsed["job_id"])).duplicated(keep="first").to_numpy() & ~bad
    flag(dup, "duplicate job_id", "job_id", df["job_id"])

    if problems and on_error == "raise":
        row, reason, column, value = min(problems, key=lambda p: p[0])
        hint = " (use trace.on_error=skip to drop such rows and count them)"
        raise TraceError(name, reason + hint, row=row + 1, column=column, value=value)

    keep = ~bad
    cpu_only = keep & (gpu == 0)
    if cpu_only.any():
        report.counts["filtered: CPU-only job (gpu_num = 0)"] += int(cpu_only.sum())
        keep &= ~cpu_only
    if state_filter:
        allowed = set(state_filter)
        other = keep & ~df["state"].isin(allowed).to_numpy()
        if other.any():
            report.counts[f"filtered: state not in {sorted(allowed)}"] += int(other.sum())
            keep &= ~other

    idx = np.flatnonzero(keep)
    order = idx[np.argsort(submit[idx], kind="stable")]
    cols = {
        "job_id": parsed["job_id"][order],
        "vc": vc[order],
        "user": df["user"].astype(str).to_numpy(dtype=object)[order],
        "gpu_num": gpu[order].astype(np.int32),
        "cpu_num": parsed["cpu_num"][order].astype(np.int32),
        "submit_time": submit[order],
        "duration": duration[order],
        "state": df["state"].astype(str).to_numpy(dtype=object)[order],
    }
    for col in TEXT_COLUMNS:  # from_pandas: NaN and None are null (pandas' where(..., None) gives NaN)
        if col in df.columns:
            cols[col] = pa.array(df[col].to_numpy(dtype=object)[order], from_pandas=True)
    for col in OPTIONAL_NUMERIC:
        if col in parsed:
            values = parsed[col][order]
            if pa.types.is_integer(OPTIONAL[col]):
                cols[col] = pa.array(values, mask=np.isnan(values)).cast(pa.int64()).cast(OPTIONAL[col])
            else:
                cols[col] = pa.array(values, mask=np.isnan(values))
    for col in OPENB_COLUMNS:  # carried unchecked, like the text columns
        if col in df.columns:
            cols[col] = pa.array(df[col].to_numpy(dtype=object)[order], from_pandas=True)
    table = pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v)) for k, v in cols.items()})
    table = conform(table)
    return with_metadata(table, cluster=cluster, origin=trace_origin, source=name), report


def _parse_submit(raw: pd.Series, origin: str, flag) -> tuple[np.ndarray, str]:
    """Integer seconds (origin "0") or datetimes (seconds since `origin`, auto = first day 00:00 UTC)."""
    as_int = pd.to_numeric(raw, errors="coerce")
    if as_int.notna().all():
        values = as_int.to_numpy(dtype=np.float64)
        flag(values != np.round(values), "submit_time is not whole seconds", "submit_time", raw)
        return values.astype(np.int64), "0" if origin == "auto" else str(origin)
    stamps = pd.to_datetime(raw, errors="coerce", format="ISO8601", utc=True)
    flag(stamps.isna().to_numpy(), "submit_time is not a datetime or integer seconds", "submit_time", raw)
    valid = stamps.dropna()
    if origin == "auto":
        base = valid.min().floor("D") if len(valid) else pd.Timestamp(0, tz="UTC")
    else:
        base = pd.Timestamp(origin)
        base = base.tz_localize("UTC") if base.tzinfo is None else base.tz_convert("UTC")
    seconds = ((stamps - base).dt.total_seconds()).to_numpy(dtype=np.float64)
    return np.nan_to_num(seconds).astype(np.int64), base.strftime("%Y-%m-%dT%H:%M:%S")
