"""Reading CSV input files with their columns checked (raising TraceError, not KeyError): whole
files with pandas, or small strict files row by row with the row of every problem."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from raysim.trace.errors import TraceError


def read_csv_columns(path, required, what: str):
    """Read a CSV with pandas, failing with a TraceError when it is missing or lacks a column."""
    import pandas as pd  # on first use: importing this module (as colocation does) stays cheap

    path = Path(path)
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise TraceError(str(path), f"{what} not found") from None
    for col in required:
        if col not in df.columns:
            raise TraceError(str(path), f"missing column; the file has {list(df.columns)}", column=col)
    return df


def csv_rows(path: str | Path, columns: Sequence[str], what: str) -> list[tuple[int, dict[str, str]]]:
    """Data rows of a small CSV file with exactly `columns` (any order) as (row, {column: text}).

    Cells are stripped; ``#`` comment lines and blank lines are skipped. `row` is the file's line
    minus one, so the line a :class:`TraceError` quotes is the file's (and `row` is the 1-based data
    row when the header is the first line, as in ``read_vc_config``).
    """
    name = str(path)
    try:
        handle = Path(path).open(newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        raise TraceError(name, f"{what} not found (a CSV with columns {','.join(columns)})") from None
    with handle:
        reader = csv.reader(handle)
        header: list[str] | None = None
        rows = []
        for cells in reader:
            cells = [cell.strip() for cell in cells]
            if not any(cells) or cells[0].startswith("#"):
                continue
            if header is None:
                header = _check_header(name, cells, columns)
                continue
            row = reader.line_num - 1
            if len(cells) != len(header):
                raise TraceError(name, f"expected {len(header)} values, found {len(cells)}", row=row)
            rows.append((row, dict(zip(header, cells))))
    if header is None:
        raise TraceError(name, f"empty {what} (expected a header {','.join(columns)})")
    return rows


def _check_header(name: str, header: list[str], columns: Sequence[str]) -> list[str]:
    """Fail unless `header` holds each of `columns` exactly once and nothing else."""
    for column in columns:
        if column not in header:
            raise TraceError(name, f"missing column; the file has {header}", column=column)
    extra = [c for c in header if c not in columns]
    if extra:
        raise TraceError(name, f"unexpected column(s) {extra}; expected exactly {list(columns)}")
    repeated = [c for c in columns if header.count(c) > 1]
    if repeated:
        raise TraceError(name, "column given twice", column=repeated[0])
    return header
