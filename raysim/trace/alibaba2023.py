"""Alibaba GPU cluster trace v2023 ("openb"; FGD, USENIX ATC'23): node lists and pod lists.

Source: github.com/alibaba/clusterdata, folder ``cluster-trace-gpu-v2023/csv``. Node files
``openb_node_list_{all_node,gpu_node}.csv`` have ``sn,cpu_milli,memory_mib,gpu,model``; pod files
``openb_pod_list_*.csv`` have ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
creation_time,deletion_time,scheduled_time`` (the ``multigpu*`` files only the first five). These
readers return the files as Arrow tables, unchanged in meaning and order, for the GPU-sharing
placement simulator (:mod:`raysim.sharing`); :mod:`raysim.trace.alibaba2023_jobs` maps a pod list
to raysim's job table (``trace.format=alibaba2023``). Both take durations from
:func:`pod_durations`. Errors are one line naming the file, the 1-based data row
(``row N (line N+1)``) and the column. Rules and quirks:

- Nodes: ``sn`` unique and non-empty; numbers non-negative integers; a node with GPUs names its
  model, a node without GPUs names none (its ``model`` is null). ``gpu_node`` renumbers the GPU
  nodes of ``all_node`` (``sn`` is not the same machine across the two files).
- Pods keep FILE order (the FGD experiments sample pods by row index; most resampled files are not
  sorted by time); the ``row`` column is the 1-based data row. :func:`by_creation` sorts by
  (creation_time, row) for time-driven experiments.
- 5-column (``multigpu*``) files: ``gpu_spec``, ``qos``, ``pod_phase`` and the times are all null.
- ``gpu_spec`` is normalised: models stripped, de-duplicated in order of first appearance and joined
  by ``|`` (``V100M16|V100M32|V100M32`` -> ``V100M16|V100M32``); empty -> null (no constraint).
- ``scheduled_time`` is empty exactly for Pending pods: an empty one on a pod that is not Pending,
  or a value on a Pending pod, is a bad row. ``creation_time`` and ``deletion_time`` are required
  in 11-column files (every public pod has both; Running pods carry the trace cut-off).
- ``memory_mib`` 0 is allowed (one real pod asks for no memory); ``cpu_milli`` need not be a
  multiple of 1000.
- GPU demand: ``gpu_milli`` in [0, 1000]; num_gpu 0 -> gpu_milli 0 (and no gpu_spec); num_gpu 1 ->
  gpu_milli in [1, 1000] (a share of one GPU); num_gpu > 1 -> gpu_milli 1000 (whole GPUs).
- Times: creation <= scheduled <= deletion, and deletion >= creation for Pending pods (integer
  seconds from the trace start).
- ``qos`` in {LS, BE, Burstable, Guaranteed}, ``pod_phase`` in {Running, Failed, Pending,
  Succeeded}; empty -> null. Pod names are non-empty and unique.
- A row with the wrong number of values is a bad row too. With ``on_error="skip"`` bad rows are
  dropped and counted by reason (each reason names its column) in the :class:`SkipReport`: kept +
  skipped = data rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from raysim.cluster.layout import Pool
from raysim.errors import SkipReport, TraceError

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_EXTRA_COLUMNS = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
QOS = ("LS", "BE", "Burstable", "Guaranteed")
PHASES = ("Running", "Failed", "Pending", "Succeeded")
#: GPU models of the public node lists (others are accepted).
MODELS = ("G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10")
NODE_PREFIX = "openb_node_list_"
NODE_LISTS = (NODE_PREFIX + "all_node", NODE_PREFIX + "gpu_node")
#: The cluster of the FGD experiments: the GPU nodes only.
DEFAULT_NODE_LIST = NODE_PREFIX + "gpu_node"
POD_PREFIX = "openb_pod_list_"
DEFAULT_WORKLOAD = "default"
#: Where a pod's duration comes from (:func:`pod_durations`).
DURATION_SOURCES = ("observed", "cutoff", "median")
#: The public pod lists (file names without ``.csv``).
WORKLOADS = tuple(POD_PREFIX + v for v in (
    "default",
    "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
    "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250", "cpu300",
    "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
))

NODE_SCHEMA = pa.schema([("node", pa.string()), ("cpu_milli", pa.int64()), ("memory_mib", pa.int64()),
                         ("num_gpu", pa.int32()), ("model", pa.string())])
_LABEL = pa.dictionary(pa.int32(), pa.string())
POD_SCHEMA = pa.schema([
    ("name", pa.string()), ("cpu_milli", pa.int64()), ("memory_mib", pa.int64()),
    ("num_gpu", pa.int32()), ("gpu_milli", pa.int32()), ("gpu_spec", pa.string()),
    ("qos", _LABEL), ("pod_phase", _LABEL), ("creation_time", pa.int64()),
    ("deletion_time", pa.int64()), ("scheduled_time", pa.int64()), ("row", pa.int64()),
])
_SKIP_HINT = ' (use on_error="skip" to drop such rows and count them)'


# ----------------------------------------------------------------------------------------- nodes

def read_openb_nodes(path) -> pa.Table:
    """Read an ``openb_node_list_*.csv`` (file order) as :data:`NODE_SCHEMA`; any bad row raises."""
    name = str(path)
    table, malformed, _ = _read(path, NODE_COLUMNS, (), "node list")
    rows = _data_rows(table.num_rows, malformed)
    checks = _Checks(name, table.num_rows, malformed)
    sn = _text(table, "sn")
    checks.flag(sn == "", "sn is empty", "sn", sn)
    cpu, _ = _integers(checks, table, "cpu_milli")
    mem, _ = _integers(checks, table, "memory_mib")
    gpu, _ = _integers(checks, table, "gpu", digits=9)
    model = _text(table, "model")
    checks.flag((gpu > 0) & (model == ""), "model is empty for a node with GPUs", "model", model)
    checks.flag((gpu == 0) & (model != ""), "model given for a node without GPUs", "model", model)
    checks.flag(_repeated(sn), "sn repeats an earlier row", "sn", sn)
    checks.finish(rows, None, "raise")
    return pa.table([pa.array(sn, pa.string()), pa.array(cpu, pa.int64()), pa.array(mem, pa.int64()),
                     pa.array(gpu, pa.int32()), pa.array(np.where(model == "", None, model), pa.string())],
                    schema=NODE_SCHEMA)


def node_pools(nodes: pa.Table) -> tuple[Pool, ...]:
    """The GPU nodes as pools ``Pool(model, gpus per node, node count)``, one per (model, num_gpu),
    in order of first appearance in the file. CPU-only nodes are left out (see
    :func:`cpu_only_nodes`); pools count GPUs only (nodes of a pool may differ in CPU and memory:
    :func:`node_arrays` has them per node)."""
    counts: dict[tuple[str, int], int] = {}
    for model, gpus in zip(nodes.column("model").to_pylist(), nodes.column("num_gpu").to_pylist()):
        if gpus > 0:
            counts[model, gpus] = counts.get((model, gpus), 0) + 1
    return tuple(Pool(model, gpus, n) for (model, gpus), n in counts.items())


def cpu_only_nodes(nodes: pa.Table) -> list[tuple[int, int]]:
    """(cpu_milli, memory_mib) of each node without GPUs, in file order."""
    return [(cpu, mem) for cpu, mem, gpus in zip(nodes.column("cpu_milli").to_pylist(),
                                                  nodes.column("memory_mib").to_pylist(),
                                                  nodes.column("num_gpu").to_pylist()) if gpus == 0]


class NodeArrays(NamedTuple):
    """Every node in file order: `model` indexes `models` (-1 for a CPU-only node)."""

    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int32
    model: np.ndarray  # int32 code
    models: tuple[str, ...]  # in order of first appearance


def node_arrays(nodes: pa.Table) -> NodeArrays:
    """The node table as numpy arrays (file order), models coded by order of first appearance."""
    names = nodes.column("model").to_pylist()
    models = tuple(dict.fromkeys(m for m in names if m is not None))
    code = {m: i for i, m in enumerate(models)}
    return NodeArrays(
        nodes.column("cpu_milli").to_numpy().astype(np.int64),
        nodes.column("memory_mib").to_numpy().astype(np.int64),
        nodes.column("num_gpu").to_numpy().astype(np.int32),
        np.array([code.get(m, -1) for m in names], dtype=np.int32),
        models,
    )


# ------------------------------------------------------------------------------------------ pods

def read_openb_pods(path, *, on_error: str = "raise") -> tuple[pa.Table, SkipReport]:
    """Read an ``openb_pod_list_*.csv`` in file order as :data:`POD_SCHEMA` (rules: module doc)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f'on_error must be "raise" or "skip", not {on_error!r}')
    name = str(path)
    table, malformed, header = _read(path, POD_COLUMNS, POD_EXTRA_COLUMNS, "pod list")
    full = any(c in header for c in POD_EXTRA_COLUMNS)
    if full:
        missing = [c for c in POD_EXTRA_COLUMNS if c not in header]
        if missing:
            raise TraceError(name, f"missing column (a pod list has the 5 columns {list(POD_COLUMNS)} "
                                   f"or all 11); the file has {header}", column=missing[0])
    n = table.num_rows
    rows = _data_rows(n, malformed)
    checks = _Checks(name, n, malformed)

    pod = _text(table, "name")
    checks.flag(pod == "", "name is empty", "name", pod)
    cpu, _ = _integers(checks, table, "cpu_milli")
    mem, _ = _integers(checks, table, "memory_mib")
    num_gpu, _ = _integers(checks, table, "num_gpu", digits=9)
    milli, _ = _integers(checks, table, "gpu_milli", digits=9)
    raw_milli = _text(table, "gpu_milli")
    checks.flag(milli > 1000, "gpu_milli above 1000 (one whole GPU)", "gpu_milli", raw_milli)
    checks.flag((num_gpu == 0) & (milli != 0), "gpu_milli must be 0 when num_gpu is 0", "gpu_milli",
                raw_milli)
    checks.flag((num_gpu == 1) & (milli == 0), "gpu_milli must be 1..1000 when num_gpu is 1", "gpu_milli",
                raw_milli)
    checks.flag((num_gpu > 1) & (milli != 1000), "gpu_milli must be 1000 when num_gpu > 1", "gpu_milli",
                raw_milli)

    spec = qos = phase = np.full(n, None, dtype=object)
    times = {c: (np.zeros(n, np.int64), np.zeros(n, bool)) for c in POD_EXTRA_COLUMNS[3:]}
    if full:
        raw_spec = _text(table, "gpu_spec")
        normal = {v: _normal_spec(v) for v in set(raw_spec.tolist())}
        spec = np.array([normal[v] for v in raw_spec.tolist()], dtype=object)
        checks.flag(spec == "", "gpu_spec has an empty model name", "gpu_spec", raw_spec)
        checks.flag((num_gpu == 0) & (raw_spec != ""), "gpu_spec given for a pod without GPUs", "gpu_spec",
                    raw_spec)
        qos, phase = _text(table, "qos"), _text(table, "pod_phase")
        checks.flag((qos != "") & ~np.isin(qos, QOS), f"unknown qos (expected one of {list(QOS)})", "qos",
                    qos)
        checks.flag((phase != "") & ~np.isin(phase, PHASES), f"unknown pod_phase (expected one of "
                    f"{list(PHASES)})", "pod_phase", phase)
        for col in POD_EXTRA_COLUMNS[3:]:
            times[col] = _integers(checks, table, col, required=col != "scheduled_time")
        created, _ = times["creation_time"]
        sched, scheduled = times["scheduled_time"]
        raw_sched = _text(table, "scheduled_time")
        pending = phase == "Pending"
        checks.flag(~scheduled & ~pending, "scheduled_time is empty but pod_phase (the value) is not Pending",
                    "scheduled_time", phase)
        checks.flag(scheduled & pending, "scheduled_time given for a Pending pod", "scheduled_time",
                    raw_sched)
        checks.flag(times["deletion_time"][0] < created, "deletion_time before creation_time",
                    "deletion_time", _text(table, "deletion_time"))
        checks.flag(scheduled & (sched < created), "scheduled_time before creation_time", "scheduled_time",
                    raw_sched)
        checks.flag(scheduled & (times["deletion_time"][0] < sched), "deletion_time before scheduled_time",
                    "deletion_time", _text(table, "deletion_time"))
        qos, phase = np.where(qos == "", None, qos), np.where(phase == "", None, phase)
    checks.flag(_repeated(pod), "name repeats an earlier row", "name", pod)

    report = SkipReport(file=name)
    idx = np.flatnonzero(checks.finish(rows, report, on_error))
    columns = [
        pa.array(pod[idx], pa.string()), pa.array(cpu[idx], pa.int64()), pa.array(mem[idx], pa.int64()),
        pa.array(num_gpu[idx], pa.int32()), pa.array(milli[idx], pa.int32()),
        pa.array(spec[idx], pa.string()),
        pa.array(qos[idx], pa.string()).dictionary_encode(),
        pa.array(phase[idx], pa.string()).dictionary_encode(),
    ]
    for col in POD_EXTRA_COLUMNS[3:]:
        value, present = times[col]
        columns.append(pa.array(value[idx], pa.int64(), mask=~present[idx]))
    columns.append(pa.array(rows[idx], pa.int64()))
    return pa.table(columns, schema=POD_SCHEMA), report


