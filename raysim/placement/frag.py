"""FGD's target workload and node fragmentation, vectorised over nodes.

Target workload (the reference's ``GetTypicalPods`` with the artifact's settings: CPU pods included,
popularity threshold 95 %, increase step 1, no GPU weighting): every pod of the list counts once
under its shape (cpu_milli, gpu_milli, num_gpu, gpu_spec); shapes are sorted by count, most frequent
first (equal counts: the larger shape first, comparing cpu_milli, then gpu_milli, num_gpu, gpu_spec);
the leading shapes are kept until they cover at least 95 % of the pods, and their frequencies are
renormalised over what was kept. A CPU request of 0 counts as 100 milli (Kubernetes' non-zero
default, as the reference's ``GetPodResource``).

Fragmentation of a node for one target shape t (``GetNodePodFrag``), with G the node's free GPU
milli (summed over its GPUs), c its free CPU and g_i the free milli of GPU i:

- t asks no GPU: ``XL`` (c >= cpu_t) or ``XR`` (c < cpu_t); all G counts as fragment;
- the node's model is not allowed by t's gpu_spec: ``NoAccess``; all G is fragment;
- at least num_gpu_t GPUs have g_i >= gpu_milli_t: ``Q3`` if c >= cpu_t, else ``Q4`` (lack CPU);
- otherwise ``Q2`` (lack GPU) if c >= cpu_t, else ``Q1`` (lack both).

For Q3 the GPUs with g_i < gpu_milli_t are still fragment (counted under Q2); everything else of a
Q3 node is usable. The node's fragment amount (``NodeGpuShareFragAmount``, summed except Q3) is

    frag(node) = sum_t f_t * (G - [t is Q3] * sum_{i: g_i >= gpu_milli_t} g_i)

and the cluster's fragmentation ratio is sum(frag) / sum(G). Internally the amount is kept as an
exact integer ``numerator = total * frag`` (``total`` = pods kept in the target workload, f_t =
count_t / total), so equal states give bitwise-equal scores (FGD truncates its score to an integer,
and a change of exactly 0 must score exactly 50).

FGD's scores, however, are computed by :meth:`FragModel.reference_amount_from`, which repeats the
reference's float arithmetic operation for operation (per category, sums in the target's shape
order, then the categories except Q3 in their order): a placement that moves a shape between two
fragment categories (say a CPU shape from XL to XR) leaves the true amount unchanged but may change
its last bits, and the reference's truncated score is then 49 instead of 50. Replaying the floats
keeps those ties as the reference has them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raysim.cluster.resources import MILLI, Pods

#: Categories of the reference's ``FragRatioDataMap``, in its order.
CATEGORIES = ("q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu", "xl_satisfied", "xr_lack_cpu",
              "no_access")
#: Kubernetes' default CPU request used for pods that ask for 0 (``GetNonzeroRequests``).
DEFAULT_MILLI_CPU = 100


def nonzero_cpu(cpu_milli) -> np.ndarray:
    """CPU requests as the reference's scoring sees them (0 -> 100 milli)."""
    cpu = np.asarray(cpu_milli, dtype=np.int64)
    return np.where(cpu == 0, DEFAULT_MILLI_CPU, cpu)


@dataclass(frozen=True)
class TargetWorkload:
    """The typical pod shapes with their integer weights: frequency f_t = count[t] / total."""

    cpu_milli: np.ndarray
    gpu_milli: np.ndarray
    num_gpu: np.ndarray
    gpu_spec: tuple
    count: np.ndarray
    total: int  # sum of `count`: the pods the kept shapes cover
    pods: int  # pods the workload was computed from

    @property
    def freq(self) -> np.ndarray:
        return self.count / self.total

    @property
    def freq_reference(self) -> np.ndarray:
        """The frequencies as the reference's float arithmetic makes them: count / pods, divided by
        (total / pods) when shapes were left out (bit-for-bit, for :meth:`FragModel.reference_amount_from`)."""
        f = self.count / float(self.pods)
        return f / (self.total / float(self.pods)) if self.total < self.pods else f

    def __len__(self) -> int:
        return len(self.count)

    def table(self):
        """The shapes as a pandas DataFrame (for reports)."""
        import pandas as pd

        return pd.DataFrame({"cpu_milli": self.cpu_milli, "gpu_milli": self.gpu_milli, "num_gpu": self.num_gpu,
                             "gpu_spec": list(self.gpu_spec), "count": self.count, "freq": self.freq})


