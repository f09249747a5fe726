"""Alibaba GPU 2023 ("openb") pod lists as raysim jobs for the VC engine: ``trace.format=alibaba2023``.

A pod list (``openb_pod_list_*.csv``, read by :func:`raysim.trace.alibaba2023.read_openb_pods`, so
every quirk and check of that reader applies) becomes a job table in raysim's schema, one job per
pod, all in one VC, :data:`VC` (or split over several: see VCs below), with what the pod asks for:

- ``job_id`` = the pod's 1-based data row in the list (``row`` of the pod table); ``vc`` = "openb";
  ``user`` empty (the trace has no users); ``state`` = ``pod_phase``.
- ``gpu_num`` = ``num_gpu`` (0 for a CPU-only pod, which holds CPU and memory only); ``gpu_milli``
  (1000: whole GPUs; less: a share of one GPU, which other shares may use too), ``cpu_milli`` and
  ``memory_mib`` as the pod asks; ``cpu_num`` = ``cpu_milli`` / 1000 rounded up; ``gpu_constraint``
  = ``gpu_spec`` (models joined by "|", as the node list names them; null: any).
- ``submit_time`` = ``creation_time`` (integer seconds from the trace start, origin "0"), divided by
  the reader option ``speedup`` and rounded down (default 1: the trace's times; a larger value
  compresses arrivals to raise the load; durations are unchanged); pods of one second arrive in row
  order. ``duration`` = :func:`raysim.trace.alibaba2023.pod_durations`:
  ``deletion_time - scheduled_time`` for pods that ran, a lower bound for Running pods cut off by
  the trace end, the median of the pod's GPU class for Pending pods (counted as converted).
- The pod's other columns (``pod_name``, ``qos``, ``scheduled_time``, ``deletion_time``,
  ``duration_source``: see :data:`raysim.trace.schema.OPENB_COLUMNS`) are kept.

Filtered and counted (SkipReport): pods whose duration is 0 (nothing to run).

Cluster: unless a layout is configured (``cluster.layout``, ``trace.vc_config`` or a
``vc_config.csv`` beside the pod list), the node list beside the pod list (reader option
``node_list``, default ``openb_node_list_gpu_node``) gives the VC's nodes in file order, with their
GPU model, GPUs, CPU and memory (:func:`resource_pools`: pools of consecutive alike nodes; CPU-only
nodes of ``all_node`` are left out), recorded in the table's metadata. Every pod must then fit an
empty node of a model it allows (GPUs, CPU and memory): one that fits none is a bad row (raise, or
skip and count with ``on_error="skip"``). With a configured layout (GPUs only) the run's GPU-type
catalog checks the GPUs (:func:`raysim.cluster.catalog.job_types`).

VCs: with the reader option ``vcs`` = N > 1 (no configured layout), the node list's GPU nodes are
dealt to N VCs, ``openb-0`` ... ``openb-<N-1>``, in file order (node i to VC i mod N), and the pod
in row r goes to VC (r - 1) mod N, or, if it fits no empty node there, to the first VC after it
(cyclically) where it does. So every VC gets a slice of every node shape and an even share of the
pods, and the VCs run as separate simulators (Ray actors), or as one queue with ``quota=global``.

Reader options (``trace.reader_options``, ``raysim trace convert -o KEY=VALUE``): ``workload``, the
pod list to read when ``trace.path`` is a folder (``default``, ``gpushare40``, ...; with a file it
must name that file), ``node_list`` (``gpu_node`` or ``all_node``), ``speedup`` and ``vcs`` (see
above), declared with their bounds in :class:`Alibaba2023Options`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE, Pool, total_gpus
from raysim.errors import ConfigError, SkipReport, TraceError
from raysim.cluster.resources import Nodes, ResourceState
from raysim.settings import setting
from raysim.trace.alibaba2023 import (DEFAULT_NODE_LIST, NODE_LISTS, NODE_PREFIX, POD_PREFIX, WORKLOADS,
                                      list_file_name, node_list_path, pod_durations, pod_list_path,
                                      read_openb_nodes, read_openb_pods)
from raysim.trace.layout import with_pools
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

#: The one VC of an openb trace.
VC = "openb"
#: Where a job column comes from in the pod list (for error messages).
SOURCE_COLUMNS = {"gpu_num": "num_gpu", "cpu_num": "cpu_milli", "submit_time": "creation_time",
                  "duration": "deletion_time", "state": "pod_phase", "gpu_constraint": "gpu_spec"}
NO_DURATION = "filtered: duration 0 (nothing to run)"
CUTOFF = "duration is a lower bound: Running when the trace ends (duration_source cutoff)"
MEDIAN = "duration is the median of the pod's GPU class: Pending, never scheduled (duration_source median)"


def names_one_of(prefix: str, known: tuple[str, ...]):
    """A setting's check: the value names one of the openb lists `known` (file names without .csv),
    with or without `prefix` and ``.csv``."""
    short = ", ".join(k[len(prefix):] for k in known)

    def check(name: str, key: str) -> str:
        if list_file_name(name, prefix).removesuffix(".csv") not in known:
            raise ConfigError(key, f"must be one of {short} (with or without the {prefix!r} prefix and '.csv')",
                              name)
        return name

    return check


@dataclass(frozen=True)
class Alibaba2023Options:
    """The alibaba2023 reader's options (trace.reader_options)."""

    workload: str | None = setting(None, "the pod list read from a folder trace.path, e.g. gpushare40 (null: "
                                   "default); with a file it must name that file",
                                   check=names_one_of(POD_PREFIX, WORKLOADS))
    node_list: str = setting(DEFAULT_NODE_LIST, "the node list giving the VC's nodes when no layout is configured: "
                             "gpu_node or all_node", check=names_one_of(NODE_PREFIX, NODE_LISTS))
    speedup: float = setting(1.0, "creation times are divided by it (rounded down) to compress arrivals",
                             above=0)
    vcs: int = setting(1, "VCs the node list's GPU nodes and the pods are dealt to (no configured layout)",
                       minimum=1)


