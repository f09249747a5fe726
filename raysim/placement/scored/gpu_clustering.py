"""GpuClustering (the reference's ``GpuClusteringScore``, gpuSelMethod "best").

A GPU pod has an affinity tag: "share-gpu" (a fraction of one GPU) or "<n>-gpu" (n whole GPUs). A
node's tags are those of the GPU pods on it (read from the state's per-node GPU pod classes). With u = 25 x (8000 - free GPU milli of the node) // 8000:

- the node holds only pods of the pod's tag: 75 + u;
- it holds the pod's tag and others: 50 + u;
- it holds no GPU pod: 25 + u;
- it holds only other tags: u.

A CPU pod scores 0 everywhere (ties: the engine's fixed random node order). GPU choice: best fit."""

from __future__ import annotations

import numpy as np

from raysim.cluster.resources import gpu_class
from raysim.placement.scored.base import MAX_NODE_SCORE, MAX_SPEC_GPU, NodeScorer, go_div


class GpuClusteringScorer(NodeScorer):
    name = "gpu_clustering"
    label = "03-GpuClustering"
    caches = True

    def __init__(self, state, frag, kinds, rng):
        super().__init__(state, frag, kinds, rng)
        tags: dict = {}  # GPU pod class (raysim.cluster.resources.gpu_class) -> tag index
        self.k_tag = np.array([-1 if n == 0 else tags.setdefault(gpu_class(n, m), len(tags))
                               for n, m in zip(kinds.num_gpu.tolist(), kinds.gpu_milli.tolist())], dtype=np.int64)
        self.tags = tags
        self.count = np.zeros((len(state.nodes), max(len(tags), 1)), dtype=np.int64)  # GPU pods per tag
        for node in range(len(state.nodes)):
            self.refresh(node)

    def score(self, kind, idx):
        tag = int(self.k_tag[kind])
        if tag < 0:
            return np.zeros(len(idx), dtype=np.int64)
        quarter = MAX_NODE_SCORE // 4
        used = go_div(quarter * (MAX_SPEC_GPU - self.state.left_total[idx]), MAX_SPEC_GPU)
        present = self.count[idx] > 0
        n_tags = present.sum(1)
        mine = present[:, tag]
        base = np.where(mine, np.where(n_tags == 1, MAX_NODE_SCORE * 3 // 4, MAX_NODE_SCORE * 2 // 4),
                        np.where(n_tags == 0, quarter, 0))
        return (used + base).astype(np.int64)

    def refresh(self, node):
        row = self.count[node]
        row[:] = 0
        for key, n in self.state.gpu_classes[node].items():
            tag = self.tags.get(key)
            if tag is not None:
                row[tag] = n
