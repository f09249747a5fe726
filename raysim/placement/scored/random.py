"""Random: a node drawn uniformly among the feasible ones; a share pod's GPU drawn uniformly among
the GPUs it fits (the reference's ``RandomScore`` plugin, whose PreScore draws one feasible node and
scores it 100 and the rest 0, with ``gpuSelMethod`` "random"); whole GPUs: the lowest-numbered free."""

from __future__ import annotations

import numpy as np

from raysim.cluster.resources import MILLI
from raysim.placement.scored.base import NodeScorer


class RandomScorer(NodeScorer):
    name = "random"
    label = "01-Random"

    def score(self, kind, idx):
        s = np.zeros(len(idx), dtype=np.int64)
        s[self.rng.integers(len(idx))] = 100
        return s

    def select(self, kind, idx, rank):
        return int(idx[self.rng.integers(len(idx))])

    def gpus(self, node, kind):
        milli, num = int(self.k_milli[kind]), int(self.k_num[kind])
        if milli >= MILLI:
            return self.state.first_free(node, num)
        fit = np.flatnonzero(self.state.gpu_left[node] >= milli)
        return (int(fit[self.rng.integers(len(fit))]),)