def read_alibaba2023(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                     on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
                     bounds: Bounds = Bounds(), workload: str | None, node_list: str, speedup: float,
                     vcs: int) -> tuple[pa.Table, SkipReport]:
    """Read an openb pod list as a raysim job table (rules: module doc). `vc_nodes` None derives
    the layout from the node list beside the pod list and records it (``pools``, ``vc_nodes``)."""
    name = str(path)
    check_workload(path, workload)
    pods, report = read_openb_pods(path, on_error=on_error)
    try:
        duration, how = pod_durations(pods)
    except ValueError as exc:
        raise TraceError(name, f"{exc}; the VC engine replays pods in time (the FGD inflation experiment, "
                               "+experiment=fgd_openb, needs no times)") from None
    rows = pods.column("row").to_numpy()
    source = Source(name, rows=rows, columns=SOURCE_COLUMNS)
    layout, vc_of = None, np.full(len(rows), VC, dtype=object)
    if vc_nodes is None:
        layout = split_nodes(openb_pools(Path(path).parent, node_list), vcs)
        vc_nodes, gpus_per_node = {vc: total_gpus({vc: pools}) for vc, pools in layout.items()}, 1
    elif vcs > 1:
        raise TraceError(name, f"reader option vcs={vcs} splits the node list into VCs, but a layout is "
                               "configured (cluster.layout or trace.vc_config): drop one of them")
    elif VC not in vc_nodes:
        raise TraceError(name, f"the VC layout has no VC {VC!r}, the VC of every openb pod (it has "
                               f"{sorted(vc_nodes)})")
    idle = duration == 0
    source.skip(report, NO_DURATION, rows[idle], "deletion_time", duration[idle].tolist())
    keep = ~idle
    if layout is not None:
        checks, vc_of = fit_checks(source, pods, layout, keep)
        keep &= checks.finish(report, on_error)
    source.rows = rows[keep]
    frame = job_frame(pods, duration, how, speedup, vc_of)[keep].reset_index(drop=True)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    report.converted.update(conversions(table))
    return (table if layout is None else with_pools(table, layout)), report


