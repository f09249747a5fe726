"""`timeline.json`: a run's jobs on their nodes over time, in Chrome's trace event format (JSON
object form), which Perfetto's UI (ui.perfetto.dev) and chrome://tracing open.

One process per VC (layout order), one track per node of it, named by metadata events. A job that
ran is one complete slice ("ph": "X") on its first node's track, from its first start to its end:
jobs.parquet records a job's first start, its end and its latest placement, not the pieces of a
job stopped and resumed, so the slice of a preempted or interrupted job spans its pauses too, and
its args count them. Slices on one track never overlap: where jobs share a node, the node has as
many tracks ("node 3", "node 3 #2", ...) as jobs ran on it at once. Capacity events of the run's
node log and failures (a node going down, coming back, restarting) are instant events ("ph": "i")
on their node's track. Timestamps are microseconds on the trace clock (t = 0 is the trace origin).
"""

from __future__ import annotations

import heapq
import json
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from raysim.report.batsim import simulated_vc
from raysim.tables import plural
from raysim.sim.capacity import DOWN, RESTART, UP

log = logging.getLogger("raysim")

#: The file's name in a run folder.
FILE = "timeline.json"
#: jobs.parquet columns every slice's args hold.
ARGS = ["job_id", "vc", "gpu_num", "submit_time", "duration", "start_time", "end_time", "queue", "jct",
        "preemptions", "first_node", "num_nodes", "finished"]
#: Optional jobs.parquet columns a slice's args also hold where the run has them (raysim.report.schema).
OPTIONAL_ARGS = ["user", "shared", "profiled", "interruptions", "reclaims", "home_vc", "ran_on_vc", "gpu_type",
                 "restarts", "gpu_milli", "first_gpu", "job_type", "priority_weight", "task"]
#: Names of capacity event kinds (raysim.sim.capacity).
KINDS = {DOWN: "down", UP: "up", RESTART: "restart"}
#: Why jobs are left out of a timeline: key in its otherData -> the log's words.
LEFT_OUT = {"never_started": "that never started", "outside_range": "outside report.timeline_range",
            "past_max_jobs": "past report.timeline_max_jobs"}
#: Track key of jobs that ran on no VC node (Lucid's profiling pool: first_node -1).
POOL = -1


def write_timeline(run_dir, *, max_jobs: int = 20000, span: tuple | None = None, capacity=None) -> Path:
    """Write `run_dir`/timeline.json from its jobs.parquet and trace_report.json: a slice per job
    that ran (at most `max_jobs`, those that start first; with `span` = (t0, t1) only jobs running
    in it) and, from `capacity` (the run's raysim.sim.capacity.CapacityPlan, or None), the capacity
    events up to the last end. Logs how many jobs it drew and how many it left out, and why."""
    run_dir = Path(run_dir)
    report = json.loads((run_dir / "trace_report.json").read_text())
    layout = report["layout"]
    jobs, counts = _selected(run_dir / "jobs.parquet", max_jobs, span)
    horizon = counts.pop("horizon")
    events = Tracks(layout)
    for row in _rows(jobs, horizon):
        events.slice(row)
    instants = 0
    if capacity is not None:
        t0, t1 = span if span is not None else (float("-inf"), horizon)
        for vc, node, t, kind, cause in capacity_events(capacity, layout, min(t1, horizon)):
            if t >= t0:
                events.instant(vc, node, t, f"node {kind}" + (f" ({cause})" if cause else ""),
                               {"node": node, "event": kind, "cause": cause})
                instants += 1
    path = run_dir / FILE
    other = {"raysim": {"clock": "microseconds on the trace clock (t = 0 is the trace origin)",
                        "origin": report.get("origin"), "jobs_drawn": jobs.num_rows, "left_out": counts,
                        "capacity_events": instants,
                        "slice": "a job's first start to its end (or the run's end where it did not finish), "
                                 "on its first node's track"}}
    with path.open("w") as out:
        json.dump({"traceEvents": events.all(), "displayTimeUnit": "ms", "otherData": other}, out,
                  separators=(",", ":"))
    left = [f"{plural(n, 'job')} {LEFT_OUT[why]}" for why, n in counts.items() if n]
    log.info("wrote %s: %s, %s%s", path, plural(jobs.num_rows, "job"), plural(instants, "capacity event"),
             f"; left out {', '.join(left)}" if left else "")
    return path


