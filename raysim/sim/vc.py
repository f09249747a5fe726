"""GPU state of one virtual cluster: its node pools, which job holds which GPU, occupancy counters."""

from __future__ import annotations

import bisect
import heapq


from raysim.cluster.resources import MILLI, Nodes, ResourceState
from raysim.sim.lifecycle import ABSENT, AWAY, BUSY_MOVES, COUNTED, DRAINING, OUT_OF_SERVICE, UP, next_state

TEMP_NODE_NAME = 9999  # the reference's name for a node added on loan
#: owner of a GPU that holds shares of fractional jobs (free GPUs are -1, whole ones their job)
SHARED = -2
#: capacity of a resource a pool does not limit (CPU or memory of a layout that lists GPUs only)
UNLIMITED = 1 << 50


def res_used(res: ResourceState) -> int:
    """GPU milli allocated on a resource state, recounted."""
    return int(res.nodes.num_gpu.sum()) * MILLI - int(res.left_total.sum())


class VCState:
    """The nodes of a VC's pools. A pool is `(gpu_type, gpus_per_node, nodes)` (see
    raysim.cluster.layout.Pool); a GPU holds one job, or two when they share it (colocation).

    Nodes are identified by an index; `order` lists the VC's current nodes in the order placers scan
    them (pools in layout order, a node added on loan at the end; or as the run's host selection,
    `host_order`, keeps it). `size[n]` is node n's GPU count
    and `type_of[n]` the index of its GPU type in `types` (the VC's GPU types in layout order).
    `name` is the reference's node name, used only by the Lucid-compatible rule for which node to
    give away. Allocation takes a node's lowest free GPUs. Free and total GPUs are also counted per
    GPU type (`type_free`, `type_total`).

    With `resources` (a run whose jobs ask for GPU shares, CPU or memory, or whose pools limit CPU
    and memory), `res` (raysim.cluster.resources.ResourceState) also holds every node's CPU, memory and
    free milli per GPU: a job then asks for whole GPUs or a share of one GPU (`milli` < 1000), plus
    CPU and memory on its node. `free[n]` always counts node n's fully free GPUs, so whole-GPU
    placement reads the same counters with or without `res`; a GPU holding shares is owned by
    SHARED. Jobs that ask for CPU or memory run on one node. Without `resources`, `res` is None
    and only GPUs are counted (the fast path of the Venus and Helios replays).

    Every node has one lifecycle state (`state[n]`, raysim.sim.lifecycle: absent, up, down,
    draining, lent, lent_down, repair, spare), and `change` is the one function that moves a node
    between states; capacity events, quota lending and Lucid's profiling pool are its producers.
    Only `up` nodes are in the scan order; `up` and `draining` ones (a held node going back: no
    new job, counted until its last job ends) are in the GPU totals. `down`, `lent` and `draining`
    index the states; `held` tags the nodes held on loan from another VC (raysim.quota.ledger),
    whose freed slots (`slots`) the next held node of that shape reuses. With `res`, a node takes
    pods only while it is up (`res.present`).
    """

    #: the rule that keeps the scan order (raysim.sim.host_selection.HostOrder); None: nodes in their place
    host_order = None

    def __init__(self, pools, resources: bool = False):
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
        #: per node: its lifecycle state (raysim.sim.lifecycle) and the cause of its latest change
        self.state: list[int] = []
        self.cause: list[str] = []
        for pool in self.pools:
            for _ in range(pool.nodes):
                node = self._new_node(pool.gpu_type, pool.gpus_per_node, name=len(self.size))
                self.state[node] = UP  # (the run starts with its own nodes up: not a change)
                self.order.append(node)
                self._capacity(node, pool.gpus_per_node)
        self.max_node_gpus = max(p.gpus_per_node for p in self.pools)
        #: all nodes have one GPU type / one type and one size (placers' fast paths)
        self.single_type = len(self.types) == 1
        self.uniform = self.single_type and len({p.gpus_per_node for p in self.pools}) == 1
        self.nodes_one_job = 0
        self.nodes_multi_job = 0
        self.has_temp = False
        #: nodes Lucid's profiling pool sent back (added by add_node; they are not own nodes)
        self.borrowed: set[int] = set()
        #: quota lending: held node -> its tag (lender, pool shape)
        self.held: dict[int, object] = {}
        #: indexes of `state`, kept by `change`: own nodes away on loan -> their borrower (lent,
        #: lent_down), nodes out of service (down, lent_down, repair), held nodes being drained (in
        #: the order they started draining)
        self.lent: dict[int, object] = {}
        self.down: set[int] = set()
        self.draining: dict[int, None] = {}
        #: GPUs of own nodes in `down` (held ones are their lender's)
        self.down_gpus = 0
        #: free slots of held nodes given back, per shape (VCState._shape): heaps of nodes
        self.slots: dict[tuple, list[int]] = {}
        #: per-job placement: job index -> list of (node, [gpu ids])
        self.placement: dict[int, list[tuple[int, list[int]]]] = {}
        #: job -> (its placement, node -> the node's index in it), built by `slot` when first asked for
        self._slots: dict[int, tuple[list, dict[int, int]]] = {}
        #: per-job (utilisation in milli-percent, memory MB) of the job alone
        self.load: dict[int, tuple[int, float]] = {}
        #: Sums over GPUs of the holders' utilisation (milli-percent) and memory (MB), kept exact.
        self.util_milli = 0
        self.gmem_mb = 0.0
        #: CPU, memory and GPU milli per node (None: GPUs only, see the class doc)
        self.res: ResourceState | None = None
        #: with `res`: GPU milli allocated to jobs, over every node
        self.used_milli = 0
        if resources or any(p.limits_resources for p in self.pools):
            self.res = self._resource_state()

    def _resource_state(self) -> ResourceState:
        def per_node(name):
            return [UNLIMITED if getattr(p, name) is None else getattr(p, name)
                    for p in self.pools for _ in range(p.nodes)]

        return ResourceState(Nodes(per_node("cpu_milli"), per_node("memory_mib"), self.size, self.type_of,
                                   tuple(self.types)))

    def _new_node(self, gpu_type: str, per: int, name: int) -> int:
        """A new node slot, absent (it joins through `change`)."""
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
        self.state.append(ABSENT)
        self.cause.append("")
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
        """Nodes the VC has now: those in the scan order and those being drained."""
        return len(self.order) + len(self.draining)

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

    def allocate(self, job: int, alloc: list[tuple], util_milli: int, gmem: float, request=None) -> None:
        """Give `job` the requested GPU counts on each node of `alloc` (lowest free GPU ids first).
        With `res`, `request` is the job's (GPU milli, CPU milli, memory MiB) and an entry of
        `alloc` may name its GPUs: (node, count, GPU ids)."""
        if self.draining and any(entry[0] in self.draining for entry in alloc):
            raise AssertionError(f"job {job} placed on a node being drained: {alloc}")
        if self.down and any(entry[0] in self.down for entry in alloc):
            raise AssertionError(f"job {job} placed on a node that is down: {alloc}")
        if self.res is not None:
            return self._allocate_resources(job, alloc, util_milli, gmem, request or (MILLI, 0, 0))
        placed = []
        size, free, owner, type_of, type_free = self.size, self.free, self.owner, self.type_of, self.type_free
        for node, count in alloc:
            per = size[node]
            if count == per:  # a whole node: no per-GPU search
                if free[node] != per:
                    raise AssertionError(f"node {node} is not free for job {job}")
                ids = list(range(per))
                owner[node] = [job] * per
                self.gpu_util[node] = [util_milli] * per
                self.gpu_gmem[node] = [gmem] * per
                free[node] = 0
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
                free[node] -= count
            self.util_milli += util_milli * count
            self.gmem_mb += gmem * count
            self._count_jobs(node, +1)
            placed.append((node, ids))
            self.free_gpus -= count
            type_free[type_of[node]] -= count
        self.placement[job] = placed
        self.load[job] = (util_milli, gmem)

    def _allocate_resources(self, job: int, alloc: list[tuple], util_milli: int, gmem: float, request) -> None:
        """`allocate` with `res`: whole GPUs carry the job's load as without `res`; a share carries none."""
        milli, cpu, mem = request
        if (cpu or mem) and len(alloc) > 1:
            raise AssertionError(f"job {job} asks for CPU or memory but was split over nodes: {alloc}")
        res, placed = self.res, []
        for entry in alloc:
            node, count = entry[0], entry[1]
            ids = entry[2] if len(entry) > 2 else (res.first_free(node, count) if milli >= MILLI else None)
            if ids is None:
                raise AssertionError(f"job {job}: a share of a GPU needs the GPU named ({alloc})")
            res.place(node, cpu, mem, count, milli, ids, pod=job)
            self.used_milli += milli * count
            owner = self.owner[node]
            for g in ids:
                owner[g] = job if milli >= MILLI else SHARED
                if milli >= MILLI:
                    self.gpu_util[node][g], self.gpu_gmem[node][g] = util_milli, gmem
            if milli >= MILLI:
                self.util_milli += util_milli * count
                self.gmem_mb += gmem * count
            self._sync_free(node)
            self._count_jobs(node, +1)
            placed.append((node, list(ids)))
        self.placement[job] = placed
        self.load[job] = (util_milli, gmem) if milli >= MILLI else (0, 0.0)

    def _release_resources(self, job: int) -> None:
        self._slots.pop(job, None)
        res, placed = self.res, self.placement.pop(job)
        del self.load[job]
        for _ in placed:
            p = res.remove(job)
            self.used_milli -= p.gpu_milli * len(p.gpus)
        for node, ids in placed:
            owner, left = self.owner[node], res.gpu_left[node]
            for g in ids:
                if owner[g] == job or left[g] == MILLI:
                    owner[g] = -1
                    self.util_milli -= self.gpu_util[node][g]
                    self.gmem_mb -= self.gpu_gmem[node][g]
                    self.gpu_util[node][g], self.gpu_gmem[node][g] = 0, 0.0
            self._sync_free(node)
            self._count_jobs(node, -1)
        if self.free_gpus == self.total_gpus:
            self.gmem_mb = 0.0

    def _sync_free(self, node: int) -> None:
        """Node `node`'s fully free GPUs as `res` counts them (with `res`, after a change)."""
        delta = int(self.res.n_free[node]) - self.free[node]
        self.free[node] += delta
        self.free_gpus += delta
        self.type_free[self.type_of[node]] += delta

    def share(self, job: int, host: int, util_milli: int, gmem: float, pair_util_milli: int, pair_gmem: float) -> None:
        """Put `job` on exactly the GPUs of running job `host` (colocation; each GPU then holds two)."""
        if self.res is not None:
            raise AssertionError("colocation (Lucid's GPU pairs) and fractional GPU shares do not mix")
        if self.draining and any(node in self.draining for node, _ in self.placement[host]):
            raise AssertionError(f"job {job} joins job {host} on a node being drained")
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
        if self.res is not None:
            return self._release_resources(job)
        self._slots.pop(job, None)
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

    def move(self, job: int, node: int, to: int) -> None:
        """Job `job` moves its GPUs of node `node` to idle node `to` (as many, with its load), the rest of its
        placement untouched: a warm standby swapped in for a failed node (raysim.sim.standbys)."""
        placed = self.placement[job]
        k = self.slot(job, node)
        slots = self._slots[job][1]
        load = self.load[job]
        self.placement[job] = [placed[k]]
        self.release(job)
        self.allocate(job, [(to, len(placed[k][1]))], *load)
        placed[k] = self.placement[job][0]
        self.placement[job] = placed
        del slots[node]
        slots[to] = k
        self._slots[job] = (placed, slots)

    def slot(self, job: int, node: int) -> int:
        """The index of node `node`'s entry in job `job`'s placement (its index of nodes is built once
        per placement, so a job on thousands of nodes finds one in O(1))."""
        placed = self.placement[job]
        entry = self._slots.get(job)
        if entry is None or entry[0] is not placed:
            entry = self._slots[job] = (placed, {n: i for i, (n, _) in enumerate(placed)})
        return entry[1][node]

    def renumber(self, new: list[int]) -> None:
        """Job j is now called new[j] (see VCSimulator.forget_finished); only running jobs hold GPUs."""
        self.owner = [[new[j] if j >= 0 else j for j in gpus] for gpus in self.owner]
        self.second = [[new[j] if j >= 0 else -1 for j in gpus] for gpus in self.second]
        self.placement = {new[j]: alloc for j, alloc in self.placement.items()}
        self._slots = {new[j]: entry for j, entry in self._slots.items() if new[j] >= 0}
        self.load = {new[j]: load for j, load in self.load.items()}
        if self.res is not None:
            self.res.renumber(new)

    def gpu_type_of(self, job: int) -> int:
        """Index (in `types`) of the GPU type running job `job` holds (a placement has one type)."""
        return self.type_of[self.placement[job][0][0]]

    def check(self) -> None:
        """Assert the occupancy counters agree with the per-GPU state (no GPU over-allocated), and
        that the lifecycle's indexes agree with the states: the scan order holds the up nodes, the
        draining ones are held, nodes neither up nor draining are idle, free slots are absent."""
        state = self.state
        assert len(set(self.order)) == len(self.order), "a node is listed twice"
        assert sorted(self.order) == [n for n, s in enumerate(state) if s == UP], "the scan order is not the up nodes"
        assert list(self.draining) == [n for n in self.draining if state[n] == DRAINING] and \
            len(self.draining) == state.count(DRAINING), "draining nodes are off"
        assert self.down == {n for n, s in enumerate(state) if s in OUT_OF_SERVICE}, "down nodes are off"
        assert set(self.lent) == {n for n, s in enumerate(state) if s in AWAY}, "lent nodes are off"
        assert set(self.draining) <= set(self.held), "a node drains that is not held"
        slots = [n for free in self.slots.values() for n in free]
        assert len(set(slots)) == len(slots) and all(state[n] == ABSENT and n not in self.held for n in slots), \
            "a free slot is in use"
        live = self.order + list(self.draining)
        assert all(self.idle(n) and max(self.owner[n]) < 0 for n in range(len(state)) if state[n] not in COUNTED), \
            "a node away is busy"
        assert self.down_gpus == sum(self.size[n] for n in self.down if n not in self.held), "down GPUs are off"
        free = [sum(1 for o in self.owner[n] if o == -1) for n in live]
        assert all(f == self.free[n] for f, n in zip(free, live)), "per-node free count is off"
        assert sum(self.free[n] for n in live) == self.free_gpus, "free GPU count is off"
        assert sum(self.size[n] for n in live) == self.total_gpus, "total GPU count is off"
        for t in range(len(self.types)):
            on = [n for n in live if self.type_of[n] == t]
            assert sum(self.free[n] for n in on) == self.type_free[t], f"free {self.types[t]} GPUs are off"
            assert sum(self.size[n] for n in on) == self.type_total[t], f"total {self.types[t]} GPUs are off"
        assert 0 <= self.free_gpus <= self.total_gpus
        if self.res is not None:
            self.res.check()
            left = self.res.gpu_left
            assert self.used_milli == res_used(self.res), "allocated GPU milli is off"
            order = set(self.order)
            assert all(bool(self.res.present[n]) == (n in order) for n in range(len(self.size))), \
                "the nodes that take pods are not those in the scan order"
            for n in live:
                for g, o in enumerate(self.owner[n]):
                    assert (o == -1) == (left[n, g] == MILLI), f"node {n} GPU {g}: owner {o}, {left[n, g]} milli free"
                    assert o != SHARED or left[n, g] < MILLI, f"node {n} GPU {g}: shared but whole"

    # ------------------------------------------------------------------ membership (raysim.sim.lifecycle)
    def change(self, node: int, event: str, cause: str, tag=None) -> int:
        """The one way a node's membership changes: node `node` takes `event` (raysim.sim.lifecycle.EVENTS)
        for `cause`, and moves to the state lifecycle.MOVES gives (returned). It leaves or joins the
        scan order, the GPU totals, the nodes that take pods (with `res`), the down GPUs (own nodes)
        and the indexes `down`, `lent` (`tag`: the borrower) and `draining`, as the states say. Only
        a held node may start draining while busy; every other move needs the node idle. A held node
        that leaves frees its slot for the next held node of its shape."""
        frm = self.state[node]
        to = next_state(node, frm, event)
        if (frm, event) not in BUSY_MOVES and frm in COUNTED and not self.idle(node):
            raise AssertionError(f"node {node} is not idle: it cannot take the event {event!r}")
        if frm == UP:
            self._remove(node)
        elif to == UP:
            self._insert(node)
        if (frm in COUNTED) != (to in COUNTED):
            self._capacity(node, self.size[node] if to in COUNTED else -self.size[node])
        if (frm == UP) != (to == UP):
            self._present(node, to == UP)
        out = (to in OUT_OF_SERVICE) - (frm in OUT_OF_SERVICE)
        if out:
            if out > 0:
                self.down.add(node)
            else:
                self.down.discard(node)
            if node not in self.held:
                self.down_gpus += out * self.size[node]
        if frm == DRAINING:
            del self.draining[node]
        elif to == DRAINING:
            self.draining[node] = None
        if frm in AWAY and to not in AWAY:
            del self.lent[node]
        elif to in AWAY and frm not in AWAY:
            self.lent[node] = tag
        self.state[node] = to
        self.cause[node] = cause
        if to == ABSENT and node in self.held:
            self._free_slot(node)
        return to

    def idle(self, node: int) -> bool:
        """Whether node `node` holds no job (with `res`: no CPU-only job either)."""
        return self.free[node] == self.size[node] and (self.res is None or not self.res.n_pods[node])

    def lend_node(self, reference_naming: bool) -> bool:
        """Lend one idle node to Lucid's profiling pool (`lent`, its borrower "profiler"). Returns
        False when none is idle.

        Reference naming (Lucid): the idle node with the largest name goes; once a temporary node
        exists, a regular idle node first swaps names with it, so the node that leaves is always
        called TEMP_NODE_NAME (the busy former temporary node keeps running under the regular name).
        Otherwise the last idle node in scan order goes (a borrowed node, if one is idle).
        """
        self._fixed_nodes()
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
        self.borrowed.discard(node)
        self.change(node, "lend", "profiler", tag="profiler")
        return True

    def _remove(self, node: int) -> None:
        """Take node `node` out of the scan order: found by bisection where `_insert` keeps it in
        place (or last, where it was the latest to come back), else by a scan."""
        order = self.order
        if order[-1] == node:
            order.pop()
            return
        i = bisect.bisect_left(order, node)
        if i < len(order) and order[i] == node:
            del order[i]
        else:
            order.remove(node)

    def _insert(self, node: int) -> None:
        """Put node `node` back in the scan order where the VC's host order places it (`host_order`,
        raysim.sim.host_selection), by default in its own place: an own node among own nodes (they come
        first, in index order, and every other node has a larger index, so bisection finds that place
        although the order's tail need not be sorted), a held or borrowed node at the end."""
        if self.host_order is not None:
            at = self.host_order.place(self, node)
        elif node in self.held or node in self.borrowed:
            at = len(self.order)
        else:
            at = bisect.bisect_left(self.order, node)
        self.order.insert(at, node)

    def failed(self, node: int) -> None:
        """Node `node` takes a failure event now (it goes down, or its jobs restart): while it is up (a
        retired node's last event finds it down) the host order hears of it, and one that orders nodes
        by their failures moves it to its new place (or orders them all anew: `reorder`)."""
        if self.host_order is not None and self.state[node] == UP and self.host_order.failed(self, node):
            self.order.remove(node)
            self._insert(node)

    def reorder(self, order: list[int]) -> None:
        """The scan order becomes `order`, of the same nodes (a host order's start: raysim.sim.host_selection)."""
        if sorted(order) != sorted(self.order):
            raise AssertionError("a new scan order must hold the same nodes")
        self.order[:] = order

    def add_held(self, gpu_type: str, per: int, tag, cpu_milli: int | None = None,
                 memory_mib: int | None = None) -> int:
        """A node on loan from another VC (`tag` names the loan; with `res`, the node has
        `cpu_milli` and `memory_mib`, None: not limited) comes up at the end of the scan order, in
        the lowest free slot of its shape if there is one; returns the node."""
        self._admit_shape(gpu_type, per)
        t = self.types.index(gpu_type)
        slots = self.slots.get(self._shape(t, per, cpu_milli, memory_mib))
        if not slots:
            node = self._new_node(gpu_type, per, name=len(self.size))
            if self.res is not None:
                added = self.res.add_node(UNLIMITED if cpu_milli is None else cpu_milli,
                                          UNLIMITED if memory_mib is None else memory_mib, per, gpu_type)
                assert added == node, "the resource state's nodes are out of step"
                self.res.set_present(node, False)
        else:
            node = heapq.heappop(slots)
        self.held[node] = tag
        self.change(node, "up", "quota")
        return node

    def _free_slot(self, node: int) -> None:
        """Held node `node` left: its slot waits for the next held node of its shape."""
        del self.held[node]
        res = self.res
        cpu, mem = (None, None) if res is None else (int(res.nodes.cpu_milli[node]), int(res.nodes.memory_mib[node]))
        shape = self._shape(self.type_of[node], self.size[node], cpu, mem)
        heapq.heappush(self.slots.setdefault(shape, []), node)

    def _shape(self, t: int, per: int, cpu_milli, memory_mib) -> tuple:
        """The key of free slots: GPU type index and GPUs per node, with `res` also CPU and memory."""
        if self.res is None:
            return t, per
        return (t, per, UNLIMITED if cpu_milli is None else cpu_milli,
                UNLIMITED if memory_mib is None else memory_mib)

    def _present(self, node: int, present: bool) -> None:
        """With `res`: node `node` takes pods (in the scan order) or not (away, being drained)."""
        if self.res is not None:
            self.res.set_present(node, present)

    def add_node(self, reference_naming: bool, pool=None) -> bool:
        """Take one node (back) from a loan, shaped like `pool` (default: the VC's first pool); it
        goes to the end of the node order.

        Reference naming: nothing happens if a node called TEMP_NODE_NAME is already there."""
        self._fixed_nodes()
        if reference_naming and any(self.name[n] == TEMP_NODE_NAME for n in self.order):
            return False
        pool = pool or self.pools[0]
        self._admit_shape(pool.gpu_type, pool.gpus_per_node)
        node = self._new_node(pool.gpu_type, pool.gpus_per_node,
                              name=TEMP_NODE_NAME if reference_naming else len(self.size))
        self.borrowed.add(node)
        self.change(node, "up", "profiler")
        return True

    def _fixed_nodes(self) -> None:
        """The profiler's node loans (Lucid's) do not move nodes that count CPU, memory and GPU shares."""
        if self.res is not None:
            raise ValueError("Lucid's profiler loans nodes of one shape, not nodes that count CPU, memory and "
                             "GPU shares")

    def _admit_shape(self, gpu_type: str, per: int) -> None:
        """Make room for a node of `per` GPUs of `gpu_type` (a new type joins `types`) and update
        the shape summaries placers rely on."""
        if gpu_type not in self.types:
            self.types.append(gpu_type)
            self.type_total.append(0)
            self.type_free.append(0)
        self.max_node_gpus = max(self.max_node_gpus, per)
        self.single_type = len(self.types) == 1
        self.uniform = self.uniform and (gpu_type, per) == (self.types[0], self.size[0])

    def borrowed_idle(self) -> bool:
        """Whether a node this VC holds on loan is idle."""
        return any(self.free[n] == self.size[n] for n in self.borrowed)
