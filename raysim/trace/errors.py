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
    """Rows dropped while loading, counted by reason, with the first few examples of each, and rows
    kept but changed to fit the simulator (`converted`), counted by what was changed."""

    file: str = ""
    counts: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)
    max_examples: int = 3
    converted: Counter = field(default_factory=Counter)

    def add(self, reason: str, rows, column: str | None, values) -> None:
        rows = list(rows)
        if not rows:
            return
        self.counts[reason] += len(rows)
        ex = self.examples.setdefault(reason, [])
        for r, v in zip(rows, values):
            if len(ex) >= self.max_examples:
                break
            ex.append(str(TraceError(self.file, reason, row=r, column=column, value=v)))

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
            out.append(f"skipped {n} row(s): {reason}")
            out += [f"    e.g. {e}" for e in self.examples.get(reason, [])]
        out += [f"converted {n} row(s): {what}" for what, n in sorted(self.converted.items())]
        return out

    def to_dict(self) -> dict:
        return {"file": self.file, "counts": dict(self.counts), "examples": self.examples,
                "converted": dict(self.converted)}
