"""Alibaba GPU 2023 ("openb") pod lists as raysim jobs for the VC engine: ``trace.format=alibaba2023``.

A pod list (``openb_pod_list_*.csv``, read by :func:`raysim.trace.alibaba2023.read_openb_pods`, so
every quirk and check of that reader applies) becomes a job table in raysim's schema, one job per
GPU pod, all in one VC, :data:`VC`:

- ``job_id`` = the pod's 1-based data row in the list (``row`` of the pod table); ``vc`` = "openb";
  ``user`` empty (the trace has no users); ``state`` = ``pod_phase``.
- ``gpu_num`` = ``num_gpu``; ``cpu_num`` = ``cpu_milli`` / 1000 rounded up; ``gpu_constraint`` =
  ``gpu_spec`` (models joined by "|", as the node list names them; null: any).
- ``submit_time`` = ``creation_time`` (integer seconds from the trace start, origin "0");
  ``duration`` = :func:`raysim.trace.alibaba2023.pod_durations`, the model of the timed FGD
  experiment (``+experiment=fgd_openb fgd.timed=true``): ``deletion_time - scheduled_time`` for pods
  that ran, a lower bound for Running pods cut off by the trace end, the median of the pod's GPU
  class for Pending pods.
- The pod's columns the job columns do not hold (``pod_name``, ``cpu_milli``, ``memory_mib``,
  ``gpu_milli``, ``qos``, ``scheduled_time``, ``deletion_time``, ``duration_source``: see
  :data:`raysim.trace.schema.OPENB_COLUMNS`) are kept; the engine does not read them.

The VC engine allocates whole GPUs and no CPU or memory. So, never silently:

- filtered and counted (SkipReport): CPU-only pods (``num_gpu`` 0), pods whose duration is 0;
- converted and counted (``SkipReport.converted``): a share of one GPU (``gpu_milli`` < 1000) holds
  one whole GPU; durations that are a lower bound (cut-off) or a median (Pending).

``+experiment=fgd_openb fgd.timed=true`` places the same pods with real GPU sharing, CPU and memory.

Cluster: unless a layout is configured (``cluster.layout``, ``trace.vc_config`` or a
``vc_config.csv`` beside the pod list), the node list beside the pod list (reader option
``node_list``, default ``openb_node_list_gpu_node``) gives the VC's typed pools, one per (model,
GPUs per node) (:func:`raysim.trace.alibaba2023.node_pools`; CPU-only nodes are not pools),
recorded in the table's metadata. Every pod must then fit one pool of a model it allows: a
``gpu_spec`` naming a model the node list lacks, or more GPUs than the largest allowed pool holds,
is a bad row (raise, or skip and count with ``on_error="skip"``). With a configured layout the run's
GPU-type catalog checks this instead (:func:`raysim.cluster.catalog.job_types`).

Reader options (``trace.reader_options``, ``raysim trace convert -o KEY=VALUE``): ``workload``, the
pod list to read when ``trace.path`` is a folder (``default``, ``gpushare40``, ...; with a file it
must name that file), and ``node_list`` (``gpu_node`` or ``all_node``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE, Pool, total_gpus
from raysim.trace.alibaba2023 import (DEFAULT_NODE_LIST, node_list_path, node_pools, pod_durations,
                                      pod_list_path, read_openb_nodes, read_openb_pods)
from raysim.trace.errors import SkipReport, TraceError
from raysim.trace.layout import with_pools
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

#: The one VC of an openb trace.
VC = "openb"
#: Where a job column comes from in the pod list (for error messages).
SOURCE_COLUMNS = {"gpu_num": "num_gpu", "cpu_num": "cpu_milli", "submit_time": "creation_time",
                  "duration": "deletion_time", "state": "pod_phase", "gpu_constraint": "gpu_spec"}
SHARING = "+experiment=fgd_openb fgd.timed=true"
CPU_ONLY = f"filtered: CPU-only pod (num_gpu = 0): the VC engine allocates GPUs only ({SHARING} places CPU pods)"
NO_DURATION = "filtered: duration 0 (nothing to run)"
FRACTIONAL = (f"a share of one GPU (gpu_milli < 1000) holds one whole GPU: the VC engine does not share GPUs "
              f"({SHARING} does)")
CUTOFF = "duration is a lower bound: Running when the trace ends (duration_source cutoff)"
MEDIAN = "duration is the median of the pod's GPU class: Pending, never scheduled (duration_source median)"


def read_alibaba2023(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                     on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
                     bounds: Bounds = Bounds(), workload: str | None = None, node_list: str = DEFAULT_NODE_LIST
                     ) -> tuple[pa.Table, SkipReport]:
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
    layout = None
    if vc_nodes is None:
        layout = {VC: openb_pools(Path(path).parent, node_list)}
        vc_nodes, gpus_per_node = {VC: total_gpus(layout)}, 1
    elif VC not in vc_nodes:
        raise TraceError(name, f"the VC layout has no VC {VC!r}, the VC of every openb pod (it has "
                               f"{sorted(vc_nodes)})")
    rows = pods.column("row").to_numpy()
    num_gpu = pods.column("num_gpu").to_numpy()
    source = Source(name, rows=rows, columns=SOURCE_COLUMNS)
    cpu_only = num_gpu == 0
    source.skip(report, CPU_ONLY, rows[cpu_only], "num_gpu", num_gpu[cpu_only].tolist())
    idle = ~cpu_only & (duration == 0)
    source.skip(report, NO_DURATION, rows[idle], "deletion_time", duration[idle].tolist())
    keep = ~(cpu_only | idle)
    if layout is not None:
        keep &= fit_checks(source, pods, layout[VC], keep).finish(report, on_error)
    source.rows = rows[keep]
    frame = job_frame(pods, duration, how)[keep].reset_index(drop=True)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    report.converted.update(conversions(table))
    return (table if layout is None else with_pools(table, layout)), report


def check_workload(path, workload: str | None) -> None:
    """A `workload` reader option must name the pod list `path` is."""
    if workload is not None and pod_list_path(Path(path).parent, workload).name != Path(path).name:
        raise TraceError(str(path), f"reader option workload={workload!r} names another pod list than "
                                    "trace.path (give the folder as trace.path, or drop the option)")


def openb_pools(folder, node_list: str = DEFAULT_NODE_LIST) -> tuple[Pool, ...]:
    """The typed pools of the node list `node_list` in `folder`: one per (model, GPUs per node)."""
    path = node_list_path(folder, node_list)
    pools = node_pools(read_openb_nodes(path))
    if not pools:
        raise TraceError(str(path), "no node with GPUs (the VC engine needs GPU nodes)")
    return pools


def fit_checks(source: Source, pods: pa.Table, pools: tuple[Pool, ...], candidates: np.ndarray) -> RowChecks:
    """Flag the `candidates` pods that fit no pool of a model they allow (their gpu_spec, else any)."""
    models = list(dict.fromkeys(p.gpu_type for p in pools))
    spec = np.array(pods.column("gpu_spec").to_pylist(), dtype=object)
    num_gpu = pods.column("num_gpu").to_numpy()
    allowed = {s: set(models) if s is None else set(s.split("|")) for s in set(spec.tolist())}
    largest = {s: max((p.gpus for p in pools if p.gpu_type in a), default=0) for s, a in allowed.items()}
    checks = RowChecks(source, source.rows)
    unknown = np.array([not allowed[s] <= set(models) for s in spec], dtype=bool)
    checks.flag(candidates & unknown, f"gpu_spec names a GPU model the node list does not have {models}",
                "gpu_spec", spec)
    cap = np.array([largest[s] for s in spec], dtype=np.int64)
    checks.flag(candidates & (num_gpu > cap), "num_gpu larger than every node pool of the pod's GPU models "
                "holds", "num_gpu", num_gpu)
    return checks


def job_frame(pods: pa.Table, duration: np.ndarray, how: np.ndarray) -> pd.DataFrame:
    """Every pod as a row of raysim's job columns plus the pod columns they do not hold (file order)."""
    def column(name: str) -> np.ndarray:
        return pods.column(name).to_numpy(zero_copy_only=False)

    def nullable(name: str) -> np.ndarray:  # None where null, so that validation keeps the nulls
        return np.array(pods.column(name).to_pylist(), dtype=object)

    phase = pods.column("pod_phase").cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False)
    qos = np.array(pods.column("qos").cast(pa.string()).to_pylist(), dtype=object)
    return pd.DataFrame({
        "job_id": column("row"), "vc": VC, "user": "", "gpu_num": column("num_gpu"),
        "cpu_num": -(-column("cpu_milli") // 1000), "submit_time": column("creation_time"),
        "duration": duration, "state": phase, "gpu_constraint": nullable("gpu_spec"),
        "pod_name": column("name"), "cpu_milli": column("cpu_milli"), "memory_mib": column("memory_mib"),
        "gpu_milli": column("gpu_milli"), "qos": qos, "scheduled_time": nullable("scheduled_time"),
        "deletion_time": column("deletion_time"), "duration_source": how,
    })


def conversions(table: pa.Table) -> Counter:
    """How many jobs of `table` run on a whole GPU instead of a share, or have a modelled duration."""
    out = Counter({FRACTIONAL: int((table.column("gpu_milli").to_numpy() < 1000).sum())})
    how = Counter(table.column("duration_source").to_pylist())
    out.update({CUTOFF: how["cutoff"], MEDIAN: how["median"]})
    return +out  # drop zero counts


def write_pods(source, folder, on_error: str = "raise") -> Path:
    """Write the whole pod list `source` (CPU-only pods too, file order; ``row`` = the jobs'
    ``job_id``) as ``pods.parquet`` in `folder`, so that converting loses no pod."""
    pods, _ = read_openb_pods(source, on_error=on_error)
    path = Path(folder) / "pods.parquet"
    pq.write_table(pods, path, compression="zstd")
    return path
