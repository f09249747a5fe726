"""GPU-sharing placement with time: pods arrive at their creation time, hold their resources for a
duration, leave, and wait in a queue while no node fits them.

Same cluster (:class:`~raysim.sim.resources.ResourceState`) and policies as the inflation
experiment (:mod:`raysim.sharing.inflation`); each placement is :func:`~raysim.sharing.inflation.place_one`
(the nodes where the pod fits now, the policy's node, the policy's GPUs). FGD's target workload is
the pod list's, the tie-breaking node order and the policy's randomness come from `seed` exactly as
in the inflation experiment (the arrival-order stream is drawn but unused: arrivals are by time).

Duration model (:func:`timed_pods` via :func:`raysim.trace.alibaba2023.pod_durations`, which the VC
engine's ``trace.format=alibaba2023`` uses too; Alibaba GPU 2023 pod lists; times in seconds from
trace start):

- ``submit`` = ``creation_time`` for every pod.
- Pods that ran (Succeeded, Failed, Running; they have a ``scheduled_time``): duration =
  ``deletion_time - scheduled_time``, the time the trace saw them hold their resources.
- Running pods whose ``deletion_time`` is the trace cut-off (the largest deletion time of the list,
  12,902,960 s in the public files; 34 pods of ``default``) were still running when the trace ended:
  their duration is the same ``deletion - scheduled`` (the run observed so far, a lower bound) and
  they are flagged ``censored`` (``duration_source`` "cutoff").
- Pending pods (never scheduled, no ``scheduled_time``; 897 of ``default``): duration = the median
  duration of the uncensored pods that ran with the same GPU class (num_gpu, share or whole GPU;
  num_gpu 0 is the CPU class), or of all of them if that class has none, rounded to whole
  seconds; flagged ``censored`` (``duration_source`` "median"). None is dropped.

Engine (event-driven, no ticks; cost grows with events, not seconds): a heap of departures and the
arrivals sorted by (submit, row). At each event time: departures first (:meth:`ResourceState.remove`
and the policy's caches updated), then the arrivals of that second join the queue in (submit, row)
order, then the queue is served: FIFO with head-of-line blocking (the head is placed while it fits;
the first that does not fit stops the queue), or with ``backfill`` every queued pod is tried in queue
order and one that does not fit is skipped. The queue is re-examined only where something could have
changed (after a departure, or for pods that just arrived), and with ``backfill`` a request that
failed once at an event is not tried again at that event (the state only shrinks while serving).

A pod that fits no EMPTY node of the cluster (CPU, memory, GPUs or its ``gpu_spec`` models) can
never start: it is rejected when it arrives, never queued, and counted (``rejected``) in the jobs
table and the summary; every other pod starts, since an empty cluster fits it.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from raysim.sim.resources import MILLI, ResourceState, Nodes, PodKinds, Pods
from raysim.placement.frag import FragModel, target_workload
from raysim.sharing.inflation import load_openb_nodes, place_one
from raysim.placement.scored import make_policy, policy_class
from raysim.trace.alibaba2023 import pod_durations

QUANTILES = {"p50": 50, "p95": 95, "p99": 99, "p99.9": 99.9}


@dataclass(frozen=True)
class TimedPods:
    """Pods with times: requests (`pods`), arrival `submit` (s), `duration` (s), `censored` (the
    duration is not an observed full run) and its `source` (one of
    :data:`~raysim.trace.alibaba2023.DURATION_SOURCES`), and `row` (arrivals of one second go in row
    order)."""

    pods: Pods
    submit: np.ndarray
    duration: np.ndarray
    censored: np.ndarray = None
    source: np.ndarray = None
    row: np.ndarray = None

    def __post_init__(self):
        n = len(self.pods)
        object.__setattr__(self, "submit", np.asarray(self.submit, dtype=np.int64))
        object.__setattr__(self, "duration", np.asarray(self.duration, dtype=np.int64))
        cens = np.zeros(n, bool) if self.censored is None else np.asarray(self.censored, dtype=bool)
        object.__setattr__(self, "censored", cens)
        src = np.full(n, "observed", dtype=object) if self.source is None else np.asarray(self.source, dtype=object)
        object.__setattr__(self, "source", src)
        row = np.arange(n, dtype=np.int64) if self.row is None else np.asarray(self.row, dtype=np.int64)
        object.__setattr__(self, "row", row)
        if not (len(self.submit) == len(self.duration) == len(cens) == len(src) == len(row) == n):
            raise ValueError("timed pod arrays differ in length")
        if (self.duration < 0).any():
            raise ValueError("durations must be non-negative")

    def __len__(self) -> int:
        return len(self.pods)


def timed_pods(table: pa.Table, cutoff: int | None = None) -> TimedPods:
    """Pods and durations of an openb pod table (:func:`raysim.trace.alibaba2023.read_openb_pods`)
    under the module's duration model (:func:`raysim.trace.alibaba2023.pod_durations`). `cutoff` is
    the trace end (default: the table's largest deletion time)."""
    duration, source = pod_durations(table, cutoff)
    pods = Pods(table.column("cpu_milli").to_numpy(), table.column("memory_mib").to_numpy(),
                table.column("num_gpu").to_numpy(), table.column("gpu_milli").to_numpy(),
                np.array(table.column("gpu_spec").to_pylist(), dtype=object), tuple(table.column("name").to_pylist()))
    row = table.column("row").to_numpy() if "row" in table.column_names else None
    return TimedPods(pods, table.column("creation_time").to_numpy(), duration, source != "observed", source, row)


@dataclass
class TimedRun:
    """One timed run: per pod (list order) its times (s; -1 for a rejected pod), node (-1: rejected),
    and the cluster over time (`series_*`: after each event, the queue length and allocated milli)."""

    policy: str
    label: str
    seed: int
    backfill: bool
    total_gpus: int
    names: tuple
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    node: np.ndarray
    duration: np.ndarray
    censored: np.ndarray
    source: np.ndarray
    rejected: np.ndarray
    series_time: np.ndarray
    series_queue: np.ndarray
    series_used: np.ndarray
    used_area: float  # integral of allocated GPU milli over time (milli x s)
    events: int = 0
    wall_s: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def queue(self) -> np.ndarray:
        return np.where(self.rejected, -1, self.start - self.submit)

    @property
    def jct(self) -> np.ndarray:
        return np.where(self.rejected, -1, self.end - self.submit)

    def jobs_table(self) -> pa.Table:
        """One row per pod in list order; start, end, queue, jct and node are null for rejected pods."""
        rej = self.rejected

        def col(a):
            return pa.array(a, type=pa.int64(), mask=rej)

        return pa.table({
            "pod": pa.array(np.arange(len(self.submit)), pa.int64()),
            "name": pa.array(list(self.names) if self.names else [str(i) for i in range(len(self.submit))]),
            "num_gpu": pa.array(self.num_gpu, pa.int32()), "gpu_milli": pa.array(self.gpu_milli, pa.int32()),
            "submit": pa.array(self.submit, pa.int64()), "start": col(self.start), "end": col(self.end),
            "queue": col(self.queue), "jct": col(self.jct), "duration": pa.array(self.duration, pa.int64()),
            "node": col(self.node), "censored": pa.array(self.censored, pa.bool_()),
            "duration_source": pa.array(self.source.tolist(), pa.string()).dictionary_encode(),
            "rejected": pa.array(rej, pa.bool_()),
        })

    def summary(self) -> dict:
        """Raysim's cluster-summary names where they apply (vc "all"; gpu_utilization is the
        time-weighted mean share of GPU milli allocated over [first arrival, last departure])."""
        ok = ~self.rejected
        q, j = self.queue[ok].astype(float), self.jct[ok].astype(float)
        row = {"vc": "all", "jobs": len(self.submit), "finished": int(ok.sum()), "rejected": int(self.rejected.sum()),
               "censored": int(self.censored.sum()),
               "avg_jct": j.mean() if len(j) else np.nan, "avg_queue": q.mean() if len(q) else np.nan}
        for label, p in QUANTILES.items():
            row[f"{label}_queue"] = np.percentile(q, p) if len(q) else np.nan
        for label, p in QUANTILES.items():
            row[f"{label}_jct"] = np.percentile(j, p) if len(j) else np.nan
        first, last = (int(self.submit[ok].min()), int(self.end[ok].max())) if ok.any() else (0, 0)
        row["makespan"] = last - first
        span = (last - first) * self.total_gpus * MILLI
        row["gpu_utilization"] = self.used_area / span if span > 0 else np.nan
        row["queued_pods"] = int((q > 0).sum())
        row["max_queue_len"] = int(self.series_queue.max()) if len(self.series_queue) else 0
        row.update({"sc_policy": self.label, "seed": self.seed, "backfill": self.backfill,
                    "speedup": self.extra.get("speedup", 1.0), "events": self.events,
                    "wall_s": round(self.wall_s, 3)})
        return row


def _as_timed(pods) -> TimedPods:
    if isinstance(pods, TimedPods):
        return pods
    if isinstance(pods, pa.Table):
        return timed_pods(pods)
    if isinstance(pods, tuple) and len(pods) >= 3 and isinstance(pods[0], Pods):
        return TimedPods(*pods)
    raise TypeError("pods: an openb pod table, a TimedPods, or a tuple (Pods, submit, duration[, censored])")


def run_timed(nodes: Nodes, pods, policy: str, seed: int, *, backfill: bool = False, speedup: float = 1.0,
              check_every_event: bool = False) -> TimedRun:
    """Run the pods through time on `nodes` with `policy` (see the module doc). `pods` is an openb
    pod table (durations by :func:`timed_pods`), a :class:`TimedPods`, or (Pods, submit, duration[,
    censored]). `speedup` > 1 compresses the arrivals (submit // speedup, in whole seconds; durations
    unchanged) to raise the offered load; 1 replays the trace's times. With `check_every_event`,
    :meth:`ResourceState.check` runs after every event (slow: for tests); it always runs once at the
    end."""
    t0 = time.perf_counter()
    tp = _as_timed(pods)
    pd_ = tp.pods
    n = len(pd_)
    cls = policy_class(policy)
    kinds = PodKinds.of(pd_)
    frag = FragModel(target_workload(pd_), nodes.models)
    _, rng_rank, rng_policy = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    rank = rng_rank.permutation(len(nodes))
    state = ResourceState(nodes)
    pol = make_policy(cls.name, state, frag, kinds, rng_policy)

    cpu, mem, ngpu, milli = (a.tolist() for a in (pd_.cpu_milli, pd_.memory_mib, pd_.num_gpu, pd_.gpu_milli))
    spec, kind_of = pd_.gpu_spec.tolist(), kinds.of_pod.tolist()
    if speedup <= 0:
        raise ValueError("speedup must be positive")
    submit_arr = tp.submit if speedup == 1 else np.floor(tp.submit / float(speedup)).astype(np.int64)
    submit, duration = submit_arr.tolist(), tp.duration.tolist()
    # request ids (what feasibility depends on) and which requests fit an empty cluster
    req_index: dict = {}
    req_of = [req_index.setdefault(k, len(req_index)) for k in zip(cpu, mem, ngpu, milli, spec)]
    empty = ResourceState(nodes)
    fits_empty = [bool(empty.feasible(*k).any()) for k in req_index]
    rejected = np.array([not fits_empty[r] for r in req_of], dtype=bool)

    order = np.lexsort((tp.row, submit_arr)).tolist()
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    node_of = np.full(n, -1, dtype=np.int64)
    heap: list = []  # (end, pod)
    queue: list = []  # pod ids in queue order; FIFO serves from `head`
    head = 0
    used = 0
    area = 0.0
    s_time, s_queue, s_used = [], [], []
    i, n_arr, events = 0, len(order), 0
    t_prev = None

    def start_pod(p: int, t: int) -> bool:
        nonlocal used
        node = place_one(state, pol, rank, p, cpu[p], mem[p], ngpu[p], milli[p], spec[p], kind_of[p])
        if node < 0:
            return False
        start[p], end[p], node_of[p] = t, t + duration[p], node
        heapq.heappush(heap, (t + duration[p], p))
        used += ngpu[p] * milli[p]
        return True

    while i < n_arr or heap:
        t = min(heap[0][0] if heap else np.iinfo(np.int64).max, submit[order[i]] if i < n_arr else np.iinfo(np.int64).max)
        if t_prev is not None:
            area += used * (t - t_prev)
        t_prev = t
        events += 1
        departed = False
        while heap and heap[0][0] == t:
            _, p = heapq.heappop(heap)
            state.remove(p)
            pol.refresh(int(node_of[p]))
            used -= ngpu[p] * milli[p]
            departed = True
        old_len = len(queue)
        while i < n_arr and submit[order[i]] == t:
            p = order[i]
            i += 1
            if not rejected[p]:
                queue.append(p)
        if backfill:
            lo = head if departed else old_len
            if lo < len(queue):
                failed: set = set()
                kept = queue[head:lo]
                for p in queue[lo:]:
                    r = req_of[p]
                    if r in failed or not start_pod(p, t):
                        failed.add(r)
                        kept.append(p)
                queue, head = kept, 0
        elif departed or head >= old_len:
            while head < len(queue) and start_pod(queue[head], t):
                head += 1
            if head > 4096 and head * 2 > len(queue):
                queue, head = queue[head:], 0
        if check_every_event:
            state.check()
        s_time.append(t)
        s_queue.append(len(queue) - head)
        s_used.append(used)
    if len(queue) - head:
        raise RuntimeError(f"{len(queue) - head} pods still queued with an empty cluster (a bug)")
    state.check()
    return TimedRun(cls.name, cls.label, int(seed), bool(backfill), nodes.total_gpus, pd_.names,
                    pd_.num_gpu, pd_.gpu_milli, submit_arr, start, end, node_of, tp.duration, tp.censored, tp.source,
                    rejected, np.array(s_time, np.int64), np.array(s_queue, np.int64), np.array(s_used, np.int64),
                    float(area), events, time.perf_counter() - t0, {"speedup": float(speedup)})


def load_openb_timed(folder, workload: str = "default", node_list: str = "openb_node_list_gpu_node"
                     ) -> tuple[Nodes, TimedPods]:
    """Nodes and timed pods of an openb pod list (see :func:`raysim.sharing.inflation.load_openb`)."""
    from pathlib import Path

    from raysim.trace.alibaba2023 import pod_list_path, read_openb_pods

    pt, _ = read_openb_pods(pod_list_path(Path(folder), workload))
    return load_openb_nodes(folder, node_list), timed_pods(pt)


def timed_plot(run: TimedRun, path, title: str = ""):
    """JCT CDF (left) and queue length and GPU allocation over time (right)."""
    from pathlib import Path

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    ax_c, ax_q = fig.subplots(1, 2)
    jct = np.sort(run.jct[~run.rejected])
    if len(jct):
        ax_c.plot(np.maximum(jct, 1), np.arange(1, len(jct) + 1) / len(jct), linewidth=1)
    ax_c.set_xscale("log")
    ax_c.set_xlabel("JCT (s)")
    ax_c.set_ylabel("fraction of pods")
    days = run.series_time / 86400.0
    ax_q.step(days, run.series_queue, where="post", linewidth=0.8, label="queued pods")
    ax_q.set_xlabel("time (days from trace start)")
    ax_q.set_ylabel("queued pods")
    ax_u = ax_q.twinx()
    ax_u.step(days, run.series_used / max(run.total_gpus * MILLI, 1), where="post", color="C1", linewidth=0.8)
    ax_u.set_ylabel("GPU allocation ratio", color="C1")
    for ax in (ax_c, ax_q):
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