read_alibaba2023.Settings = Alibaba2023Options


def check_workload(path, workload: str | None) -> None:
    """A `workload` reader option must name the pod list `path` is."""
    if workload is not None and pod_list_path(Path(path).parent, workload).name != Path(path).name:
        raise TraceError(str(path), f"reader option workload={workload!r} names another pod list than "
                                    "trace.path (give the folder as trace.path, or drop the option)")


def openb_pools(folder, node_list: str = DEFAULT_NODE_LIST) -> tuple[Pool, ...]:
    """The GPU nodes of the node list `node_list` in `folder` as pools (:func:`resource_pools`)."""
    path = node_list_path(folder, node_list)
    pools = resource_pools(read_openb_nodes(path))
    if not pools:
        raise TraceError(str(path), "no node with GPUs (the VC engine needs GPU nodes)")
    return pools


def resource_pools(nodes: pa.Table) -> tuple[Pool, ...]:
    """The GPU nodes in file order as pools of consecutive nodes alike in GPU model, GPUs, CPU and
    memory, so that the VC's nodes keep the file's order (FGD's tie-breaking and random draws refer
    to it). CPU-only nodes are left out."""
    cols = (nodes.column(c).to_pylist() for c in ("model", "num_gpu", "cpu_milli", "memory_mib"))
    return runs_of([n for n in zip(*cols) if n[1] > 0])


def vc_names(vcs: int) -> list[str]:
    """The VCs of a pod list split `vcs` ways: "openb" alone, else "openb-0" ... "openb-<vcs-1>"."""
    return [VC] if vcs == 1 else [f"{VC}-{k}" for k in range(vcs)]


def split_nodes(pools: tuple[Pool, ...], vcs: int) -> dict[str, tuple[Pool, ...]]:
    """The node list's nodes dealt to `vcs` VCs in file order (node i to VC i mod vcs), each VC's
    nodes as pools of consecutive alike nodes."""
    nodes = [(p.gpu_type, p.gpus_per_node, p.cpu_milli, p.memory_mib) for p in pools for _ in range(p.nodes)]
    if len(nodes) < vcs:
        raise ConfigError("trace.reader_options.vcs", f"more VCs than the node list has GPU nodes ({len(nodes)})", vcs)
    return {vc: runs_of(nodes[k::vcs]) for k, vc in enumerate(vc_names(vcs))}


def runs_of(nodes: list[tuple]) -> tuple[Pool, ...]:
    """Nodes (GPU model, GPUs, CPU, memory) in order as pools of consecutive alike nodes."""
    pools: list[Pool] = []
    for model, gpus, cpu, mem in nodes:
        last = pools[-1] if pools else None
        if last is not None and (last.gpu_type, last.gpus_per_node, last.cpu_milli, last.memory_mib) == \
                (model, gpus, cpu, mem):
            pools[-1] = Pool(model, gpus, last.nodes + 1, cpu, mem)
        else:
            pools.append(Pool(model, gpus, 1, cpu, mem))
    return tuple(pools)


