"""Failures replayed from a file (`failures=trace failures.path=<file>`, docs/failures.md).

A failure trace is a CSV or Parquet file with one row per failure and the columns

- ``time``: integer seconds on the trace clock (>= 0) when the node fails;
- ``vc``: the VC whose node it is; ``node``: its index within the VC (0-based, pools in layout order);
- ``category``: a category of `failures.kinds`, which says whether the node goes ``down`` or only
  its jobs ``restart``; it is the cause counted per job;
- ``repair_s`` (empty: 0): seconds a ``down`` node takes to come back (0: at once); 0 or empty
  for a ``restart`` category.

Rows may come in any order; failures of one second apply in file order. A node cannot fail while it
is down (before its repair ends). A bad row is one line naming the file, row and column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raysim.sim.capacity import DOWN, LARGEST, RESTART, UP, LogStream, node_counts, read_event_table, whole_numbers
from raysim.sim.failures import MergesLog, node_homes, with_log
from raysim.errors import TraceError

#: A failure trace's columns.
COLUMNS = ("time", "vc", "node", "category", "repair_s")


def read_failure_trace(path, layout: dict, kinds: dict, causes: tuple) -> dict[tuple[str, int], list]:
    """The failures of trace `path` on `layout` (VC -> pools), per (VC, node): its events (time, rank,
    kind, cause index) in order, the rank a row's place in the file, causes indexed in `causes`;
    `kinds`: category -> "down" or "restart". A bad row raises TraceError naming the file, row and
    column."""
    table, source = read_event_table(path, "failures.path", "a failure trace", COLUMNS)
    if not table.num_rows:
        raise TraceError(source, "no failures: a failure trace has one row per failure (failures=none: a run "
                                 "without failures)")
    times = whole_numbers(table.column("time"), source, "time", minimum=0)
    nodes = whole_numbers(table.column("node"), source, "node", minimum=0)
    repairs = whole_numbers(table.column("repair_s"), source, "repair_s", minimum=0, empty=0)
    counts = node_counts(layout)
    vcs = [None if v is None else str(v) for v in table.column("vc").to_pylist()]
    categories = [None if v is None else str(v).strip() for v in table.column("category").to_pylist()]
    for i, (vc, node, category, repair) in enumerate(zip(vcs, nodes.tolist(), categories, repairs.tolist())):
        if vc not in counts:
            raise TraceError(source, "not a VC of the run's cluster", row=i + 1, column="vc", value=vc)
        if node >= counts[vc]:
            raise TraceError(source, f"VC {vc} has {counts[vc]} node(s), numbered from 0", row=i + 1,
                             column="node", value=node)
        if category not in kinds:
            raise TraceError(source, f"not a category of failures.kinds ({', '.join(kinds)})", row=i + 1,
                             column="category", value=category)
        if kinds[category] == "restart" and repair:
            raise TraceError(source, f"category {category} only restarts jobs: its node is never down",
                             row=i + 1, column="repair_s", value=repair)
        if times[i] + repair > LARGEST:
            raise TraceError(source, f"the repair ends after {LARGEST:.0e} s", row=i + 1, column="repair_s",
                             value=repair)
    out: dict[tuple[str, int], list] = {}
    up_at: dict[tuple[str, int], int] = {}
    for i in np.argsort(times, kind="stable").tolist():
        key, t, cause = (vcs[i], int(nodes[i])), int(times[i]), causes.index(categories[i])
        if t < up_at.get(key, 0):
            raise TraceError(source, f"node {key[1]} of VC {key[0]} is down until {up_at[key]} s", row=i + 1,
                             column="time", value=t)
        events = out.setdefault(key, [])
        if kinds[categories[i]] == "restart":
            events.append((t, i, RESTART, cause))
            continue
        up_at[key] = t + int(repairs[i])
        events += [(t, i, DOWN, cause), (up_at[key], i, UP, cause)]
    return out


def traced_vcs(by_node: dict, layout: dict, homes: tuple, causes: tuple, logs: dict, jobs: dict) -> dict:
    """Per VC of `layout`, its capacity under the failure trace `by_node` ((VC, node) -> events, as
    read_failure_trace gives, nodes named by their own VC, merged ones where `homes` says so), with
    its node log's (`logs`: VC -> raysim.sim.capacity.VCCapacity) merged in; `jobs`: trace jobs per VC."""
    out = {}
    for vc, pools in layout.items():
        own = node_homes(vc, pools, homes)
        out[vc] = TracedVC({n: tuple(by_node[home]) for n, home in enumerate(own) if home in by_node}, causes,
                           logs.get(vc), int(jobs.get(vc, 0)))
    return out


@dataclass(frozen=True)
class TracedVC(MergesLog):
    """One VC's capacity under a failure trace (the engine's per-VC capacity: `stream(node)`,
    `absent`, `jobs`): each node's replayed failures (`by_node`: node -> events), merged with the
    VC's node log (`log`, or None)."""

    by_node: dict
    causes: tuple
    log: object = None
    jobs: int = 0

    def stream(self, node: int):
        mine = self.by_node.get(node)
        return with_log(LogStream(mine) if mine else None, self.log, node)
