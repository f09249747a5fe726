"""The resource model: CPU, memory and per-GPU free milli of every node, and who holds what.

The VC engine (raysim.sim.vc.VCState) keeps one of these for a VC whose jobs ask for GPU shares,
CPU or memory; the FGD inflation experiment (raysim.sharing.inflation) places pods on one directly.

A GPU has 1000 milli. A pod asks for ``cpu_milli`` and ``memory_mib`` on one node and, for its GPUs,
one of:

- nothing (``num_gpu`` 0): any node with the CPU and memory, a GPU node or a CPU-only one;
- a share of ONE GPU (``num_gpu`` 1, ``gpu_milli`` < 1000): any GPU of the node with at least
  ``gpu_milli`` free; several such pods may share a GPU up to 1000 milli;
- whole GPUs (``gpu_milli`` 1000, ``num_gpu`` >= 1): ``num_gpu`` GPUs of the node that are fully
  free; such a pod has its GPUs to itself.

``gpu_spec`` (``"A|B"`` or None) restricts a GPU pod to nodes whose GPU model is listed (as the
reference's Open-Gpu-Share filter; a CPU pod's ``gpu_spec`` is ignored there too). Every node also
holds at most ``max_pods`` pods (the reference's node YAML allows 1001).

Arrays are per node in the order given (the tie-breaking rank of the experiment refers to it).
``gpu_left`` is (nodes x widest node) with 0 in the slots of GPUs a node does not have: a 0-milli
slot never fits a GPU pod and adds nothing to any sum, so no mask is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

MILLI = 1000
#: Pods a node can hold in the reference (``pods: '1001'`` in its node YAML).
DEFAULT_MAX_PODS = 1001


class OverAllocation(AssertionError):
    """The cluster state breaks a capacity or sharing rule (raised by :meth:`ResourceState.check`)."""


@dataclass(frozen=True)
class Nodes:
    """The static description of the nodes (one entry per node, in order)."""

    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int64
    model: np.ndarray  # int64 code into `models`, -1 for a CPU-only node
    models: tuple[str, ...]
    names: tuple[str, ...] = ()
    max_pods: int = DEFAULT_MAX_PODS

    def __post_init__(self):
        for name in ("cpu_milli", "memory_mib", "num_gpu", "model"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        n = len(self.cpu_milli)
        if not (len(self.memory_mib) == len(self.num_gpu) == len(self.model) == n):
            raise ValueError("node arrays differ in length")
        if (self.cpu_milli < 0).any() or (self.memory_mib < 0).any() or (self.num_gpu < 0).any():
            raise ValueError("node capacities must be non-negative")
        if ((self.num_gpu > 0) & (self.model < 0)).any():
            raise ValueError("a node with GPUs needs a GPU model")
        if (self.model >= len(self.models)).any():
            raise ValueError("model code out of range")

    @classmethod
    def from_lists(cls, cpu_milli, memory_mib, num_gpu, model, names=(), max_pods=DEFAULT_MAX_PODS) -> Nodes:
        """Nodes from per-node lists; `model` holds model names (None or "" for CPU-only nodes)."""
        names_of = [m if m else None for m in model]
        models = tuple(dict.fromkeys(m for m in names_of if m is not None))
        code = {m: i for i, m in enumerate(models)}
        return cls(np.asarray(cpu_milli), np.asarray(memory_mib), np.asarray(num_gpu),
                   np.array([code.get(m, -1) for m in names_of], dtype=np.int64), models,
                   tuple(names), max_pods)

    def __len__(self) -> int:
        return len(self.cpu_milli)

    @property
    def width(self) -> int:
        """GPUs of the widest node (columns of ``gpu_left``)."""
        return int(self.num_gpu.max()) if len(self) else 0

    @property
    def total_gpus(self) -> int:
        return int(self.num_gpu.sum())

    def accessible(self, gpu_spec: str | None) -> np.ndarray:
        """Mask of the nodes a GPU pod with this ``gpu_spec`` may use (the reference's
        ``IsNodeAccessibleToPodByType``: no spec -> every node; else the node's model must be one of
        the ``|``-separated names, so CPU-only nodes never qualify)."""
        allowed = {m for m in (gpu_spec or "").split("|") if m}
        if not allowed:
            return np.ones(len(self), dtype=bool)
        codes = [i for i, m in enumerate(self.models) if m in allowed]
        return np.isin(self.model, codes)


@dataclass(frozen=True)
class Pods:
    """Pod requests (one entry per pod, in list order)."""

    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int64
    gpu_milli: np.ndarray  # int64, per GPU (1000 = whole GPUs)
    gpu_spec: np.ndarray = None  # object: str ("A|B") or None
    names: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        n = len(self.cpu_milli)
        spec = self.gpu_spec
        spec = np.full(n, None, dtype=object) if spec is None else np.array(
            [s if s else None for s in spec], dtype=object)
        object.__setattr__(self, "gpu_spec", spec)
        if not (len(self.memory_mib) == len(self.num_gpu) == len(self.gpu_milli) == len(spec) == n):
            raise ValueError("pod arrays differ in length")
        bad = ((self.num_gpu == 0) & (self.gpu_milli != 0)) | ((self.num_gpu > 0) & (self.gpu_milli <= 0)) \
            | (self.gpu_milli > MILLI) | ((self.num_gpu > 1) & (self.gpu_milli != MILLI)) \
            | (self.cpu_milli < 0) | (self.memory_mib < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"pod {i}: bad request (cpu {self.cpu_milli[i]}, mem {self.memory_mib[i]}, "
                             f"num_gpu {self.num_gpu[i]}, gpu_milli {self.gpu_milli[i]}): num_gpu 0 needs "
                             "gpu_milli 0, num_gpu 1 gpu_milli 1..1000, num_gpu > 1 gpu_milli 1000")

    def __len__(self) -> int:
        return len(self.cpu_milli)

    @property
    def gpu_request(self) -> np.ndarray:
        """Total GPU milli of each pod (``num_gpu * gpu_milli``)."""
        return self.num_gpu * self.gpu_milli


class PodKinds(NamedTuple):
    """The distinct (cpu, num_gpu, gpu_milli, gpu_spec) of a pod list: what a score depends on
    (memory only decides feasibility). ``of_pod[i]`` is pod i's kind."""

    cpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    gpu_spec: tuple
    of_pod: np.ndarray

    @classmethod
    def of(cls, pods: Pods) -> PodKinds:
        keys = list(zip(pods.cpu_milli.tolist(), pods.num_gpu.tolist(), pods.gpu_milli.tolist(),
                        pods.gpu_spec.tolist()))
        index: dict = {}
        of_pod = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
        uniq = list(index)
        return cls(np.array([k[0] for k in uniq], dtype=np.int64), np.array([k[1] for k in uniq], dtype=np.int64),
                   np.array([k[2] for k in uniq], dtype=np.int64), tuple(k[3] for k in uniq), of_pod)

    def __len__(self) -> int:
        return len(self.cpu_milli)


