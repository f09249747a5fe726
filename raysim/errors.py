"""User errors, told apart from bugs.

A *user error* is input the user can fix: a bad trace or cluster file, a bad config value or
override, a missing input file, a run folder that cannot be written. ``raysim`` ends such a run
with exit status 2 and one line on stderr, ``raysim: error: <what>``, where <what> names the file,
row (line) and column (:class:`TraceError`) or the config key
(:class:`ConfigError`). Anything else is a bug: it keeps its traceback and exit status 1.

What counts as a user error (:func:`user_error_message`), and nothing else:

- :class:`UserError` and its subclasses (:class:`ConfigError`), and ``TraceError``: raised by
  raysim's own validation. Validation code that finds bad input raises one of these; a plain
  ``ValueError`` (from numpy, pandas, or raysim's internal checks) stays a bug.
- Hydra's composition and override errors (an unknown config group or key, an override that does
  not parse, ``+experiment=nope``) and OmegaConf's value errors (a missing mandatory value, an
  interpolation that does not resolve, a value of the wrong type for a typed field).
- File-system errors naming a file (``FileNotFoundError``, ``PermissionError``, ...; a full or
  read-only disk), including Hydra failing to open the run's log file in an unwritable folder.

A run that ends on any error (a user error, a bug, Ctrl-C) says so in its folder, beside Hydra's
.hydra and raysim.log: ``failed.json`` (:func:`write_failed_run`) holds the one-line reason, the
exit status, the time and the command; ``raysim report`` skips such a folder with that reason
(:func:`failed_run`).
"""

from __future__ import annotations

import errno
import json
import re
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

_NO_VALUE = object()


class TraceError(ValueError):
    """Bad input in a trace or cluster file (or a result file read back). `row` is the 1-based data
    row; its file line is `line` (default row + 1: a CSV with a header line)."""

    def __init__(self, file: str, message: str, *, row: int | None = None, column: str | None = None,
                 value=None, line: int | None = None):
        self.file, self.row, self.column, self.value = file, row, column, value
        where = [str(file)]
        if row is not None:
            where.append(f"row {row} (line {row + 1 if line is None else line})")
        if column is not None:
            where.append(f"column {column!r}")
        text = ", ".join(where) + f": {message}"
        if value is not None:
            text += f" (value {value!r})"
        super().__init__(text)


@dataclass
class SkipReport:
    """Rows dropped while loading, counted by reason (`counts`) and, for rows dropped for a bad
    value, by reason and column (`by_column`, keys (reason, column)), with the first few examples of
    each reason; and rows kept but changed to fit the simulator (`converted`), counted by what was
    changed."""

    file: str = ""
    counts: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)
    max_examples: int = 3
    converted: Counter = field(default_factory=Counter)
    by_column: Counter = field(default_factory=Counter)

    def add(self, reason: str, rows, column: str | None, values) -> None:
        """Count `rows` (1-based data rows) as dropped for `reason` in `column`, with examples."""
        rows = list(rows)
        if not rows:
            return
        self.count(reason, [column] * len(rows))
        ex = self.examples.setdefault(reason, [])
        for r, v in zip(rows, values):
            if len(ex) >= self.max_examples:
                break
            ex.append(str(TraceError(self.file, reason, row=r, column=column, value=v)))

    def count(self, reason: str, columns) -> None:
        """Count one dropped row per entry of `columns` under `reason`, and under (reason, column)
        where the entry names a column (None: the row as a whole)."""
        tally = Counter(columns)
        if not tally:
            return
        self.counts[reason] += sum(tally.values())
        tally.pop(None, None)
        self.by_column.update({(reason, c): n for c, n in tally.items()})

    def drop(self, keep, filters) -> None:
        """Apply (mask, reason) filters in order to the boolean array `keep`, counting each row once
        under the first reason that drops it."""
        for mask, reason in filters:
            dropped = keep & mask
            if dropped.any():
                self.counts[reason] += int(dropped.sum())
            keep &= ~dropped

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        """Human-readable summary, one line per reason plus examples, then one per conversion."""
        out = []
        for reason, n in sorted(self.counts.items()):
            columns = ", ".join(f"{c}: {k}" for c, k in sorted(self.columns_of(reason).items()))
            out.append(f"skipped {n} row(s): {reason}" + (f" [by column: {columns}]" if columns else ""))
            out += [f"    e.g. {e}" for e in self.examples.get(reason, [])]
        out += [f"converted {n} row(s): {what}" for what, n in sorted(self.converted.items())]
        return out

    def columns_of(self, reason: str) -> dict[str, int]:
        """Rows dropped for `reason`, by column."""
        return {c: n for (r, c), n in self.by_column.items() if r == reason}

    def to_dict(self) -> dict:
        """counts, examples and converted as dicts; by_column as {reason: {column: rows}}."""
        return {"file": self.file, "counts": dict(self.counts), "examples": self.examples,
                "converted": dict(self.converted),
                "by_column": {r: self.columns_of(r) for r in self.counts if self.columns_of(r)}}

    @classmethod
    def from_dict(cls, data: dict) -> SkipReport:
        """The report `to_dict` gave."""
        report = cls(file=data.get("file", ""), examples=data.get("examples", {}))
        report.counts.update(data.get("counts", {}))
        report.converted.update(data.get("converted", {}))
        for reason, columns in data.get("by_column", {}).items():
            report.by_column.update({(reason, c): n for c, n in columns.items()})
        return report


