"""Trace readers: CSV (Lucid's full log, Helios' cluster_log.csv) and Parquet in raysim's schema.

Both go through one validation: a bad row raises a TraceError naming file, row and column, or,
with ``on_error="skip"``, is dropped and counted in the SkipReport (by reason, and by reason and
column). Submit times may be datetimes (converted to seconds since the trace origin) or integer
seconds, not both in one column. Before a trace reaches the simulator every value is checked to be
plausible (:class:`Bounds`): integers that fit their column, durations up to a maximum, submit
times within a span of years around the trace's median.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from numbers import Real
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.csvfile import RAGGED, read_csv_text
from raysim.errors import SkipReport, TraceError
from raysim.settings import NoSettings
from raysim.trace.attempts import COLUMN as ATTEMPTS, check_attempts
from raysim.trace.schema import (GPU_TYPE_COLUMNS, OPENB_COLUMNS, OPTIONAL, PRIORITY_CLASSES, REQUIRED,
                                 WORKER_COLUMNS, conform, metadata, with_metadata)

INT_COLUMNS = ("job_id", "gpu_num", "cpu_num", "duration")
#: Optional text columns: workload names, the GPU type and constraint of heterogeneous traces, the
#: job names of elastic workloads (Sia's), LLM traces' stages, and the runs of retried jobs.
TEXT_COLUMNS = ("model", "dataset", "job_type", "gpu_type", "gpu_constraint", "job_name", "workload_type", ATTEMPTS)
OPTIONAL_NUMERIC = ("batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem")
YEAR_S = 365.25 * 86400
EPOCH = pd.Timestamp(0, tz="UTC").as_unit("s")  # seconds: datetimes of any year subtract it


@dataclass(frozen=True)
class Bounds:
    """What a plausible trace holds (conf/config.yaml: trace.max_duration_s and
    trace.max_submit_span_years): durations of at most `max_duration_s` seconds (default one year)
    and submit times at most `max_submit_span_years` years from the trace's median submit time."""

    max_duration_s: float = 365 * 86400
    max_submit_span_years: float = 10

    def __post_init__(self):
        for key in ("max_duration_s", "max_submit_span_years"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
                raise ValueError(f"trace.{key} must be a positive number, not {value!r}")


def read_csv_trace(path: str | Path, **options) -> tuple[pa.Table, SkipReport]:
    """Read and validate a CSV trace (options: see `validate_frame`)."""
    df, ragged = read_csv_text(path)
    return validate_frame(df, str(path), ragged=ragged, **options)


def read_parquet_trace(path: str | Path, **options) -> tuple[pa.Table, SkipReport]:
    """Read and validate a Parquet trace in raysim's job schema (options: see `validate_frame`).

    Columns may hold text as in a CSV trace; submit_time may also be an Arrow timestamp (any unit;
    without a time zone it is UTC). A column of another type (booleans, lists, ...) is an error."""
    import pyarrow.parquet as pq

    name = str(path)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TraceError(name, f"not a readable Parquet file: {exc}") from None
    for column in table.column_names:
        _check_type(name, column, table.schema.field(column).type)
    if options.get("origin", "auto") == "auto":
        options["origin"] = metadata(table).get("origin", "auto")
    df = table.to_pandas()
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object)
    return validate_frame(df, name, **options)


read_csv_trace.Settings = read_parquet_trace.Settings = NoSettings


def _check_type(name: str, column: str, actual: pa.DataType) -> None:
    """Raise a TraceError unless a Parquet column `column` of Arrow type `actual` can be read:
    checked columns take numbers or text (submit_time also timestamps; vc, user and state also
    integers), columns carried as they are (GPU type and openb columns) their own kind; all nulls
    pass (the rows then say what is missing). Columns raysim does not know are ignored."""
    target = {**REQUIRED, **OPTIONAL, **GPU_TYPE_COLUMNS, **OPENB_COLUMNS, **WORKER_COLUMNS}.get(column)
    kind = actual.value_type if pa.types.is_dictionary(actual) else actual
    if target is None or pa.types.is_null(kind):
        return
    target = target.value_type if pa.types.is_dictionary(target) else target
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    whole = pa.types.is_integer(kind)
    number = whole or pa.types.is_floating(kind)
    if pa.types.is_string(target):
        ok, expected = text or (whole and column in REQUIRED), "text"
    elif column == "submit_time":
        ok, expected = number or text or pa.types.is_timestamp(kind), "integer seconds, datetime text or timestamps"
    elif column in REQUIRED or column in OPTIONAL:
        ok, expected = number or text, "numbers"
    else:
        ok, expected = (whole, "integers") if pa.types.is_integer(target) else (number, "numbers")
    if not ok:
        raise TraceError(name, f"wrong type {actual} (expected {expected})", column=column)


