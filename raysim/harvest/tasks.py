"""Elastic training task sets and their scalability curves.

A task file (BFTrainer replayer format, stored as Parquet) has one row per task: ``job`` (name),
``Tcup``/``Tcdw`` (seconds of throughput lost when growing / shrinking), ``Jmin``/``Jmax`` (node
bounds), ``Pmax`` (samples to process), ``Tsub`` (submit time) and the curves ``Ns`` (nodes) ->
``Ps`` (samples/s) and ``Os`` (the allocator's objective), linearly interpolated. Since node
counts are integers, the curves are tabulated once at 0..max(Jmax); counts outside
{0} U [Jmin, Jmax] run at rate 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from raysim.harvest.replay import missing_value, read_parquet

COLUMNS = ("job", "Tcup", "Tcdw", "Jmin", "Jmax", "Pmax", "Tsub", "Ns", "Ps", "Os")
#: The most nodes a task may name (Jmin, Jmax): its curves are tabulated at every count up to Jmax, and
#: no harvested machine comes near (Summit has 4,608 nodes).
MAX_NODES = 100_000
#: The largest value of a curve (samples/s, objective): the allocators weigh it by up to 1e9 s of lookahead
#: (harvest.tfwd) and add it up over tasks, which must stay finite.
MAX_RATE = 1e15
#: Its columns of numbers, and of curves (lists of numbers).
NUMBERS, CURVES = ("Tcup", "Tcdw", "Jmin", "Jmax", "Pmax"), ("Ns", "Ps", "Os")


@dataclass(frozen=True)
class TaskSet:
    """Tasks in file order (= first-come first-served order among equal submit times)."""

    names: np.ndarray  # str
    tcup: np.ndarray  # float64 seconds
    tcdw: np.ndarray  # float64 seconds
    jmin: np.ndarray  # int64 >= 1
    jmax: np.ndarray  # int64 >= jmin
    pmax: np.ndarray  # float64 samples
    tsub_ns: np.ndarray  # int64 nanoseconds since the epoch
    rate_tab: np.ndarray  # float64 [task, n]: samples/s on n nodes (0 outside {0} U [jmin, jmax])
    obj_tab: np.ndarray  # float64 [task, n]: objective on n nodes (0 outside {0} U [jmin, jmax])
    source: str = "<memory>"

    def __len__(self) -> int:
        return len(self.names)


def make_tasks(names, tcup, tcdw, jmin, jmax, pmax, tsub_ns, ns, ps, os_=None, *,
               source: str = "<memory>") -> TaskSet:
    """Build and validate a TaskSet from per-task values and curves (``os_`` defaults to ``ps``).

    Raises ValueError naming the source, task row and column of the first bad value.
    """
    os_ = ps if os_ is None else os_
    jmin_f, jmax_f = np.asarray(jmin, float), np.asarray(jmax, float)
    cols = {"Tcup": np.asarray(tcup, float), "Tcdw": np.asarray(tcdw, float),
            "Pmax": np.asarray(pmax, float)}

    def fail(row: int, col: str, why: str):
        raise ValueError(f"{source}: task row {row} ({names[row]}), column {col!r}: {why}")

    for col, values in cols.items():
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | ((values == 0) & (col == "Pmax")))
        if len(bad):
            fail(int(bad[0]), col, f"must be a finite {'positive' if col == 'Pmax' else 'non-negative'} number")
    for col, values in (("Jmin", jmin_f), ("Jmax", jmax_f)):
        bad = np.flatnonzero(~np.isfinite(values) | (values < 1) | (values > MAX_NODES) | (values != np.round(values)))
        if len(bad):
            fail(int(bad[0]), col, f"must be an integer from 1 to {MAX_NODES:,}")
    bad = np.flatnonzero(jmax_f < jmin_f)
    if len(bad):
        fail(int(bad[0]), "Jmax", "must be >= Jmin")
    jmin_i, jmax_i = jmin_f.astype(np.int64), jmax_f.astype(np.int64)
    width = int(jmax_i.max(initial=0)) + 1
    rate_tab = np.zeros((len(names), width))
    obj_tab = np.zeros((len(names), width))
    for row in range(len(names)):
        for col, curve in (("Ns", ns[row]), ("Ps", ps[row]), ("Os", os_[row])):
            if any(v is None for v in curve):
                fail(row, col, "missing value in the curve")
        n_pts = np.asarray(ns[row], float)
        for col, curve, tab in (("Ps", ps[row], rate_tab), ("Os", os_[row], obj_tab)):
            curve = np.asarray(curve, float)
            if len(curve) != len(n_pts) or len(n_pts) < 2:
                fail(row, col, "curve needs >= 2 points and as many as Ns")
            if np.any(np.diff(n_pts) <= 0):
                fail(row, "Ns", "must be strictly increasing")
            if n_pts[0] > jmin_i[row] or n_pts[-1] < jmax_i[row]:
                fail(row, "Ns", f"must cover [Jmin, Jmax] = [{jmin_i[row]}, {jmax_i[row]}]")
            if not np.all((curve >= 0) & (curve <= MAX_RATE)):
                fail(row, col, f"must be from 0 to {MAX_RATE:.0e}")
            grid = np.arange(jmin_i[row], jmax_i[row] + 1)
            tab[row, grid] = np.interp(grid, n_pts, curve)
    return TaskSet(np.asarray(names, dtype=str), cols["Tcup"], cols["Tcdw"], jmin_i, jmax_i,
                   cols["Pmax"], np.asarray(tsub_ns, np.int64), rate_tab, obj_tab, source)


def load_tasks(path: str | Path) -> TaskSet:
    """Read a task-set Parquet file (columns `COLUMNS`); raise ValueError naming the file on bad input."""
    path = Path(path)
    table = read_parquet(path)
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: task set lacks column(s) {missing}; expected {list(COLUMNS)}")
    col = {c: table.column(c) for c in COLUMNS}
    for c in NUMBERS + CURVES:
        kind = col[c].type
        if c in CURVES:
            kind = kind.value_type if pa.types.is_list(kind) or pa.types.is_large_list(kind) else None
        if kind is None or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise ValueError(f"{path}: column {c!r} must hold {'lists of ' if c in CURVES else ''}numbers, "
                             f"found {col[c].type}")
    tsub = col["Tsub"]
    if not pa.types.is_timestamp(tsub.type):
        raise ValueError(f"{path}: column 'Tsub' must be a timestamp, found {tsub.type}")
    for c in COLUMNS:
        missing_value(path, col[c], c, "task row")
    values = {c: col[c].to_numpy() for c in NUMBERS}
    curves = {c: col[c].to_pylist() for c in CURVES}
    return make_tasks(np.asarray(col["job"].to_pylist(), dtype=str), values["Tcup"], values["Tcdw"],
                      values["Jmin"], values["Jmax"], values["Pmax"],
                      tsub.cast(pa.timestamp("ns")).to_numpy().astype(np.int64),
                      curves["Ns"], curves["Ps"], curves["Os"], source=str(path))
