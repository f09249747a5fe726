"""Summary metrics per VC and for the whole cluster ("all"), as a table and as Markdown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

QUANTILES = {"p50": 50, "p95": 95, "p99": 99, "p99.9": 99.9}


def summarize(jobs: pa.Table, series: pa.Table) -> pd.DataFrame:
    """Rows: each VC (layout order) and "all". Averages are exact means (reference tables truncate)."""
    df = jobs.select(["vc", "submit_time", "end_time", "queue", "jct", "preemptions"]).to_pandas()
    df["vc"] = df["vc"].astype(str)
    ts = series.select(["vc", "time", "gpu_utilization"]).to_pandas()
    ts["vc"] = ts["vc"].astype(str)
    rows = []
    groups = [(vc, g) for vc, g in df.groupby("vc", sort=False)] + [("all", df)]
    for vc, g in groups:
        done = g[g["end_time"].notna()]
        row = {"vc": vc, "jobs": len(g), "finished": len(done),
               "avg_jct": done["jct"].mean() if len(done) else np.nan,
               "avg_queue": g["queue"].mean() if len(g) else np.nan}
        for label, q in QUANTILES.items():
            row[f"{label}_queue"] = np.percentile(g["queue"], q) if len(g) else np.nan
        for label, q in QUANTILES.items():
            row[f"{label}_jct"] = np.percentile(done["jct"], q) if len(done) else np.nan
        row["preemptions"] = int(g["preemptions"].sum())
        start = g["submit_time"].min()
        end = done["end_time"].max() if len(done) else np.nan
        row["makespan"] = end - start if len(done) else np.nan
        u = ts[(ts["vc"] == vc) & (ts["time"] >= start) & (ts["time"] <= end)]["gpu_utilization"]
        row["gpu_utilization"] = u.mean() if len(u) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def markdown_table(df: pd.DataFrame) -> str:
    """A Markdown table: averages with one decimal, utilisation with three, other numbers as integers."""
    cols = list(df.columns)
    out = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, str):
                cells.append(v)
            elif pd.isna(v):
                cells.append("")
            elif c == "gpu_utilization":
                cells.append(f"{v:.3f}")
            else:
                cells.append(f"{v:,.1f}" if str(c).startswith("avg") else f"{v:,.0f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def to_markdown(summary: pd.DataFrame, title: str = "") -> str:
    """The run summary as Markdown, under an optional heading."""
    head = f"## {title}\n\n" if title else ""
    return head + markdown_table(summary) + "\n"
