"""A run folder's result files read back for `raysim report` and the pages, checked: a file that is
missing, empty, truncated, not in its format, or a valid file of another kind (other columns, other
types, JSON of another shape) is one line naming it, and the row and column where it applies (a
TraceError, exit status 2), never a traceback or a page drawn from wrong numbers. jobs.parquet is
read with raysim.report.schema.read_jobs; timeseries.parquet is checked with `check_series` (and
read by readers under raysim.report.schema.reads).

Which files a page needs: summary.csv, jobs.parquet and trace_report.json (an error when one is
missing); timeseries.parquet and lost_by_cause.csv are optional (a page without one says so,
`missing_note`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.csvfile import read_result_csv
from raysim.errors import TraceError
from raysim.report.page import esc
from raysim.report.schema import reading
from raysim.report.timeseries import META_KEY

#: Columns of timeseries.parquet that every run has and the pages and plots draw (besides vc, time).
SERIES_DRAWN = ("gpu_utilization", "pending_gpujob_num")


def read_summary(path) -> pd.DataFrame:
    """A run's summary.csv: a row per VC and one for the cluster ("all"), numbers in every column but
    `vc`, a whole number of `jobs` in every row."""
    frame = read_result_csv(path, ("vc", "jobs", "avg_jct", "avg_queue"), ("vc",), "the run's summary")
    if "all" not in set(frame["vc"]):
        raise TraceError(str(path), "no row for the cluster (vc 'all'): truncated or not a run's summary", column="vc")
    jobs = frame["jobs"].to_numpy(dtype=float)
    bad = ~np.isfinite(jobs) | (jobs < 0) | (jobs != np.round(jobs))
    if bad.any():
        row = int(bad.argmax())
        raise TraceError(str(path), "not a whole number of jobs" if np.isfinite(jobs[row]) else "empty",
                         row=row + 1, column="jobs", value=jobs[row].item() if np.isfinite(jobs[row]) else None)
    return frame


def read_lost_by_cause(path) -> pd.DataFrame:
    """A run's lost_by_cause.csv: per VC and cause, numbers in every other column."""
    return read_result_csv(path, ("vc", "cause", "lost_gpu_h"), ("vc", "cause"), "the work lost per cause")


def read_trace_report(run_dir) -> dict:
    """A run's trace_report.json: an object with the trace's `source` and the VC `layout` (VC -> pools
    of `gpu_type`, `gpus_per_node`, `nodes`), and, where present, the other keys a page reads, each
    of its type."""
    path = Path(run_dir) / "trace_report.json"
    name = str(path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceError(name, "missing (the trace read and the VC layout of the run)") from None
    except UnicodeDecodeError:
        raise TraceError(name, "not a JSON file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise TraceError(name, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                               "truncated or damaged") from None
    if not isinstance(report, dict):
        raise TraceError(name, f"expected a JSON object, found {type(report).__name__}")
    for key in ("source", "layout"):
        if key not in report:
            raise TraceError(name, f"lacks key {key!r}")

    def wrong(key: str, expected: str):
        raise TraceError(name, f"key {key!r}: expected {expected}, found {json.dumps(report[key])[:80]}")

    if not isinstance(report["source"], str):
        wrong("source", "a string (the trace file)")
    layout = report["layout"]
    if not isinstance(layout, dict) or not all(isinstance(pools, list) for pools in layout.values()):
        wrong("layout", "an object of VC -> list of pools")
    for vc, pools in layout.items():
        for pool in pools:
            if not (isinstance(pool, dict) and isinstance(pool.get("gpu_type"), str)
                    and all(_whole(pool.get(k)) for k in ("gpus_per_node", "nodes"))):
                raise TraceError(name, f"key 'layout': VC {vc!r} has a pool that is not {{gpu_type: text, "
                                       f"gpus_per_node: whole number >= 0, nodes: whole number >= 0}}: "
                                       f"{json.dumps(pool)[:80]}")
    for key, kind, expected in (("jobs", int, "a whole number"), ("from_cache", bool, "true or false"),
                                ("counts", dict, "an object"), ("converted", dict, "an object"),
                                ("by_column", dict, "an object"), ("examples", dict, "an object"),
                                ("datasets", list, "a list"), ("wall_s", dict, "an object")):
        if report.get(key) is not None and not isinstance(report[key], kind):
            wrong(key, expected)
    for key in ("counts", "converted"):
        if not all(_whole(n) for n in (report.get(key) or {}).values()):
            wrong(key, "an object of reason -> rows")
    if not all(isinstance(columns, dict) for columns in (report.get("by_column") or {}).values()):
        wrong("by_column", "an object of reason -> {column: rows}")
    for dataset in report.get("datasets") or []:
        if not (isinstance(dataset, dict) and isinstance(dataset.get("files", []), list)
                and all(isinstance(f, dict) and "file" in f and "sha256" in f for f in dataset.get("files", []))
                and "key" in dataset and "dataset" in dataset):
            wrong("datasets", "a list of {key, dataset, files: [{file, sha256}]}")
    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
               for v in (report.get("wall_s") or {}).values()):
        wrong("wall_s", "an object of stage -> seconds")
    return report


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_series(path) -> None:
    """A timeseries.parquet a page can draw: readable Parquet with a `vc` column of text, a `time`
    column of whole numbers, the SERIES_DRAWN columns and numbers in every other column, and, in a
    change-points file, its grid (interval, first, last) as whole numbers."""
    name = str(path)
    with reading(path, "the cluster's state over time"):
        schema = pq.read_schema(path)
    for column, ok, expected in (("vc", _is_text, "text"), ("time", pa.types.is_integer, "whole numbers"),
                                 *((c, _is_number, "numbers") for c in SERIES_DRAWN)):
        if column not in schema.names:
            raise TraceError(name, f"missing column: not a run's time series (it has {schema.names[:12]})",
                             column=column)
        if not ok(schema.field(column).type):
            raise TraceError(name, f"expected {expected}, found {schema.field(column).type}", column=column)
    for field in schema:
        if field.name not in ("vc", "time") and not _is_number(field.type):
            raise TraceError(name, f"expected numbers, found {field.type}", column=field.name)
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is not None:
        try:
            grid = json.loads(raw)
        except ValueError:
            grid = None
        if not (isinstance(grid, dict) and set(grid) == {"interval", "first", "last"}
                and all(isinstance(v, int) and not isinstance(v, bool) for v in grid.values())
                and grid["interval"] > 0 and grid["last"] >= grid["first"]):
            raise TraceError(name, f"its grid ({META_KEY.decode()} metadata) is not {{interval > 0, first, "
                                   f"last >= first}} in whole seconds: {raw[:80]!r}")


def _is_number(kind) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _is_text(kind) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def missing_note(what: str) -> str:
    """A page's line saying that a result file is missing and what the page therefore lacks."""
    return f'<p class="caption"><strong>{esc(what)}</strong></p>'


def missing_in_runs(runs: list[Path], names: list[str], file: str, lacks: str) -> str:
    """A sweep page's line naming the runs (`names`, of the folders `runs`) whose `file` is missing and
    what the page therefore `lacks` of them; "" where every run has it."""
    without = [name for run, name in zip(runs, names) if not (run / file).exists()]
    return missing_note(f"{file} is missing in {', '.join(without)}: {lacks}") if without else ""
