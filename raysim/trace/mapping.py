"""Validate a job frame built from another trace format, naming the source file's rows and columns.

A reader for a foreign format (Helios, Philly, PAI) first maps the source to a DataFrame with raysim's
columns, dropping rows it filters on purpose (CPU-only jobs, jobs that never ran). The remaining
frame rows no longer line up with the source, so :class:`Source` remembers, for every frame row, the
source row it came from, and which source column each frame column was read from. Errors and skip
examples from :func:`raysim.trace.readers.validate_frame` are then rewritten to name those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.csvfile import RAGGED
from raysim.errors import SkipReport, TraceError
from raysim.trace.readers import validate_frame

_ROW = re.compile(r"row (\d+) \(line \d+\)")
_COLUMN = re.compile(r"column '([^']*)'")


@dataclass
class Source:
    """Where the rows of a mapped frame come from.

    `unit` says how a source row is named: ``"row"`` (a CSV with a header: ``row N (line N+1)``),
    ``"line"`` (a headerless CSV: the data row is the line) or ``"job"`` (the N-th element of a JSON
    list). `rows` holds the 1-based source row of each frame row; `columns` maps frame columns to
    the source columns they were read from.
    """

    file: str
    unit: str = "row"
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    columns: dict[str, str] = field(default_factory=dict)

    def where(self, row: int) -> str:
        """How messages name source row `row`."""
        return f"row {row} (line {row + 1})" if self.unit == "row" else f"{self.unit} {row}"

    def error(self, reason: str, row: int | None = None, column: str | None = None,
              value=None) -> TraceError:
        """A TraceError naming this file, source row `row` and source column `column`."""
        label = self.file if row is None else f"{self.file}, {self.where(int(row))}"
        err = TraceError(label, reason, column=column, value=value)
        err.file, err.row = self.file, None if row is None else int(row)
        return err

    def skip(self, report: SkipReport, reason: str, rows, column, values) -> None:
        """Count source rows dropped for `reason` in `report`, with examples naming them.
        `column` is one source column name or one per row."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return
        columns = np.broadcast_to(np.asarray(column, dtype=object), rows.shape)
        report.count(reason, columns.tolist())
        examples = report.examples.setdefault(reason, [])
        for row, col, value in zip(rows, columns, values):
            if len(examples) >= report.max_examples:
                break
            examples.append(str(self.error(reason, row, col, value)))

    def relocate(self, text: str) -> str:
        """Rewrite a message about frame row N / frame column C to name the source row and column."""
        prefix = self.file + ", "
        if not text.startswith(prefix):
            return text
        rest = _ROW.sub(lambda m: self.where(int(self.rows[int(m.group(1)) - 1])), text[len(prefix):], 1)
        rest = _COLUMN.sub(lambda m: f"column {self.columns.get(m.group(1), m.group(1))!r}", rest, 1)
        return prefix + rest


def validate_mapped(frame: pd.DataFrame, source: Source, report: SkipReport, **options
                    ) -> tuple[pa.Table, SkipReport]:
    """`validate_frame` on a mapped frame; its errors and skip examples name the source rows and
    columns, and its counts are added to `report` (which holds the reader's own filters)."""
    try:
        table, checked = validate_frame(frame, source.file, **options)
    except TraceError as err:
        text = source.relocate(str(err))
        new = TraceError(source.file, "")
        new.args = (text,)
        new.row = None if err.row is None else int(source.rows[err.row - 1])
        new.column = source.columns.get(err.column, err.column)
        new.value = err.value
        raise new from None
    report.counts.update(checked.counts)
    for (reason, column), n in checked.by_column.items():
        report.by_column[reason, source.columns.get(column, column)] += n
    for reason, examples in checked.examples.items():
        report.examples.setdefault(reason, []).extend(source.relocate(e) for e in examples)
    return table, report


def csv_row_checks(source: Source, df: pd.DataFrame, ragged, required, what: str
                   ) -> tuple[SkipReport, np.ndarray, "RowChecks"]:
    """The start of a CSV reader's checks: every column of `required` present (else an error naming
    the first missing one and saying `what` the file has), then (report, source rows, RowChecks)
    with the rows of the wrong length (`ragged`, from read_csv_text) flagged."""
    for col in required:
        if col not in df.columns:
            raise source.error(f"missing column; {what}", column=col)
    rows = np.arange(1, len(df) + 1)
    checks = RowChecks(source, rows)
    checks.flag(pd.notna(ragged), RAGGED, None, ragged)
    return SkipReport(file=source.file), rows, checks


class RowChecks:
    """Problems found by a reader before validation, over entries that map to source rows.

    Each entry is flagged for its first problem only. :meth:`finish` raises for the earliest source
    row (on_error="raise") or counts every flagged row as skipped and returns the mask of good ones.
    """

    def __init__(self, source: Source, rows):
        self.source = source
        self.rows = np.asarray(rows, dtype=np.int64)
        self.bad = np.zeros(len(self.rows), dtype=bool)
        self._found: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []

    def flag(self, mask, reason: str, column, values) -> None:
        """Flag the entries where `mask` holds; `column` is one name or one per entry."""
        mask = np.asarray(mask, dtype=bool) & ~self.bad
        if not mask.any():
            return
        idx = np.flatnonzero(mask)
        columns = np.broadcast_to(np.asarray(column, dtype=object), mask.shape)[idx]
        self._found.append((reason, idx, columns, np.asarray(values, dtype=object)[idx]))
        self.bad[idx] = True

    def finish(self, report: SkipReport, on_error: str) -> np.ndarray:
        """Raise for the earliest flagged row, or count the flagged rows in `report`; ~flagged."""
        if self._found and on_error == "raise":
            reason, idx, columns, values = min(self._found, key=lambda f: self.rows[f[1][0]])
            hint = " (use trace.on_error=skip to drop such rows and count them)"
            raise self.source.error(reason + hint, self.rows[idx[0]], columns[0], values[0])
        for reason, idx, columns, values in self._found:
            self.source.skip(report, reason, self.rows[idx], columns, values)
        return ~self.bad
