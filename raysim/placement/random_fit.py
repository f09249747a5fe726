"""A genuinely random placer: nodes tried in a seeded random order."""

from __future__ import annotations

import numpy as np

from raysim.placement import resources
from raysim.placement.first_fit import fill_in_order
from raysim.placement.types import check_type_order, type_groups
from raysim.placement.workers import place_workers


class RandomFit:
    """A job that fits on one node goes to a random node (of an allowed type) that can hold it
    whole; otherwise GPUs are taken from nodes in a random order, within one GPU type (types in the
    order `type_order` says; with "any", by their first node in the random order). The generator
    is seeded with (seed, VC index), so results are reproducible and independent of how VCs are
    spread over processes. A job that asks for a GPU share, CPU or memory goes to a random node
    where it fits (among all its allowed types with "any", else type by type). Each worker of a job
    of several workers goes to a random node where it fits (`worker_node`, raysim.placement.workers)."""

    def __init__(self, *, params, vc_index: int = 0, type_order: str = "any"):
        self.rng = np.random.default_rng([params.seed, vc_index])
        self.type_order = check_type_order(type_order)

    def select(self, vc, demand):
        if demand.workers > 1:
            return place_workers(self, vc, demand)
        if vc.res is not None and not demand.whole_gpus_only:
            for types in type_groups(vc, demand, self.type_order):
                nodes = resources.candidates(vc, demand, types)
                if len(nodes):
                    return resources.entry(vc, nodes[int(self.rng.integers(len(nodes)))], demand)
            return None
        gpu_num, type_of = demand.gpu_num, vc.type_of
        allowed = None if demand.types is None else demand.types
        if gpu_num <= vc.max_node_gpus:
            fits = [n for n in vc.order if vc.free[n] >= gpu_num and (allowed is None or type_of[n] in allowed)]
            if fits:
                return [(fits[int(self.rng.integers(len(fits)))], gpu_num)]
        nodes = [vc.order[i] for i in self.rng.permutation(len(vc.order))]
        if vc.single_type:
            return fill_in_order(vc, nodes, gpu_num)
        groups = type_groups(vc, demand, "given" if self.type_order == "any" else self.type_order)
        if self.type_order == "any":
            first = {}
            for n in nodes:
                first.setdefault(type_of[n], len(first))
            groups.sort(key=lambda g: first.get(next(iter(g)), len(first)))
        for types in groups:
            alloc = fill_in_order(vc, [n for n in nodes if type_of[n] in types], gpu_num)
            if alloc is not None:
                return alloc
        return None

    def worker_node(self, free, nodes: list[int], gpus: int) -> int | None:
        """A random node of `nodes` with `gpus` GPUs `free` (None: none)."""
        fits = [node for node in nodes if free[node] >= gpus]
        return fits[int(self.rng.integers(len(fits)))] if fits else None
