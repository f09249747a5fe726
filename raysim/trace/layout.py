"""VC layouts that readers derive themselves (from the trace, a Helios GPU-number file or an openb
node list) and record in the table's metadata."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import Layout, Pool
from raysim.trace.schema import metadata


def peak_gpus(vc, start, end, gpus) -> dict[str, int]:
    """Most GPUs in use at once in each VC, over run intervals [start, end).

    An interval ending at the moment another starts does not overlap it. Vectorised: one sort of the
    2n start/end events by (VC, time, ends first) and one cumulative sum.
    """
    codes, names = pd.factorize(pd.Series(vc, dtype=object))
    if not len(names):
        return {}
    gpus = np.asarray(gpus, dtype=np.int64)
    t = np.concatenate([np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)])
    delta = np.concatenate([gpus, -gpus])
    group = np.concatenate([codes, codes])
    order = np.lexsort((delta, t, group))
    level = np.cumsum(delta[order])  # each VC's deltas sum to 0, so the sum restarts at every VC
    first = np.flatnonzero(np.diff(group[order], prepend=-1))
    return dict(zip(names, np.maximum.reduceat(level, first).tolist()))


def nodes_from_gpus(gpus: dict[str, int], gpus_per_node: int) -> dict[str, int]:
    """VC -> nodes: GPUs / gpus_per_node rounded up, at least one node."""
    return {vc: max(1, math.ceil(int(g) / gpus_per_node)) for vc, g in gpus.items()}


def trace_layout(vc, start, end, gpus, job_vc, job_gpus, gpus_per_node: int) -> dict[str, int]:
    """Nodes per VC from the trace: enough for the VC's peak concurrent GPU use (from run intervals)
    and for its largest job, rounded up to whole nodes."""
    need = peak_gpus(vc, start, end, gpus)
    largest = pd.Series(np.asarray(job_gpus, dtype=np.int64)).groupby(
        pd.Series(job_vc, dtype=object)).max()
    for name, g in largest.items():
        need[name] = max(need.get(name, 0), int(g))
    return nodes_from_gpus(dict(sorted(need.items())), gpus_per_node)


def with_layout(table: pa.Table, vc_nodes: dict[str, int]) -> pa.Table:
    """Record the VC layout a reader used in the table's raysim metadata (key ``vc_nodes``)."""
    meta = {**metadata(table), "vc_nodes": {k: int(v) for k, v in vc_nodes.items()}}
    return table.replace_schema_metadata({b"raysim": json.dumps(meta, sort_keys=True).encode()})


def with_pools(table: pa.Table, layout: Layout) -> pa.Table:
    """Record typed node pools a reader derived (key ``pools``: VC -> [[gpu_type, gpus_per_node,
    nodes(, cpu_milli, memory_mib)], ...]) and their node counts (key ``vc_nodes``)."""
    table = with_layout(table, {vc: sum(p.nodes for p in pools) for vc, pools in layout.items()})
    pools = {vc: [[p.gpu_type, p.gpus_per_node, p.nodes] + ([p.cpu_milli, p.memory_mib] if p.limits_resources else [])
                  for p in pools] for vc, pools in layout.items()}
    meta = {**metadata(table), "pools": pools}
    return table.replace_schema_metadata({b"raysim": json.dumps(meta, sort_keys=True).encode()})


def recorded_pools(table: pa.Table) -> Layout | None:
    """The typed node pools recorded by :func:`with_pools`, or None."""
    pools = metadata(table).get("pools")
    return None if pools is None else {vc: tuple(Pool(t, int(g), int(n), *rest) for t, g, n, *rest in entries)
                                       for vc, entries in pools.items()}
