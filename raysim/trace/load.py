"""Load a trace from a file or folder: pick the reader, validate, cache as Parquet beside the source.

The cache is keyed by the SHA-256 of the content of every file read (the trace and the files beside
it its reader reads, the VC layout file) and the reading options, the plausibility bounds included:
an edited file misses the cache whatever its size and time stamps. It is written to a temporary
file of a unique name and renamed into place; a cache that cannot be read counts as absent (one
warning, then the source is read again and the cache replaced).

Each reader declares its options (``trace.reader_options``) as its ``Settings``, a declaration of
raysim.settings (:class:`raysim.settings.NoSettings` for a reader without options):
:func:`check_reader_options` checks them once, before the trace is read, and the reader receives
them typed, as keyword arguments.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE, Layout
from raysim.errors import SkipReport, TraceError
from raysim.registry import Registry
from raysim.settings import as_options, describe, parse
from raysim.trace.alibaba2023 import DEFAULT_WORKLOAD, NODE_PREFIX, POD_PREFIX, list_file_name, pod_list_path
from raysim.trace.alibaba2023_jobs import read_alibaba2023
from raysim.trace.cluster import read_vc_config
from raysim.trace.helios import GPU_NUMBER_FILE, read_helios
from raysim.trace.layout import recorded_pools
from raysim.trace.pai import TASK_FILE, read_pai
from raysim.trace.philly import read_philly
from raysim.trace.readers import Bounds, read_csv_trace, read_parquet_trace
from raysim.trace.acme import read_acme
from raysim.trace.sia import is_sia_workload, read_sia
from raysim.trace.spot_gpu import JOB_FILE as SPOT_JOB_FILE, NODE_FILE as SPOT_NODE_FILE, read_spot_gpu
from raysim.trace.schema import META_KEY, metadata

#: Files looked for, in order, when trace.path is a folder.
FOLDER_FILES = ("cluster_full_log.csv", "cluster_log.csv", "jobs.parquet", "cluster_job_log",
                "pai_job_table.csv", f"{POD_PREFIX}{DEFAULT_WORKLOAD}.csv", SPOT_JOB_FILE)
#: trace.format -> its reader (raysim.registry)
READERS = Registry({"lucid": read_csv_trace, "helios": read_helios, "philly": read_philly, "pai": read_pai,
                    "alibaba2023": read_alibaba2023, "csv": read_csv_trace, "parquet": read_parquet_trace,
                    "sia": read_sia, "acme": read_acme, "spot_gpu": read_spot_gpu}, what="trace format")
#: trace.format=auto: format by file name, then by name prefix (for .csv files), then by the header
#: of a .csv file (Sia's workload columns: sia), else parquet by suffix, else csv.
AUTO_FORMATS = {"cluster_log.csv": "helios", "cluster_job_log": "philly", "pai_job_table.csv": "pai",
                "trace_seren.csv": "acme", "trace_kalos.csv": "acme", SPOT_JOB_FILE: "spot_gpu"}
AUTO_PREFIXES = {POD_PREFIX: "alibaba2023"}
#: Formats whose reader derives the VC layout itself when there is no vc_config.csv (it records the
#: layout in the table's metadata as "vc_nodes", and typed node pools as "pools"), and the files
#: beside the trace each reader reads.
OWN_LAYOUT = ("helios", "philly", "pai", "alibaba2023", "sia", "acme", "spot_gpu")
SIDE_FILES = {"helios": (GPU_NUMBER_FILE,), "pai": (TASK_FILE,), "spot_gpu": (SPOT_NODE_FILE,)}
CACHE_VERSION = "7"
#: The typed node pools `raysim trace convert` writes beside a converted trace (cluster.layout).
LAYOUT_FILE = "layout.csv"
#: The plausibility bounds' defaults (conf/config.yaml: trace.max_duration_s, trace.max_submit_span_years).
MAX_DURATION_S = Bounds().max_duration_s
MAX_SUBMIT_SPAN_YEARS = Bounds().max_submit_span_years

log = logging.getLogger("raysim")


@dataclass
class Trace:
    """A validated trace: the job table, the VC layout and what loading dropped. `layout` holds the
    typed node pools when the reader derived them (alibaba2023), else None (nodes of one shape)."""

    table: pa.Table
    vc_nodes: dict[str, int]
    report: SkipReport
    source: str
    from_cache: bool = False
    layout: Layout | None = None

    @property
    def origin(self) -> str:
        return metadata(self.table).get("origin", "0")

    def vc_gpus(self, gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, int]:
        """GPUs per VC: those of the typed pools, else nodes x `gpus_per_node`."""
        if self.layout is not None:
            return {vc: sum(p.gpus for p in pools) for vc, pools in self.layout.items()}
        return {vc: n * gpus_per_node for vc, n in self.vc_nodes.items()}


def resolve_source(path: str | Path, fmt: str = "auto", workload: str | None = None) -> Path:
    """The trace file for `path`: a file, or a folder holding one of FOLDER_FILES; with
    trace.format=alibaba2023, or auto and a `workload` reader option, the folder's openb pod list
    `workload` (default: default)."""
    p = Path(path).expanduser()
    if p.is_dir() and (fmt == "alibaba2023" or (fmt == "auto" and workload is not None)):
        return pod_list_path(p, workload or DEFAULT_WORKLOAD)
    if p.is_dir():
        for name in FOLDER_FILES:
            if (p / name).exists():
                return p / name
        raise TraceError(str(p), f"no trace file in this folder (looked for {', '.join(FOLDER_FILES)})")
    if not p.exists():
        raise TraceError(str(p), "trace file not found")
    return p


def load_trace(path, *, fmt: str = "auto", vc_config=None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
               on_error: str = "raise", state_filter=None, origin: str = "auto", cache: bool = True,
               cache_dir=None, cluster: str = "", reader_options: dict | None = None,
               layout: dict | None = None, max_duration_s: float = MAX_DURATION_S,
               max_submit_span_years: float = MAX_SUBMIT_SPAN_YEARS) -> Trace:
    """Read, validate and (optionally) cache the trace at `path`.

    The VC layout is `layout` (VC -> node pools, e.g. from a layout file), else trace.vc_config,
    else vc_config.csv beside the trace (nodes of `gpus_per_node` GPUs), else (formats in
    OWN_LAYOUT) what the reader derives. `reader_options` go to the reader (e.g. Helios' vc_size),
    checked against its declaration before the trace is looked for (with trace.format=auto: once the
    format is known). Durations above `max_duration_s` and submit times more than
    `max_submit_span_years` from the median are bad rows (readers.Bounds). A trace left without jobs
    is an error.
    """
    bounds = Bounds(max_duration_s, max_submit_span_years)
    given = dict(reader_options or {})
    if fmt != "auto" and fmt not in READERS:
        raise ValueError(f"trace.format must be auto or one of {sorted(READERS)}, not {fmt!r}")
    chosen = None if fmt == "auto" else check_reader_options(fmt, given)
    source = resolve_source(path, fmt, given.get("workload"))
    if chosen is None:
        fmt = auto_format(source)
        chosen = check_reader_options(fmt, given)
    vc_path = Path(vc_config) if vc_config else source.parent / "vc_config.csv"
    if layout is not None:
        # pools may differ in node size: the readers check each VC's capacity in GPUs
        vc_nodes, gpus_per_node = {vc: sum(p.gpus_per_node * p.nodes for p in pools)
                                   for vc, pools in layout.items()}, 1
    else:
        own_layout = fmt in OWN_LAYOUT and not vc_config and not vc_path.exists()
        if not own_layout and not vc_path.exists() and (source.parent / LAYOUT_FILE).exists():
            raise TraceError(str(vc_path), f"VC layout file not found; the folder has {LAYOUT_FILE} (typed node "
                                           f"pools): set cluster.layout={source.parent / LAYOUT_FILE}")
        vc_nodes = None if own_layout else read_vc_config(vc_path)
    options = dict(vc_nodes=vc_nodes, gpus_per_node=gpus_per_node, on_error=on_error,
                   state_filter=list(state_filter) if state_filter else None, origin=str(origin),
                   cluster=cluster or source.parent.name, bounds=bounds)
    cache_file = _cache_path(source, cache_dir) if cache and fmt != "parquet" else None
    if cache_file is not None:
        # keyed by the options as given (not their defaults): the keys of existing caches hold
        key = _cache_key(source, [vc_path, *_side_files(fmt, source, chosen)], fmt, {**options, **given})
        table = read_cache(cache_file, key)
        if table is not None:
            report = SkipReport.from_dict({**metadata(table)["report"], "file": str(source)})
            return _trace(table, layout, vc_nodes, report, source, from_cache=True)
    table, report = READERS[fmt](source, **options, **as_options(chosen))
    _check_jobs_left(table, report, source)
    if cache_file is not None:
        meta = {**metadata(table), "cache_key": key, "report": report.to_dict()}
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode()})
        write_cache(table, cache_file)
    return _trace(table, layout, vc_nodes, report, source)


def check_reader_options(fmt: str, options: dict):
    """The reader options of format `fmt` checked against its reader's declaration (its
    ``Settings``) and filled with their defaults; a key it does not declare, or a bad value, is one
    ConfigError naming ``trace.reader_options.<key>``."""
    return parse(READERS[fmt].Settings, options, prefix="trace.reader_options", owner=f"the {fmt} reader")


def reader_options_from_text(fmt: str, texts: dict[str, str]) -> dict:
    """Reader options given as text (``raysim trace convert -o KEY=VALUE``) as the values their
    declared kinds take, for :func:`check_reader_options` to check as it checks a run's: a name is
    the text itself (null: none); anything else is the text read as YAML ({T4: V100}, 4, null), and
    a number also as Python reads one (nan, inf, 1e3). Text that reads as neither stays text (a
    wrong type), as does the text of a key the reader does not declare (check_reader_options names
    it)."""
    declared = {d.name: d for d in describe(READERS[fmt].Settings)}
    return {key: _from_text(declared[key].kind, text) if key in declared else text for key, text in texts.items()}


def _from_text(kind: str, text: str):
    if kind == "str" or not text.strip():
        return None if text == "null" else text
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if kind in ("int", "float") and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return text
    return value


def _check_jobs_left(table: pa.Table, report: SkipReport, source: Path) -> None:
    """Raise a TraceError when loading left no job to simulate, saying why."""
    if table.num_rows:
        return
    if not report.total:
        raise TraceError(str(source), "no jobs: the trace has no data rows")
    reasons = "; ".join(f"{n} {reason}" for reason, n in report.counts.most_common())
    raise TraceError(str(source), f"no jobs left to simulate: all {report.total} rows were skipped or "
                                  f"filtered ({reasons})")


def auto_format(source: Path) -> str:
    """trace.format=auto: the format of `source` by its name (AUTO_FORMATS, AUTO_PREFIXES), by the
    header of a CSV (a Sia workload), else by its suffix."""
    if source.name in AUTO_FORMATS:
        return AUTO_FORMATS[source.name]
    if source.suffix == ".csv":
        for prefix, fmt in AUTO_PREFIXES.items():
            if source.name.startswith(prefix):
                return fmt
        if is_sia_workload(source):
            return "sia"
    return "parquet" if source.suffix == ".parquet" else "csv"


def _side_files(fmt: str, source: Path, reader_options) -> list[Path]:
    """The files beside `source` its reader reads (their contents key the cache); `reader_options`:
    the reader's, checked."""
    if fmt == "alibaba2023":
        return [source.parent / list_file_name(reader_options.node_list, NODE_PREFIX)]
    return [source.parent / name for name in SIDE_FILES.get(fmt, ())]


