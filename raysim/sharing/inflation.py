"""The FGD "inflation" experiment: pods arrive, never leave, and are placed or fail; the GPU
allocation and fragmentation ratios are read per percent of arrived GPU demand.

Arrivals (the reference's ``Simulate`` with ``shufflePod: true`` and ``workloadTuningConfig``):
every pod of the list once, in a random order, then pods drawn uniformly WITH replacement from the
list, appended while the requested GPU milli stays within ``tune`` x the cluster's (the reference
stops at the first draw whose ``gpu_milli`` - per GPU, not times ``num_gpu`` - would cross it, and
so do we). If the list alone asks for more than ``tune`` x capacity, random pods are removed from
it instead until it does not. One seed drives the order, the draws, the node order that breaks
score ties and the policy's own randomness (independent ``numpy`` streams spawned from it).

After each arrival (placed or not) a row records the arrived GPU milli (failures included), the
allocated GPU milli and the fragmentation ratio (100 x fragment / idle GPU milli, rounded to 2
decimals as the reference's log). The analysis (the reference's ``merge_alloc_discrete.py`` and
``merge_frag_ratio_discrete.py``) rounds each row's arrived share to a whole percent (half to even)
and its allocation share to 2 decimals; the value at percent p is the mean over the rows at p, or, if
none, over the rows at p-1..p+1 (allocation rounded to 2 decimals), and missing if still none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raysim.placement.frag import FragModel, TargetWorkload, target_workload
from raysim.placement.scored import scorer_class
from raysim.placement.scored.placer import ScoredPlacer, Shapes
from raysim.sim.demand import Demand
from raysim.sim.params import SimParams
from raysim.cluster.resources import MILLI, Nodes, PodKinds, Pods, ResourceState

PERCENTS = tuple(range(0, 131))
DEFAULT_TUNE = 1.3
DEFAULT_SEEDS = tuple(range(42, 52))


def arrival_order(pods: Pods, capacity_milli: int, tune: float, rng: np.random.Generator,
                  chunk: int = 4096) -> np.ndarray:
    """Pod indices in arrival order (see the module doc)."""
    n = len(pods)
    order = rng.permutation(n)
    if tune <= 0 or n == 0:
        return order
    req = pods.gpu_request
    total = int(req.sum())
    target = tune * capacity_milli
    if total == target:
        return order
    if total == 0:
        raise ValueError("tuning the workload to a GPU target needs pods that ask for GPUs (use tune=0)")
    if total > target:  # tune down: drop random pods of the (shuffled) list
        kept = order.tolist()
        while total > target:
            i = int(rng.integers(len(kept)))
            total -= int(req[kept.pop(i)])
        return np.array(kept, dtype=np.int64)
    extra = []
    while True:
        draws = rng.integers(n, size=chunk)
        before = total + np.concatenate([[0], np.cumsum(req[draws])[:-1]])
        over = np.flatnonzero(before + pods.gpu_milli[draws] > target)
        if len(over):
            extra.append(draws[:over[0]])
            break
        extra.append(draws)
        total = int(before[-1] + req[draws[-1]])
    return np.concatenate([order, *extra]).astype(np.int64)


@dataclass
class InflationRun:
    """One run: per arrival, the pod, its node (-1: failed) and the cluster's counters after it."""

    policy: str
    label: str
    seed: int
    tune: float
    total_gpus: int
    pod: np.ndarray
    node: np.ndarray
    arrived_milli: np.ndarray  # cumulative GPU milli requested, failures included
    used_milli: np.ndarray  # GPU milli allocated
    frag_milli: np.ndarray  # fragment amount (float)
    idle_milli: np.ndarray  # free GPU milli
    wall_s: float = 0.0
    workload: str = ""

    @property
    def failed(self) -> int:
        return int((self.node < 0).sum())

    @property
    def frag_ratio(self) -> np.ndarray:
        """Per row, 100 x fragment / idle, rounded to 2 decimals (the reference's log value)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.round(100.0 * self.frag_milli / self.idle_milli, 2)

    def _percent(self) -> np.ndarray:
        return np.rint(self.arrived_milli / self.total_gpus / 10)

    def allo_curve(self) -> dict[int, float]:
        """Allocation ratio (%) per percent of arrived workload."""
        alloc = np.array([round(x, 2) for x in (self.used_milli / self.total_gpus / 10).tolist()])
        return _discretize(self._percent(), alloc, 2)

    def frag_curve(self) -> dict[int, float]:
        """Fragmentation ratio (%) per percent of arrived workload."""
        return _discretize(self._percent(), self.frag_ratio, None)

    def rows(self):
        """(allo, frag) one-row DataFrames in the reference's layout."""
        import pandas as pd

        meta = {"workload": self.workload, "sc_policy": self.label, "tune": self.tune, "seed": self.seed}
        allo = {**meta, "total_gpus": self.total_gpus, **{str(k): v for k, v in self.allo_curve().items()}}
        frag = {**meta, **{str(k): v for k, v in self.frag_curve().items()}}
        return pd.DataFrame([allo]), pd.DataFrame([frag])


