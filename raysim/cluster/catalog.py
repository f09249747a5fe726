"""Per-job GPU-type inputs of a run: constraints and speed profiles, as small integer ids.

A job may carry `gpu_constraint` (one GPU type, or several joined by "|"; empty: any), `job_type`
(a key of the throughput table) and `gpu_type` (the type its recorded duration refers to; empty:
the cluster's reference type). Its work is measured in seconds on that reference type; on type T
it progresses at throughput(job_type, T) / throughput(job_type, reference) (see
raysim.cluster.throughput for the rule when the table has no entry). Jobs share constraint sets and
speed profiles, so each distinct one is stored once in a TypeCatalog and jobs refer to it by id.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from raysim.errors import TraceError


@dataclass(frozen=True)
class TypeCatalog:
    """The run's GPU-type constraints and per-type speed profiles, referred to by id from jobs."""

    #: the GPU types of the whole cluster, in layout order
    gpu_types: tuple = ()
    #: constraint id -> GPU type names a job may use
    constraints: tuple = ()
    #: speed profile id -> {GPU type name: speed relative to the job's reference type}
    speeds: tuple = ()

    def allowed(self, types: list[str]) -> list[frozenset]:
        """Per constraint id, the indices into `types` it allows (maybe none)."""
        return [frozenset(i for i, t in enumerate(types) if t in c) for c in self.constraints]

    def speed_rows(self, types: list[str]) -> list[tuple]:
        """Per speed profile id, the speed on each of `types` (1.0 where the profile has none)."""
        return [tuple(float(p.get(t, 1.0)) for t in types) for p in self.speeds]


@dataclass
class JobTypes:
    """A run's catalog, the per-row ids into it, and what the throughput table lacked."""

    catalog: TypeCatalog
    constraint: np.ndarray  # int64 per trace row, -1: any type
    speed_profile: np.ndarray  # int64 per trace row, -1: speed 1 on every type
    missing: list  # (job_type, gpu_type) pairs with no throughput entry (speed taken as 1)


def job_types(table: pa.Table, layout: dict, *, throughput=None, reference_gpu_type: str | None = None,
              source: str = "trace") -> JobTypes:
    """Constraint and speed-profile ids for every job of `table` on the cluster `layout`.

    Errors (naming `source`, the row and the column): a constraint naming a GPU type the cluster
    does not have, a job whose VC has no node of an allowed type or too few GPUs of one allowed
    type, a reference type the cluster does not have, a job type on a run without throughput table.
    """
    types = list(dict.fromkeys(p.gpu_type for pools in layout.values() for p in pools))
    reference = reference_gpu_type or types[0]
    if reference not in types:
        raise ValueError(f"cluster.reference_gpu_type {reference!r} is not a GPU type of the cluster {types}")
    n = table.num_rows
    constraints, constraint = _constraints(table, layout, types, source)
    speeds: list[dict] = []
    profile = np.full(n, -1, dtype=np.int64)
    missing: list = []
    job_type = _text_column(table, "job_type")
    if job_type is not None and throughput is None:
        row = next((i for i, v in enumerate(job_type) if v), None)
        if row is not None:
            raise TraceError(source, "the trace names job types but the run has no throughput table "
                             "(set cluster.throughput=<CSV or Gavel JSON>)", row=row + 1, column="job_type",
                             value=job_type[row])
    if job_type is not None:
        recorded = _text_column(table, "gpu_type")
        ref = [reference] * n if recorded is None else [r or reference for r in recorded]
        bad = next((i for i, r in enumerate(ref) if r not in types), None)
        if bad is not None:
            raise TraceError(source, f"GPU type not in the cluster {types}", row=bad + 1, column="gpu_type",
                             value=ref[bad])
        ids: dict[tuple, int] = {}
        for i, (jt, rt) in enumerate(zip(job_type, ref)):
            if not jt:
                continue
            key = (jt, rt)
            if key not in ids:
                row = {t: throughput.ratio(jt, t, rt) for t in types}
                ids[key] = -1 if all(v == 1.0 for v in row.values()) else len(speeds)
                if ids[key] >= 0:
                    speeds.append(row)
            profile[i] = ids[key]
        missing = throughput.missing()
        _exclude_slow_types(speeds, profile, constraints, constraint, types, source)
    catalog = TypeCatalog(gpu_types=tuple(types), constraints=tuple(constraints), speeds=tuple(speeds))
    return JobTypes(catalog, constraint, profile, missing)


