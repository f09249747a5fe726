"""Node-log replay: turn a node idle/busy change log into the harvester's event list.

The log (BFTrainer replayer format, stored as Parquet) has columns ``time`` (timestamp), ``node``
(dictionary; its dictionary order is the machine's column order) and ``idle`` (bool). Its first
rows are a snapshot of every node at the first time; after that only changes. A *row* of the log,
as in the reference replayer's wide table, is one distinct time: row 1000 is the 1001st distinct
timestamp.

`slice_events` keeps the first ``n`` nodes, rebuilds their state at the start time and returns the
times at which the slice's idle set changes (de-duplicated), each with the nodes that changed and
their new state, in CSR form. Everything is vectorised; no per-row Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

NS = 1_000_000_000


@dataclass(frozen=True)
class NodeLog:
    """A whole node log in columnar form (rows in file order)."""

    time_ns: np.ndarray  # int64, nanoseconds since the epoch, non-decreasing
    node: np.ndarray  # int32 index into `names` (= column order of the machine)
    idle: np.ndarray  # bool, the node's state from that time on
    names: np.ndarray  # str, node names in column order
    source: str = "<memory>"

    @property
    def num_nodes(self) -> int:
        """Number of nodes of the machine."""
        return len(self.names)


@dataclass(frozen=True)
class NodeEvents:
    """Idle-set changes of a node slice from the start time on.

    Event 0 is the start (no changes; the state is `initial_idle`); event e >= 1 happens at
    `times[e]` seconds after `t0_ns` and sets ``idle[ptr[e]:ptr[e+1]]`` on nodes
    ``node[ptr[e]:ptr[e+1]]`` (ascending node index, each a real change).
    """

    t0_ns: int
    times: np.ndarray  # float64 seconds since t0, times[0] == 0, strictly increasing
    ptr: np.ndarray  # int64, len(times) + 1
    node: np.ndarray  # int32
    idle: np.ndarray  # bool
    initial_idle: np.ndarray  # bool per node of the slice
    names: np.ndarray  # str, names of the slice's nodes

    @property
    def num_nodes(self) -> int:
        """Number of nodes in the slice."""
        return len(self.names)

    @property
    def num_events(self) -> int:
        """Number of events including the start event."""
        return len(self.times)


def load_node_log(path: str | Path) -> NodeLog:
    """Read a node log Parquet file; raise ValueError naming the file (and the row and column) when it
    is not one: not Parquet, a column missing, of another type or with an empty value."""
    path = Path(path)
    table = read_parquet(path)
    missing = {"time", "node", "idle"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: node log lacks column(s) {sorted(missing)}; expected time, node, idle")
    if not table.num_rows:
        raise ValueError(f"{path}: no rows: a node log starts with a snapshot of every node")
    for name, kind, what in (("time", pa.types.is_timestamp, "timestamps"), ("idle", pa.types.is_boolean, "booleans")):
        if not kind(table.column(name).type):
            raise ValueError(f"{path}: column {name!r} must hold {what}, found {table.column(name).type}")
    for name in ("time", "node", "idle"):
        missing_value(path, table.column(name), name)
    node = table.column("node")
    if not pa.types.is_dictionary(node.type):
        node = node.dictionary_encode()
    node = node.unify_dictionaries() if node.num_chunks > 1 else node
    names = node.chunk(0).dictionary.to_numpy(zero_copy_only=False) if node.num_chunks else np.array([], str)
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in node.chunks]).astype(np.int32)
    time_ns = table.column("time").cast(pa.timestamp("ns")).to_numpy().astype(np.int64)
    idle = table.column("idle").to_numpy(zero_copy_only=False).astype(bool)
    if len(time_ns) and np.any(np.diff(time_ns) < 0):
        bad = int(np.flatnonzero(np.diff(time_ns) < 0)[0]) + 1
        raise ValueError(f"{path}: row {bad}, column 'time': times must be non-decreasing")
    return NodeLog(time_ns, codes, idle, np.asarray(names, dtype=str), str(path))


def read_parquet(path: Path) -> pa.Table:
    """The Parquet file `path` as a table; ValueError naming it when it is not one."""
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ValueError(f"{path}: not a readable Parquet file: {exc}") from None


def missing_value(path: Path, column: pa.ChunkedArray, name: str, what: str = "row") -> None:
    """ValueError naming the first empty value of `column` (rows counted from 0), if any."""
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"{path}: {what} {row}, column {name!r}: missing value")


def _snapshot_state(log: NodeLog) -> np.ndarray:
    """Idle state of every node at the log's first time (the first rows are the full snapshot)."""
    first = log.time_ns[0] if len(log.time_ns) else 0
    rows = np.flatnonzero(log.time_ns == first)
    seen = np.zeros(log.num_nodes, bool)
    seen[log.node[rows]] = True
    if not seen.all():
        raise ValueError(f"{log.source}: the first time's rows snapshot only {int(seen.sum())} of "
                         f"{log.num_nodes} nodes; the log must start with a full snapshot")
    return _apply_last(np.zeros(log.num_nodes, bool), log.node[rows], log.idle[rows])


