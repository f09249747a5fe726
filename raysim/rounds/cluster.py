"""What a round-based run needs to know about the cluster and the jobs' speeds on it.

GPU types come from the cluster layout (node pools); their names are matched to the throughput
table's case-insensitively (Gavel's table says ``v100``, raysim's layouts ``V100``). A job's
throughput on a type is the table's entry for its (job type, scale factor) on that type: the
whole job's steps per second on ``scale_factor`` GPUs of the type; 0 means it cannot run there.
A table without entries for that scale factor on any type (e.g. a CSV table, one GPU only) scales
linearly: s GPUs run s times the one-GPU throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from raysim.cluster.throughput import ThroughputTable


@dataclass(frozen=True)
class RoundCluster:
    """GPU types (sorted by name, as the policies' matrices are), their GPU counts, servers' size."""

    types: tuple[str, ...]
    gpus: np.ndarray              # GPUs of each type
    gpus_per_server: np.ndarray   # GPUs per server of each type (placement only)

    @classmethod
    def from_layout(cls, layout: dict) -> "RoundCluster":
        """One round cluster from a layout (VC -> pools): every pool of every VC, pooled by type."""
        count: dict[str, int] = {}
        server: dict[str, int] = {}
        for pools in layout.values():
            for p in pools:
                count[p.gpu_type] = count.get(p.gpu_type, 0) + p.gpus_per_node * p.nodes
                server.setdefault(p.gpu_type, p.gpus_per_node)
        types = tuple(sorted(count, key=str.lower))
        return cls(types, np.array([count[t] for t in types]), np.array([server[t] for t in types]))

    def index(self, names) -> list[int]:
        """Positions of GPU type `names` (case-insensitive); ValueError naming an unknown one."""
        lower = [t.lower() for t in self.types]
        out = []
        for name in names:
            if str(name).lower() not in lower:
                raise ValueError(f"GPU type {name!r} is not in the cluster (types: {', '.join(self.types)})")
            out.append(lower.index(str(name).lower()))
        return out


@dataclass(frozen=True)
class RoundJobs:
    """The jobs of a round-based run, in id order (= arrival order)."""

    job_id: np.ndarray
    job_type: list[str]
    scale_factor: np.ndarray
    total_steps: np.ndarray
    priority_weight: np.ndarray
    arrival_time: np.ndarray

    @classmethod
    def from_table(cls, table: pa.Table) -> "RoundJobs":
        """From a Gavel-style job table (:data:`raysim.trace.gavel.SCHEMA`), sorted by arrival, stable."""
        arrival = table.column("arrival_time").to_numpy()
        order = np.argsort(arrival, kind="stable")
        col = {n: table.column(n).to_numpy(zero_copy_only=False)[order] for n in
               ("job_id", "scale_factor", "total_steps", "priority_weight", "arrival_time")}
        types = table.column("job_type").to_pylist()
        return cls(col["job_id"].astype(np.int64), [types[i] for i in order], col["scale_factor"].astype(np.int64),
                   col["total_steps"].astype(float), col["priority_weight"].astype(float),
                   col["arrival_time"].astype(float))

    def __len__(self) -> int:
        return len(self.job_id)


def throughput_matrix(jobs: RoundJobs, cluster: RoundCluster, table: ThroughputTable) -> np.ndarray:
    """(jobs x types) whole-job throughput of each job on each type; ValueError for unknown pairs."""
    out = np.zeros((len(jobs), len(cluster.types)))
    cache: dict[tuple[str, int], np.ndarray] = {}
    for i, (job_type, scale) in enumerate(zip(jobs.job_type, jobs.scale_factor)):
        key = (job_type, int(scale))
        if key not in cache:
            row = np.zeros(len(cluster.types))
            for k, gpu in enumerate(cluster.types):
                rate = whole_job_rate(table, job_type, gpu, int(scale))
                if rate is None:
                    raise ValueError(f"job {int(jobs.job_id[i])}: the throughput table has no entry for "
                                     f"({job_type!r}, {int(scale)} GPUs) on {gpu}")
                row[k] = rate
            if not row.any():
                raise ValueError(f"job {int(jobs.job_id[i])}: ({job_type!r}, {int(scale)} GPUs) has throughput 0 "
                                 f"on every GPU type of the cluster")
            cache[key] = row
        out[i] = cache[key]
    return out


def whole_job_rate(table: ThroughputTable, job_type: str, gpu_type: str, scale: int) -> float | None:
    """Throughput of `job_type` on `scale` GPUs of `gpu_type` (name matched case-insensitively):
    the table's entry, or `scale` x the one-GPU entry when the table has no entry of that size for
    the job type on any GPU type; None when unknown."""
    names = {t.lower(): t for t in table.gpu_types()}
    name = names.get(gpu_type.lower())
    if name is None:
        return None
    rate = table.get(job_type, name, scale)
    if rate is None and scale > 1 and all(table.get(job_type, t, scale) is None for t in names.values()):
        single = table.get(job_type, name, 1)
        rate = None if single is None else single * scale
    return rate


def pair_throughputs(jobs: RoundJobs, cluster: RoundCluster, table: ThroughputTable):
    """A function (a, b) -> (types x 2) throughputs of jobs a and b packed on the same GPUs (0: not measured)."""
    table_types = [{t.lower(): t for t in table.gpu_types()}.get(g.lower()) for g in cluster.types]
    cache: dict[tuple, np.ndarray] = {}

    def packed(a: int, b: int) -> np.ndarray:
        key = (jobs.job_type[a], jobs.job_type[b], int(jobs.scale_factor[a]))
        if key not in cache:
            out = np.zeros((len(cluster.types), 2))
            for k, name in enumerate(table_types):
                both = None if name is None else table.pair(key[0], key[1], name, key[2])
                if both is not None:
                    out[k] = both
            cache[key] = out
        return cache[key]

    return packed