def _trace(table: pa.Table, layout: dict | None, vc_nodes: dict | None, report: SkipReport, source: Path,
           from_cache: bool = False) -> Trace:
    """The Trace of a loaded table: the layout given, else the VC config read, else the recorded one."""
    if layout is not None:
        return Trace(table, _node_counts(layout), report, str(source), from_cache)
    if vc_nodes is not None:
        return Trace(table, vc_nodes, report, str(source), from_cache)
    return Trace(table, _recorded_layout(table), report, str(source), from_cache, layout=recorded_pools(table))


def _node_counts(layout: dict | None) -> dict[str, int] | None:
    return None if layout is None else {vc: sum(p.nodes for p in pools) for vc, pools in layout.items()}


def _recorded_layout(table: pa.Table) -> dict[str, int]:
    return {vc: int(n) for vc, n in metadata(table)["vc_nodes"].items()}


def _cache_key(source: Path, inputs: list[Path], fmt: str, options: dict) -> str:
    """SHA-256 over the cache version, the format, the options (bounds included) and, per file read,
    its name and the SHA-256 of its content ("absent" for a side file that is not there)."""
    parts = [CACHE_VERSION, fmt, json.dumps(options, sort_keys=True, default=str)]
    for p in (source, *inputs):
        parts += [p.name, _content_hash(p) if p.is_file() else "absent"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _content_hash(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_cache(cache_file: Path, key: str | None = None) -> pa.Table | None:
    """The table cached in `cache_file` (with a `key`: only when cached under that key); None when
    there is none. An unreadable cache file is as good as none: one warning, and the caller replaces
    it."""
    if not cache_file.exists():
        return None
    try:
        if key is not None:
            meta = json.loads((pq.read_schema(cache_file).metadata or {}).get(META_KEY, b"{}"))
            if meta.get("cache_key") != key:
                return None
        return pq.read_table(cache_file)
    except (OSError, ValueError, pa.ArrowException) as exc:
        log.warning("trace cache %s is unreadable (%s): making the trace again and replacing the cache",
                    cache_file, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return None


def _cache_path(source: Path, cache_dir) -> Path:
    """Beside the source when no cache_dir is given and that folder is writable, else in cache_dir
    (default ~/.cache/raysim)."""
    name = source.name + ".raysim-cache.parquet"
    if cache_dir is None and os.access(source.parent, os.W_OK):
        return source.parent / name
    base = Path(cache_dir) if cache_dir else Path.home() / ".cache" / "raysim"
    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    return base / f"{digest}-{name}"


def write_cache(table: pa.Table, cache_file: Path) -> None:
    """Write `table` to a temporary file of a unique name beside `cache_file`, then rename it into
    place (atomic): a reader sees the old cache or the new one, and concurrent writers never share a
    file. A cache that cannot be written only costs the next run the work again."""
    tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, cache_file)
    except OSError:
        tmp.unlink(missing_ok=True)
