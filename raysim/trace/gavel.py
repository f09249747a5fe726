"""Gavel's job traces (`trace.format=gavel`): one job per line, tab-separated, as Gavel writes them.

Fields, in order (Gavel's ``scheduler/utils.py`` trace layout): job type (the throughput table's
model name, e.g. ``ResNet-18 (batch size 64)``), command, working directory, num-steps argument,
needs-data-dir flag, total steps, scale factor (GPUs), priority weight, SLO (-1: none) and arrival
time in seconds. Job ids are the line order, 0..n-1, as in Gavel's simulator. Jobs carry steps
to do, not a duration: they progress at the throughput of the GPU type they hold.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa

from raysim.errors import TraceError
from raysim.trace.schema import LARGEST

#: The fields of one trace line, in Gavel's order.
FIELDS = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
          "scale_factor", "priority_weight", "slo", "arrival_time")

#: The most GPUs a job may ask for (the trace schema's gpu_num is an int32).
MAX_GPUS = 2**31 - 1

#: The range of a job's priority weight: the max-min fairness LPs divide a job's throughputs by it,
#: and beyond these (1e300 or 1e-300) their coefficients leave what the LP solver can tell from 0
#: or infinity; within them they stay inside HiGHS's matrix range (1e-9 to 1e15).
WEIGHTS = (1e-6, 1e6)

#: The job table read from a trace (and made by :mod:`raysim.rounds.generate`).
SCHEMA = pa.schema([("job_id", pa.int64()), ("job_type", pa.string()), ("scale_factor", pa.int64()),
                    ("total_steps", pa.float64()), ("priority_weight", pa.float64()), ("slo", pa.float64()),
                    ("arrival_time", pa.float64())])


def read_gavel_trace(path: str | Path) -> pa.Table:
    """Read and check a Gavel trace file; returns a table in :data:`SCHEMA` (one row per line).

    Every problem is a :class:`TraceError` naming the file, the row (= the line) and the field:
    a wrong number of fields, a non-numeric or infinite value, a non-positive step count or scale
    factor, a priority weight outside WEIGHTS, more GPUs than MAX_GPUS, an arrival time that is negative, not finite or after
    LARGEST seconds (the engine's clock), or arrivals out of order (Gavel's simulator requires them
    sorted).
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(name, "Gavel trace file not found") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise TraceError(name, f"not a readable Gavel trace: {exc}") from None
    columns: dict[str, list] = {f: [] for f in SCHEMA.names}
    row = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row += 1
        fail = _failer(name, row, number)
        cells = line.split("\t")
        if len(cells) != len(FIELDS):
            raise fail(f"expected {len(FIELDS)} tab-separated fields ({', '.join(FIELDS)}), found {len(cells)}")
        job = dict(zip(FIELDS, cells))
        if not job["job_type"].strip():
            raise fail("empty job type", "job_type")
        steps = _number(fail, "total_steps", job["total_steps"])
        scale = _number(fail, "scale_factor", job["scale_factor"])
        weight = _number(fail, "priority_weight", job["priority_weight"])
        slo = _number(fail, "slo", job["slo"])
        arrival = _number(fail, "arrival_time", job["arrival_time"])
        if steps <= 0:
            raise fail("must be a positive number of steps", "total_steps", job["total_steps"])
        if not 1 <= scale <= MAX_GPUS or scale != int(scale):
            raise fail(f"must be a whole number of GPUs from 1 to {MAX_GPUS:,}", "scale_factor", job["scale_factor"])
        if not WEIGHTS[0] <= weight <= WEIGHTS[1]:
            raise fail(f"must be from {WEIGHTS[0]:g} to {WEIGHTS[1]:g}", "priority_weight", job["priority_weight"])
        if not 0 <= arrival <= LARGEST:
            raise fail(f"must be from 0 to {LARGEST:.0e} s", "arrival_time", job["arrival_time"])
        if columns["arrival_time"] and arrival < columns["arrival_time"][-1]:
            raise fail(f"arrivals must be in time order (the previous job arrives at "
                       f"{columns['arrival_time'][-1]})", "arrival_time", job["arrival_time"])
        columns["job_id"].append(row - 1)
        columns["job_type"].append(job["job_type"].strip())
        columns["scale_factor"].append(int(scale))
        columns["total_steps"].append(steps)
        columns["priority_weight"].append(weight)
        columns["slo"].append(slo)
        columns["arrival_time"].append(arrival)
    if row == 0:
        raise TraceError(name, "the trace has no jobs")
    return pa.table(columns, schema=SCHEMA)


def write_gavel_trace(table: pa.Table, path: str | Path) -> Path:
    """Write a job table (:data:`SCHEMA`) as a Gavel trace file (command fields left as placeholders)."""
    path = Path(path)
    lines = []
    for job in table.to_pylist():
        steps = job["total_steps"]
        lines.append("\t".join([job["job_type"], "-", "-", "-", "1", str(int(steps)) if steps == int(steps)
                                else repr(steps), str(job["scale_factor"]), str(job["priority_weight"]),
                                f"{job['slo']:f}", f"{job['arrival_time']:f}"]))
    path.write_text("\n".join(lines) + "\n")
    return path


def _failer(name: str, row: int, line: int):
    """A TraceError factory for one trace line (rows count jobs; the file has no header line)."""
    def fail(message: str, column: str | None = None, value=None) -> TraceError:
        return TraceError(name, message, row=row, column=column, value=value, line=line)
    return fail


def _number(fail, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise fail("not a number", column, text) from None
    if not math.isfinite(value):
        raise fail("must be a finite number", column, text)
    return value