def target_workload(pods: Pods, *, threshold_pct: float = 95.0, step: int = 1,
                    include_cpu_pods: bool = True) -> TargetWorkload:
    """The target workload of a pod list (see the module doc; defaults are the FGD artifact's)."""
    if step < 1:
        raise ValueError("step must be >= 1")
    cpu = nonzero_cpu(pods.cpu_milli)
    keep = np.ones(len(pods), bool) if include_cpu_pods else pods.num_gpu > 0
    counts: dict = {}
    for key in zip(cpu[keep].tolist(), pods.gpu_milli[keep].tolist(), pods.num_gpu[keep].tolist(),
                   [s or "" for s in pods.gpu_spec[keep].tolist()]):
        counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    if total == 0:
        raise ValueError("no pods to build a target workload from")
    # most frequent first; equal counts: larger (cpu, gpu_milli, num_gpu, gpu_spec) first
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected = threshold_pct * total / 100.0
    i = kept = cum = 0
    while cum < expected and i < len(shapes):
        kept += step
        while i < kept and i < len(shapes):
            cum += shapes[i][1]
            i += 1
    chosen = shapes[:i]
    return TargetWorkload(
        np.array([k[0] for k, _ in chosen], np.int64), np.array([k[1] for k, _ in chosen], np.int64),
        np.array([k[2] for k, _ in chosen], np.int64), tuple(k[3] or None for k, _ in chosen),
        np.array([c for _, c in chosen], np.int64), int(cum), int(total))


def _allowed(spec, models) -> np.ndarray:
    """Model codes (plus a last column for CPU-only nodes, code -1) that a shape may use."""
    names = {m for m in (spec or "").split("|") if m}
    if not names:
        return np.ones(len(models) + 1, bool)
    return np.array([m in names for m in models] + [False])


class FragModel:
    """Fragmentation of node states against a target workload, for nodes with GPU models `models`
    (node model codes index `models`; -1 is a CPU-only node)."""

    def __init__(self, target: TargetWorkload, models: tuple[str, ...]):
        self.target = target
        self.models = tuple(models)
        self.total = int(target.total)
        gpu = target.gpu_milli > 0
        self.m = target.gpu_milli[gpu]
        self.n = target.num_gpu[gpu]
        self.cpu = target.cpu_milli[gpu]
        self.w = target.count[gpu]
        self.thresholds, self.t_index = np.unique(self.m, return_inverse=True)
        self.access = np.array([_allowed(s, self.models) for s, g in zip(target.gpu_spec, gpu) if g],
                               dtype=bool).reshape(-1, len(self.models) + 1)  # (GPU shapes, models + 1)
        self._all_access = np.array([_allowed(s, self.models) for s in target.gpu_spec],
                                    dtype=bool).reshape(-1, len(self.models) + 1)
        self._freq_ref = target.freq_reference
        self._is_gpu_shape = gpu
        # every shape's threshold index (CPU shapes: 0, unused)
        self._t_all = np.searchsorted(self.thresholds, target.gpu_milli).clip(0, max(len(self.thresholds) - 1, 0))

    def numerator(self, cpu_left, gpu_left, model) -> np.ndarray:
        """``total`` x frag for each state (exact integers). `cpu_left` (K,), `gpu_left` (K, W) free
        milli per GPU (0 for absent GPUs), `model` (K,) or one code for all."""
        G, S, cnt = self.counts(gpu_left)
        return self.numerator_from(cpu_left, G, S, cnt, model)

    def counts(self, gpu_left) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What frag needs of the GPUs: free milli G (...,), and per threshold m of
        :attr:`thresholds` the free milli S and the number cnt of the GPUs with >= m free (..., M)."""
        gpu_left = np.asarray(gpu_left, dtype=np.int64)
        ge = gpu_left[..., None, :] >= self.thresholds[:, None]  # (..., M, W)
        return gpu_left.sum(-1), np.where(ge, gpu_left[..., None, :], 0).sum(-1), ge.sum(-1)

    def numerator_from(self, cpu_left, G, S, cnt, model) -> np.ndarray:
        """:meth:`numerator` from :meth:`counts` (lets callers derive counts of changed states)."""
        if len(self.m) == 0:
            return self.total * np.asarray(G)
        cpu_left = np.asarray(cpu_left, dtype=np.int64)
        ok = (cpu_left[..., None] >= self.cpu) & (cnt[..., self.t_index] >= self.n)
        ok &= self.access[:, np.asarray(model)].T if np.ndim(model) else self.access[:, int(model)]
        return self.total * G - (np.where(ok, S[..., self.t_index], 0) * self.w).sum(-1)

    def reference_amount_from(self, cpu_left, G, S, cnt, model) -> np.ndarray:
        """FGD's fragment amount (float) computed as the reference does (``NodeGpuShareFragAmount``
        then ``FragAmountSumExceptQ3``), from :meth:`counts` of K states (`cpu_left`, `G` (K,) or
        scalars, `S`, `cnt` (K, M) or (M,)); `model` one code or (K,)."""
        tw = self.target
        scalar = np.ndim(G) == 0
        cpu_left = np.atleast_1d(np.asarray(cpu_left, dtype=np.int64))
        G = np.atleast_1d(np.asarray(G, dtype=np.int64))
        f = self._freq_ref[:, None]  # shapes along axis 0, states along axis 1
        full = f * G.astype(np.float64)  # (T, K)
        cpu_ok = tw.cpu_milli[:, None] <= cpu_left
        gpu = self._is_gpu_shape[:, None]
        if len(self.m):
            S_t = np.atleast_2d(S).T[self._t_all]  # (T, K)
            host = np.atleast_2d(cnt).T[self._t_all] >= tw.num_gpu[:, None]
            below = f * (G - S_t).astype(np.float64)
        else:
            host = np.zeros(full.shape, bool)
            below = full
        acc = self._all_access[:, np.asarray(model)] if np.ndim(model) else self._all_access[:, int(model)][:, None]
        # category of each (shape, state): 0 Q1, 1 Q2 (also a Q3 shape's GPUs too small), 2 Q4, 3 XL, 4 XR, 5 NA
        cat = np.where(gpu, np.where(acc, np.where(cpu_ok, 1, np.where(host, 2, 0)), 5), np.where(cpu_ok, 3, 4))
        value = np.where(gpu & acc & host & cpu_ok, below, full)
        k = full.shape[1]
        flat = cat * k + np.arange(k)  # (category, state) as one index
        sums = np.zeros(6 * k)
        for where, v in zip(flat, value):  # each category summed in shape order (sequentially, as the reference)
            sums[where] += v
        sums = sums.reshape(6, k)
        out = sums[0]
        for b in sums[1:]:  # then the categories in their order
            out = out + b
        return out[0] if scalar else out

    def amount(self, cpu_left, gpu_left, model) -> np.ndarray:
        """FGD's fragment amount (GPU milli, float) of each state."""
        return self.numerator(cpu_left, gpu_left, model) / self.total

    def categories(self, cpu_left, gpu_left, model) -> np.ndarray:
        """(K, 7) amounts per category of :data:`CATEGORIES` (the reference's FragAmount.Data);
        each row sums to G and the sum without Q3 is :meth:`amount`."""
        tw = self.target
        cpu_left = np.atleast_1d(np.asarray(cpu_left, dtype=np.int64))
        gpu_left = np.atleast_2d(np.asarray(gpu_left, dtype=np.int64))
        model = np.broadcast_to(np.asarray(model, dtype=np.int64), cpu_left.shape)
        f = tw.freq  # (T,)
        G = gpu_left.sum(-1).astype(float)[:, None]  # (K, 1)
        m = tw.gpu_milli[None, :, None]
        fits = gpu_left[:, None, :] >= np.maximum(m, 1)  # (K, T, W)
        cnt = fits.sum(-1)
        below = np.where(fits, 0, gpu_left[:, None, :]).sum(-1)  # free milli on GPUs too small for t
        cpu_ok = cpu_left[:, None] >= tw.cpu_milli[None, :]
        acc = self._all_access[:, model].T  # (K, T)
        cpu_shape = (tw.gpu_milli == 0)[None, :]
        host = cnt >= tw.num_gpu[None, :]
        out = np.zeros((len(cpu_left), len(CATEGORIES)))
        full = f[None, :] * G
        q3 = ~cpu_shape & acc & host & cpu_ok
        out[:, 0] = np.where(~cpu_shape & acc & ~host & ~cpu_ok, full, 0).sum(1)
        out[:, 1] = (np.where(~cpu_shape & acc & ~host & cpu_ok, full, 0) + np.where(q3, f * below, 0)).sum(1)
        out[:, 2] = np.where(q3, f * (G - below), 0).sum(1)
        out[:, 3] = np.where(~cpu_shape & acc & host & ~cpu_ok, full, 0).sum(1)
        out[:, 4] = np.where(cpu_shape & cpu_ok, full, 0).sum(1)
        out[:, 5] = np.where(cpu_shape & ~cpu_ok, full, 0).sum(1)
        out[:, 6] = np.where(~cpu_shape & ~acc, full, 0).sum(1)
        return out


