"""What every node scorer (a placement policy of FGD's simulator) shares: node choice among feasible
nodes and the default GPU choice.

The placer (raysim.placement.scored.placer.ScoredPlacer) passes a scorer the indices of the nodes
where the pod fits (never empty; with one feasible node the reference skips scoring and so does
the placer). :meth:`NodeScorer.select` scores them with integer scores as the reference's plugins do (Kubernetes node scores are int64 in 0..100) and
takes the highest; equal scores go to the node of lowest `rank`. The reference's Kubernetes fork
breaks ties by the smallest node name, and the simulator prefixes node names with a random
permutation drawn once per run (``%04d-`` + name), so ties go to a random but fixed node order: the
placer draws `rank` the same way, once per run (per VC).

GPU choice inside the node (the reference's Open-Gpu-Share Reserve step, ``gpuSelMethod`` "best"
unless the policy has its own): a share pod takes the GPU with the least free milli that still fits
(lowest index among equals); a whole-GPU pod takes the lowest-numbered fully free GPUs.
"""

from __future__ import annotations

import numpy as np

from raysim.placement.frag import FragModel, nonzero_cpu
from raysim.placement.resources import best_fit_gpus
from raysim.cluster.resources import PodKinds, ResourceState

#: Kubernetes' node score range.
MAX_NODE_SCORE = 100
#: The reference's normalisation constants (Open-Gpu-Share ``MaxSpecCpu``, ``MaxSpecGpu``).
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000


class NodeScorer:
    """A node score plus a GPU choice. Subclasses set `name`, `label` and :meth:`score`."""

    name = ""
    label = ""  # the reference's sc_policy, e.g. "06-FGD"
    #: the scorer keeps per-node caches that `refresh` must update after a node changes
    caches = False

    def __init__(self, state: ResourceState, frag: FragModel, kinds: PodKinds, rng: np.random.Generator):
        self.state = state
        self.frag = frag
        self.kinds = kinds
        self.rng = rng
        # what the reference's scores see of a pod (CPU 0 counts as 100 milli)
        self.k_cpu = nonzero_cpu(kinds.cpu_milli)
        self.k_num = kinds.num_gpu
        self.k_milli = kinds.gpu_milli
        self.k_req = kinds.num_gpu * kinds.gpu_milli

    # ------------------------------------------------------------------------------ nodes
    def score(self, kind: int, idx: np.ndarray) -> np.ndarray:
        """Integer scores (higher is better) of the feasible nodes `idx` for a pod of `kind`."""
        raise NotImplementedError

    def select(self, kind: int, idx: np.ndarray, rank: np.ndarray) -> int:
        """The node for a pod of `kind` among the feasible `idx` (more than one)."""
        s = self.score(kind, idx)
        tied = idx[s == s.max()]
        return int(tied[0] if len(tied) == 1 else tied[np.argmin(rank[tied])])

    # ------------------------------------------------------------------------------- GPUs
    def gpus(self, node: int, kind: int) -> tuple[int, ...]:
        """GPU indices on `node` for a GPU pod of `kind` (default: best fit)."""
        return best_fit_gpus(self.state, node, int(self.k_num[kind]), int(self.k_milli[kind]))

    def refresh(self, node: int) -> None:
        """Called after a pod was placed on `node` or left it (to update caches from the state)."""


def go_div(a, b):
    """Integer division truncating toward zero (Go's ``/`` on int64)."""
    a = np.asarray(a, dtype=np.int64)
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)
