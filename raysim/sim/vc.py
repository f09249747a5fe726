"""GPU state of one virtual cluster: nodes, which job holds which GPU, and occupancy counters."""

from __future__ import annotations


TEMP_NODE_NAME = 9999  # the reference's name for a node added on loan


class VCState:
    """Nodes of `gpus_per_node` GPUs. A GPU holds one job, or two when they share it (colocation).

    Nodes are identified by an index; `order` lists the VC's current nodes in the order placers scan
    them (a node added on loan goes to the end). `name` is the reference's node name, used only by
    the Lucid-compatible rules for which node to give away. Allocation takes a node's lowest free GPUs.
    """

    def __init__(self, num_nodes: int, gpus_per_node: int = 8):
        self.gpus_per_node = gpus_per_node
        self.order: list[int] = list(range(num_nodes))
        self.name: list[int] = list(range(num_nodes))
        self.free: list[int] = [gpus_per_node] * num_nodes
        self.jobs_on: list[int] = [0] * num_nodes
        self.owner: list[list[int]] = [[-1] * gpus_per_node for _ in range(num_nodes)]
        self.second: list[list[int]] = [[-1] * gpus_per_node for _ in range(num_nodes)]
        self.gpu_util: list[list[int]] = [[0] * gpus_per_node for _ in range(num_nodes)]
        self.gpu_gmem: list[list[float]] = [[0.0] * gpus_per_node for _ in range(num_nodes)]
        self.total_gpus = num_nodes * gpus_per_node
        self.free_gpus = self.total_gpus
        self.nodes_one_job = 0
        self.nodes_multi_job = 0
        self.has_temp = False
        #: per-job placement: job index -> list of (node, [gpu ids])
        self.placement: dict[int, list[tuple[int, list[int]]]] = {}
        #: per-job (utilisation in milli-percent, memory MB) of the job alone
        self.load: dict[int, tuple[int, float]] = {}
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

    def _set_gpu_load(self, node: int, g: int, util_milli: int, gmem: float) -> None:
        self.util_milli += util_milli - self.gpu_util[node][g]
        self.gmem_mb += gmem - self.gpu_gmem[node][g]
        self.gpu_util[node][g] = util_milli
        self.gpu_gmem[node][g] = gmem

    def allocate(self, job: int, alloc: list[tuple[int, int]], util_milli: int, gmem: float) -> None:
        """Give `job` the requested GPU counts on each node of `alloc` (lowest free GPU ids first)."""
        placed = []
        per = self.gpus_per_node
        for node, count in alloc:
            if count == per:  # a whole node: no per-GPU search
                if self.free[node] != per:
                    raise AssertionError(f"node {node} is not free for job {job}")
                ids = list(range(per))
                self.owner[node] = [job] * per
                self.gpu_util[node] = [util_milli] * per
                self.gpu_gmem[node] = [gmem] * per
                self.free[node] = 0
                self._count_jobs(node, +1)
                placed.append((node, ids))
                self.free_gpus -= per
                self.util_milli += util_milli * per
                self.gmem_mb += gmem * per
                continue
            gpus, gutil, ggmem = self.owner[node], self.gpu_util[node], self.gpu_gmem[node]
            ids = []
            for g in range(self.gpus_per_node):
                if gpus[g] < 0:
                    gpus[g] = job
                    ids.append(g)
                    gutil[g], ggmem[g] = util_milli, gmem  # a free GPU carries no load
                    if len(ids) == count:
                        break
            if len(ids) != count:
                raise AssertionError(f"node {node} lacks {count} free GPUs for job {job}")
            self.util_milli += util_milli * count
            self.gmem_mb += gmem * count
            self.free[node] -= count
            self._count_jobs(node, +1)
            placed.append((node, ids))
            self.free_gpus -= count
        self.placement[job] = placed
        self.load[job] = (util_milli, gmem)

    def share(self, job: int, host: int, util_milli: int, gmem: float, pair_util_milli: int, pair_gmem: float) -> None:
        """Put `job` on exactly the GPUs of running job `host` (colocation; each GPU then holds two)."""
        placed = []
        for node, ids in self.placement[host]:
            for g in ids:
                if self.second[node][g] >= 0:
                    raise AssertionError(f"GPU {g} of node {node} already holds two jobs")
                self.second[node][g] = job
                self._set_gpu_load(node, g, pair_util_milli, pair_gmem)
            self._count_jobs(node, +1)
            placed.append((node, list(ids)))
        self.placement[job] = placed
        self.load[job] = (util_milli, gmem)

    def release(self, job: int) -> None:
        """Free every GPU `job` holds (a GPU it shared goes back to the other job alone)."""
        per = self.gpus_per_node
        for node, ids in self.placement.pop(job):
            owner, second = self.owner[node], self.second[node]
            if len(ids) == per and second[0] < 0 and second == [-1] * per:  # a whole unshared node
                self.util_milli -= sum(self.gpu_util[node])
                self.gmem_mb -= sum(self.gpu_gmem[node])
                self.owner[node] = [-1] * per
                self.gpu_util[node] = [0] * per
                self.gpu_gmem[node] = [0.0] * per
                self.free[node] = per
                self.free_gpus += per
                self._count_jobs(node, -1)
                continue
            gutil, ggmem, freed = self.gpu_util[node], self.gpu_gmem[node], 0
            for g in ids:
                if owner[g] == job:
                    owner[g], second[g] = second[g], -1
                elif second[g] == job:
                    second[g] = -1
                else:
                    raise AssertionError(f"job {job} does not hold GPU {g} of node {node}")
                if owner[g] < 0:
                    freed += 1
                    self.util_milli -= gutil[g]
                    self.gmem_mb -= ggmem[g]
                    gutil[g], ggmem[g] = 0, 0.0
                else:
                    self._set_gpu_load(node, g, *self.load[owner[g]])
            self.free[node] += freed
            self.free_gpus += freed
            self._count_jobs(node, -1)
        del self.load[job]
        if self.free_gpus == self.total_gpus:
            self.gmem_mb = 0.0  # drop float residue once the VC is empty

    def renumber(self, new: list[int]) -> None:
        """Job j is now called new[j] (see VCSimulator.forget_finished); only running jobs hold GPUs."""
        self.owner = [[new[j] if j >= 0 else -1 for j in gpus] for gpus in self.owner]
        self.second = [[new[j] if j >= 0 else -1 for j in gpus] for gpus in self.second]
        self.placement = {new[j]: alloc for j, alloc in self.placement.items()}
        self.load = {new[j]: load for j, load in self.load.items()}

    # ------------------------------------------------------------------ node loans
    def lend_node(self, reference_naming: bool) -> bool:
        """Give away one idle node (for a profiler's temporary node). Returns False when none is idle.

        Reference naming (Lucid): the idle node with the largest name goes; once a temporary node
        exists, a regular idle node first swaps names with it, so the node that leaves is always
        called TEMP_NODE_NAME (the busy former temporary node keeps running under the regular name).
        """
        per = self.gpus_per_node
        idle = [n for n in self.order if self.free[n] == per]
        if not idle:
            return False
        if reference_naming:
            node = max(idle, key=lambda n: self.name[n])
            if self.name[node] < TEMP_NODE_NAME and self.has_temp:
                temp = next(n for n in self.order if self.name[n] == TEMP_NODE_NAME)
                self.name[temp], self.name[node] = self.name[node], TEMP_NODE_NAME
            self.has_temp = True
        else:
            node = idle[-1]
        self.order.remove(node)
        self.total_gpus -= per
        self.free_gpus -= per
        return True

    def add_node(self, reference_naming: bool) -> bool:
        """Take one node (back) from a loan; it goes to the end of the node order.

        Reference naming: nothing happens if a node called TEMP_NODE_NAME is already there."""
        if reference_naming and any(self.name[n] == TEMP_NODE_NAME for n in self.order):
            return False
        per = self.gpus_per_node
        node = len(self.free)
        self.name.append(TEMP_NODE_NAME if reference_naming else node)
        self.free.append(per)
        self.jobs_on.append(0)
        self.owner.append([-1] * per)
        self.second.append([-1] * per)
        self.gpu_util.append([0] * per)
        self.gpu_gmem.append([0.0] * per)
        self.order.append(node)
        self.total_gpus += per
        self.free_gpus += per
        return True
