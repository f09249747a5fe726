"""Errors and skip reports for bad trace input: always naming file, row and column."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class TraceError(ValueError):
    """Bad input in a trace or cluster file. `row` is the 1-based data row; its file line is `line`
    (default row + 1: a CSV with a header line)."""

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