def _selected(path: Path, max_jobs: int, span: tuple | None) -> tuple[pa.Table, dict]:
    """The jobs to draw (those that ran, in `span`, the `max_jobs` that start first, by start then
    trace order) read a row group at a time, the counts of those left out (by reason), and the
    run's horizon (its last start or end: the slice end of jobs that did not finish)."""
    file = pq.ParquetFile(path)
    columns = ARGS + [c for c in OPTIONAL_ARGS if c in file.schema_arrow.names]
    kept, seen = None, 0
    counts = dict.fromkeys(LEFT_OUT, 0)
    horizon = 0.0
    for batch in file.iter_batches(columns=columns):
        table = pa.Table.from_batches([batch]).append_column("seq", pa.array(np.arange(seen, seen + batch.num_rows)))
        seen += batch.num_rows
        ran = pc.is_valid(table.column("start_time"))
        for name in ("start_time", "end_time"):
            latest = pc.max(table.column(name)).as_py()
            horizon = max(horizon, latest) if latest is not None else horizon
        counts["never_started"] += table.num_rows - int(pc.sum(ran).as_py() or 0)
        table = table.filter(ran)
        if span is not None:
            inside = pc.and_(pc.less(table.column("start_time"), span[1]),
                             pc.or_(pc.is_null(table.column("end_time")),
                                    pc.greater_equal(table.column("end_time"), span[0])))
            counts["outside_range"] += table.num_rows - int(pc.sum(inside).as_py() or 0)
            table = table.filter(inside)
        kept = table if kept is None else pa.concat_tables([kept, table])
        if kept.num_rows > max_jobs:
            counts["past_max_jobs"] += kept.num_rows - max_jobs
            kept = kept.sort_by([("start_time", "ascending"), ("seq", "ascending")]).slice(0, max_jobs)
    if kept is None:
        kept = file.schema_arrow.empty_table().select(columns).append_column("seq", pa.array([], pa.int64()))
    return kept.sort_by([("start_time", "ascending"), ("seq", "ascending")]), {**counts, "horizon": horizon}


def _rows(jobs: pa.Table, horizon: float):
    """Each job as a dict of its columns (plain Python values), with `slice_end`: its end, or the
    run's horizon where it did not finish."""
    names = [n for n in jobs.column_names if n != "seq"]
    for row in jobs.select(names).to_pylist():
        row["slice_end"] = row["end_time"] if row["end_time"] is not None else horizon
        yield row


class Tracks:
    """The trace's events: a process per VC, tracks per node (lanes where jobs overlap on a node)."""

    def __init__(self, layout: dict):
        self.layout = layout
        self.pids = {vc: k + 1 for k, vc in enumerate(layout)}
        self.events: list[dict] = []
        self.tids: dict[tuple, int] = {}  # (vc, node, lane) -> tid
        self.lanes: dict[tuple, list] = {}  # (vc, node) -> heap of (end, lane) of the lanes in use
        self.free: dict[tuple, list] = {}  # (vc, node) -> heap of free lanes

    def slice(self, row: dict) -> None:
        """A job's complete event on a lane of its first node with no job at that time (jobs come
        in start order)."""
        vc = simulated_vc(row["vc"], self.layout)
        node = row["first_node"] if row["first_node"] is not None and row["first_node"] >= 0 else POOL
        key = (vc, node)
        busy, free = self.lanes.setdefault(key, []), self.free.setdefault(key, [])
        while busy and busy[0][0] <= row["start_time"]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy)
        heapq.heappush(busy, (row["slice_end"], lane))
        args = {k: v for k, v in row.items() if k != "slice_end"}
        args["waiting"] = row["start_time"] - row["submit_time"]
        self.events.append({"name": f"job {row['job_id']}", "cat": "job", "ph": "X", "ts": _us(row["start_time"]),
                            "dur": _us(row["slice_end"] - row["start_time"]), "pid": self.pids[vc],
                            "tid": self._tid(vc, node, lane), "args": args})

    def instant(self, vc: str, node: int, t: float, name: str, args: dict) -> None:
        """An instant event on the first track of `node` of `vc`."""
        self.events.append({"name": name, "cat": "capacity", "ph": "i", "s": "t", "ts": _us(t),
                            "pid": self.pids[vc], "tid": self._tid(vc, node, 0), "args": args})

    def all(self) -> list[dict]:
        """Metadata events (process and track names and order), then the slices and instants."""
        meta = []
        for vc, pid in self.pids.items():
            meta.append({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": f"VC {vc}"}})
            meta.append({"name": "process_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
                         "args": {"sort_index": pid}})
        for (vc, node, lane), tid in sorted(self.tids.items(), key=lambda item: item[1]):
            name = "profiling pool" if node == POOL else f"node {node}"
            meta.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": self.pids[vc], "tid": tid,
                         "args": {"name": name + (f" #{lane + 1}" if lane else "")}})
            meta.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": self.pids[vc], "tid": tid,
                         "args": {"sort_index": (node + 1) * 1000 + lane}})
        return meta + self.events

    def _tid(self, vc: str, node: int, lane: int) -> int:
        key = (vc, node, lane)
        if key not in self.tids:
            self.tids[key] = len(self.tids) + 1
        return self.tids[key]


def capacity_events(plan, layout: dict, until: float):
    """(VC, node, time, kind, cause) of every capacity event of `plan` (a CapacityPlan) at or before
    `until`, per VC of `layout` and node in order (a failure model's streams are read up to it)."""
    for vc, pools in layout.items():
        vc_plan = plan.of(vc)
        if vc_plan is None:
            continue
        for node in range(sum(p["nodes"] for p in pools)):
            stream = vc_plan.stream(node)
            event = stream.next() if stream is not None else None
            while event is not None and event[0] <= until:
                t, _, kind, cause = event
                yield vc, node, t, KINDS[int(kind)], plan.causes[cause] if cause is not None else None
                event = stream.next()


def _us(seconds) -> int | float:
    """Seconds as microseconds (an int for whole microseconds)."""
    value = seconds * 1_000_000
    return int(value) if float(value).is_integer() else float(value)
