"""Capacity that changes: nodes that go down, come back up, join or leave, as events of the VC engine.

A *capacity event* says that at a time (seconds on the trace clock) one node of a VC goes
``down`` (out of service: its jobs are interrupted, nothing is placed on it), comes back ``up``
(the same node, in its place in the scan order), ``join``\\ s (it was not part of the cluster
before) or ``leave``\\ s (down for good), for a named ``cause``. Nodes keep their identity across
down and up: a node is named by its VC and its index among that VC's nodes in layout order (its
pools in order, 0-based), so per-node history and repairs make sense.

Producers turn their input into a :class:`CapacityPlan`, which the run spec carries to every VC
simulator (raysim.sim.engine.VCSimulator, ``capacity=``); this module holds the plan and its first
producer, a node log read from a file (``cluster.capacity=<file>``, :func:`read_node_log`).

A node log is a CSV or Parquet file with one row per event and the columns

- ``time``: integer seconds on the trace clock (>= 0);
- ``vc``: the VC whose node it is;
- ``node``: the node's index within its VC (0-based, pools in layout order);
- ``event``: ``down``, ``up``, ``join`` or ``leave``;
- ``cause`` (optional; default ``node_down``): a name of letters, digits and ``_``, counted per job
  in jobs.parquet (``interruptions_<cause>``).

Rows may come in any order; events of one second apply in file order. Per node the events must make
sense in time order: ``join`` only as its first event (the node is absent until then), ``down`` only
while it is up, ``up`` only while it is down, ``leave`` while up or down, nothing after it. A bad row is one line naming
the file, row and column.

The engine applies a VC's events while some of its trace jobs have not finished: the run ends with
its last job, not with the node log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from raysim.errors import TraceError
from raysim.trace.schema import LARGEST

#: What can happen to a node.
EVENTS = ("down", "up", "join", "leave")
#: The cause of a node log's events that name none.
DEFAULT_CAUSE = "node_down"
#: A node log's columns (cause optional).
COLUMNS = ("time", "vc", "node", "event")
_CAUSE = re.compile(r"[A-Za-z0-9_]+")
#: The causes of stops that no capacity event makes (the policy's preemptions, quota reclaims, a job
#: stopped both ways, high-priority jobs' evictions of spot jobs): lost_by_cause.csv's rows of their
#: own, so no node log's cause and no failure category may take these names.
STOP_CAUSES = ("preemptions", "reclaims", "preemptions_and_reclaims", "evictions")


#: Kinds of capacity event: the node goes out of service (its jobs are interrupted), comes back, or
#: stays up while the jobs on it restart (a software fault). A node log's ``join`` is an ``UP`` of a
#: node absent at the start, ``leave`` a ``DOWN`` with nothing after it. BLAME (drawn failures under
#: `failures.wrong_node`, raysim.sim.failures) is a failure whose diagnosis blames another node of the
#: node's jobs: that one goes to repair in its place, and this one stays up while its jobs restart.
DOWN, UP, RESTART, BLAME = 0, 1, 2, 3


class LogStream:
    """One node's events from a fixed list of (time, rank, kind, cause), in order: the
    :class:`NodeStream` of a node log."""

    __slots__ = ("_events", "_next")

    def __init__(self, events: tuple):
        self._events = events
        self._next = 0

    def next(self) -> tuple | None:
        """(time in seconds, rank, kind, cause index) of the node's next event; None when none is left."""
        if self._next < len(self._events):
            self._next += 1
            return self._events[self._next - 1]
        return None

    def __getstate__(self):
        return self._events, self._next

    def __setstate__(self, state):
        self._events, self._next = state


@dataclass(frozen=True)
class VCCapacity:
    """One VC's capacity events: `events` are (time in seconds, node, kind, cause index) in the order
    they apply (kind DOWN, UP or RESTART; a node that leaves while down has no event of its own);
    `absent` the nodes not there at the start (they join later); `jobs` the VC's trace jobs (its
    events apply while some are unfinished).

    A *node stream* (``stream(node)``, an object whose ``next()`` gives (time, rank, kind, cause)
    tuples, times never decreasing, None at the end; picklable) is what the engine reads: one per
    node, merged by (time, rank), so a producer may generate a node's events lazily."""

    events: tuple = ()
    absent: tuple = ()
    jobs: int = 0

    def stream(self, node: int) -> LogStream | None:
        """Node `node`'s events (None: it has none); its rank is the event's place in `events`."""
        mine = self._by_node.get(node)
        return LogStream(mine) if mine else None

    @cached_property
    def _by_node(self) -> dict[int, tuple]:
        out: dict[int, list] = {}
        for rank, (t, node, kind, cause) in enumerate(self.events):
            out.setdefault(node, []).append((t, rank, int(kind), cause))
        return {node: tuple(evs) for node, evs in out.items()}