def _discretize(percent: np.ndarray, value: np.ndarray, digits) -> dict[int, float]:
    out = {}
    for p in PERCENTS:
        sel = percent == p
        if not sel.any():
            sel = (percent >= p - 1) & (percent <= p + 1)
            if not sel.any():
                out[p] = float("nan")
                continue
        v = float(value[sel].mean())
        out[p] = round(v, digits) if digits is not None else v
    return out


class NodesView:
    """A resource state as placers see a VC (raysim.placement): the inflation experiment's view,
    where every pod runs on one node, so no job is wider than a node (`max_node_gpus`)."""

    def __init__(self, res: ResourceState):
        self.res = res
        self.types = list(res.nodes.models)
        self.max_node_gpus = 1 << 30


def pod_demands(pods: Pods, kinds: PodKinds, models: tuple[str, ...]) -> list[Demand]:
    """Each pod's request as a placer's Demand: its GPUs, GPU milli, CPU, memory and shape, and the
    GPU models its gpu_spec allows (a CPU pod's gpu_spec is ignored, as in the reference)."""
    allowed: dict = {}
    for spec in set(pods.gpu_spec.tolist()):
        names = {m for m in (spec or "").split("|") if m}
        allowed[spec] = frozenset(i for i, m in enumerate(models) if m in names) if names else None
    return [Demand(n, allowed[spec] if n else None, None, m, c, mem, k) for n, m, c, mem, spec, k in zip(
        pods.num_gpu.tolist(), pods.gpu_milli.tolist(), pods.cpu_milli.tolist(), pods.memory_mib.tolist(),
        pods.gpu_spec.tolist(), kinds.of_pod.tolist())]


def run_inflation(nodes: Nodes, pods: Pods, policy: str, seed: int, tune: float = DEFAULT_TUNE, *,
                  target: TargetWorkload | None = None, workload: str = "", check: bool = False) -> InflationRun:
    """One experiment: the scored placer of `policy` (a name or label of
    :data:`raysim.placement.scored.SCORERS`) places the arrivals of `pods` on `nodes`. `target`
    defaults to the target workload of `pods`. With `check`, :meth:`ResourceState.check` runs at
    the end.

    Each arrival is offered to the placer (raysim.placement.scored.placer.ScoredPlacer: the nodes
    where the pod fits now, the policy's node among them, the policy's GPUs inside it) and placed
    where it says, or fails. The placer of VC 0 draws the node order and its own randomness from
    children 1 and 2 of ``SeedSequence(seed)``; child 0 orders the arrivals."""
    t0 = time.perf_counter()
    cls = scorer_class(policy)
    kinds = PodKinds.of(pods)
    target = target if target is not None else target_workload(pods)
    frag = FragModel(target, nodes.models)
    rng_order = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    capacity = nodes.total_gpus * MILLI
    order = arrival_order(pods, capacity, tune, rng_order)
    state = ResourceState(nodes)
    view = NodesView(state)
    placer = ScoredPlacer(cls.name, params=SimParams(seed=int(seed)), shapes=Shapes(kinds, target))
    demands = pod_demands(pods, kinds, nodes.models)

    model = nodes.model
    frag_node = frag.numerator(state.cpu_left, state.gpu_left, model)
    frag_sum = int(frag_node.sum())
    amounts: dict = {}  # node state (free CPU, free milli per GPU, model) -> its fragment numerator
    steps = len(order)
    node_out = np.full(steps, -1, dtype=np.int64)
    arrived = np.zeros(steps, dtype=np.int64)
    used = np.zeros(steps, dtype=np.int64)
    frag_out = np.zeros(steps, dtype=np.float64)
    arr = use = 0
    for step, p in enumerate(order.tolist()):
        d = demands[p]
        arr += d.gpu_num * d.milli
        alloc = placer.select(view, d)
        if alloc is not None:
            node, _, gpus = alloc[0]
            state.place(node, d.cpu, d.mem, d.gpu_num, d.milli, gpus, pod=p, gpu_spec=pods.gpu_spec[p])
            key = (int(state.cpu_left[node]), state.gpu_left[node].tobytes(), int(model[node]))
            new = amounts.get(key)
            if new is None:  # (many nodes pass through the same states: each is computed once)
                new = amounts[key] = int(frag.numerator(state.cpu_left[node], state.gpu_left[node], model[node]))
            frag_sum += new - int(frag_node[node])
            frag_node[node] = new
            use += d.gpu_num * d.milli
            node_out[step] = node
        arrived[step] = arr
        used[step] = use
        frag_out[step] = frag_sum
    if check:
        state.check()
    return InflationRun(cls.name, cls.label, int(seed), float(tune), nodes.total_gpus, order, node_out, arrived,
                        used, frag_out / frag.total, capacity - used, time.perf_counter() - t0, workload)


