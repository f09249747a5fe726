"""Placement of jobs that ask for a GPU share, CPU or memory, on a VC that counts them (VCState.res).

Such a job runs on one node: the node must have its CPU and memory free and either `gpu_num` fully
free GPUs or one GPU with `milli` free (raysim.cluster.resources.ResourceState.feasible). The placers of
raysim.placement use these helpers for such jobs (whole-GPU jobs keep their GPU-count rules):
`candidates` lists the feasible nodes of a group of GPU types in index order, `entry` turns a chosen
node into a placement entry naming its GPUs. Inside a node, whole GPUs are the lowest-numbered free
ones and a share goes to the GPU with the least free milli that still fits it (lowest index among
equals), as FGD's reference does.
"""

from __future__ import annotations

import numpy as np

from raysim.cluster.resources import MILLI


def candidates(vc, demand, types: frozenset | None = None) -> np.ndarray:
    """Indices (ascending) of the nodes of GPU types `types` (None: any) where `demand` fits now."""
    res = vc.res
    mask = res.feasible(demand.cpu, demand.mem, demand.gpu_num, demand.milli)
    if types is not None and len(types) < len(vc.types):
        mask &= res.of_models(types)
    return np.flatnonzero(mask)


def best_fit_gpus(res, node: int, num_gpu: int, gpu_milli: int) -> tuple[int, ...]:
    """The GPUs of `node` a request takes (the reference's ``allocateGpuIdBasedOnBestFit``): a share
    goes to the fitting GPU with the least free milli (lowest index among equals); whole GPUs are
    the lowest-numbered free ones; a CPU-only request takes none."""
    if num_gpu == 0:
        return ()
    if gpu_milli >= MILLI:
        return res.first_free(node, num_gpu)
    row = res.gpu_left[node]
    return (int(np.argmin(np.where(row >= gpu_milli, row, 2 * MILLI + 1))),)


def entry(vc, node: int, demand) -> list[tuple[int, int, tuple[int, ...]]]:
    """The placement of `demand` on `node`: one (node, GPU count, GPU ids) entry."""
    node = int(node)
    return [(node, demand.gpu_num, best_fit_gpus(vc.res, node, demand.gpu_num, demand.milli))]


def tightest(vc, nodes: np.ndarray) -> int:
    """The node of `nodes` with the fewest fully free GPUs, then the least free GPU milli, then the
    least free CPU (ties: the lowest index): where a job leaves the fewest resources idle."""
    res = vc.res
    order = np.lexsort((nodes, res.cpu_left[nodes], res.left_total[nodes], res.n_free[nodes]))
    return int(nodes[order[0]])