__all__ = ["CATEGORIES", "TargetWorkload", "target_workload", "FragModel", "nonzero_cpu", "MILLI"]


class FragTracker:
    """FGD's fragment amount of one resource state (raysim.cluster.resources.ResourceState) as it
    changes: per node, recomputed only where the state's stamps moved since the last call (every
    node when nodes joined). Only the nodes that take pods count (`ResourceState.present`): a
    node away on loan, or being drained for its return, is not the VC's to fill."""

    def __init__(self, target: TargetWorkload):
        self.target = target
        self.model: FragModel | None = None  # built on the first call, for the state's GPU models

    def amount(self, res) -> int:
        """The state's fragment amount now, in GPU milli (rounded to a whole milli)."""
        if self.model is None or len(self.node) != len(res.nodes):  # (nodes joined: held on loan)
            self.model = FragModel(self.target, res.nodes.models)
            self.node = self.model.numerator(res.cpu_left, res.gpu_left, res.nodes.model)
            self.sum = int(self.node.sum())
            self.seen = res.stamp.copy()
        moved = np.flatnonzero(res.stamp != self.seen)
        if len(moved):
            new = self.model.numerator(res.cpu_left[moved], res.gpu_left[moved], res.nodes.model[moved])
            self.sum += int(new.sum() - self.node[moved].sum())
            self.node[moved] = new
            self.seen[moved] = res.stamp[moved]
        total = self.sum if res.all_present else int(self.node[res.present].sum())
        return round(total / self.model.total)