def _constraints(table: pa.Table, layout: dict, types: list[str], source: str):
    """Constraint sets and per-row ids; checks every job fits one pool of an allowed type in its VC."""
    n = table.num_rows
    ids = np.full(n, -1, dtype=np.int64)
    sets: list[frozenset] = []
    text = _text_column(table, "gpu_constraint")
    if text is not None:
        index: dict[str, int] = {}
        for i, c in enumerate(text):
            if not c or c.lower() == "any":
                continue
            if c not in index:
                names = frozenset(t.strip() for t in c.split("|") if t.strip())
                unknown = sorted(names - set(types))
                if unknown:
                    raise TraceError(source, f"GPU type(s) {unknown} not in the cluster {types}", row=i + 1,
                                     column="gpu_constraint", value=c)
                index[c] = len(sets)
                sets.append(names)
            ids[i] = index[c]
    if text is not None or any(len(pools) > 1 for pools in layout.values()):
        _check_fit(table, layout, sets, ids, text, source)
    return sets, ids


def _check_fit(table: pa.Table, layout: dict, sets: list, ids: np.ndarray, text, source: str) -> None:
    """Every job must fit in one pool of an allowed type of its VC (a placement never spans pools
    of different types or node shapes when it needs several nodes)."""
    vc = np.asarray(table.column("vc").to_pylist(), dtype=object)
    gpu = table.column("gpu_num").to_numpy(zero_copy_only=False)
    fit: dict[tuple, int] = {}
    for v, c in set(zip(vc.tolist(), ids.tolist())):
        allowed = None if c < 0 else sets[c]
        fit[(v, c)] = max((p.gpus_per_node * p.nodes for p in layout.get(v, ())
                           if allowed is None or p.gpu_type in allowed), default=0)
    cap = np.array([fit[(v, c)] for v, c in zip(vc.tolist(), ids.tolist())], dtype=np.int64)
    bad = np.flatnonzero(gpu > cap)
    if len(bad):
        i = int(bad[0])
        column, value = ("gpu_constraint", text[i]) if ids[i] >= 0 else ("gpu_num", int(gpu[i]))
        raise TraceError(source, f"VC {vc[i]!r} has no pool of an allowed GPU type with {int(gpu[i])} GPUs "
                         f"(the largest holds {int(cap[i])})", row=i + 1, column=column, value=value)


def _exclude_slow_types(speeds, profile, constraints, constraint, types, source) -> None:
    """A job cannot run on a type where its throughput is 0: such types leave its constraint."""
    zero = {i: frozenset(t for t, v in row.items() if v == 0.0) for i, row in enumerate(speeds)}
    if not any(zero.values()):
        return
    index = {c: i for i, c in enumerate(constraints)}
    for row in np.flatnonzero(profile >= 0):
        banned = zero[int(profile[row])]
        if not banned:
            continue
        allowed = (constraints[constraint[row]] if constraint[row] >= 0 else frozenset(types)) - banned
        if not allowed:
            raise TraceError(source, "the job can run on none of its allowed GPU types (throughput 0)",
                             row=int(row) + 1, column="job_type")
        if allowed not in index:
            index[allowed] = len(constraints)
            constraints.append(allowed)
        constraint[row] = index[allowed]


def _text_column(table: pa.Table, name: str) -> list | None:
    """A text column as a list of stripped strings ('' for null), or None when absent or all null."""
    if name not in table.column_names or table.column(name).null_count == table.num_rows:
        return None
    return [("" if v is None else str(v).strip()) for v in table.column(name).to_pylist()]