@dataclass(frozen=True)
class CapacityPlan:
    """The run's capacity events per VC, and the causes they name (jobs.parquet has a column per
    cause). Every VC simulator gets the whole plan: a node on loan to another VC follows its own
    VC's events there (raysim.quota.ledger). `repairs`: whether its failures are repaired by a
    pipeline whose repairs are counted (repair=pipeline: the time series' REPAIR_COLUMNS). `busy`:
    whether its failure clocks run only while work progresses (failures.clock=busy: the engine tells
    each node's stream of the work on it, raysim.sim.busy). `counts`: what else its failure streams
    count (keys of raysim.sim.recorder.COUNT_COLUMNS: `undiagnosed` failures, `retired` nodes)."""

    causes: tuple = ()
    vcs: dict = field(default_factory=dict)  # VC -> VCCapacity
    repairs: bool = False
    busy: bool = False
    counts: tuple = ()

    def of(self, vc: str) -> VCCapacity | None:
        """VC `vc`'s events (None: its nodes never change)."""
        return self.vcs.get(vc)

    @property
    def num_events(self) -> int:
        return sum(len(c.events) for c in self.vcs.values())


def node_counts(layout: dict) -> dict[str, int]:
    """Nodes per VC of a layout (VC -> pools)."""
    return {vc: sum(p.nodes for p in pools) for vc, pools in layout.items()}


def read_node_log(path, layout: dict) -> tuple[np.ndarray, list, np.ndarray, np.ndarray, list]:
    """The rows of node log `path` checked against `layout` (VC -> pools): (times, VCs, node indices,
    event codes (indices into EVENTS), causes), in the order the events apply (by time, then file
    order). A bad row raises TraceError naming the file, row and column."""
    table, source = read_event_table(path, "cluster.capacity", "a node log", COLUMNS, " and optionally cause")
    n = table.num_rows
    if not n:
        raise TraceError(source, "no events: a node log has one row per event")
    times = whole_numbers(table.column("time"), source, "time", minimum=0)
    vcs = [str(v) if v is not None else None for v in table.column("vc").to_pylist()]
    nodes = whole_numbers(table.column("node"), source, "node", minimum=0)
    counts = node_counts(layout)
    for i, (vc, node) in enumerate(zip(vcs, nodes.tolist())):
        if vc not in counts:
            raise TraceError(source, f"not a VC of the run's cluster ({', '.join(list(counts)[:5])}"
                                     f"{', ...' if len(counts) > 5 else ''})", row=i + 1, column="vc", value=vc)
        if node >= counts[vc]:
            raise TraceError(source, f"VC {vc} has {counts[vc]} node(s), numbered from 0", row=i + 1,
                             column="node", value=node)
    kinds = np.empty(n, np.int64)
    for i, event in enumerate(table.column("event").to_pylist()):
        text = str(event).strip().lower() if event is not None else ""
        if text not in EVENTS:
            raise TraceError(source, f"must be one of {', '.join(EVENTS)}", row=i + 1, column="event", value=event)
        kinds[i] = EVENTS.index(text)
    causes = [DEFAULT_CAUSE] * n
    if "cause" in table.column_names:
        for i, cause in enumerate(table.column("cause").to_pylist()):
            if cause is None or str(cause).strip() == "":
                continue
            if not _CAUSE.fullmatch(str(cause).strip()):
                raise TraceError(source, "a cause is a name of letters, digits and _", row=i + 1, column="cause",
                                 value=cause)
            if str(cause).strip() in STOP_CAUSES:
                raise TraceError(source, f"a cause may not be named {', '.join(STOP_CAUSES)}: those count the "
                                 "stops no node event made", row=i + 1, column="cause", value=cause)
            causes[i] = str(cause).strip()
    order = np.argsort(times, kind="stable")
    _check_sequences(source, order, vcs, nodes, kinds)
    return times[order], [vcs[i] for i in order], nodes[order], kinds[order], [causes[i] for i in order]


