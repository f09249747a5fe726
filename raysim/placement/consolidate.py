"""Consolidated placement: a job that fits on one node goes on one node, larger jobs on whole nodes."""

from __future__ import annotations

from raysim.placement import resources
from raysim.placement.types import check_type_order, nodes_of, type_groups
from raysim.placement.workers import place_workers


class Consolidate:
    """Best fit on one node for small jobs; whole nodes (+ one node for the remainder) for large ones.

    For each group of GPU types to try (see raysim.placement.types): a job of at most the largest
    node's GPUs goes on one node, the one with the fewest free GPUs that still fits it (ties: node
    order), and is never split. A larger job is placed within one pool (nodes of one GPU type and
    one size), pools in layout order; `params.multinode_search` selects the reference's scan (nodes
    by free GPUs descending, give up at the first obstacle) or a search of every node (any whole free
    nodes, remainder on the best-fitting other node).
    """

    def __init__(self, *, params, vc_index: int = 0, type_order: str = "any"):
        self.reference_multinode = params.multinode_search == "reference"
        self.type_order = check_type_order(type_order)

    def select(self, vc, demand):
        if demand.workers > 1:
            return place_workers(self, vc, demand)
        if vc.res is not None and not demand.whole_gpus_only:
            for types in type_groups(vc, demand, self.type_order):
                nodes = resources.candidates(vc, demand, types)
                if len(nodes):
                    return resources.entry(vc, resources.tightest(vc, nodes), demand)
            return None
        gpu_num = demand.gpu_num
        if vc.single_type:
            return self._select_in(vc, vc.order, gpu_num)
        for types in type_groups(vc, demand, self.type_order):
            alloc = self._select_in(vc, nodes_of(vc, types), gpu_num)
            if alloc is not None:
                return alloc
        return None

    @staticmethod
    def worker_node(free, nodes: list[int], gpus: int) -> int | None:
        """The node of `nodes` with the fewest `free` GPUs that still holds `gpus` (ties: the first
        in scan order): a job on one node, or one worker of a job (raysim.placement.workers)."""
        best, best_free = None, None
        for node in nodes:
            f = free[node]
            if gpus <= f and (best is None or f < best_free):
                best, best_free = node, f
                if f == gpus:
                    break
        return best

    def _select_in(self, vc, nodes: list[int], gpu_num: int):
        free, size = vc.free, vc.size
        if vc.uniform:
            largest = size[nodes[0]] if nodes else 0
        else:
            largest = max((size[n] for n in nodes), default=0)
        if gpu_num <= largest:
            best = self.worker_node(free, nodes, gpu_num)
            return None if best is None else [(best, gpu_num)]
        for per_node, pool in by_pool(vc, nodes):
            if self.reference_multinode:
                alloc = self._reference_multinode(free, pool, per_node, gpu_num)
            else:
                alloc = self._search_multinode(free, pool, per_node, gpu_num)
            if alloc is not None:
                return alloc
        return None

    @staticmethod
    def _reference_multinode(free, pool: list[int], per_node: int, gpu_num: int):
        nodes = sorted((n for n in pool if free[n] > 0), key=lambda n: -free[n])
        whole, rest = divmod(gpu_num, per_node)
        alloc = []
        if rest == 0:
            for node in nodes:
                if free[node] < per_node:
                    return None
                alloc.append((node, per_node))
                if len(alloc) == whole:
                    return alloc
            return None
        for node in nodes:
            if free[node] == per_node and len(alloc) < whole:
                alloc.append((node, per_node))
                continue
            if free[node] >= rest and len(alloc) == whole:
                alloc.append((node, rest))
                return alloc
            return None
        return None

    @staticmethod
    def _search_multinode(free, pool: list[int], per_node: int, gpu_num: int):
        whole, rest = divmod(gpu_num, per_node)
        full = [n for n in pool if free[n] == per_node]
        if len(full) < whole:
            return None
        alloc = [(n, per_node) for n in full[:whole]]
        if rest == 0:
            return alloc
        best, best_free = None, per_node + 1
        for node in pool:
            f = free[node]
            if rest <= f < best_free and f < per_node:
                best, best_free = node, f
        if best is None:
            if len(full) == whole:
                return None
            best = full[whole]
        alloc.append((best, rest))
        return alloc


def by_pool(vc, nodes: list[int]) -> list[tuple[int, list[int]]]:
    """`nodes` split into pools (one GPU type, one GPU count): (GPU count, the pool's nodes in scan
    order), pools by first appearance."""
    if vc.uniform:
        return [(vc.size[nodes[0]], nodes)] if nodes else []
    groups: dict[tuple[int, int], list[int]] = {}
    for n in nodes:
        groups.setdefault((vc.type_of[n], vc.size[n]), []).append(n)
    return [(size, pool) for (_, size), pool in groups.items()]
