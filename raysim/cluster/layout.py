"""Heterogeneous cluster layouts: each VC owns node pools ``(gpu_type, gpus_per_node, nodes)``.

A layout comes from a CSV file (:func:`read_layout_csv`; :func:`write_layout_csv` writes one), a
Hydra list (:func:`layout_from_config`) or today's one-pool-per-VC ``vc_config.csv``
(:func:`layout_from_vc_nodes`). Bad input fails with
one line naming the file, row and column (CSV, :class:`~raysim.errors.TraceError`) or the
entry index and key (config, ``ValueError``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from raysim.csvfile import csv_rows
from raysim.errors import TraceError

#: GPU type of the pools built from a ``vc_config.csv`` (which names no type).
DEFAULT_GPU_TYPE = "gpu"
#: GPUs per node of a ``vc_config.csv`` layout unless configured (``cluster.gpus_per_node``):
#: the 8-GPU nodes of the Helios/Venus clusters Lucid simulated.
DEFAULT_GPUS_PER_NODE = 8

#: Columns of a layout CSV (any order, no others).
LAYOUT_COLUMNS = ("vc", "gpu_type", "gpus_per_node", "nodes")
#: Optional columns of a layout CSV (and keys of a config entry): each node's CPU (milli-cores) and
#: memory (MiB); an empty cell or a missing column means not limited.
RESOURCE_COLUMNS = ("cpu_milli", "memory_mib")

_INTEGER = re.compile(r"[+-]?\d+")

#: The most GPUs a node and nodes a layout may have: past them a run would not fit in memory (two
#: billion nodes were allocated before anything was checked). The largest GPU clusters have about
#: 10^4 nodes.
MAX_GPUS_PER_NODE = 1024
MAX_NODES = 1_000_000


@dataclass(frozen=True)
class Pool:
    """`nodes` identical nodes of `gpus_per_node` GPUs of type `gpu_type`, each with `cpu_milli`
    milli-cores and `memory_mib` MiB of memory (None: not limited, as in layouts that list GPUs only)."""

    gpu_type: str
    gpus_per_node: int
    nodes: int
    cpu_milli: int | None = None
    memory_mib: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.gpu_type, str) or not self.gpu_type.strip():
            raise ValueError(f"Pool.gpu_type must be a non-empty string, not {self.gpu_type!r}")
        for name in ("gpus_per_node", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Pool.{name} must be a positive integer, not {value!r}")
        for name in ("cpu_milli", "memory_mib"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"Pool.{name} must be a non-negative integer or None, not {value!r}")

    @property
    def limits_resources(self) -> bool:
        """Whether the pool's nodes have a CPU or memory capacity (else only GPUs are counted)."""
        return self.cpu_milli is not None or self.memory_mib is not None

    @property
    def gpus(self) -> int:
        """GPUs in the pool."""
        return self.gpus_per_node * self.nodes


#: VC name -> its pools, in file order; VCs in order of first appearance.
Layout = dict[str, tuple[Pool, ...]]

#: Builds the exception for bad input: (row or entry index, column or key, message, value).
Fail = Callable[[int, str | None, str, object], Exception]


def layout_from_vc_nodes(vc_nodes: Mapping[str, int], gpus_per_node: int,
                         gpu_type: str = DEFAULT_GPU_TYPE) -> Layout:
    """One pool per VC: the layout of a ``vc_config.csv`` (VC -> node count) with one node shape."""
    return {vc: (Pool(gpu_type, gpus_per_node, nodes),) for vc, nodes in vc_nodes.items()}


def read_layout_csv(path: str | Path) -> Layout:
    """Read a layout CSV with the columns ``vc,gpu_type,gpus_per_node,nodes`` (any order), and
    optionally ``cpu_milli,memory_mib`` (each node's CPU and memory).

    A VC may have several rows (pools of different GPU types and/or node shapes); without CPU and
    memory a repeated ``(vc, gpu_type, gpus_per_node)`` is an error (with them, rows may repeat a
    shape: they list nodes in order, as ``raysim trace convert`` writes the Alibaba 2023 node
    list). ``#`` comment lines and blank lines are ignored.
    """
    name = str(path)

    def fail(row: int, column: str | None, message: str, value: object) -> Exception:
        return TraceError(name, message, row=row, column=column, value=value)

    rows = csv_rows(path, LAYOUT_COLUMNS, "layout file", optional=RESOURCE_COLUMNS)
    if not rows:
        raise TraceError(name, "no pools listed (the file has a header but no rows)")
    return _build(rows, fail, "row")


def write_layout_csv(path: str | Path, layout: Layout) -> Path:
    """Write `layout` as a layout CSV (one row per pool, columns LAYOUT_COLUMNS) that
    :func:`read_layout_csv` reads back unchanged."""
    path = Path(path)
    resources = any(p.limits_resources for pools in layout.values() for p in pools)
    extra = RESOURCE_COLUMNS if resources else ()
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(LAYOUT_COLUMNS + extra)
        for vc, pools in layout.items():
            for p in pools:
                res = ["" if v is None else v for v in (p.cpu_milli, p.memory_mib)] if resources else []
                out.writerow([vc, p.gpu_type, p.gpus_per_node, p.nodes, *res])
    return path