def by_creation(pods: pa.Table) -> pa.Table:
    """The pods sorted by (creation_time, row), for experiments driven by time."""
    if pods.column("creation_time").null_count:
        raise ValueError("pods without creation_time cannot be ordered by time (the multigpu* pod lists "
                         "have no times: use them in file order)")
    return pods.sort_by([("creation_time", "ascending"), ("row", "ascending")])


def pod_list_path(folder, name: str) -> Path:
    """The file of pod list `name` in `folder`: ``default``, ``openb_pod_list_default`` and
    ``openb_pod_list_default.csv`` all name ``openb_pod_list_default.csv``."""
    return _list_path(folder, name, POD_PREFIX, WORKLOADS, "pod list")


def node_list_path(folder, name: str = DEFAULT_NODE_LIST) -> Path:
    """The file of node list `name` in `folder`: ``gpu_node``, ``openb_node_list_gpu_node`` and
    ``openb_node_list_gpu_node.csv`` all name ``openb_node_list_gpu_node.csv``."""
    return _list_path(folder, name, NODE_PREFIX, NODE_LISTS, "node list")


def list_file_name(name: str, prefix: str) -> str:
    """The file name of list `name`, given with or without `prefix` and ``.csv``: ``gpu_node`` and
    ``openb_node_list_gpu_node`` give ``openb_node_list_gpu_node.csv`` for prefix NODE_PREFIX."""
    stem = str(name).strip().removesuffix(".csv")
    return f"{stem if stem.startswith(prefix) else prefix + stem}.csv"


