"""Consolidated placement: a job of <= one node's GPUs on a single node, larger jobs on whole nodes."""

from __future__ import annotations


class Consolidate:
    """Best fit on one node for small jobs; whole nodes (+ one node for the remainder) for large ones.

    Small jobs (<= gpus_per_node): among nodes with a free GPU, the one with the fewest free GPUs
    that still fits the job (ties: node order). Large jobs: `params.multinode_search` selects the
    reference's scan (nodes by free GPUs descending, give up at the first obstacle) or a search of
    every node (any whole free nodes, remainder on the best-fitting other node).
    """

    def __init__(self, *, params, vc_index: int = 0):
        self.reference_multinode = params.multinode_search == "reference"

    def select(self, vc, gpu_num: int):
        per_node = vc.gpus_per_node
        free = vc.free
        if gpu_num <= per_node:
            best, best_free = None, per_node + 1
            for node in vc.order:
                f = free[node]
                if gpu_num <= f < best_free:
                    best, best_free = node, f
                    if f == gpu_num:
                        break
            return None if best is None else [(best, gpu_num)]
        if self.reference_multinode:
            return self._reference_multinode(vc, gpu_num)
        return self._search_multinode(vc, gpu_num)

    @staticmethod
    def _reference_multinode(vc, gpu_num: int):
        per_node = vc.gpus_per_node
        nodes = sorted((n for n in vc.order if vc.free[n] > 0), key=lambda n: -vc.free[n])
        whole, rest = divmod(gpu_num, per_node)
        alloc = []
        if rest == 0:
            for node in nodes:
                if vc.free[node] < per_node:
                    return None
                alloc.append((node, per_node))
                if len(alloc) == whole:
                    return alloc
            return None
        for node in nodes:
            if vc.free[node] == per_node and len(alloc) < whole:
                alloc.append((node, per_node))
                continue
            if vc.free[node] >= rest and len(alloc) == whole:
                alloc.append((node, rest))
                return alloc
            return None
        return None

    @staticmethod
    def _search_multinode(vc, gpu_num: int):
        per_node = vc.gpus_per_node
        whole, rest = divmod(gpu_num, per_node)
        full = [n for n in vc.order if vc.free[n] == per_node]
        if len(full) < whole:
            return None
        alloc = [(n, per_node) for n in full[:whole]]
        if rest == 0:
            return alloc
        best, best_free = None, per_node + 1
        for node in vc.order:
            f = vc.free[node]
            if rest <= f < best_free and f < per_node:
                best, best_free = node, f
        if best is None:
            if len(full) == whole:
                return None
            best = full[whole]
        alloc.append((best, rest))
        return alloc
