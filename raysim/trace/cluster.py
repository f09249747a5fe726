"""Cluster layout: VC name -> node count, from Lucid's vc_config.csv (`,num` header)."""

from __future__ import annotations

import csv
from pathlib import Path

from raysim.cluster.layout import MAX_NODES
from raysim.errors import TraceError


def read_vc_config(path: str | Path) -> dict[str, int]:
    """Read a vc_config.csv: first column the VC name, a `num` column the node count (UTF-8); a bad
    row or a file that is not such a CSV is a TraceError."""
    path = Path(path)
    if not path.exists():
        raise TraceError(str(path), "VC layout file not found (expected a CSV with a VC column and 'num')")
    try:
        return _read_vc_config(path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise TraceError(str(path), f"not a readable CSV file (UTF-8): {exc}") from None


def _read_vc_config(path: Path) -> dict[str, int]:
    """read_vc_config's rows (a TraceError naming a bad one)."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header or "num" not in header:
            raise TraceError(str(path), "missing column", column="num")
        num_col = header.index("num")
        layout: dict[str, int] = {}
        total = 0
        for row_no, row in enumerate(reader, start=1):
            if not row:
                continue
            name = row[0].strip()
            try:
                nodes = int(row[num_col])
            except (ValueError, IndexError):
                raise TraceError(str(path), "node count is not an integer", row=row_no, column="num",
                                 value=row[num_col] if num_col < len(row) else None) from None
            if nodes <= 0:
                raise TraceError(str(path), "node count must be positive", row=row_no, column="num", value=nodes)
            total += nodes
            if total > MAX_NODES:
                raise TraceError(str(path), f"the VCs' nodes add up to more than {MAX_NODES:,}", row=row_no,
                                 column="num", value=nodes)
            if name in layout:
                raise TraceError(str(path), "duplicate VC", row=row_no, column=header[0] or "vc", value=name)
            layout[name] = nodes
    if not layout:
        raise TraceError(str(path), "no VC listed")
    return layout
