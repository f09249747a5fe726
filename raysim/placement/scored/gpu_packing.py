"""GpuPacking (the reference's ``GpuPackingScore``, gpuSelMethod "best").

For a GPU pod, the GPUs it would use are taken from the node's GPUs sorted by free milli, least
first, among those it fits; from high to low:

1. it can share partly used GPUs: 100 - (sum over them of free milli x 100 // 1000) // 10, at least 50;
2. the node is partly used but the pod needs fully free GPUs: 50 - their number, at least 33;
3. the node is entirely free: 33 - its GPUs, at least its GPUs.

A CPU pod scores 0 everywhere (ties: the engine's fixed random node order). GPU choice: best fit."""

from __future__ import annotations

import numpy as np

from raysim.cluster.resources import MILLI
from raysim.placement.scored.base import MAX_NODE_SCORE, NodeScorer


class GpuPackingScorer(NodeScorer):
    name = "gpu_packing"
    label = "04-GpuPacking"

    def score(self, kind, idx):
        num, milli = int(self.k_num[kind]), int(self.k_milli[kind])
        if num == 0:
            return np.zeros(len(idx), dtype=np.int64)
        st = self.state
        n_free = st.n_free[idx]
        case3 = np.maximum(MAX_NODE_SCORE // 3 - n_free, n_free)
        if milli >= MILLI:
            used = np.full(len(idx), max(MAX_NODE_SCORE // 2 - num, MAX_NODE_SCORE // 3), dtype=np.int64)
        else:
            rows = st.gpu_left[idx]
            least = np.where(rows >= milli, rows, 2 * MILLI + 1).min(1)  # the GPU it would share
            shared = np.maximum(MAX_NODE_SCORE - (least * 100 // MILLI) // 10, MAX_NODE_SCORE // 2)
            used = np.where(least == MILLI, max(MAX_NODE_SCORE // 2 - 1, MAX_NODE_SCORE // 3), shared)
        return np.where(n_free == st.nodes.num_gpu[idx], case3, used).astype(np.int64)
