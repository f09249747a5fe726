"""FGD's scored policies as placers: ``placer=fgd`` (or fgd_random, dotprod, ... bestfit).

A scored placer scores the nodes where a job fits (raysim.placement.scored.base.NodeScorer) and takes
the best, ties to a node order drawn once per VC; inside the node the policy picks the GPUs. Its
inputs, given once per run by :class:`Shapes` (built from the trace): the distinct request shapes
(CPU, GPU count, GPU milli, allowed GPU models) that index its per-node score tables, and FGD's
target workload (the most frequent shapes). Each job carries its shape id (job column ``shape``).

Randomness: VC number i of the layout uses children 3i+1 (node order) and 3i+2 (the policy's own
draws) of ``numpy.random.SeedSequence(seed)``, so a one-VC run draws exactly as the inflation
experiment and the former timed experiment did, and results do not depend on how VCs are spread
over processes. The inflation experiment (raysim.sharing.inflation) places through this placer too.

The scored policies place pods, which run on one node. A whole-GPU job larger than the VC's
largest node (a multi-node job of the Venus or Helios traces) is placed as ``placer=consolidate``
places it.

Policies that cache per-node scores (``caches``) have the rows of the nodes whose
``ResourceState.stamp`` moved since the placer last looked (jobs started or ended there)
recomputed before each choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raysim.placement import resources
from raysim.placement.consolidate import Consolidate
from raysim.placement.frag import FragModel, TargetWorkload, target_workload
from raysim.placement.scored import scorer_class
from raysim.placement.types import check_type_order, type_groups
from raysim.cluster.resources import PodKinds, Pods


@dataclass(frozen=True)
class Shapes:
    """The run's request shapes (`kinds`, without per-job ids) and FGD's target `workload`."""

    kinds: PodKinds
    workload: TargetWorkload

    @classmethod
    def of(cls, pods: Pods) -> tuple[Shapes, np.ndarray]:
        """The shapes of a pod list (one pod per trace job) and each pod's shape id."""
        kinds = PodKinds.of(pods)
        distinct = PodKinds(kinds.cpu_milli, kinds.num_gpu, kinds.gpu_milli, kinds.gpu_spec, np.zeros(0, np.int64))
        shapes = cls(distinct, target_workload(pods))
        return shapes, kinds.of_pod


class ScoredPlacer:
    """One VC's placer for the scored policy `name` (see the module doc)."""

    def __init__(self, name: str, *, params, vc_index: int = 0, type_order: str = "any", shapes: Shapes | None):
        if shapes is None:
            raise ValueError(f"placer {name!r} needs the run's request shapes (raysim.placement.scored.placer.Shapes)")
        self.cls = scorer_class(name)
        self.shapes = shapes
        self.type_order = check_type_order(type_order)
        streams = np.random.SeedSequence(params.seed).spawn(3 * vc_index + 3)[3 * vc_index:]
        self.rng_rank, self.rng_policy = np.random.default_rng(streams[1]), np.random.default_rng(streams[2])
        self.policy = None  # built on the first call, over the VC's resource state
        self.rank = self.seen = None
        self.wide = Consolidate(params=params, vc_index=vc_index, type_order=type_order)

    def _bind(self, vc) -> None:
        """(Re)build the policy over the VC's resource state: at the first call, and when nodes
        joined the state (held on loan). The node order is drawn once; nodes that join later come
        after every node before them, in the order they joined."""
        res = vc.res
        if res is None:
            raise ValueError(f"placer {self.cls.name!r} needs a VC that counts CPU, memory and GPU milli")
        n = len(res.nodes)
        if self.rank is None:
            self.rank = self.rng_rank.permutation(n)
        else:
            self.rank = np.concatenate([self.rank, np.arange(len(self.rank), n)])
        frag = FragModel(self.shapes.workload, res.nodes.models)
        self.policy = self.cls(res, frag, self.shapes.kinds, self.rng_policy)
        self.seen = res.stamp.copy()

    def _refresh(self, res) -> None:
        """Tell the policy about the nodes that changed since the last call."""
        moved = np.flatnonzero(res.stamp != self.seen)
        for node in moved.tolist():
            self.policy.refresh(node)
        self.seen[moved] = res.stamp[moved]

    def select(self, vc, demand):
        num = demand.gpu_num
        if num > vc.max_node_gpus and demand.whole_gpus_only:
            return self.wide.select(vc, demand)
        res, kind, policy = vc.res, demand.shape, self.policy
        if policy is None or len(res.stamp) != len(self.seen):
            self._bind(vc)
            policy = self.policy
        if kind < 0:
            raise ValueError(f"placer {self.cls.name!r}: a job without a request shape (job column 'shape')")
        if policy.caches:
            self._refresh(res)
        groups = (demand.types,) if self.type_order == "any" else type_groups(vc, demand, self.type_order)
        for types in groups:
            nodes = resources.candidates(vc, demand, types)
            if len(nodes):
                node = int(nodes[0]) if len(nodes) == 1 else policy.select(kind, nodes, self.rank)
                return [(node, num, policy.gpus(node, kind) if num else ())]
        return None