def plan_from_node_log(path, layout: dict, jobs_per_vc: dict, pool_homes: tuple = ()) -> CapacityPlan:
    """The capacity plan of node log `path` for a run on `layout`; with `pool_homes` (quota=global)
    the layout is one merged VC whose pools came from the VCs `pool_homes` names, and the log still
    names nodes by their own VC. `jobs_per_vc`: trace jobs per VC of `layout`."""
    own = own_layout(layout, pool_homes) if pool_homes else layout
    times, vcs, nodes, kinds, causes = read_node_log(path, own)
    names = tuple(dict.fromkeys(causes))
    offset = _node_offsets(layout, pool_homes) if pool_homes else None
    events: dict[str, list] = {}
    absent: dict[str, list] = {}
    down: set = set()
    for t, vc, node, kind, cause in zip(times.tolist(), vcs, nodes.tolist(), kinds.tolist(), causes):
        where, index = (next(iter(layout)), offset[vc][node]) if offset else (vc, node)
        event = EVENTS[kind]
        if event == "join":
            absent.setdefault(where, []).append(index)
        if event == "leave" and (where, index) in down:
            continue  # already out of service
        if event in ("down", "leave"):
            down.add((where, index))
        else:
            down.discard((where, index))
        events.setdefault(where, []).append((int(t), int(index), UP if event in ("up", "join") else DOWN,
                                             names.index(cause)))
    vcs = {**dict.fromkeys(layout), **dict.fromkeys(events)}  # (every VC: one may hold another's node)
    return CapacityPlan(names, {vc: VCCapacity(tuple(events.get(vc, ())), tuple(absent.get(vc, ())),
                                               int(jobs_per_vc.get(vc, 0))) for vc in vcs})


def own_layout(layout: dict, homes: tuple) -> dict:
    """The per-VC layout behind a merged one (raysim.quota.merged_layout)."""
    (pools,) = layout.values()
    own: dict[str, list] = {}
    for home, pool in zip(homes, pools):
        own.setdefault(home, []).append(pool)
    return own


def _node_offsets(layout: dict, homes: tuple) -> dict[str, list[int]]:
    """Per VC, its nodes' indices in the merged VC (nodes are numbered pool by pool)."""
    (pools,) = layout.values()
    out: dict[str, list[int]] = {}
    start = 0
    for home, pool in zip(homes, pools):
        out.setdefault(home, []).extend(range(start, start + pool.nodes))
        start += pool.nodes
    return out


def read_event_table(path, setting: str, what: str, columns, more: str = ""):
    """The table of an event file (`what`, e.g. "a node log", read for `setting`), CSV or Parquet,
    with every one of `columns` (`more`: what else it may have), and its name for messages; a
    missing file or column is a TraceError."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise TraceError(source, f"no such file ({setting}: {what}, CSV or Parquet)")
    table = read_table(path)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise TraceError(source, f"missing column(s) {', '.join(missing)}: {what} has columns "
                                 f"{', '.join(columns)}{more}", column=missing[0])
    return table, source


def read_table(path: Path):
    """The node log as an Arrow table (pyarrow is imported here: the engine only needs the plan)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise TraceError(str(path), f"not a readable Parquet file ({exc})") from exc
    try:
        return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
            column_types={"vc": pa.string(), "event": pa.string(), "cause": pa.string()}))
    except pa.ArrowInvalid as exc:
        raise TraceError(str(path), f"not a readable CSV file: {str(exc).splitlines()[0]}") from exc




def whole_numbers(column, source: str, name: str, *, minimum: int, empty: int | None = None) -> np.ndarray:
    """`column` as int64, every value a whole number from `minimum` to LARGEST (else a TraceError
    naming the row; a boolean is not a number); an empty value is `empty` where that is given (a
    column empty throughout, which Arrow reads as nulls of no type, included)."""
    values = column.to_pylist()
    out = np.empty(len(values), np.int64)
    for i, v in enumerate(values):
        if v is None and empty is not None:
            v = empty
        try:
            number = float(v)
            ok = minimum <= number <= LARGEST and number == int(number) and not isinstance(v, (bool, np.bool_))
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise TraceError(source, f"must be a whole number from {minimum} to {LARGEST:.0e}", row=i + 1,
                             column=name, value=v)
        out[i] = int(number)
    return out


def _check_sequences(source: str, order: np.ndarray, vcs: list, nodes: np.ndarray, kinds: np.ndarray) -> None:
    """Each node's events, in time order, must make sense (see the module doc)."""
    state: dict[tuple, str] = {}  # (vc, node) -> "up", "down" or "gone"
    for i in order.tolist():
        key, event = (vcs[i], int(nodes[i])), EVENTS[kinds[i]]
        now = state.get(key)
        if event == "join":
            ok, why = now is None, "join must be a node's first event (it is absent until then)"
        elif now == "gone":
            ok, why = False, f"node {key[1]} of VC {key[0]} left earlier: no event may follow"
        elif event == "up":
            ok, why = now == "down", f"node {key[1]} of VC {key[0]} is not down"
        elif event == "down":
            ok, why = now in (None, "up"), f"node {key[1]} of VC {key[0]} is already down"
        else:  # leave: for good, from up or down
            ok, why = True, ""
        if not ok:
            raise TraceError(source, why, row=i + 1, column="event", value=event)
        state[key] = {"join": "up", "up": "up", "down": "down", "leave": "gone"}[event]