def gpu_class(num_gpu: int, gpu_milli: int) -> int:
    """The class of a GPU pod: 0 for a share of one GPU, else its number of whole GPUs."""
    return 0 if gpu_milli < MILLI else int(num_gpu)


@dataclass
class Placement:
    pod: int
    node: int
    cpu_milli: int
    memory_mib: int
    gpu_milli: int
    gpus: tuple[int, ...]
    gpu_spec: str | None


@dataclass
class ResourceState:
    """What is free on every node; placements are recorded so :meth:`check` can recount them."""

    nodes: Nodes
    cpu_left: np.ndarray = field(init=False)
    mem_left: np.ndarray = field(init=False)
    gpu_left: np.ndarray = field(init=False)  # (nodes, width) int64, 0 for absent GPUs
    n_pods: np.ndarray = field(init=False)
    n_free: np.ndarray = field(init=False)  # fully free GPUs per node
    max_left: np.ndarray = field(init=False)  # largest free milli of one GPU per node
    left_total: np.ndarray = field(init=False)  # free milli over the node's GPUs
    whole: np.ndarray = field(init=False)  # (nodes, width) bool: a whole-GPU pod holds the GPU
    placements: list[Placement] = field(init=False)
    #: per node, a counter bumped by every place and remove (placers that cache per-node scores
    #: recompute the rows whose stamp moved)
    stamp: np.ndarray = field(init=False)
    #: per node, whether it takes pods: a VC's node away on loan (or being drained) does not
    present: np.ndarray = field(init=False)

    def __post_init__(self):
        nd = self.nodes
        self.cpu_left = nd.cpu_milli.copy()
        self.mem_left = nd.memory_mib.copy()
        width = max(nd.width, 1)
        self.gpu_left = np.where(np.arange(width)[None, :] < nd.num_gpu[:, None], MILLI, 0).astype(np.int64)
        self.n_pods = np.zeros(len(nd), dtype=np.int64)
        self.n_free = nd.num_gpu.copy()
        self.max_left = np.where(nd.num_gpu > 0, MILLI, 0).astype(np.int64)
        self.left_total = nd.num_gpu * MILLI
        self.whole = np.zeros(self.gpu_left.shape, dtype=bool)
        self.placements = []
        self.stamp = np.zeros(len(nd), dtype=np.int64)
        self.present = np.ones(len(nd), dtype=bool)
        self._absent = 0  # nodes not present (feasibility skips the mask while there are none)
        #: per node, its GPU pods by class: 0 for a share of a GPU, n for n whole GPUs
        self.gpu_classes: list[dict[int, int]] = [{} for _ in range(len(nd))]
        self._slots: dict = {}  # pod -> positions of its placements in `placements` (for remove)
        self._access: dict = {}
        self._by_models: dict = {}

    # ------------------------------------------------------------------------- feasibility
    def accessible(self, gpu_spec: str | None) -> np.ndarray:
        mask = self._access.get(gpu_spec)
        if mask is None:
            mask = self._access[gpu_spec] = self.nodes.accessible(gpu_spec)
        return mask

    def of_models(self, codes: frozenset) -> np.ndarray:
        """Mask of the nodes whose GPU model code is in `codes` (cached per set)."""
        mask = self._by_models.get(codes)
        if mask is None:
            mask = self._by_models[codes] = np.isin(self.nodes.model, sorted(codes))
        return mask

    def feasible(self, cpu_milli: int, memory_mib: int, num_gpu: int, gpu_milli: int,
                 gpu_spec: str | None = None) -> np.ndarray:
        """Mask of the nodes where the pod fits now (the reference's NodeResourcesFit on CPU, memory
        and pod count, and its Open-Gpu-Share filter on GPUs and model)."""
        ok = (self.cpu_left >= cpu_milli) & (self.mem_left >= memory_mib) & (self.n_pods < self.nodes.max_pods)
        if self._absent:
            ok &= self.present
        if num_gpu <= 0:
            return ok
        if gpu_milli < MILLI:
            ok &= self.max_left >= gpu_milli
        else:
            ok &= self.n_free >= num_gpu
        if gpu_spec:
            ok &= self.accessible(gpu_spec)
        return ok

    def fits(self, node: int, cpu_milli: int, memory_mib: int, num_gpu: int, gpu_milli: int,
             gpu_spec: str | None = None) -> bool:
        return bool(self.feasible(cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)[node])

    # --------------------------------------------------------------------------- placement
    def first_free(self, node: int, count: int) -> tuple[int, ...]:
        """The `count` lowest-numbered fully free GPUs of `node` (the reference's
        ``AllocateExclusiveGpuId``)."""
        free = np.flatnonzero(self.gpu_left[node] == MILLI)
        if len(free) < count:
            raise OverAllocation(f"node {node} has {len(free)} free GPUs, {count} asked")
        return tuple(int(g) for g in free[:count])

    def place(self, node: int, cpu_milli: int, memory_mib: int, num_gpu: int, gpu_milli: int,
              gpus: tuple[int, ...] = (), *, pod: int = -1, gpu_spec: str | None = None) -> None:
        """Put a pod on `node` using GPUs `gpus` (``num_gpu`` indices; one for a share). Raises
        :class:`OverAllocation` when it does not fit, leaving the state unchanged."""
        node = int(node)
        if not 0 <= node < len(self.nodes):
            raise OverAllocation(f"no node {node}")
        if self._absent and not self.present[node]:
            raise OverAllocation(f"node {node} takes no pod now (away on loan or being drained)")
        if self.cpu_left[node] < cpu_milli or self.mem_left[node] < memory_mib:
            raise OverAllocation(f"node {node}: CPU or memory short for pod {pod}")
        if self.n_pods[node] >= self.nodes.max_pods:
            raise OverAllocation(f"node {node} holds {self.nodes.max_pods} pods already")
        gpus = tuple(int(g) for g in gpus)
        if len(gpus) != num_gpu or len(set(gpus)) != len(gpus):
            raise OverAllocation(f"pod {pod} asks {num_gpu} GPUs but was given {gpus}")
        if num_gpu:
            if gpu_spec and not self.accessible(gpu_spec)[node]:
                raise OverAllocation(f"node {node} model does not match gpu_spec {gpu_spec!r}")
            n_gpu = int(self.nodes.num_gpu[node])
            for g in gpus:
                if not 0 <= g < n_gpu:
                    raise OverAllocation(f"node {node} has no GPU {g}")
                left = self.gpu_left[node, g]
                if gpu_milli >= MILLI and left != MILLI:
                    raise OverAllocation(f"node {node} GPU {g} is not free for a whole-GPU pod")
                if left < gpu_milli:
                    raise OverAllocation(f"node {node} GPU {g} has {left} milli free, {gpu_milli} asked")
        self.cpu_left[node] -= cpu_milli
        self.mem_left[node] -= memory_mib
        self.n_pods[node] += 1
        if num_gpu:
            classes = self.gpu_classes[node]
            key = gpu_class(num_gpu, gpu_milli)
            classes[key] = classes.get(key, 0) + 1
            row = self.gpu_left[node]
            for g in gpus:
                row[g] -= gpu_milli
                if gpu_milli >= MILLI:
                    self.whole[node, g] = True
            self.n_free[node] = int((row == MILLI).sum())
            self.max_left[node] = int(row.max())
            self.left_total[node] = int(row.sum())
        self.stamp[node] += 1
        self._slots.setdefault(pod, []).append(len(self.placements))
        self.placements.append(Placement(pod, node, cpu_milli, memory_mib, gpu_milli, gpus, gpu_spec))

    def remove(self, pod: int) -> Placement:
        """Take pod `pod` off its node (the inverse of :meth:`place`: CPU, memory, pod count and its
        GPUs' milli are given back; a GPU held whole is no longer marked). Place then remove leaves
        every array as it was. If `pod` was placed several times, its latest placement goes. Raises
        :class:`OverAllocation` when `pod` is not placed. O(1) in the number of placements (the
        last placement moves into the freed slot, so `placements` is not in placement order)."""
        slots = self._slots.get(pod)
        if not slots:
            raise OverAllocation(f"pod {pod} is not placed")
        pos = slots.pop()
        if not slots:
            del self._slots[pod]
        p = self.placements[pos]
        last = len(self.placements) - 1
        if pos != last:
            moved = self.placements[last]
            self.placements[pos] = moved
            where = self._slots[moved.pod]
            where[where.index(last)] = pos
        self.placements.pop()
        node = p.node
        self.stamp[node] += 1
        self.cpu_left[node] += p.cpu_milli
        self.mem_left[node] += p.memory_mib
        self.n_pods[node] -= 1
        if p.gpus:
            classes = self.gpu_classes[node]
            key = gpu_class(len(p.gpus), p.gpu_milli)
            classes[key] -= 1
            if not classes[key]:
                del classes[key]
            row = self.gpu_left[node]
            for g in p.gpus:
                row[g] += p.gpu_milli
                if p.gpu_milli >= MILLI:
                    self.whole[node, g] = False  # a whole-GPU pod holds its GPUs alone
            self.n_free[node] = int((row == MILLI).sum())
            self.max_left[node] = int(row.max())
            self.left_total[node] = int(row.sum())
        return p

    @property
    def all_present(self) -> bool:
        """Whether every node takes pods."""
        return not self._absent

    def set_present(self, node: int, present: bool) -> None:
        """Node `node` takes pods again (True) or no more (False: pods on it stay until removed)."""
        if present == bool(self.present[node]):
            return
        self.present[node] = present
        self._absent += -1 if present else 1

    def add_node(self, cpu_milli: int, memory_mib: int, num_gpu: int, model: str) -> int:
        """A new, empty, present node (a VC's node on loan from another VC); returns its index."""
        nd = self.nodes
        models = nd.models if model in nd.models else nd.models + (model,)
        self.nodes = Nodes(np.append(nd.cpu_milli, cpu_milli), np.append(nd.memory_mib, memory_mib),
                           np.append(nd.num_gpu, num_gpu), np.append(nd.model, models.index(model)), models,
                           nd.names, nd.max_pods)
        width = max(self.gpu_left.shape[1], num_gpu)
        pad = width - self.gpu_left.shape[1]
        row = np.where(np.arange(width) < num_gpu, MILLI, 0).astype(np.int64)
        self.gpu_left = np.vstack([np.pad(self.gpu_left, ((0, 0), (0, pad))), row])
        self.whole = np.vstack([np.pad(self.whole, ((0, 0), (0, pad))), np.zeros(width, bool)])
        self.cpu_left = np.append(self.cpu_left, cpu_milli)
        self.mem_left = np.append(self.mem_left, memory_mib)
        self.n_pods = np.append(self.n_pods, 0)
        self.n_free = np.append(self.n_free, num_gpu)
        self.max_left = np.append(self.max_left, MILLI if num_gpu else 0)
        self.left_total = np.append(self.left_total, num_gpu * MILLI)
        self.stamp = np.append(self.stamp, 0)
        self.present = np.append(self.present, True)
        self.gpu_classes.append({})
        self._access.clear()
        self._by_models.clear()
        return len(self.nodes) - 1

    def renumber(self, new: list[int]) -> None:
        """Pod p is now called new[p] (the VC engine renumbers its jobs when it forgets finished ones;
        only placed pods are renumbered, and they all keep a number)."""
        for p in self.placements:
            p.pod = new[p.pod]
        self._slots = {new[pod]: slots for pod, slots in self._slots.items()}

    # ------------------------------------------------------------------------------ checks
    @property
    def used_gpu_milli(self) -> int:
        return int(self.nodes.num_gpu.sum() * MILLI - self.left_total.sum())

    def check(self) -> None:
        """Recount every placement and raise :class:`OverAllocation` if CPU, memory, pod count or a
        GPU is over-allocated, a whole-GPU pod shares its GPU, a pod sits on a GPU model its
        ``gpu_spec`` excludes, or the incremental state disagrees with the recount."""
        nd = self.nodes
        n, width = self.gpu_left.shape
        cpu = np.zeros(n, np.int64)
        mem = np.zeros(n, np.int64)
        pods = np.zeros(n, np.int64)
        gpu = np.zeros((n, width), np.int64)
        holders = np.zeros((n, width), np.int64)  # pods on each GPU
        whole = np.zeros((n, width), bool)
        for p in self.placements:
            cpu[p.node] += p.cpu_milli
            mem[p.node] += p.memory_mib
            pods[p.node] += 1
            for g in p.gpus:
                if not 0 <= g < nd.num_gpu[p.node]:
                    raise OverAllocation(f"pod {p.pod} on node {p.node} uses GPU {g} it does not have")
                gpu[p.node, g] += p.gpu_milli
                holders[p.node, g] += 1
                whole[p.node, g] |= p.gpu_milli >= MILLI
            if p.gpus and p.gpu_spec and not nd.accessible(p.gpu_spec)[p.node]:
                raise OverAllocation(f"pod {p.pod} on node {p.node}: model not in gpu_spec {p.gpu_spec!r}")
            if len(p.gpus) > 1 and p.gpu_milli < MILLI:
                raise OverAllocation(f"pod {p.pod} shares more than one GPU")
        bad = np.flatnonzero(cpu > nd.cpu_milli)
        if len(bad):
            raise OverAllocation(f"node {bad[0]}: CPU over-allocated ({cpu[bad[0]]} > {nd.cpu_milli[bad[0]]})")
        bad = np.flatnonzero(mem > nd.memory_mib)
        if len(bad):
            raise OverAllocation(f"node {bad[0]}: memory over-allocated ({mem[bad[0]]} > {nd.memory_mib[bad[0]]})")
        bad = np.flatnonzero(pods > nd.max_pods)
        if len(bad):
            raise OverAllocation(f"node {bad[0]}: more than {nd.max_pods} pods")
        over = np.argwhere(gpu > MILLI)
        if len(over):
            i, g = over[0]
            raise OverAllocation(f"node {i} GPU {g}: {gpu[i, g]} milli allocated (> {MILLI})")
        shared_whole = np.argwhere(whole & (holders > 1))
        if len(shared_whole):
            i, g = shared_whole[0]
            raise OverAllocation(f"node {i} GPU {g}: a whole-GPU pod shares its GPU with {holders[i, g] - 1} pod(s)")
        capacity = np.where(np.arange(width)[None, :] < nd.num_gpu[:, None], MILLI, 0)
        if not (np.array_equal(self.cpu_left, nd.cpu_milli - cpu) and np.array_equal(self.mem_left, nd.memory_mib - mem)
                and np.array_equal(self.gpu_left, capacity - gpu) and np.array_equal(self.n_pods, pods)
                and np.array_equal(self.whole, whole)):
            raise OverAllocation("incremental state differs from the recount of placements")
        classes = [{} for _ in range(n)]
        for p in self.placements:
            if p.gpus:
                key = gpu_class(len(p.gpus), p.gpu_milli)
                classes[p.node][key] = classes[p.node].get(key, 0) + 1
        if classes != self.gpu_classes:
            raise OverAllocation("GPU pod classes per node differ from the recount of placements")
        if not (np.array_equal(self.n_free, (self.gpu_left == MILLI).sum(1))
                and np.array_equal(self.left_total, self.gpu_left.sum(1))
                and np.array_equal(self.max_left, self.gpu_left.max(1))):
            raise OverAllocation("per-node GPU summaries differ from the GPU table")