def _list_path(folder, name: str, prefix: str, known: tuple[str, ...], what: str) -> Path:
    """The CSV in `folder` of the list `name` (one of `known`, with or without `prefix` and .csv)."""
    stem = list_file_name(name, prefix).removesuffix(".csv")
    if stem not in known:
        short = ", ".join(k[len(prefix):] for k in known)
        raise ValueError(f"unknown openb {what} {name!r}; expected one of: {short} (with or without the "
                         f"{prefix!r} prefix and '.csv')")
    path = Path(folder) / f"{stem}.csv"
    if not path.is_file():
        raise TraceError(str(path), f"{what} not found (the openb CSVs are in github.com/alibaba/"
                                    "clusterdata, folder cluster-trace-gpu-v2023/csv)")
    return path


# ------------------------------------------------------------------------------------- durations

def gpu_class(num_gpu, gpu_milli) -> np.ndarray:
    """The duration class of a pod: num_gpu for whole GPUs (0: CPU pods), -1 for a share of one GPU."""
    num_gpu, gpu_milli = np.asarray(num_gpu), np.asarray(gpu_milli)
    return np.where((num_gpu == 1) & (gpu_milli < 1000), -1, num_gpu).astype(np.int64)


def pod_durations(pods: pa.Table, cutoff: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each pod's duration (int64 seconds) and where it comes from (one of :data:`DURATION_SOURCES`),
    for a pod table of :func:`read_openb_pods`. `cutoff` is the trace end (default: the table's
    largest deletion time). The model, shared by every time-driven use of the pod lists:

    - pods that ran (they have a ``scheduled_time``): ``deletion_time - scheduled_time``, the time
      the trace saw them hold their resources ("observed");
    - Running pods deleted at the cut-off were still running when the trace ended: the same
      difference, a lower bound ("cutoff");
    - Pending pods (never scheduled): the median observed duration of the pods of their
      :func:`gpu_class` (all observed pods if the class has none), rounded to whole seconds
      ("median").
    """
    for c in ("creation_time", "deletion_time"):
        if pods.column(c).null_count:
            raise ValueError(f"pods without {c} cannot be timed (the multigpu* pod lists have no times)")
    delete = pods.column("deletion_time").to_numpy()
    sched_col = pods.column("scheduled_time")
    ran = ~np.asarray(sched_col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    sched = np.where(ran, sched_col.fill_null(0).to_numpy(), 0)
    phase = np.array(pods.column("pod_phase").cast(pa.string()).to_pylist(), dtype=object)
    end = int(delete.max()) if cutoff is None and len(delete) else cutoff
    duration = np.where(ran, delete - sched, 0).astype(np.int64)
    cut = ran & (phase == "Running") & (delete == end)
    source = np.where(cut, "cutoff", "observed").astype(object)
    known = ran & ~cut
    cls = gpu_class(pods.column("num_gpu").to_numpy(), pods.column("gpu_milli").to_numpy())
    pending = np.flatnonzero(~ran)
    if len(pending):
        if not known.any():
            raise ValueError("Pending pods need pods with observed durations to take a median from")
        overall = int(np.rint(np.median(duration[known])))
        for c in np.unique(cls[pending]):
            same = known & (cls == c)
            med = int(np.rint(np.median(duration[same]))) if same.any() else overall
            duration[pending[cls[pending] == c]] = med
        source[pending] = "median"
    return duration, source


# --------------------------------------------------------------------------------------- helpers

def _read(path, required, optional, what) -> tuple[pa.Table, list[tuple[int, str]], list[str]]:
    """The file's `required` and `optional` columns as strings, the rows with the wrong number of
    values as (data row, values found, text), and the header."""
    name = str(path)
    try:
        with open(path, encoding="utf-8-sig") as f:
            header = f.readline().rstrip("\r\n").split(",")
    except FileNotFoundError:
        raise TraceError(name, f"{what} not found") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise TraceError(name, f"not a readable CSV file: {exc}") from None
    if header == [""]:
        raise TraceError(name, f"empty file (expected a header {','.join(required)},...)")
    for col in required:
        if col not in header:
            raise TraceError(name, f"missing column; the file has {header}", column=col)
    wanted = [c for c in (*required, *optional) if c in header]
    for col in wanted:
        if header.count(col) > 1:
            raise TraceError(name, "column given twice", column=col)
    malformed = []

    def bad_row(row) -> str:
        malformed.append((row.number - 1, row.actual_columns, row.text))
        return "skip"

    try:
        table = pacsv.read_csv(
            path, read_options=pacsv.ReadOptions(use_threads=False),
            parse_options=pacsv.ParseOptions(invalid_row_handler=bad_row, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in wanted},
                                                 include_columns=wanted, strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(name, "not a readable CSV file: " + str(exc).splitlines()[0]) from None
    # a blank line is a row of empty values (so rows keep their numbers); at the end it is not data
    blank = np.ones(table.num_rows, dtype=bool)
    for col in wanted:
        blank &= pc.equal(pc.utf8_trim_whitespace(table.column(col)), "").to_numpy(zero_copy_only=False)
    rows = _data_rows(table.num_rows, malformed)
    last = max([int(rows[~blank].max(initial=0))] + [m[0] for m in malformed if m[2].strip()])
    malformed = [m for m in malformed if m[0] <= last]
    return table.slice(0, int((rows <= last).sum())), malformed, header


def _data_rows(n: int, malformed: list) -> np.ndarray:
    """1-based data rows of the `n` parsed rows, around the malformed rows the parser skipped."""
    rows = np.arange(1, n + len(malformed) + 1, dtype=np.int64)
    return np.setdiff1d(rows, [m[0] for m in malformed]) if malformed else rows


def _text(table: pa.Table, column: str) -> np.ndarray:
    """A string column, whitespace stripped, as an object array."""
    return pc.utf8_trim_whitespace(table.column(column)).to_numpy(zero_copy_only=False).astype(object)


def _integers(checks: _Checks, table: pa.Table, column: str, *, required: bool = True, digits: int = 18
              ) -> tuple[np.ndarray, np.ndarray]:
    """A column of non-negative integers (0 where bad or empty) and the mask of non-empty values;
    bad values are flagged in `checks`."""
    text = pc.utf8_trim_whitespace(table.column(column))
    empty = pc.equal(text, "").to_numpy(zero_copy_only=False)
    ok = pc.match_substring_regex(text, f"^[0-9]{{1,{digits}}}$").to_numpy(zero_copy_only=False)
    negative = pc.match_substring_regex(text, "^-[0-9]+$").to_numpy(zero_copy_only=False)
    if required:
        checks.flag(empty, f"{column} is empty", column, text)
    checks.flag(negative, f"{column} is negative", column, text)
    checks.flag(~ok & ~empty & ~negative, f"{column} is not an integer", column, text)
    values = pc.cast(pc.if_else(pa.array(ok), text, "0"), pa.int64())
    return values.to_numpy(), ~empty


def _normal_spec(text: str):
    """gpu_spec normalised: None when empty, "" when a model name is empty (flagged), else the
    models de-duplicated in order of first appearance, joined by "|"."""
    if not text:
        return None
    models = [m.strip() for m in text.split("|")]
    return "" if "" in models else "|".join(dict.fromkeys(models))


def _repeated(values: np.ndarray) -> np.ndarray:
    """Mask of the values equal to an earlier one (the empty string is left to other checks)."""
    out = np.zeros(len(values), dtype=bool)
    if len(values):
        _, first = np.unique(values.astype(str), return_index=True)
        out[:] = True
        out[first] = False
    return out & (values != "")


class _Checks:
    """Bad rows found while reading: each row counts once, under the first problem flagged."""

    def __init__(self, file: str, n: int, malformed: list):
        self.file = file
        self.bad = np.zeros(n, dtype=bool)
        self.malformed = malformed
        self.found: list[tuple[str, str, np.ndarray, np.ndarray]] = []  # reason, column, idx, values

    def flag(self, mask, reason: str, column: str, values) -> None:
        mask = np.asarray(mask, dtype=bool) & ~self.bad
        if mask.any():
            idx = np.flatnonzero(mask)
            if isinstance(values, (pa.Array, pa.ChunkedArray)):  # converted only where flagged
                picked = np.array(values.take(pa.array(idx)).to_pylist(), dtype=object)
            else:
                picked = np.asarray(values, dtype=object)[idx]
            self.found.append((reason, column, idx, picked))
            self.bad[idx] = True

    def finish(self, rows: np.ndarray, report: SkipReport | None, on_error: str) -> np.ndarray:
        """Raise for the earliest bad row, or count the bad rows in `report`; mask of good rows."""
        problems = [(reason, column, rows[idx], values) for reason, column, idx, values in self.found]
        if self.malformed:
            wrong = "wrong number of values (expected one per header column)"
            problems.append((wrong, None, np.array([m[0] for m in self.malformed]),
                             np.array([f"{m[1]} values: {m[2][:80]}" for m in self.malformed], dtype=object)))
        if problems and on_error == "raise":
            reason, column, where, values = min(problems, key=lambda p: p[2][0])
            hint = _SKIP_HINT if report is not None else ""
            raise TraceError(self.file, reason + hint, row=int(where[0]), column=column, value=values[0])
        for reason, column, where, values in problems:
            report.add(reason, where, column, values[:report.max_examples])
        return ~self.bad
