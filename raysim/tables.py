"""Tables people read: numbers rounded for people with their units, as Markdown (a run's and a
sweep's summaries, FGD's results), and counted nouns ('15 VCs'). Used by every layer that prints
a table or a count; summary.csv and the other result files keep full precision."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd


def markdown_table(df: pd.DataFrame) -> str:
    """A Markdown table rounded for people (summary.csv keeps full precision): see `cell`."""
    cols = list(df.columns)
    out = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        out.append("| " + " | ".join(cell(r[c], str(c)) for c in cols) + " |")
    return "\n".join(out)


def plural(n: int, noun: str) -> str:
    """'1 VC', '15 VCs', '1,080 GPUs'."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def gpu_counts(gpus: dict) -> str:
    """A cluster's GPUs from {GPU type: count}: '1,080 GPUs' (one type without a name of its own:
    `gpu`), else '8 V100, 8 P100 GPUs'."""
    if len(gpus) == 1 and next(iter(gpus)).lower() == "gpu":
        return plural(next(iter(gpus.values())), "GPU")
    return ", ".join(f"{n:,} {t}" for t, n in gpus.items()) + " GPUs"


#: Column name endings of times in seconds or hours (besides the averages): one decimal.
TIME_SUFFIXES = ("_s", "_h")


def cell(v, column: str = "") -> str:
    """One value of a table for people: text as is, missing empty; utilisation with three decimals;
    averages and times (avg_*, *_s, *_h) with one decimal and thousands separators;
    counts and other whole numbers as integers; any other number (a fraction, a percentage) to three
    significant digits, or as an integer from 1,000 on."""
    if isinstance(v, str):
        return v
    if v is None or pd.isna(v):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower()
    if isinstance(v, (int, np.integer)):
        return f"{v:,}"
    v = float(v)
    if column.startswith("gpu_utilization"):
        return f"{v:.3f}"
    if column.startswith("avg") or column.endswith(TIME_SUFFIXES):
        return f"{v:,.1f}"
    if v == int(v) or abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


#: (column name pattern, unit) of the figures tables show, first match wins (`unit`).
UNITS = ((r"^gpu_utilization", "fraction of GPU time allocated, 0-1"),
         (r"^(ettr|efficiency|harvested_fraction|spot_gpu_share)$", "fraction, 0-1"),
         (r"_gpu_h$", "GPU-hours"), (r"_node_hours$", "node-hours"), (r"_h$", "hours"),
         (r"^(avg_|p[\d.]+_)(jct|queue)|^makespan$|_s$", "seconds"),
         (r"^allo_", "% of GPUs allocated"), (r"^frag_ratio_", "% of idle GPU capacity"))


def unit(column: str) -> str | None:
    """The unit of a summary column (UNITS), None for counts, names and other unitless columns."""
    return next((u for pattern, u in UNITS if re.search(pattern, column)), None)


def units_caption(columns) -> str:
    """One line under a table naming each unit and its columns, e.g. "Units: avg_jct, p*_queue,
    makespan: seconds; gpu_utilization: fraction of GPU time allocated, 0-1." (percentiles and
    per-type columns collapsed; "" when no column has a unit)."""
    groups: dict[str, list[str]] = {}
    for column in map(str, columns):
        if unit(column):
            name = re.sub(r"^p[\d.]+_", "p*_", re.sub(r"^gpu_utilization_.+", "gpu_utilization_<type>", column))
            names = groups.setdefault(unit(column), [])
            names += [] if name in names else [name]
    return "Units: " + "; ".join(f"{', '.join(names)}: {u}" for u, names in groups.items()) + "." if groups else ""


def to_markdown(summary: pd.DataFrame, title: str = "") -> str:
    """The run summary as Markdown, under an optional heading, with its units in a caption."""
    head = f"## {title}\n\n" if title else ""
    return head + markdown_table(summary) + "\n\n" + units_caption(summary.columns) + "\n"
