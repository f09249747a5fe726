"""Duration estimates for estimate-driven policies (QSSF), aligned to a trace's rows."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.csvfile import read_csv_columns
from raysim.errors import TraceError

SOURCES = ("none", "file", "oracle", "model")


def estimates_for(table: pa.Table, *, source: str, path=None, column: str = "priority",
                  negative_to: float = 1000.0) -> np.ndarray | None:
    """Estimated duration (s) per trace row, or None for source "none".

    "file": a CSV with `job_id` and `column`; negative estimates become `negative_to` (as in the
    reference). "oracle": the true duration (an upper bound on what any estimator can do).
    """
    if source == "none":
        return None
    if source == "oracle":
        return table.column("duration").to_numpy().astype(np.float64)
    if source != "file":
        raise ValueError(f"estimator.source must be one of {SOURCES}, not {source!r}")
    if not path:
        raise ValueError("estimator.source=file needs estimator.path=<CSV with job_id and estimate columns>")
    df = read_csv_columns(path, ("job_id", column), "estimates file")
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(str(path), "estimate is not a number", row=row + 1, column=column,
                         value=df[column].iloc[row])
    values = values.to_numpy(dtype=np.float64)
    values[values < 0] = negative_to
    lookup = pd.Series(values, index=df["job_id"].to_numpy())
    lookup = lookup[~lookup.index.duplicated(keep="first")]
    job_ids = table.column("job_id").to_numpy()
    aligned = lookup.reindex(job_ids).to_numpy()
    missing = np.isnan(aligned)
    if missing.any():
        ids = job_ids[missing][:5].tolist()
        raise TraceError(str(path), f"no estimate for {int(missing.sum())} trace job(s), e.g. job_id {ids}",
                         column="job_id")
    return aligned