def experiment(nodes: Nodes, pods: Pods, policies=("random", "dotprod", "gpu_clustering", "gpu_packing",
                                                    "bestfit", "fgd"),
               seeds=DEFAULT_SEEDS, tune: float = DEFAULT_TUNE, *, workload: str = "", processes: int = 1):
    """Every (policy, seed) run; returns (allo, frag) DataFrames in the reference's layout (one row
    per run; columns workload, sc_policy, tune, seed, [total_gpus,] "0".."130") and the runs'
    wall times in a third DataFrame."""
    import pandas as pd

    jobs = [(p, s) for p in policies for s in seeds]
    if processes > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(processes) as ex:
            runs = list(ex.map(_run_job, [(nodes, pods, p, s, tune, workload) for p, s in jobs]))
    else:
        runs = [_run_job((nodes, pods, p, s, tune, workload)) for p, s in jobs]
    allo = pd.concat([r[0] for r in runs], ignore_index=True)
    frag = pd.concat([r[1] for r in runs], ignore_index=True)
    times = pd.DataFrame([r[2] for r in runs])
    return allo, frag, times


def _run_job(args):
    nodes, pods, policy, seed, tune, workload = args
    run = run_inflation(nodes, pods, policy, seed, tune, workload=workload)
    allo, frag = run.rows()
    return allo, frag, {"sc_policy": run.label, "seed": run.seed, "wall_s": run.wall_s, "failed": run.failed,
                        "arrivals": len(run.pod)}


def load_openb_nodes(folder, node_list: str = "openb_node_list_gpu_node") -> Nodes:
    """The nodes of an openb node list in `folder` (the reference uses the GPU nodes only)."""
    from raysim.trace.alibaba2023 import read_openb_nodes

    nt = read_openb_nodes(Path(folder) / f"{node_list.removesuffix('.csv')}.csv")
    return Nodes.from_lists(nt.column("cpu_milli").to_numpy(), nt.column("memory_mib").to_numpy(),
                            nt.column("num_gpu").to_numpy(), nt.column("model").to_pylist(),
                            names=tuple(nt.column("node").to_pylist()))


def load_openb(folder, workload: str = "default", node_list: str = "openb_node_list_gpu_node"
               ) -> tuple[Nodes, Pods]:
    """Nodes and pods of the Alibaba GPU 2023 trace from `folder` (the reference uses the GPU nodes
    only: ``openb_node_list_gpu_node``). `workload` is a pod list name such as ``default``."""
    from raysim.trace.alibaba2023 import pod_list_path, read_openb_pods
    from raysim.errors import TraceError

    nodes = load_openb_nodes(folder, node_list)
    if not nodes.total_gpus:  # arrivals stop at tune x the cluster's GPUs: none would arrive
        raise TraceError(str(Path(folder) / f"{node_list.removesuffix('.csv')}.csv"),
                         "no node with GPUs (the FGD experiment places pods until their GPUs reach fgd.tune x "
                         "the cluster's)")
    path = pod_list_path(Path(folder), workload)
    pt, _ = read_openb_pods(path)
    if pt.num_rows == 0:
        raise TraceError(str(path), "no pods: the pod list has no data rows")
    pods = Pods(pt.column("cpu_milli").to_numpy(), pt.column("memory_mib").to_numpy(),
                pt.column("num_gpu").to_numpy(), pt.column("gpu_milli").to_numpy(),
                np.array(pt.column("gpu_spec").to_pylist(), dtype=object), tuple(pt.column("name").to_pylist()))
    return nodes, pods


def workload_name(workload: str) -> str:
    """``default`` -> ``openb_pod_list_default`` (the reference's `workload` column)."""
    w = str(workload).removesuffix(".csv")
    return w if w.startswith("openb_pod_list_") else "openb_pod_list_" + w