def fit_checks(source: Source, pods: pa.Table, layout: dict[str, tuple[Pool, ...]], candidates: np.ndarray
               ) -> tuple[RowChecks, np.ndarray]:
    """Each pod's VC, and the `candidates` pods flagged that fit no empty node of a model they allow
    (their gpu_spec, else any; GPUs, CPU and memory). With several VCs, pod in row r goes to VC
    (r - 1) mod (number of VCs), or to the first VC after it (cyclically) where it fits."""
    models = list(dict.fromkeys(p.gpu_type for pools in layout.values() for p in pools))
    spec = np.array(pods.column("gpu_spec").to_pylist(), dtype=object)
    checks = RowChecks(source, source.rows)
    unknown = np.array([s is not None and not set(s.split("|")) <= set(models) for s in spec], dtype=bool)
    checks.flag(candidates & unknown, f"gpu_spec names a GPU model the node list does not have {models}",
                "gpu_spec", spec)
    request = list(zip(*(pods.column(c).to_pylist() for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")),
                       spec.tolist()))
    names = list(layout)
    fits = {}  # request -> per VC, whether it fits an empty node there
    for vc, pools in layout.items():
        per_node = [(p.gpu_type, p.gpus_per_node, p.cpu_milli, p.memory_mib) for p in pools for _ in range(p.nodes)]
        empty = ResourceState(Nodes.from_lists([n[2] for n in per_node], [n[3] for n in per_node],
                                               [n[1] for n in per_node], [n[0] for n in per_node]))
        for r in set(request):
            fits.setdefault(r, []).append(bool(empty.feasible(*r).any()))
    rows = source.rows.tolist()
    vc_of = np.empty(len(request), dtype=object)
    for i, (r, row) in enumerate(zip(request, rows)):
        first = (row - 1) % len(names)
        home = next((k % len(names) for k in range(first, first + len(names)) if fits[r][k % len(names)]), first)
        vc_of[i] = names[home]
    num_gpu = pods.column("num_gpu").to_numpy()
    checks.flag(candidates & ~np.array([any(fits[r]) for r in request], dtype=bool),
                "the pod fits no empty node of its GPU models (GPUs, CPU and memory)", "num_gpu", num_gpu)
    return checks, vc_of


def job_frame(pods: pa.Table, duration: np.ndarray, how: np.ndarray, speedup: float = 1.0, vc=VC) -> pd.DataFrame:
    """Every pod as a row of raysim's job columns plus the pod columns they do not hold (file order);
    `vc`: the VC of every pod, or of each."""
    def column(name: str) -> np.ndarray:
        return pods.column(name).to_numpy(zero_copy_only=False)

    def nullable(name: str) -> np.ndarray:  # None where null, so that validation keeps the nulls
        return np.array(pods.column(name).to_pylist(), dtype=object)

    phase = pods.column("pod_phase").cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False)
    qos = np.array(pods.column("qos").cast(pa.string()).to_pylist(), dtype=object)
    return pd.DataFrame({
        "job_id": column("row"), "vc": vc, "user": "", "gpu_num": column("num_gpu"),
        "cpu_num": -(-column("cpu_milli") // 1000),
        "submit_time": column("creation_time") if speedup == 1 else np.floor(column("creation_time") / speedup).astype(np.int64),
        "duration": duration, "state": phase, "gpu_constraint": nullable("gpu_spec"),
        "pod_name": column("name"), "cpu_milli": column("cpu_milli"), "memory_mib": column("memory_mib"),
        "gpu_milli": column("gpu_milli"), "qos": qos, "scheduled_time": nullable("scheduled_time"),
        "deletion_time": column("deletion_time"), "duration_source": how,
    })


def conversions(table: pa.Table) -> Counter:
    """How many jobs of `table` have a modelled duration."""
    how = Counter(table.column("duration_source").to_pylist())
    return +Counter({CUTOFF: how["cutoff"], MEDIAN: how["median"]})  # drop zero counts


def write_pods(source, folder, on_error: str = "raise") -> Path:
    """Write the whole pod list `source` (CPU-only pods too, file order; ``row`` = the jobs'
    ``job_id``) as ``pods.parquet`` in `folder`, so that converting loses no pod."""
    pods, _ = read_openb_pods(source, on_error=on_error)
    path = Path(folder) / "pods.parquet"
    pq.write_table(pods, path, compression="zstd")
    return path
