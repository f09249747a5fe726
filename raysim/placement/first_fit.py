"""First fit in node order, splitting a job freely across nodes (the reference's "random" placer)."""

from __future__ import annotations

from raysim.placement import resources
from raysim.placement.types import check_type_order, nodes_of, type_groups
from raysim.placement.workers import place_workers


class FirstFit:
    """Take free GPUs node by node in node order until the job has enough, within one GPU type
    (types tried as `type_order` says; with "any", in layout order). A job that asks for a GPU
    share, CPU or memory goes on the first node (in index order) where it fits; each worker of a job
    of several workers on the first node where it fits (`worker_node`, raysim.placement.workers)."""

    def __init__(self, *, params, vc_index: int = 0, type_order: str = "any"):
        self.type_order = check_type_order(type_order)

    def select(self, vc, demand):
        if demand.workers > 1:
            return place_workers(self, vc, demand)
        if vc.res is not None and not demand.whole_gpus_only:
            for types in type_groups(vc, demand, "given" if self.type_order == "any" else self.type_order):
                nodes = resources.candidates(vc, demand, types)
                if len(nodes):
                    return resources.entry(vc, nodes[0], demand)
            return None
        if vc.single_type:
            return fill_in_order(vc, vc.order, demand.gpu_num)
        order = "given" if self.type_order == "any" else self.type_order
        for types in type_groups(vc, demand, order):
            alloc = fill_in_order(vc, nodes_of(vc, types), demand.gpu_num)
            if alloc is not None:
                return alloc
        return None

    @staticmethod
    def worker_node(free, nodes: list[int], gpus: int) -> int | None:
        """The first node of `nodes` with `gpus` GPUs `free` (None: none)."""
        return next((node for node in nodes if free[node] >= gpus), None)


def fill_in_order(vc, nodes, gpu_num: int):
    """Allocate from `nodes` in the given order, as many GPUs per node as it has free."""
    alloc, need = [], gpu_num
    for node in nodes:
        f = vc.free[node]
        if f == 0:
            continue
        take = min(f, need)
        alloc.append((node, take))
        need -= take
        if need == 0:
            return alloc
    return None