def layout_from_config(entries: Sequence[Mapping], name: str = "layout") -> Layout:
    """Build a layout from a Hydra list ``[{vc, gpu_type, gpus_per_node, nodes}, ...]``.

    Same rules as :func:`read_layout_csv`; errors are ``ValueError`` naming `name`, the 0-based
    entry index and the key.
    """
    def fail(index: int, key: str | None, message: str, value: object) -> Exception:
        where = f"{name} entry {index}" + (f", key {key!r}" if key is not None else "")
        return ValueError(f"{where}: {message}" + (f" (value {value!r})" if value is not None else ""))

    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise ValueError(f"{name}: expected a list of pools, not {type(entries).__name__}")
    if not entries:
        raise ValueError(f"{name}: no pools listed")
    rows = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise fail(index, None, "expected a mapping with keys " + ", ".join(LAYOUT_COLUMNS), entry)
        keys = [str(k) for k in entry]
        unknown = [k for k in keys if k not in LAYOUT_COLUMNS and k not in RESOURCE_COLUMNS]
        if unknown:
            raise fail(index, unknown[0], f"unknown key; expected {list(LAYOUT_COLUMNS)} (and optionally "
                                          f"{list(RESOURCE_COLUMNS)})", None)
        for key in LAYOUT_COLUMNS:
            if key not in keys:
                raise fail(index, key, "missing key", None)
        rows.append((index, {str(k): v for k, v in entry.items()}))
    return _build(rows, fail, "entry")


def total_gpus(layout: Layout) -> int:
    """GPUs in the whole layout."""
    return sum(pool.gpus for pools in layout.values() for pool in pools)


def gpu_types(layout: Layout) -> list[str]:
    """The GPU types of a layout, in order of first appearance."""
    return list(dict.fromkeys(pool.gpu_type for pools in layout.values() for pool in pools))


def restrict(layout: Layout, vcs: Iterable[str]) -> Layout:
    """The part of `layout` for the VCs `vcs` (layout order); a VC not in the layout is an error."""
    wanted = set(vcs)
    unknown = sorted(wanted - set(layout))
    if unknown:
        raise ValueError(f"VC(s) {unknown} not in the layout (it has {list(layout)})")
    return {vc: pools for vc, pools in layout.items() if vc in wanted}


def _build(rows: Iterable[tuple[int, Mapping]], fail: Fail, unit: str) -> Layout:
    """Validate (where, {vc, gpu_type, gpus_per_node, nodes}) rows and group their pools by VC."""
    pools: dict[str, list[Pool]] = {}
    first: dict[tuple[str, str, int], int] = {}
    total = 0
    for where, row in rows:
        vc = _text(row["vc"], where, "vc", fail)
        gpu_type = _text(row["gpu_type"], where, "gpu_type", fail)
        per_node = _positive(row["gpus_per_node"], where, "gpus_per_node", fail, MAX_GPUS_PER_NODE)
        nodes = _positive(row["nodes"], where, "nodes", fail, MAX_NODES)
        total += nodes
        if total > MAX_NODES:
            raise fail(where, "nodes", f"the layout's nodes add up to more than {MAX_NODES:,}", row["nodes"])
        cpu, mem = (_capacity(row.get(c), where, c, fail) for c in RESOURCE_COLUMNS)
        shape = (vc, gpu_type, per_node)
        if shape in first and cpu is None and mem is None:
            raise fail(where, None, f"repeats the pool (vc {vc!r}, gpu_type {gpu_type!r}, "
                                    f"gpus_per_node {per_node}) of {unit} {first[shape]}", None)
        first.setdefault(shape, where)
        pools.setdefault(vc, []).append(Pool(gpu_type, per_node, nodes, cpu, mem))
    return {vc: tuple(p) for vc, p in pools.items()}


def _text(value: object, where: int, column: str, fail: Fail) -> str:
    """A non-empty name (YAML may give a numeric-looking name such as 3090 as an int)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise fail(where, column, "expected a name", value)
    if not value.strip():
        raise fail(where, column, "empty value", None)
    return value.strip()


def _capacity(value: object, where: int, column: str, fail: Fail) -> int | None:
    """A node's CPU or memory: a non-negative integer, or None when absent or empty (not limited)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _integer(value, where, column, fail)
    if number < 0:
        raise fail(where, column, "must not be negative", value)
    return number


def _positive(value: object, where: int, column: str, fail: Fail, maximum: int) -> int:
    """A positive integer of at most `maximum`, given as an int or as its decimal text."""
    number = _integer(value, where, column, fail)
    if number <= 0:
        raise fail(where, column, "must be positive", value)
    if number > maximum:
        raise fail(where, column, f"must be at most {maximum:,}", value)
    return number


def _integer(value: object, where: int, column: str, fail: Fail) -> int:
    """An integer, given as an int or as its decimal text."""
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise fail(where, column, "not an integer", value)
