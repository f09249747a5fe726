"""FGD: Fragmentation Gradient Descent (the reference's ``FGDScore``, GPU choice by the same score).

For a node with fragment amount F (:mod:`raysim.placement.frag`) and the amount F' it would have with
the pod placed, the score is int(100 x sigmoid((F - F') / 1000)): placing where fragmentation grows
least (or shrinks most) wins; an unchanged amount scores 50 (49 when the reference's float sums
leave a tiny negative difference, which :meth:`FragModel.reference_amount_from` replays). F' for

- a share pod: computed for every GPU of the node the pod fits; the node's score is the best of them
  and that GPU (the lowest index among equal integer scores) is the one the pod gets;
- a whole-GPU pod: its GPUs come from the fully free ones (which ones does not change F');
- a CPU pod: only the node's free CPU changes.

The score depends only on the node's state and the pod's (cpu, num_gpu, gpu_milli) (its gpu_spec
only restricts the nodes), and a placement changes one node, so the policy keeps a (nodes x
(cpu, num_gpu, gpu_milli)) table of scores and chosen
GPUs and recomputes one row per placement (rows are memoised by node state: many nodes share
states). Selecting a node is then a column lookup.
"""

from __future__ import annotations

import numpy as np

from raysim.cluster.resources import MILLI
from raysim.placement.scored.base import MAX_NODE_SCORE, NodeScorer


#: Go's math.Exp returns 1 + x below this magnitude.
_NEAR_ZERO = 1.0 / (1 << 28)


def fgd_score(frag_old, frag_new) -> np.ndarray:
    """int(100 x sigmoid((F - F') / 1000)) with the reference's float operations (F, F': fragment
    amounts as :meth:`FragModel.reference_amount_from` computes them)."""
    x = (np.asarray(frag_old, dtype=np.float64) - np.asarray(frag_new, dtype=np.float64)) / 1000
    e = np.where(np.abs(x) < _NEAR_ZERO, 1 - x, np.exp(-x))
    return (1.0 / (1.0 + e) * float(MAX_NODE_SCORE)).astype(np.int64)


class FGDScorer(NodeScorer):
    name = "fgd"
    label = "06-FGD"
    caches = True

    def __init__(self, state, frag, kinds, rng):
        super().__init__(state, frag, kinds, rng)
        n_nodes, width = state.gpu_left.shape
        self.width = width
        # kinds that differ only in gpu_spec score alike: one table column per (cpu, num_gpu, gpu_milli)
        shapes: dict = {}
        self.column = np.array([shapes.setdefault(key, len(shapes)) for key in
                                zip(self.k_cpu.tolist(), self.k_num.tolist(), self.k_milli.tolist())], dtype=np.int64)
        first = np.array(list({c: k for k, c in reversed(list(enumerate(self.column.tolist())))}.values()))
        first = first[np.argsort(self.column[first])]  # a kind of each column, in column order
        self.c_cpu, self.c_num, self.c_milli = self.k_cpu[first], self.k_num[first], self.k_milli[first]
        num, milli = self.c_num, self.c_milli
        self.cpu_kinds = np.flatnonzero(num == 0)
        self.whole_kinds = np.flatnonzero((num > 0) & (milli >= MILLI))
        self.share_kinds = np.flatnonzero((num > 0) & (milli < MILLI))
        self.table = np.zeros((n_nodes, len(shapes)), dtype=np.int64)
        self.choice = np.zeros((n_nodes, len(shapes)), dtype=np.int64)  # GPU of a share column
        self._memo: dict = {}
        for node in range(n_nodes):
            self._refresh(node)

    def _refresh(self, node: int) -> None:
        st = self.state
        c, g, model = int(st.cpu_left[node]), st.gpu_left[node], int(st.nodes.model[node])
        key = (c, g.tobytes(), model)
        row = self._memo.get(key)
        if row is None:
            row = self._memo[key] = self._row(c, g, model)
        self.table[node], self.choice[node] = row

    def _row(self, c: int, g: np.ndarray, model: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores and share GPUs of every kind for a node in state (c, g, model).

        The candidate states' GPU counts are derived from the node's: a whole-GPU pod removes n free
        GPUs (each >= every threshold); a share of m on GPU j lowers S by m at the thresholds GPU j
        still meets afterwards and by g_j (dropping it from cnt) at those it meets only before."""
        frag, thr = self.frag, self.frag.thresholds
        cpu_k, whole_k, share_k = self.cpu_kinds, self.whole_kinds, self.share_kinds
        G, S, cnt = frag.counts(g)
        old = frag.reference_amount_from(c, G, S, cnt, model)
        n = self.c_num[whole_k][:, None]
        m = self.c_milli[share_k][:, None]  # (Ks, 1)
        before = g[:, None] >= thr  # (W, M)
        after = (g[None, :] - m)[..., None] >= thr  # (Ks, W, M)
        w, n_thr = self.width, len(thr)
        share_S = S - np.where(before, np.where(after, m[..., None], g[:, None]), 0)  # (Ks, W, M)
        cands_c = np.concatenate([c - self.c_cpu[cpu_k], c - self.c_cpu[whole_k],
                                  np.repeat(c - self.c_cpu[share_k], w)])
        cands_G = np.concatenate([np.full(len(cpu_k), G), G - n[:, 0] * MILLI, np.repeat(G - m[:, 0], w)])
        cands_S = np.concatenate([np.broadcast_to(S, (len(cpu_k), n_thr)), S - n * MILLI, share_S.reshape(len(share_k) * w, n_thr)])
        cands_cnt = np.concatenate([np.broadcast_to(cnt, (len(cpu_k), n_thr)), cnt - n,
                                    (cnt - (before & ~after)).reshape(len(share_k) * w, n_thr)])
        scores = fgd_score(old, frag.reference_amount_from(cands_c, cands_G, cands_S, cands_cnt, model))
        table = np.zeros(len(self.c_num), dtype=np.int64)
        choice = np.zeros(len(self.c_num), dtype=np.int64)
        n_cpu, n_whole = len(cpu_k), len(whole_k)
        table[cpu_k] = scores[:n_cpu]
        table[whole_k] = scores[n_cpu:n_cpu + n_whole]
        if len(share_k):
            s = scores[n_cpu + n_whole:].reshape(len(share_k), w)
            s = np.where(g[None, :] >= m, s, -1)  # only GPUs the pod fits
            best = s.argmax(1)  # first index among equal scores
            table[share_k] = np.maximum(s[np.arange(len(share_k)), best], 0)
            choice[share_k] = best
        return table, choice

    def score(self, kind, idx):
        return self.table[idx, self.column[kind]]

    def gpus(self, node, kind):
        if self.k_milli[kind] >= MILLI:
            return self.state.first_free(node, int(self.k_num[kind]))
        return (int(self.choice[node, self.column[kind]]),)

    def refresh(self, node):
        self._refresh(node)
