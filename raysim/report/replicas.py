"""Replications: a sweep's runs that differ only in their seed form one group each, and every numeric
metric of their summaries (per VC and for the cluster) is reported as the mean over the group's runs
and its 95 % confidence interval, Student's t: half-width t(0.975, n - 1) * s / sqrt(n), s the
sample standard deviation of the n runs' values (a run without a value, NaN, is not counted).
sweep_replicas.csv holds them; sweep_summary.md and the sweep's page show the cluster's.
Where a sweep added seeds until a metric's interval was narrow enough (replicate.metric,
raysim.report.replicate), `adaptive_lines` says per group whether it got there."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from raysim.report.describe import run_overrides
from raysim.tables import cell, plural

#: The confidence level of every interval.
LEVEL = 0.95
#: The file a sweep over seeds writes (one row per group, VC and metric).
FILE = "sweep_replicas.csv"
#: The group label of a sweep that varies nothing but the seed.
EVERY_RUN = "every run"


def half_width(values) -> float:
    """The half-width of the 95 % confidence interval of the mean of `values` (Student's t, n - 1
    degrees of freedom); NaN for fewer than two values."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2:
        return math.nan
    return float(student_t.ppf((1 + LEVEL) / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))


def without_seed(overrides) -> tuple[str, ...]:
    """A run's overrides but its seed (`seed=...`)."""
    return tuple(o for o in overrides if o.lstrip("+~").split("=", 1)[0] != "seed")


def seed_groups(runs: list[Path], labels: list[str]) -> dict[str, list[str]]:
    """{group: the labels of its runs}: runs whose overrides are the same but for the seed, the
    group named by the overrides (other than the seed) that differ between the groups, EVERY_RUN
    where none does. Empty where no group has runs of different seeds (`seed=` overrides; no
    replications)."""
    overrides = [run_overrides(run) for run in runs]
    keys = [without_seed(o) for o in overrides]
    common = set(keys[0]).intersection(*keys[1:]) if keys else set()
    groups: dict[str, list[str]] = {}
    seeds: dict[str, set[str]] = {}
    for key, given, label in zip(keys, overrides, labels):
        group = ",".join(o for o in key if o not in common) or EVERY_RUN
        groups.setdefault(group, []).append(label)
        seeds.setdefault(group, set()).update(set(given) - set(key))
    return groups if any(len(found) > 1 for found in seeds.values()) else {}


def replica_table(table: pd.DataFrame, groups: dict[str, list[str]]) -> pd.DataFrame:
    """Per group (`seed_groups`), VC (table's `vc`, where it has one) and numeric metric of the run
    x metric `table` (its `run` column the labels; a `seed` column is not a metric): `runs` (with a value), `mean`, `std` (ddof 1),
    `ci95` (half-width of the 95 % interval) and `ci95_share` (ci95 / |mean|)."""
    metrics = [c for c in table.columns if c not in ("run", "vc", "seed") and pd.api.types.is_numeric_dtype(table[c])]
    by = ["vc"] if "vc" in table.columns else []
    rows = []
    for group, labels in groups.items():
        members = table[table["run"].isin(labels)]
        for key, part in (members.groupby(by, sort=False) if by else [((), members)]):
            for metric in metrics:
                values = part[metric].dropna().to_numpy(dtype=float)
                mean = float(values.mean()) if len(values) else math.nan
                hw = half_width(values)
                rows.append({"group": group, **dict(zip(by, key if isinstance(key, tuple) else (key,))),
                             "metric": metric, "runs": len(values), "mean": mean,
                             "std": float(values.std(ddof=1)) if len(values) > 1 else math.nan, "ci95": hw,
                             "ci95_share": hw / abs(mean) if mean else math.nan})
    return pd.DataFrame(rows, columns=["group", *by, "metric", "runs", "mean", "std", "ci95", "ci95_share"])


def interval(mean: float, hw: float, metric: str) -> str:
    """`mean ± half-width` as a table shows it (raysim.tables.cell); the mean alone without an interval."""
    return cell(mean, metric) if pd.isna(hw) else f"{cell(mean, metric)} ± {cell(hw, metric)}"


def cluster_intervals(replicas: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Group x metric (those of `metrics` the replicas have, cluster rows where they are per VC):
    `mean ± half-width` of each, with the group's number of runs."""
    rows = replicas[replicas["vc"] == "all"] if "vc" in replicas.columns else replicas
    shown = [m for m in metrics if m in set(rows["metric"])]
    out = []
    for group, part in rows.groupby("group", sort=False):
        by_metric = part.set_index("metric")
        out.append({"group": group, "runs": int(by_metric["runs"].max()),
                    **{m: interval(by_metric.at[m, "mean"], by_metric.at[m, "ci95"], m) for m in shown}})
    return pd.DataFrame(out, columns=["group", "runs", *shown])


def adaptive_lines(replicas: pd.DataFrame, settings) -> list[str]:
    """Where a sweep replicated until `settings.metric`'s interval was within `settings.target` of
    its mean (raysim.report.replicate.ReplicateSettings): a line per group saying how far it got."""
    if settings is None or settings.metric is None:
        return []
    rows = replicas[replicas["metric"] == settings.metric]
    if "vc" in rows.columns:
        rows = rows[rows["vc"] == "all"]
    lines = []
    for row in rows.itertuples(index=False):
        met = row.ci95_share <= settings.target
        share = "" if pd.isna(row.ci95_share) else f", {row.ci95_share:.2%} of the mean"
        lines.append(f"{row.group}: {settings.metric} {interval(row.mean, row.ci95, settings.metric)} over "
                     f"{plural(row.runs, 'run')}{share}: "
                     + (f"within the target of {settings.target:.2%}" if met
                        else f"not within {settings.target:.2%} at {plural(row.runs, 'run')}"
                        + (" (replicate.max_seeds)" if row.runs >= settings.max_seeds else "")))
    return lines
