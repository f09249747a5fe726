"""Reading a CSV input file with its required columns checked (raising TraceError, not KeyError)."""

from __future__ import annotations

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
