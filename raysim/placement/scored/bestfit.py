"""BestFit (the reference's ``BestFitScore``, gpuSelMethod "best").

score = int(100 x (1 - (0.5 (free CPU - CPU) / 128000 + 0.5 (free GPU milli - GPU milli) / 8000))):
the node left with the least (weighted) free CPU and GPU wins. The reference then min-max normalises
the scores to 0..100 with integer division; scores are integers in 0..100, so that keeps their order
and their ties and is skipped here. GPU choice: best fit (base)."""

from __future__ import annotations

import numpy as np

from raysim.placement.scored.base import MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, NodeScorer


class BestFitScorer(NodeScorer):
    name = "bestfit"
    label = "05-BestFit"

    def score(self, kind, idx):
        st = self.state
        s = (st.cpu_left[idx] - self.k_cpu[kind]) / MAX_SPEC_CPU * 0.5
        s = s + (st.left_total[idx] - self.k_req[kind]) / MAX_SPEC_GPU * 0.5
        return ((1.0 - s) * float(MAX_NODE_SCORE)).astype(np.int64)
