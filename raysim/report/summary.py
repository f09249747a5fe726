"""Summary metrics per VC and for the whole cluster ("all"), as a table and as Markdown."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.report.classes import per_class
from raysim.report.loans import has_loans, loan_gpu_hours
from raysim.report.timeseries import change_runs, column_hours, column_names, grid_count, series_layout
from raysim.sim.recorder import CAPACITY_COLUMNS, COUNT_COLUMNS, REPAIR_COLUMNS, SPARE_COLUMNS, STANDBY_COLUMNS
from raysim.trace.schema import PRIORITY_CLASSES

QUANTILES = {"p50": 50, "p95": 95, "p99": 99, "p99.9": 99.9}
#: The columns of jobs with priority classes that class_figures reads where the table has them.
CLASS_EXTRAS = ("hours_kept", "gpu_num", "gpu_milli", "lost_gpu_s_evictions")


def summarize(jobs: pa.Table, series, interval: int = 60) -> pd.DataFrame:
    """Rows: each VC (layout order) and "all". Averages are exact means (reference tables truncate).

    `jobs` needs the columns vc, submit_time, end_time, queue, jct and preemptions; `series` is the
    path of a timeseries.parquet (grid or change-points), which is then read batch by batch, or
    a table read from one, sampled every `interval` seconds.

    With quotas between VCs, also per VC: `reclaims` (of its jobs), `ran_elsewhere` (its jobs whose
    latest run was on another VC's nodes; needs the jobs' `ran_on_vc` and `reclaims`) and, from a
    run with quota=borrow, `borrowed_gpu_h` and `lent_gpu_h` (raysim.report.loans). With capacity
    events (jobs with `interruptions`): `interruptions` (times a node going down stopped its jobs)
    and, from the time series' `down_gpu_num`, `down_gpu_h` (GPU-hours of the VC's nodes out of
    service; NaN for a VC the series lacks: under quota=global it has the merged VC only) and, under
    repair=pipeline, REPAIR_COLUMNS (`auto_repairs`, `manual_repairs`, `false_successes`: repairs
    begun during the run on the VC's own nodes, repair_counts) and, with failures.diagnosis < 1 or
    retire=threshold | scored, COUNT_COLUMNS (`undiagnosed` failures, `retired_nodes`); with a spare
    pool, `spares_pulled` (SPARE_COLUMNS); with warm standbys, STANDBY_COLUMNS (`standby_swaps`,
    `host_selections`, `stalls`). Under checkpoint-restart (jobs with `lost_gpu_s` and `overhead_gpu_s`): `lost_gpu_h` and
    `overhead_gpu_h`, and with `duration` and `gpu_num` (a job's work; left out where durations
    are placeholders) `ettr` (checkpoint_figures). Under
    trace.failed=replay (jobs with `retries`, `failed` and `failed_gpu_s`): `retries`, `failed_jobs`
    and `failed_gpu_h` (GPU-hours of work of the runs that failed). With priority classes (jobs with
    `priority_class` and `evictions`, docs/spot.md): `class_figures`.
    """
    loans = "reclaims" in jobs.column_names and "ran_on_vc" in jobs.column_names
    interrupted = "interruptions" in jobs.column_names
    checkpoints = "lost_gpu_s" in jobs.column_names
    replayed = "failed_gpu_s" in jobs.column_names
    classes = "priority_class" in jobs.column_names
    df = jobs.select(list(dict.fromkeys(["vc", "submit_time", "end_time", "queue", "jct", "preemptions"]
                     + (["ran_on_vc", "reclaims"] if loans else [])
                     + (["interruptions"] if interrupted else [])
                     + ([c for c in ("duration", "gpu_num") if c in jobs.column_names] if checkpoints else [])
                     + (["lost_gpu_s", "overhead_gpu_s"] if checkpoints else [])
                     + (["retries", "failed", "failed_gpu_s"] if replayed else [])
                     + (["priority_class", "evictions"] + [c for c in CLASS_EXTRAS if c in jobs.column_names]
                        if classes else [])))).to_pandas()
    df["vc"] = df["vc"].astype(str)
    rows, spans = [], {}
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
        if loans:
            row["reclaims"] = int(g["reclaims"].sum())
            row["ran_elsewhere"] = int((g["ran_on_vc"].notna() & (g["ran_on_vc"] != g["vc"])).sum())
        if interrupted:
            row["interruptions"] = int(g["interruptions"].sum())
        if checkpoints:
            row.update(checkpoint_figures(g))
        if replayed:
            row.update(retries=int(g["retries"].sum()), failed_jobs=int(g["failed"].sum()),
                       failed_gpu_h=float(g["failed_gpu_s"].sum()) / 3600)
        if classes:
            row.update(class_figures(g))
        start = g["submit_time"].min()
        row["makespan"] = done["end_time"].max() - start if len(done) else np.nan
        if len(done):
            spans[vc] = (start, done["end_time"].max())
        rows.append(row)
    names = column_names(series)
    for column in [c for c in names if c.startswith("gpu_utilization")]:
        util = mean_utilisation(series, spans, column)
        for row in rows:
            row[column] = util.get(row["vc"], np.nan)
    if has_loans(series):
        hours = loan_gpu_hours(series, interval)
        for row in rows:
            pairs = list(hours.values()) if row["vc"] == "all" else [hours.get(row["vc"], (0.0, 0.0))]
            row["borrowed_gpu_h"] = sum(b for b, _ in pairs)
            row["lent_gpu_h"] = sum(lent for _, lent in pairs)
    if CAPACITY_COLUMNS[0] in names:
        down = column_hours(series, CAPACITY_COLUMNS, interval)
        for row in rows:
            row["down_gpu_h"] = float(sum(v[0] for v in down.values()) if row["vc"] == "all"
                                      else down.get(row["vc"], [np.nan])[0])
    counted = [c for c in REPAIR_COLUMNS + tuple(COUNT_COLUMNS.values()) + SPARE_COLUMNS + STANDBY_COLUMNS
               if c in names]
    if counted:
        counts = repair_counts(series, counted)
        for row in rows:
            row.update({c: counts.get(row["vc"], {}).get(c, np.nan) for c in counted})
    return pd.DataFrame(rows)


def repair_counts(series, columns=REPAIR_COLUMNS) -> dict[str, dict[str, int]]:
    """VC (and "all") -> the counts of `columns` (REPAIR_COLUMNS, COUNT_COLUMNS' columns) at the end of
    the run: the largest sample of each (they only grow), from a timeseries.parquet (a path) or a
    table read from one."""
    columns = list(columns)
    table = series if isinstance(series, pa.Table) else pq.read_table(series, columns=["vc", *columns])
    frame = table.select(["vc", *columns]).to_pandas()
    frame["vc"] = frame["vc"].astype(str)
    return {vc: {c: int(v) for c, v in row.items()}
            for vc, row in frame.groupby("vc", sort=False)[columns].max().iterrows()}


def class_figures(jobs: pd.DataFrame) -> dict:
    """Of jobs with priority classes (raysim.report.classes.per_class): `evictions` (of spot jobs by
    high-priority ones); with `hours_kept`, the guarantee hours kept and broken (`hours_kept`,
    `hours_broken`: GFS's count, one broken per eviction); with `gpu_num`, `spot_gpu_share`, the spot
    jobs' share of the GPU time the finished jobs held; with `lost_gpu_s_evictions` (checkpoint-
    restart), `lost_gpu_h_evictions`, the GPU-hours of work evictions lost; and per class (hp, spot),
    `jobs_<class>`, `avg_queue_<class>` and `avg_jct_<class>` (of its finished jobs; NaN where the
    class has none)."""
    rows = per_class(jobs).set_index("class")
    out = {"evictions": int(jobs["evictions"].sum())}
    if "hours_kept" in rows:
        out.update(hours_kept=int(rows["hours_kept"].sum()), hours_broken=out["evictions"])
    if "gpu_share" in rows:
        out["spot_gpu_share"] = rows.at[PRIORITY_CLASSES[1], "gpu_share"]
    if "lost_gpu_s_evictions" in jobs:
        out["lost_gpu_h_evictions"] = float(jobs["lost_gpu_s_evictions"].sum()) / 3600
    for name in PRIORITY_CLASSES:
        out.update({f"jobs_{name}": int(rows.at[name, "jobs"]), f"avg_queue_{name}": rows.at[name, "avg_queue"],
                    f"avg_jct_{name}": rows.at[name, "avg_jct"]})
    return out


def checkpoint_figures(jobs: pd.DataFrame) -> dict:
    """Of jobs run under checkpoint-restart: GPU-hours of work lost to stops (`lost_gpu_h`) and spent
    restoring and writing checkpoints (`overhead_gpu_h`), and the effective training time ratio
    (`ettr`): the GPU time of the finished jobs' work over the GPU time they held (that work, what
    their stops lost and their restores and writes), when `jobs` has `duration` and `gpu_num`."""
    figures = {"lost_gpu_h": float(jobs["lost_gpu_s"].sum()) / 3600,
               "overhead_gpu_h": float(jobs["overhead_gpu_s"].sum()) / 3600}
    if "duration" not in jobs:
        return figures
    done = jobs[jobs["end_time"].notna()]
    useful = float((done["duration"] * done["gpu_num"]).sum())
    held = useful + float(done["lost_gpu_s"].sum() + done["overhead_gpu_s"].sum())
    return {**figures, "ettr": useful / held if held else np.nan}


def mean_utilisation(series, spans: dict, column: str = "gpu_utilization") -> dict:
    """GPU utilisation of each VC over its span spans[vc] = (start, end): allocated GPU time over
    available GPU time, from the samples at grid times within the span (`column`:
    `gpu_utilization`, or `gpu_utilization_<type>` for the GPUs of one type, weighted by
    `total_gpu_num[_<type>]`, so that GPUs on loan count while they are there). A VC without GPUs
    of a type has utilisation 0 for it. A change-points file (raysim.report.timeseries) gives the
    same figure, each row weighted by the grid times it stands for."""
    gpus = "total_gpu_num" + column[len("gpu_utilization"):]
    if series_layout(series).changes:
        return _weighted_utilisation(series, spans, column, gpus)
    if isinstance(series, pa.Table):
        batches = series.select(["vc", "time", column, gpus]).to_batches()
    else:
        batches = pq.ParquetFile(series).iter_batches(batch_size=1 << 18, columns=["vc", "time", column, gpus])
    used, available, count = dict.fromkeys(spans, 0.0), dict.fromkeys(spans, 0.0), dict.fromkeys(spans, 0)
    for batch in batches:
        vc = batch.column(0)
        vc = vc if pa.types.is_dictionary(vc.type) else vc.dictionary_encode()
        codes = vc.indices.to_numpy(zero_copy_only=False)
        time, util = batch.column(1).to_numpy(), batch.column(2).to_numpy().astype(np.float64)
        total = batch.column(3).to_numpy().astype(np.float64)
        for code, name in enumerate(vc.dictionary.to_pylist()):
            if name not in spans:
                continue
            start, end = spans[name]
            pick = (codes == code) & (time >= start) & (time <= end)
            used[name] += float(np.dot(util[pick], total[pick]))
            available[name] += float(total[pick].sum())
            count[name] += int(pick.sum())
    return {vc: used[vc] / available[vc] if available[vc] else 0.0 for vc in spans if count[vc]}


def _weighted_utilisation(series, spans: dict, column: str, gpus: str) -> dict:
    interval = series_layout(series).interval
    used, available, count = dict.fromkeys(spans, 0.0), dict.fromkeys(spans, 0.0), dict.fromkeys(spans, 0)
    for name, time, until, values in change_runs(series, [column, gpus]):
        if name in spans:
            weight = grid_count(time, until, *spans[name], interval) * values[gpus].astype(np.float64)
            used[name] += float(np.dot(values[column].astype(np.float64), weight))
            available[name] += float(weight.sum())
            count[name] += int(grid_count(time, until, *spans[name], interval).sum())
    return {vc: used[vc] / available[vc] if available[vc] else 0.0 for vc in spans if count[vc]}
