"""GPU state of one virtual cluster: its node pools, which job holds which GPU, occupancy counters."""

from __future__ import annotations

TEMP_NODE_NAME = 9999  # the reference's name for a node added on loan


class VCState:
    """The nodes of a VC's pools. A pool is `(gpu_type, gpus_per_node, nodes)` (see
    raysim.cluster.layout.Pool); a GPU holds one job, or two when they share it (colocation).

    Nodes are identified by an index; `order` lists the VC's current nodes in the order placers scan
    them (pools in layout order, a node added on loan at the end). `size[n]` is node n's GPU count
    and `type_of[n]` the index of its GPU type in `types` (the VC's GPU types in layout order).
    `name` is the reference's node name, used only by the Lucid-compatible rule for which node to
    give away. Allocation takes a node's lowest free GPUs. Free and total GPUs are also counted per
    GPU type (`type_free`, `type_total`).
    """

    def __init__(self, pools):
        self.pools = tuple(pools)
        if not self.pools:
            raise ValueError("a VC needs at least one node pool")
        self.types: list[str] = []
        for pool in self.pools:
            if pool.gpu_type not in self.types:
                self.types.append(pool.gpu_type)
        self.type_total = [0] * len(self.types)
        self.type_free = [0] * len(self.types)
        self.order: list[int] = []
        self.name: list[int] = []
        self.size: list[int] = []
        self.type_of: list[int] = []
        self.free: list[int] = []
        self.jobs_on: list[int] = []
        self.owner: list[list[int]] = []
        self.second: list[list[int]] = []
        self.gpu_util: list[list[int]] = []
        self.gpu_gmem: list[list[float]] = []
        self.total_gpus = 0
        self.free_gpus = 0
        for pool in self.pools:
            for _ in range(pool.nodes):
                self._new_node(pool.gpu_type, pool.gpus_per_node, name=len(self.size))
        self.max_node_gpus = max(p.gpus_per_node for p in self.pools)
        #: all nodes have one GPU type / one type and one size (placers' fast paths)
        self.single_type = len(self.types) == 1
        self.uniform = self.single_type and len({p.gpus_per_node for p in self.pools}) == 1
        self.nodes_one_job = 0
        self.nodes_multi_job = 0
        self.has_temp = False
        #: nodes this VC holds on loan from elsewhere (added by add_node)
        self.borrowed: set[int] = set()
        #: per-job placement: job index -> list of (node, [gpu ids])
        self.placement: dict[int, list[tuple[int, list[int]]]] = {}
        #: per-job (utilisation in milli-percent, memory MB) of the job alone
        self.load: dict[int, tuple[int, float]] = {}
        #: Sums over GPUs of the holders' utilisation (milli-percent) and memory (MB), kept exact.
        self.util_milli = 0
        self.gmem_mb = 0.0

    def _new_node(self, gpu_type: str, per: int, name: int) -> int:
        node = len(self.size)
        t = self.types.index(gpu_type)
        self.name.append(name)
        self.size.append(per)
        self.type_of.append(t)
        self.free.append(per)
        self.jobs_on.append(0)
        self.owner.append([-1] * per)
        self.second.append([-1] * per)
        self.gpu_util.append([0] * per)
        self.gpu_gmem.append([0.0] * per)
        self.order.append(node)
        self._capacity(node, per)
        return node

    def _capacity(self, node: int, delta: int) -> None:
        """Node `node` joins (+its GPUs) or leaves (-its GPUs) the VC; it must be idle."""
        t = self.type_of[node]
        self.total_gpus += delta
        self.free_gpus += delta
        self.type_total[t] += delta
        self.type_free[t] += delta

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
        for node, count in alloc:
            per = self.size[node]
            if count == per:  # a whole node: no per-GPU search
                if self.free[node] != per:
                    raise AssertionError(f"node {node} is not free for job {job}")
                ids = list(range(per))
                self.owner[node] = [job] * per
                self.gpu_util[node] = [util_milli] * per
                self.gpu_gmem[node] = [gmem] * per
                self.free[node] = 0
            else:
                gpus, gutil, ggmem = self.owner[node], self.gpu_util[node], self.gpu_gmem[node]
                ids = []
                for g in range(per):
                    if gpus[g] < 0:
                        gpus[g] = job
                        ids.append(g)
                        gutil[g], ggmem[g] = util_milli, gmem  # a free GPU carries no load
                        if len(ids) == count:
                            break
                if len(ids) != count:
                    raise AssertionError(f"node {node} lacks {count} free GPUs for job {job}")
                self.free[node] -= count
            self.util_milli += util_milli * count
            self.gmem_mb += gmem * count
            self._count_jobs(node, +1)
            placed.append((node, ids))
            self.free_gpus -= count
            self.type_free[self.type_of[node]] -= count
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
        for node, ids in self.placement.pop(job):
            per = self.size[node]
            owner, second = self.owner[node], self.second[node]
            if len(ids) == per and second[0] < 0 and second == [-1] * per:  # a whole unshared node
                self.util_milli -= sum(self.gpu_util[node])
                self.gmem_mb -= sum(self.gpu_gmem[node])
                self.owner[node] = [-1] * per
                self.gpu_util[node] = [0] * per
                self.gpu_gmem[node] = [0.0] * per
                self.free[node] = per
                self.free_gpus += per
                self.type_free[self.type_of[node]] += per
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
            self.type_free[self.type_of[node]] += freed
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

    def gpu_type_of(self, job: int) -> int:
        """Index (in `types`) of the GPU type running job `job` holds (a placement has one type)."""
        return self.type_of[self.placement[job][0][0]]

    def check(self) -> None:
        """Assert the occupancy counters agree with the per-GPU state (no GPU over-allocated)."""
        live = self.order
        free = [sum(1 for o in self.owner[n] if o < 0) for n in live]
        assert all(f == self.free[n] for f, n in zip(free, live)), "per-node free count is off"
        assert sum(self.free[n] for n in live) == self.free_gpus, "free GPU count is off"
        assert sum(self.size[n] for n in live) == self.total_gpus, "total GPU count is off"
        for t in range(len(self.types)):
            on = [n for n in live if self.type_of[n] == t]
            assert sum(self.free[n] for n in on) == self.type_free[t], f"free {self.types[t]} GPUs are off"
            assert sum(self.size[n] for n in on) == self.type_total[t], f"total {self.types[t]} GPUs are off"
        assert 0 <= self.free_gpus <= self.total_gpus

    # ------------------------------------------------------------------ node loans
    def lend_node(self, reference_naming: bool) -> bool:
        """Give away one idle node (for a profiler's temporary node). Returns False when none is idle.

        Reference naming (Lucid): the idle node with the largest name goes; once a temporary node
        exists, a regular idle node first swaps names with it, so the node that leaves is always
        called TEMP_NODE_NAME (the busy former temporary node keeps running under the regular name).
        Otherwise the last idle node in scan order goes (a borrowed node, if one is idle).
        """
        idle = [n for n in self.order if self.free[n] == self.size[n]]
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
        self.borrowed.discard(node)
        self._capacity(node, -self.size[node])
        return True

    def add_node(self, reference_naming: bool, pool=None) -> bool:
        """Take one node (back) from a loan, shaped like `pool` (default: the VC's first pool); it
        goes to the end of the node order.

        Reference naming: nothing happens if a node called TEMP_NODE_NAME is already there."""
        if reference_naming and any(self.name[n] == TEMP_NODE_NAME for n in self.order):
            return False
        pool = pool or self.pools[0]
        if pool.gpu_type not in self.types:
            self.types.append(pool.gpu_type)
            self.type_total.append(0)
            self.type_free.append(0)
        node = self._new_node(pool.gpu_type, pool.gpus_per_node,
                              name=TEMP_NODE_NAME if reference_naming else len(self.size))
        self.max_node_gpus = max(self.max_node_gpus, pool.gpus_per_node)
        self.single_type = len(self.types) == 1
        self.uniform = self.uniform and (pool.gpu_type, pool.gpus_per_node) == (self.types[0], self.size[0])
        self.borrowed.add(node)
        return True

    def borrowed_idle(self) -> bool:
        """Whether a node this VC holds on loan is idle."""
        return any(self.free[n] == self.size[n] for n in self.borrowed)
