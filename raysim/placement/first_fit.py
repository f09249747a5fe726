"""First fit in node order, splitting a job freely across nodes (the reference's "random" placer)."""

from __future__ import annotations


class FirstFit:
    """Take free GPUs node by node in node order until the job has enough."""

    def __init__(self, *, params, vc_index: int = 0):
        pass

    def select(self, vc, gpu_num: int):
        return fill_in_order(vc, vc.order, gpu_num)


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