class UserError(ValueError):
    """Bad input the user can fix; its message is one line naming what to fix."""


class ConfigError(UserError):
    """A bad config value: ``<key>: <reason> (value <v>)``."""

    def __init__(self, key: str, message: str, value=_NO_VALUE):
        self.key, self.message, self.value = key, message, value
        text = f"{key}: {message}"
        if value is not _NO_VALUE:
            text += f" (value {value!r})"
        super().__init__(text)

    def __reduce__(self):  # picklable (Ray tasks): rebuild from the same arguments
        return (type(self), (self.key, self.message, self.value))


def _type_named(module: str, name: str):
    """Class `name` of `module` if that module is already imported, else None (an exception can only
    be an instance of a class whose module was imported)."""
    mod = sys.modules.get(module)
    return getattr(mod, name, None) if mod is not None else None


#: OSError numbers that are the user's environment, not a bug: full or read-only disks and the like.
_FS_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.ENAMETOOLONG, errno.EACCES, errno.EPERM,
              errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}
#: OmegaConf errors that are a bad value or override, not a bug in the code reading the config.
_OMEGACONF_USER = ("MissingMandatoryValue", "InterpolationResolutionError", "GrammarParseError", "ValidationError")
#: Hydra's own errors about the command line and the config tree.
_HYDRA_USER = ("ConfigCompositionException", "OverrideParseException", "MissingConfigException",
               "SearchPathException")