def _text(series: pd.Series) -> pd.Series:
    """Values as stripped strings (CSV input) or unchanged (typed Parquet input)."""
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        return series.astype(str).str.strip()
    return series


def validate_frame(df: pd.DataFrame, name: str, *, vc_nodes: dict[str, int],
                   gpus_per_node: int = DEFAULT_GPUS_PER_NODE, on_error: str = "raise", state_filter=None,
                   origin: str = "auto", cluster: str = "", bounds: Bounds = Bounds(), ragged=None,
                   ) -> tuple[pa.Table, SkipReport]:
    """Check every row of `df` and build the raysim job table (sorted by submit time, stable).
    Jobs without GPUs are filtered and counted, unless the table says what else jobs ask for (a
    `cpu_milli` or `memory_mib` column): then they are kept, to hold CPU and memory.

    `ragged` (CSV input, from `read_csv_text`) describes the rows that had the wrong number of
    values; `bounds` says which values are plausible. Each bad row is flagged for its first
    problem, with the reason and the column."""
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

    def flag(mask: np.ndarray, reason: str, column: str | None, values) -> None:
        mask = mask & ~bad
        if not mask.any():
            return
        idx = np.flatnonzero(mask)
        vals = np.asarray(values, dtype=object)[idx]
        problems.append((int(idx[0]), reason, column, vals[0]))
        report.add(reason, rows[idx], column, vals)
        bad[idx] = True

    if ragged is not None:
        flag(pd.notna(ragged), RAGGED, None, ragged)
    for col in REQUIRED:
        flag(df[col].isna().to_numpy(), "missing value", col, df[col])
    parsed: dict[str, np.ndarray] = {}
    for col in INT_COLUMNS:
        parsed[col], _ = _integers(_text(df[col]), col, flag, bits=REQUIRED[col].bit_width)
    for col in OPTIONAL_NUMERIC:
        if col in df.columns:
            parsed[col] = _optional_number(_text(df[col]), col, flag)

    submit, trace_origin = _parse_submit(_text(df["submit_time"]), origin, flag, bounds)
    duration, gpu = parsed["duration"], parsed["gpu_num"]
    flag(duration <= 0, "duration must be positive", "duration", df["duration"])
    flag(duration > bounds.max_duration_s, f"duration longer than trace.max_duration_s "
         f"({bounds.max_duration_s:,.0f} s)", "duration", df["duration"])
    flag(gpu < 0, "gpu_num must not be negative", "gpu_num", df["gpu_num"])
    flag(parsed["cpu_num"] < 0, "cpu_num must not be negative", "cpu_num", df["cpu_num"])
    vc = df["vc"].astype(str).str.strip().to_numpy(dtype=object)
    known = np.isin(vc, list(vc_nodes))
    flag(~known, f"unknown VC (not in the VC layout: {sorted(vc_nodes)})", "vc", vc)
    capacity = np.array([vc_nodes.get(v, 0) * gpus_per_node for v in vc], dtype=np.int64)
    flag(known & (gpu > capacity), "gpu_num larger than its VC can ever hold", "gpu_num", df["gpu_num"])
    dup = pd.Series(np.where(bad, -1, parsed["job_id"])).duplicated(keep="first").to_numpy() & ~bad
    flag(dup, "duplicate job_id", "job_id", df["job_id"])
    if ATTEMPTS in df.columns:  # a job's runs (raysim.trace.attempts): well formed, adding up to its duration
        wrong, reasons = check_attempts(df[ATTEMPTS].to_numpy(dtype=object), duration, bounds.max_duration_s)
        for reason in dict.fromkeys(reasons):
            mask = np.zeros(n, dtype=bool)
            mask[[i for i, r in zip(wrong, reasons) if r == reason]] = True
            flag(mask, reason, ATTEMPTS, df[ATTEMPTS])
    if "priority_class" in df.columns:  # hp or spot, any case (docs/spot.md)
        priority = df["priority_class"].astype(str).str.strip().str.lower().to_numpy(dtype=object)
        flag(~np.isin(priority, PRIORITY_CLASSES), f"unknown priority class (one of {', '.join(PRIORITY_CLASSES)}, "
             "any case)", "priority_class", df["priority_class"])
    if "workers" in df.columns:  # equal workers, each on one node (docs/spot.md)
        workers, _ = _integers(_text(df["workers"]), "workers", flag, bits=32)
        flag(workers < 1, "workers must be a positive integer", "workers", df["workers"])
        flag(gpu % np.maximum(workers, 1) != 0, "gpu_num must divide by workers (equal workers)", "workers",
             df["workers"])

    if problems and on_error == "raise":
        row, reason, column, value = min(problems, key=lambda p: p[0])
        hint = " (use trace.on_error=skip to drop such rows and count them)"
        raise TraceError(name, reason + hint, row=row + 1, column=column, value=value)

    keep = ~bad
    cpu_only = keep & (gpu == 0)
    if cpu_only.any() and not {"cpu_milli", "memory_mib"} & set(df.columns):
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
    if "priority_class" in df.columns:
        cols["priority_class"] = pa.array(priority[order], pa.string())
    if "workers" in df.columns:
        cols["workers"] = pa.array(workers[order], pa.int32())
    if "max_replicas" in df.columns:  # elastic jobs' own limit, checked by their reader (raysim.trace.sia)
        cols["max_replicas"] = pa.array(df["max_replicas"].to_numpy(dtype=object)[order], pa.int32(), from_pandas=True)
    table = pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v)) for k, v in cols.items()})
    table = conform(table)
    return with_metadata(table, cluster=cluster, origin=trace_origin, source=name), report


