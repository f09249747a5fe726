"""Reading CSV input files with their columns checked (raising TraceError, not KeyError): whole
files with pandas, trace files as text with every row's number of values checked, small strict
files row by row with the row of every problem, or a run's result tables (numbers but for named
text columns) read back whole with every row, column and value checked."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from raysim.errors import TraceError

#: The reason a row with too few or too many values is flagged (its value says how many it had).
RAGGED = "wrong number of values in the row (truncated or ragged line)"


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


def read_csv_text(path, names: Sequence[str] | None = None):
    """A whole CSV trace file as a DataFrame of strings (empty cells are "", never null), and per row
    None, or a description of the row when it has the wrong number of values (flag it as RAGGED).

    With `names` the file has no header line and these are its columns. Blank lines are not rows.
    Rows with the wrong number of values keep their place as rows of "" (so rows keep their
    numbers); their description is "N of M values: <the line's text>".
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    name = str(path)
    columns = list(names) if names is not None else _header(path)
    ragged = {}

    def bad_row(row) -> str:
        ragged[row.number - (1 if names is None else 0)] = (
            f"{row.actual_columns} of {row.expected_columns} values: {row.text[:80]}")
        return "skip"

    try:
        table = pacsv.read_csv(
            path, read_options=pacsv.ReadOptions(use_threads=False, column_names=names),
            parse_options=pacsv.ParseOptions(invalid_row_handler=bad_row),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in columns},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceError(name, "not a readable CSV file: " + str(exc).splitlines()[0]) from None
    frame = table.to_pandas()
    described = np.full(len(frame) + len(ragged), None, dtype=object)
    if ragged:
        described[np.array(list(ragged)) - 1] = list(ragged.values())
        frame.index = np.flatnonzero(pd.isna(described))
        frame = frame.reindex(range(len(described)), fill_value="")
    return frame, described


def _header(path) -> list[str]:
    """The column names on the first line of a CSV file (a UTF-8 byte order mark is dropped)."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), [])
    except FileNotFoundError:
        raise TraceError(str(path), "trace file not found") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise TraceError(str(path), f"not a readable CSV file: {exc}") from None
    if not header:
        raise TraceError(str(path), "empty file (expected a header line naming the columns)")
    return header


def csv_rows(path: str | Path, columns: Sequence[str], what: str, optional: Sequence[str] = ()
             ) -> list[tuple[int, dict[str, str]]]:
    """Data rows of a small CSV file with exactly `columns` (any order), and any of `optional`, as
    (row, {column: text}).

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
        try:
            for cells in reader:
                cells = [cell.strip() for cell in cells]
                if not any(cells) or cells[0].startswith("#"):
                    continue
                if header is None:
                    header = _check_header(name, cells, columns, optional)
                    continue
                row = reader.line_num - 1
                _check_width(name, header, cells, row)
                rows.append((row, dict(zip(header, cells))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise TraceError(name, f"not a readable CSV file (UTF-8): {exc}") from None
    if header is None:
        raise TraceError(name, f"empty {what} (expected a header {','.join(columns)})")
    return rows


def read_result_csv(path, required: Sequence[str], text_columns: Sequence[str], what: str):
    """A CSV result file as a DataFrame: `required` columns present once each (others may follow),
    every row with the header's number of values, the last line ended (a file cut short is named as
    such), and every column but `text_columns` a number or empty in every row; `what`: what the file
    is, for the error when it is missing."""
    import pandas as pd

    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(name, f"missing ({what})") from None
    except UnicodeDecodeError:
        raise TraceError(name, "not a CSV file (not UTF-8 text)") from None
    if not text.strip():
        raise TraceError(name, "empty file (expected a header line and rows)")
    if not text.endswith("\n"):
        raise TraceError(name, "truncated: its last line has no end")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise TraceError(name, f"not a readable CSV file: {exc}") from None
    header = _check_header(name, rows[0], required, others=True)
    for row, cells in enumerate(rows[1:], start=1):
        _check_width(name, header, cells, row)
    texts = [c for c in header if c in text_columns]  # kept as written ("NA" is a name), empty numbers NaN
    frame = pd.read_csv(io.StringIO(text), dtype=dict.fromkeys(texts, str), keep_default_na=False,
                        na_values={c: [""] for c in header if c not in text_columns})
    for column in frame.columns:
        if column in text_columns or frame.empty or pd.api.types.is_numeric_dtype(frame[column]):
            continue  # (a file of a header alone: no value to check)
        bad = pd.to_numeric(frame[column], errors="coerce").isna() & frame[column].notna()
        row = int(bad.to_numpy().argmax())
        raise TraceError(name, "not a number", row=row + 1, column=column, value=frame[column].iloc[row])
    return frame


def _check_width(name: str, header: list[str], cells: list[str], row: int) -> None:
    """Fail unless the data row `row` has as many values as `header` has columns."""
    if len(cells) != len(header):
        raise TraceError(name, f"expected {len(header)} values, found {len(cells)} (truncated or ragged line)",
                         row=row)


def _check_header(name: str, header: list[str], columns: Sequence[str], optional: Sequence[str] = (),
                  others: bool = False) -> list[str]:
    """Fail unless `header` holds each of `columns` exactly once, maybe some of `optional`, and nothing
    else (anything else, `others`, once each)."""
    for column in columns:
        if column not in header:
            shown = header if len(header) <= 12 else [*header[:12], "..."]
            raise TraceError(name, f"missing column; the file has {shown}", column=column)
    extra = [c for c in header if c not in columns and c not in optional]
    if others:
        optional, extra = extra, []
    if extra:
        also = f" (and optionally {list(optional)})" if optional else ""
        raise TraceError(name, f"unexpected column(s) {extra}; expected exactly {list(columns)}{also}")
    repeated = [c for c in [*columns, *optional] if header.count(c) > 1]
    if repeated:
        raise TraceError(name, "column given twice", column=repeated[0])
    return header