def one_line(text: str) -> str:
    """`text` on one line: lines stripped and joined; an indented list under a line ending in ':'
    (Hydra's "Available options") joined with commas; Hydra's config search path and OmegaConf's
    `object_type=` lines dropped, its `full_key:` line in parentheses."""
    text = str(text).split("\nConfig search path:")[0]
    blocks: list[list[str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("object_type="):
            continue
        if raw[:1] in ("\t", " ") and blocks and blocks[-1][0].endswith(":") and not line.startswith("full_key:"):
            blocks[-1].append(line)
        else:
            blocks.append([f"({line})" if line.startswith("full_key:") else line])
    out = ""
    for head, *items in blocks:
        part = head + (" " + ", ".join(items) if items else "")
        if out:
            out += " " if out[-1] in ".:;(" or part.startswith("(") else "; "
        out += part
    return out


_RESOLVER_SAID = re.compile(r"^(ConfigError|UserError) raised while resolving interpolation: ")


def user_error_message(exc: BaseException) -> str | None:
    """The one-line message of `exc` when it is a user error (see the module doc), else None."""
    cause = getattr(exc, "cause", None)  # Ray's RayTaskError carries the task's exception
    if cause is not None and type(exc).__name__.startswith("RayTaskError") and isinstance(cause, BaseException):
        exc = cause
    if isinstance(exc, UserError):
        return one_line(str(exc))
    trace_error = TraceError
    if trace_error is not None and isinstance(exc, trace_error):
        return one_line(str(exc))
    mismatch = _type_named("raysim.runtime.coordinator", "CheckpointMismatch")
    if mismatch is not None and isinstance(exc, mismatch):
        return one_line(str(exc))
    for name in _HYDRA_USER:
        cls = _type_named("hydra.errors", name)
        if cls is not None and isinstance(exc, cls):
            return _hydra_message(exc)
    for name in _OMEGACONF_USER:
        cls = _type_named("omegaconf.errors", name)
        if cls is not None and isinstance(exc, cls):
            # a resolver of raysim's (e.g. ${raysim_path:...}) raised a user error: its words alone
            return one_line(_RESOLVER_SAID.sub("", str(exc)))
    if isinstance(exc, OSError) and exc.errno in _FS_ERRNOS:
        return _os_message(exc)
    if isinstance(exc, OSError) and exc.errno is None and isinstance(exc, (FileNotFoundError, PermissionError)):
        return one_line(str(exc))  # raised by raysim with its own message (e.g. harvest inputs)
    if isinstance(exc, ValueError) and str(exc).startswith("Unable to configure handler"):
        # logging.config (Hydra's job logging) could not open the run's log file
        inner = exc.__cause__ or exc.__context__
        if isinstance(inner, OSError) and inner.errno in _FS_ERRNOS:
            return f"cannot write the run's log file: {_os_message(inner)} (set hydra.run.dir to a writable folder)"
    return None


def _os_message(exc: OSError) -> str:
    text = exc.strerror or str(exc)
    if exc.filename is not None:
        text = f"{exc.filename}: {text}"
        if exc.filename2 is not None:
            text += f" (and {exc.filename2})"
    return one_line(text)


def _hydra_message(exc: BaseException) -> str:
    """Hydra's message and that of the OmegaConf error behind it, on one line."""
    text = one_line(str(exc))
    cause = exc.__cause__
    if cause is not None and one_line(str(cause)) and one_line(str(cause)) not in text:
        text = f"{text.rstrip('.:')}: {one_line(str(cause))}"
    return text


@dataclass
class Failure:
    """What a Hydra job returns when it stopped on a user error (the run entry point prints it and
    exits 2 once all jobs are done). Plain data, so it travels back from Ray tasks."""

    message: str
    traceback: str = ""
    job: int | None = None  # the job's number in a multirun
    overrides: tuple[str, ...] = ()  # and its overrides

    @classmethod
    def of(cls, exc: BaseException, message: str, job: int | None = None, overrides=()) -> "Failure":
        return cls(message, "".join(traceback.format_exception(exc)), job, tuple(overrides))

    def label(self, swept: set[str]) -> str:
        """`run #N (its values of the `swept` keys)`, or "" for a single run."""
        if self.job is None:
            return ""
        mine = [o for o in self.overrides if o.lstrip("+~").split("=", 1)[0] in swept]
        return f"run #{self.job}" + (f" ({' '.join(mine)})" if mine else "")


#: User errors of the jobs run by this process (or reported back to it by a launcher).
FAILURES: list[Failure] = []


def record_failure(failure: Failure) -> None:
    FAILURES.append(failure)


#: The file a run that ended on an error leaves in its folder (write_failed_run).
FAILED_FILE = "failed.json"


def write_failed_run(run_dir, reason: str, status: int, command: str) -> None:
    """Say in `run_dir`/failed.json that the run there ended on an error: its one-line `reason`, the
    exit `status` (2: a user error, 1: a bug, 130: Ctrl-C), the time (UTC) and the `command`. A
    folder that cannot be written stays as it is (the error itself still reaches the console)."""
    record = {"reason": one_line(reason), "status": status,
              "time": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), "command": command}
    try:
        (Path(run_dir) / FAILED_FILE).write_text(json.dumps(record, indent=2) + "\n")
    except OSError:
        pass


def clear_failed_run(run_dir) -> None:
    """Remove what an earlier run in `run_dir` said of its failure (a run starting there again)."""
    try:
        (Path(run_dir) / FAILED_FILE).unlink(missing_ok=True)
    except OSError:
        pass


def failed_run(run_dir) -> str | None:
    """Why the run in `run_dir` failed, in one line ("failed at <time> (exit status N): <reason>"),
    from its failed.json; None where it has none. A failed.json that is not such a record still says
    the run failed."""
    path = Path(run_dir) / FAILED_FILE
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("reason"), str):
        return f"failed ({FAILED_FILE} is there but does not say why)"
    when = f" at {record['time']}" if isinstance(record.get("time"), str) else ""
    status = f" (exit status {record['status']})" if isinstance(record.get("status"), int) else ""
    return f"failed{when}{status}: {one_line(record['reason'])}"