def _integers(raw: pd.Series, column: str, flag, *, bits: int = 64,
              fraction: str = "value is not an integer") -> tuple[np.ndarray, np.ndarray]:
    """The exact integers of `raw` (0 where bad) and the mask of good ones. Flagged: what is not a
    number, not whole (reason `fraction`), or outside a signed `bits`-bit integer (overflow)."""
    numbers = pd.to_numeric(raw, errors="coerce")
    real = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    flag(~np.isfinite(real), "value is not a number", column, raw)
    whole = np.isfinite(real) & (real == np.round(real))
    flag(np.isfinite(real) & ~whole, fraction, column, raw)
    values = np.zeros(len(real), dtype=np.int64)
    small = whole & (np.abs(real) < 2.0 ** 53)  # exact in float64
    values[small] = real[small].astype(np.int64)
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    fits = small & (real >= low) & (real <= high)
    for i in np.flatnonzero(whole & ~small):  # parsed exactly, one by one: rare
        exact = _exact_integer(raw.iloc[i])
        if exact is not None and low <= exact <= high:
            values[i], fits[i] = exact, True
    flag(whole & ~fits, f"integer overflow: the value does not fit a {bits}-bit integer", column, raw)
    values[~fits] = 0
    return values, fits


def _exact_integer(value) -> int | None:
    """`value` (an integer, or the text of one) as a Python int, None when it is not one."""
    try:
        return int(Decimal(str(value)))
    except (InvalidOperation, ValueError, OverflowError):
        return None


def _optional_number(raw: pd.Series, column: str, flag) -> np.ndarray:
    """An optional numeric column as float64, NaN where empty; values of integer columns must be
    whole and fit the column's type."""
    numbers = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    given = raw.notna().to_numpy() & (raw.astype(str) != "").to_numpy()
    flag(np.isnan(numbers) & given, "value is not a number", column, raw)
    kind = OPTIONAL[column]
    if pa.types.is_integer(kind):
        finite = np.isfinite(numbers)
        flag(finite & (numbers != np.round(numbers)), "value is not an integer", column, raw)
        limit = 2.0 ** (kind.bit_width - 1)
        flag(~finite & given | (numbers < -limit) | (numbers >= limit),
             f"integer overflow: the value does not fit a {kind.bit_width}-bit integer", column, raw)
    return numbers


