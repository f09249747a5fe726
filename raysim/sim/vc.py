"""GPU state of one virtual cluster: nodes, which job holds which GPU, and occupancy counters."""

from __future__ import annotations


class VCState:
    """Nodes of `gpus_per_node` GPUs. A GPU holds at most one job (colocation comes with Lucid).

    Nodes are identified by their index; `order` is the node list order that placers scan.
    Allocation always takes a node's lowest-numbered free GPUs.
    """

    def __init__(self, num_nodes: int, gpus_per_node: int = 8):
        self.gpus_per_node = gpus_per_node
        self.order: list[int] = list(range(num_nodes))
        self.free: list[int] = [gpus_per_node] * num_nodes
        self.jobs_on: list[int] = [0] * num_nodes
        self.owner: list[list[int]] = [[-1] * gpus_per_node for _ in range(num_nodes)]
        self.total_gpus = num_nodes * gpus_per_node
        self.free_gpus = self.total_gpus
        self.nodes_one_job = 0
        self.nodes_multi_job = 0
        #: per-job placement: job index -> list of (node, [gpu ids])
        self.placement: dict[int, list[tuple[int, list[int]]]] = {}
        #: Sums over GPUs of the holders' utilisation (milli-percent) and memory (MB), kept exact.
        self.util_milli = 0
        self.gmem_mb = 0.0

    @property
    def num_nodes(self) -> int:
        return len(self.order)

    def _count_jobs(self, node: int, delta: int) -> None:
        before = self.jobs_on[node]
        after = before + delta
        self.jobs_on[node] = after
        self.nodes_one_job += (after == 1) - (before == 1)
        self.nodes_multi_job += (after >= 2) - (before >= 2)

    def allocate(self, job: int, alloc: list[tuple[int, int]], util_milli: int, gmem: float) -> None:
        """Give `job` the requested GPU counts on each node of `alloc` (lowest free GPU ids first)."""
        placed = []
        for node, count in alloc:
            gpus = self.owner[node]
            ids = []
            for g in range(self.gpus_per_node):
                if gpus[g] < 0:
                    gpus[g] = job
                    ids.append(g)
                    if len(ids) == count:
                        break
            if len(ids) != count:
                raise AssertionError(f"node {node} lacks {count} free GPUs for job {job}")
            self.free[node] -= count
            self._count_jobs(node, +1)
            placed.append((node, ids))
            self.free_gpus -= count
            self.util_milli += util_milli * count
            self.gmem_mb += gmem * count
        self.placement[job] = placed

    def release(self, job: int, util_milli: int, gmem: float) -> None:
        """Free every GPU `job` holds."""
        for node, ids in self.placement.pop(job):
            gpus = self.owner[node]
            for g in ids:
                gpus[g] = -1
            self.free[node] += len(ids)
            self._count_jobs(node, -1)
            self.free_gpus += len(ids)
            self.util_milli -= util_milli * len(ids)
            self.gmem_mb -= gmem * len(ids)
        if self.free_gpus == self.total_gpus:
            self.gmem_mb = 0.0  # drop float residue once the VC is empty
