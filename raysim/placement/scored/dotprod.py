"""DotProd (Tetris-style alignment; the reference's ``DotProductScore`` with dimExtMethod "merge",
normMethod "max", gpuSelMethod "best").

Node vector (free CPU / 128000, free GPU milli summed over the node / 8000), pod vector (CPU / 128000,
num_gpu x gpu_milli / 8000); score = int(100 x (1 - dot / 2)): the smaller the dot product the higher
the score. GPU choice: best fit (base)."""

from __future__ import annotations

import numpy as np

from raysim.placement.scored.base import MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, NodeScorer


class DotProdScorer(NodeScorer):
    name = "dotprod"
    label = "02-DotProd"

    def score(self, kind, idx):
        st = self.state
        node_cpu = st.cpu_left[idx] / MAX_SPEC_CPU
        node_gpu = st.left_total[idx] / MAX_SPEC_GPU
        pod_cpu = self.k_cpu[kind] / MAX_SPEC_CPU
        pod_gpu = self.k_req[kind] / MAX_SPEC_GPU
        inner = node_cpu * pod_cpu + node_gpu * pod_gpu
        cur = 1 - inner / 2.0
        return (float(MAX_NODE_SCORE) * cur).astype(np.int64)