def _apply_last(state: np.ndarray, node: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """Return `state` with, for each node, the value of its last row in (node, idle) applied."""
    out = state.copy()
    rev_nodes = node[::-1]
    uniq, first_in_rev = np.unique(rev_nodes, return_index=True)
    out[uniq] = idle[::-1][first_in_rev]
    return out


def start_time_of_row(log: NodeLog, row: int) -> int:
    """Time (ns) of row `row`, i.e. of the row-th distinct timestamp of the log."""
    times = np.unique(log.time_ns)
    if not 0 <= row < len(times):
        raise ValueError(f"{log.source}: start_row={row} is outside the log's {len(times)} rows")
    return int(times[row])


def slice_events(log: NodeLog, nodes: int | None = None, *, start_row: int = 1000,
                 start_time_ns: int | None = None) -> NodeEvents:
    """Events of the first `nodes` nodes (all when None) from row `start_row` (or `start_time_ns`)."""
    n = log.num_nodes if nodes is None else int(nodes)
    if not 0 < n <= log.num_nodes:
        raise ValueError(f"harvest.nodes={nodes}: must be between 1 and {log.num_nodes} (or 'all')")
    t0 = start_time_of_row(log, start_row) if start_time_ns is None else int(start_time_ns)
    in_slice = log.node < n
    state = _snapshot_state(log)[:n]
    before = np.flatnonzero(in_slice & (log.time_ns <= t0))
    state = _apply_last(state, log.node[before], log.idle[before])

    rows = np.flatnonzero(in_slice & (log.time_ns > t0))
    t, nd, val = log.time_ns[rows], log.node[rows], log.idle[rows]
    order = np.lexsort((t, nd))  # by node, then time; stable, so file order breaks ties
    t, nd, val = t[order], nd[order], val[order]
    # keep the last row of each (node, time): the state a wide table would show at that time
    last = np.ones(len(t), bool)
    last[:-1] = (nd[1:] != nd[:-1]) | (t[1:] != t[:-1])
    t, nd, val = t[last], nd[last], val[last]
    prev = np.empty(len(val), bool)
    if len(val):
        prev[1:] = val[:-1]
        first_of_node = np.ones(len(val), bool)
        first_of_node[1:] = nd[1:] != nd[:-1]
        prev[first_of_node] = state[nd[first_of_node]]
    real = val != prev
    t, nd, val = t[real], nd[real], val[real]
    order = np.lexsort((nd, t))
    t, nd, val = t[order], nd[order], val[order]
    ev_ns, starts = np.unique(t, return_index=True)
    times = np.concatenate([[0.0], (ev_ns - t0) / NS])
    ptr = np.concatenate([[0, 0], starts[1:], [len(t)]]).astype(np.int64) if len(t) else np.zeros(2, np.int64)
    return NodeEvents(t0, times, ptr, nd.astype(np.int32), val, state, log.names[:n])