def _parse_submit(raw: pd.Series, origin: str, flag, bounds: Bounds) -> tuple[np.ndarray, str]:
    """Submit times as seconds since the trace origin, and the origin: integer seconds (origin "0"
    unless given), datetime text or timestamps (seconds since `origin`; auto = midnight UTC of the
    first plausible submit day). A column holding both integers and datetimes keeps the format of
    most of its rows (on a tie, the first row's) and flags the others."""
    if pd.api.types.is_datetime64_any_dtype(raw):
        stamps = raw.dt.tz_localize("UTC") if raw.dt.tz is None else raw.dt.tz_convert("UTC")
        return _datetime_seconds(stamps, raw, origin, flag, bounds)
    numeric = pd.to_numeric(raw, errors="coerce").notna().to_numpy()
    if numeric.all():
        return _integer_seconds(raw, origin, flag, bounds)
    stamps = pd.to_datetime(raw.where(~numeric), errors="coerce", format="ISO8601", utc=True)
    dated = stamps.notna().to_numpy()
    flag(~numeric & ~dated, "submit_time is not a datetime or integer seconds", "submit_time", raw)
    if _mostly_numbers(numeric, dated):
        flag(dated, "submit_time mixes formats: a datetime among integer seconds", "submit_time", raw)
        return _integer_seconds(raw, origin, flag, bounds)
    flag(numeric, "submit_time mixes formats: integer seconds among datetimes", "submit_time", raw)
    return _datetime_seconds(stamps, raw, origin, flag, bounds)


def _mostly_numbers(numeric: np.ndarray, dated: np.ndarray) -> bool:
    """Do more rows hold integer seconds than datetimes (on a tie: does the first of them)?"""
    if numeric.sum() != dated.sum():
        return bool(numeric.sum() > dated.sum())
    either = np.flatnonzero(numeric | dated)
    return bool(len(either) and numeric[either[0]])


def _integer_seconds(raw: pd.Series, origin: str, flag, bounds: Bounds) -> tuple[np.ndarray, str]:
    """Integer submit seconds: whole, in int64, within the span, not negative."""
    seconds, ok = _integers(raw, "submit_time", flag, fraction="submit_time is not whole seconds")
    ok = _within_span(seconds, ok, raw, flag, bounds, lambda median: f"{median:.0f} s")
    flag(ok & (seconds < 0), "submit_time is negative (before the trace origin)", "submit_time", raw)
    return seconds, "0" if origin == "auto" else str(origin)


def _datetime_seconds(stamps: pd.Series, raw: pd.Series, origin: str, flag, bounds: Bounds
                      ) -> tuple[np.ndarray, str]:
    """Seconds since the origin of UTC datetimes `stamps` (NaT where not one): within the span, not
    before the origin."""
    ok = stamps.notna().to_numpy()
    epoch = (stamps - EPOCH).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
    ok = _within_span(epoch, ok, raw, flag, bounds, lambda median: str(np.datetime64(round(median), "s")))
    if origin == "auto":
        base = stamps[ok].min().floor("D") if ok.any() else EPOCH
    else:
        try:
            base = pd.Timestamp(origin)
        except ValueError:
            raise ValueError(f"trace.origin must be an ISO datetime or auto for a trace with datetime submit "
                             f"times, not {origin!r}") from None
        base = base.tz_localize("UTC") if base.tzinfo is None else base.tz_convert("UTC")
    seconds = (stamps - base).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
    seconds = np.nan_to_num(seconds).astype(np.int64)
    flag(ok & (seconds < 0), "submit_time before trace.origin", "submit_time", raw)
    return seconds, base.strftime("%Y-%m-%dT%H:%M:%S")


def _within_span(values: np.ndarray, ok: np.ndarray, raw: pd.Series, flag, bounds: Bounds, show
                 ) -> np.ndarray:
    """Flag the `ok` values more than bounds.max_submit_span_years from their median (`show` writes
    the median); the mask of those within."""
    if not ok.any():
        return ok
    median = float(np.median(values[ok]))
    far = ok & (np.abs(values - median) > bounds.max_submit_span_years * YEAR_S)
    flag(far, f"submit_time more than {bounds.max_submit_span_years:g} years from the trace's median "
              f"submit time {show(median)} (trace.max_submit_span_years)", "submit_time", raw)
    return ok & ~far
