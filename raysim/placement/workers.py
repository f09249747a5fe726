"""Worker-by-worker placement: a job of several equal workers (a trace's `workers` column).

Each worker's GPUs go on one node, and several workers may share a node, as GFS's simulator places
a spot job (`consolidateSpot.place`: worker by worker, each on the node its scheduler score ranks
first). A placer that can (consolidate, first_fit, random) hands such a job from its `select` to
`place_workers`, which asks it each worker's node as if the worker were a job of its own
(`worker_node`: its one-node rule, over the GPUs the workers before it left free); a run refuses a
trace with the column under a placer without that capability (raysim.run.workers).
Every worker is of one GPU type: the types are tried one at a time (raysim.placement.types; "any"
as "given"), the first where every worker finds a node wins. The placement is all or nothing: a job
whose last worker finds no node holds no GPUs (GFS keeps the workers it placed, and their GPUs, until
the rest fit).
"""

from __future__ import annotations

from raysim.placement.types import nodes_of, type_groups


def places_workers(placer) -> bool:
    """Whether `placer` places jobs worker by worker (it has `worker_node`)."""
    return callable(getattr(placer, "worker_node", None))


def place_workers(placer, vc, demand) -> list[tuple[int, int]] | None:
    """`demand.workers` workers of `demand.gpu_num / workers` GPUs each, one node per worker (the
    placer's `worker_node`, worker by worker): (node, GPUs) entries, one per node in the order the
    workers took them; None where some worker finds no node."""
    per = demand.gpu_num // demand.workers
    order = getattr(placer, "type_order", "any")
    groups = [None] if vc.single_type else type_groups(vc, demand, "given" if order == "any" else order)
    for types in groups:
        nodes = vc.order if types is None else nodes_of(vc, types)
        free, taken = list(vc.free), {}
        for _ in range(demand.workers):
            node = placer.worker_node(free, nodes, per)
            if node is None:
                break
            free[node] -= per
            taken[node] = taken.get(node, 0) + per
        else:
            return list(taken.items())
    return None
