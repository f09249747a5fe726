"""How fast a job type runs on a GPU type: a throughput table, from a CSV or from Gavel's JSON.

Throughputs are in any unit consistent within one job type (steps/s, samples/s, ...): only ratios
between GPU types of the same job type and scale factor matter. An entry of 0 (Gavel's way of saying
"does not fit on this GPU type") means the job cannot run there.

Default for unknown pairs (:data:`UNKNOWN_RATIO`): when the table has no throughput for the job
type on the GPU type or on the reference type, :meth:`ThroughputTable.ratio` returns 1.0, i.e. the
job runs as fast as on its reference type, and remembers the pair; :meth:`ThroughputTable.missing`
lists them so a caller can report which job types lacked an entry for which GPU type.

:func:`read_throughput_table` parses a file's content once per process: a run reads its table in
several steps, and a sweep's runs in one process read the same one (Gavel's JSON has ~11,000
entries). Each call gets its own table (sharing the parsed entries), so recorded misses never leak
from one run into another.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from raysim.csvfile import csv_rows
from raysim.errors import TraceError

#: ratio() when a throughput is unknown: the job runs as fast as on its reference GPU type.
UNKNOWN_RATIO = 1.0

#: The largest throughput (Gavel's are below 10^4 steps/s): a round's steps are a throughput times the
#: round's length, which 1e308 overflowed (a traceback).
MAX_RATE = 1e12

#: Columns of a throughput CSV (any order, no others).
THROUGHPUT_COLUMNS = ("job_type", "gpu_type", "throughput")

#: Top-level keys of Gavel's table with this suffix are placement variants, not GPU types: skipped.
GAVEL_VARIANT_SUFFIX = "_unconsolidated"

#: (job_type, gpu_type, scale_factor)
Key = tuple[str, str, int]

#: Tables parsed in this process, by their file's content (SHA-256) and kind; the last few only.
_PARSED: OrderedDict[tuple[bytes, bool], ThroughputTable] = OrderedDict()
PARSED_KEPT = 4


class ThroughputTable:
    """Throughput of each (job type, GPU type, scale factor), optionally of job pairs sharing GPUs.

    `throughputs` maps ``(job_type, gpu_type)`` (scale factor 1) or ``(job_type, gpu_type,
    scale_factor)`` to a throughput from 0 to MAX_RATE (0: cannot run there). `pairs` maps ``(job_a,
    job_b, gpu_type, scale_factor)`` to the two jobs' throughputs when packed together.
    """

    def __init__(self, throughputs: Mapping[tuple, float],
                 pairs: Mapping[tuple[str, str, str, int], tuple[float, float]] | None = None):
        self._rates: dict[Key, float] = {}
        for key, value in throughputs.items():
            full = _key(key)
            if full in self._rates:
                raise ValueError(f"throughput of {full} given twice")
            self._rates[full] = _rate(value, key)
        self._pairs: dict[tuple[str, str, str, int], tuple[float, float]] = {}
        for key, (rate_a, rate_b) in (pairs or {}).items():
            self._pairs[_pair_key(key)] = (_rate(rate_a, key), _rate(rate_b, key))
        self._missing: set[tuple[str, str]] = set()
        #: GPU type names matched case-insensitively (Gavel's table says v100, layouts V100)
        self._gpu = {gpu.lower(): gpu for _, gpu, _ in self._rates}

    def copy(self) -> ThroughputTable:
        """The same table (its entries shared, not copied) with no misses recorded yet."""
        table = object.__new__(ThroughputTable)
        table._rates, table._pairs, table._gpu = self._rates, self._pairs, self._gpu
        table._missing = set()
        return table

    def __len__(self) -> int:
        """Number of (job type, GPU type, scale factor) entries."""
        return len(self._rates)

    def job_types(self) -> list[str]:
        """Job types, in order of first appearance."""
        return list(dict.fromkeys(job for job, _, _ in self._rates))

    def gpu_types(self) -> list[str]:
        """GPU types, in order of first appearance."""
        return list(dict.fromkeys(gpu for _, gpu, _ in self._rates))

    def get(self, job_type: str, gpu_type: str, scale_factor: int = 1) -> float | None:
        """The throughput of `job_type` on `scale_factor` GPUs of `gpu_type`, None if unknown."""
        return self._rates.get((job_type, self._gpu.get(gpu_type.lower(), gpu_type), scale_factor))

    def pair(self, job_a: str, job_b: str, gpu_type: str,
             scale_factor: int = 1) -> tuple[float, float] | None:
        """Throughputs (of a, of b) when the two jobs share `gpu_type` GPUs; None if not measured."""
        gpu_type = self._gpu.get(gpu_type.lower(), gpu_type)
        both = self._pairs.get((job_a, job_b, gpu_type, scale_factor))
        if both is not None:
            return both
        swapped = self._pairs.get((job_b, job_a, gpu_type, scale_factor))
        return None if swapped is None else (swapped[1], swapped[0])

    def ratio(self, job_type: str, gpu_type: str, reference_gpu_type: str,
              scale_factor: int = 1) -> float:
        """How much faster `job_type` progresses on `gpu_type` than on `reference_gpu_type`.

        thr(gpu_type) / thr(reference), both at `scale_factor` when the table has both, else both
        at scale factor 1 (so a table without per-size entries, such as any CSV table, serves jobs
        of every size). 0.0 when the job cannot run on `gpu_type`. When a throughput is unknown
        (or the reference's is 0), returns :data:`UNKNOWN_RATIO` and records the pair for
        :meth:`missing`.
        """
        if gpu_type == reference_gpu_type:
            return 1.0
        at_scale = all(self.get(job_type, t, scale_factor) is not None for t in (gpu_type, reference_gpu_type))
        scale = scale_factor if at_scale else 1
        rate = self.get(job_type, gpu_type, scale)
        base = self.get(job_type, reference_gpu_type, scale)
        if rate is not None and base:
            return rate / base
        if rate is None:
            self._missing.add((job_type, gpu_type))
        if not base:
            self._missing.add((job_type, reference_gpu_type))
        return UNKNOWN_RATIO

    def missing(self) -> list[tuple[str, str]]:
        """Sorted (job_type, gpu_type) pairs for which :meth:`ratio` fell back to UNKNOWN_RATIO."""
        return sorted(self._missing)


def read_throughput_csv(path: str | Path) -> ThroughputTable:
    """Read a CSV ``job_type,gpu_type,throughput`` (any column order; throughputs > 0, scale 1).

    ``#`` comment lines and blank lines are ignored; a repeated (job_type, gpu_type) is an error.
    """
    name = str(path)
    rows = csv_rows(path, THROUGHPUT_COLUMNS, "throughput table")
    if not rows:
        raise TraceError(name, "no throughputs listed (the file has a header but no rows)")
    rates: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], int] = {}
    for row, cells in rows:
        for column in ("job_type", "gpu_type"):
            if not cells[column]:
                raise TraceError(name, "empty value", row=row, column=column)
        key = (cells["job_type"], cells["gpu_type"])
        if key in first:
            raise TraceError(name, f"repeats (job_type {key[0]!r}, gpu_type {key[1]!r}) of row {first[key]}",
                             row=row)
        first[key] = row
        rates[key] = _csv_rate(name, row, cells["throughput"])
    return ThroughputTable(rates)


def read_throughput_table(path: str | Path) -> ThroughputTable:
    """Gavel's JSON when `path` ends in ``.json``, else a throughput CSV; a content this process
    parsed before is not parsed again (see the module docs)."""
    gavel = Path(path).suffix == ".json"
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:  # (the reader says so in its own words)
        return read_gavel_throughputs(path) if gavel else read_throughput_csv(path)
    key = (hashlib.sha256(content).digest(), gavel)
    table = _PARSED.get(key)
    if table is None:
        table = _gavel_table(str(path), _json_object(str(path), content)) if gavel else read_throughput_csv(path)
        _PARSED[key] = table
        while len(_PARSED) > PARSED_KEPT:
            _PARSED.popitem(last=False)
    _PARSED.move_to_end(key)
    return table.copy()


def read_gavel_throughputs(path: str | Path) -> ThroughputTable:
    """Read Gavel's ``simulation_throughputs.json``: isolated and pair throughputs per GPU type.

    Layout: ``{gpu_type: {"('<job type>', <scale factor>)": {"null": isolated throughput,
    "('<other job type>', <scale factor>)": [throughput, other's throughput]}}}``. Top-level keys
    ending in :data:`GAVEL_VARIANT_SUFFIX` (placement variants) are skipped; 0 means "does not fit".
    """
    name = str(path)
    try:
        content = Path(name).read_bytes()
    except FileNotFoundError:
        raise TraceError(name, "Gavel throughput file not found") from None
    return _gavel_table(name, _json_object(name, content))


def _gavel_table(name: str, data: dict) -> ThroughputTable:
    """The table of Gavel's JSON object `data` (read_gavel_throughputs) read from file `name`."""
    rates: dict[Key, float] = {}
    pairs: dict[tuple[str, str, str, int], tuple[float, float]] = {}
    keys: dict[str, tuple[str, int]] = {}  # each job key's parse (~80 distinct keys, ~11,000 uses)

    def job_of(gpu_type: str, text: str) -> tuple[str, int]:
        job = keys.get(text)
        if job is None:
            job = keys[text] = _gavel_job(name, gpu_type, text)
        return job

    for gpu_type, jobs in data.items():
        if gpu_type.endswith(GAVEL_VARIANT_SUFFIX):
            continue
        if not isinstance(jobs, dict):
            raise TraceError(name, f"[{gpu_type!r}]: expected an object of job types")
        for text, entry in jobs.items():
            job, scale = job_of(gpu_type, text)
            where = f"[{gpu_type!r}][{text!r}]"
            if not isinstance(entry, dict) or "null" not in entry:
                raise TraceError(name, f"{where}: expected an object with the isolated throughput 'null'")
            rates[(job, gpu_type, scale)] = _json_rate(name, where + "['null']", entry["null"])
            for other_text, both in entry.items():
                if other_text != "null":
                    other, other_scale = job_of(gpu_type, other_text)
                    pairs[(job, other, gpu_type, scale)] = _gavel_pair(
                        name, f"{where}[{other_text!r}]", both, other_scale == scale)
    if not rates:
        raise TraceError(name, "no GPU type with throughputs")
    return ThroughputTable(rates, pairs)


def _key(key: tuple) -> Key:
    """(job, gpu) or (job, gpu, scale) -> (job, gpu, scale), checking the types."""
    if not isinstance(key, tuple) or len(key) not in (2, 3):
        raise ValueError(f"throughput key must be (job_type, gpu_type[, scale_factor]), not {key!r}")
    job, gpu, scale = key if len(key) == 3 else (*key, 1)
    if not (isinstance(job, str) and job and isinstance(gpu, str) and gpu):
        raise ValueError(f"job and GPU types must be non-empty strings: {key!r}")
    if isinstance(scale, bool) or not isinstance(scale, int) or scale <= 0:
        raise ValueError(f"scale factor must be a positive integer: {key!r}")
    return job, gpu, scale


def _pair_key(key: tuple) -> tuple[str, str, str, int]:
    """(job_a, job_b, gpu, scale), checking the types."""
    if not isinstance(key, tuple) or len(key) != 4:
        raise ValueError(f"pair key must be (job_a, job_b, gpu_type, scale_factor), not {key!r}")
    job_a, job_b, gpu, scale = key
    _key((job_a, gpu, scale))
    _key((job_b, gpu, scale))
    return key


def _rate(value: object, key: object) -> float:
    """A throughput from 0 to MAX_RATE, as float."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not 0 <= value <= MAX_RATE:
        raise ValueError(f"throughput of {key!r} must be a finite number >= 0 and at most {MAX_RATE:.0e}, "
                         f"not {value!r}")
    return float(value)


def _csv_rate(name: str, row: int, text: str) -> float:
    """A CSV throughput cell: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise TraceError(name, "not a number", row=row, column="throughput", value=text) from None
    if not math.isfinite(value) or value <= 0:
        raise TraceError(name, "must be a positive number", row=row, column="throughput", value=text)
    if value > MAX_RATE:
        raise TraceError(name, f"must be at most {MAX_RATE:.0e}", row=row, column="throughput", value=text)
    return value


def _json_object(name: str, content: bytes) -> dict:
    """The top-level object of JSON file `name`'s `content`, as a TraceError when malformed (a key
    repeated in an object, nesting too deep for Python's parser)."""
    try:
        data = json.loads(content.decode(), object_pairs_hook=lambda pairs: _unique(name, pairs))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(name, f"not a readable JSON file: {exc}") from None
    except RecursionError:
        raise TraceError(name, "nested too deeply for JSON to read (a throughput table has 3 levels)") from None
    if not isinstance(data, dict):
        raise TraceError(name, "expected an object of GPU types at the top level")
    return data


def _unique(name: str, pairs: list) -> dict:
    """A JSON object's (key, value) pairs as a dict; a key given twice is a TraceError (JSON keeps the
    last without a word)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise TraceError(name, "a key appears twice in one object", value=key)
    return out


def _gavel_job(name: str, gpu_type: str, text: str) -> tuple[str, int]:
    """Parse a Gavel job key such as "('ResNet-18 (batch size 16)', 1)" (literals only, no eval)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and value[0].strip()
            and type(value[1]) is int and value[1] > 0):
        return value[0], value[1]
    raise TraceError(name, f"[{gpu_type!r}]: job key is not a ('job type', scale factor > 0) tuple",
                     value=text)


def _json_rate(name: str, where: str, value: object) -> float:
    """A JSON throughput: a finite number >= 0."""
    try:
        return _rate(value, where)
    except ValueError:
        raise TraceError(name, f"{where}: throughput must be a finite number >= 0 and at most {MAX_RATE:.0e}",
                         value=value) from None


def _gavel_pair(name: str, where: str, both: object, same_scale: bool) -> tuple[float, float]:
    """A Gavel pair entry: two throughputs, for jobs of the same scale factor."""
    if not same_scale:
        raise TraceError(name, f"{where}: a pair of jobs with different scale factors")
    if not isinstance(both, list) or len(both) != 2:
        raise TraceError(name, f"{where}: expected [throughput, other's throughput]", value=both)
    return _json_rate(name, where, both[0]), _json_rate(name, where, both[1])
