"""Priority classes side by side on the run page (docs/spot.md): per class (hp, spot) its jobs'
queueing and JCT, its evictions and guarantee hours, and its share of the GPU time held, from the
run's jobs.parquet (its spot group), as a table and a bar chart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from raysim.report.page import Chart, Page, table
from raysim.report.schema import read_jobs
from raysim.trace.schema import PRIORITY_CLASSES

#: The columns per_class reads (`hours_kept`, `gpu_num` and `gpu_milli` where the file has them).
COLUMNS = ("priority_class", "queue", "jct", "end_time", "evictions", "hours_kept", "gpu_num", "gpu_milli")


def per_class(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per class (hp, spot): `jobs`, `finished`, `avg_queue` and `p95_queue` (of its jobs),
    `avg_jct` and `p95_jct` (of its finished jobs), `evictions`, with `hours_kept` the guarantee
    hours kept and broken (`hours_broken`: one per eviction), and with `gpu_num` its share of the GPU
    time the finished jobs held (`gpu_share`: GPUs x (JCT - queueing), a share of a GPU, with
    `gpu_milli`, as its fraction). NaN where a class has no job."""
    kind = jobs["priority_class"].astype(str)
    done = jobs["end_time"].notna()
    held = jobs["gpu_num"] * (jobs["jct"] - jobs["queue"]) if "gpu_num" in jobs else None
    if held is not None and "gpu_milli" in jobs:
        held = held * jobs["gpu_milli"] / 1000
    total = held[done].sum() if held is not None else 0
    rows = []
    for name in PRIORITY_CLASSES:
        mine = kind == name
        queue, jct = jobs["queue"][mine], jobs["jct"][mine & done]
        row = {"class": name, "jobs": int(mine.sum()), "finished": int((mine & done).sum()),
               "avg_queue": queue.mean() if len(queue) else np.nan,
               "p95_queue": np.percentile(queue, 95) if len(queue) else np.nan,
               "avg_jct": jct.mean() if len(jct) else np.nan, "p95_jct": np.percentile(jct, 95) if len(jct) else np.nan,
               "evictions": int(jobs["evictions"][mine].sum())}
        if "hours_kept" in jobs:
            row.update(hours_kept=int(jobs["hours_kept"][mine].sum()), hours_broken=row["evictions"])
        if held is not None:
            row["gpu_share"] = float(held[mine & done].sum() / total) if total else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def classes_html(page: Page, run_dir: Path) -> str:
    """The run page's section of priority classes, or "" for a run without them."""
    path = Path(run_dir) / "jobs.parquet"
    if not path.exists() or "priority_class" not in pq.read_schema(path).names:
        return ""
    names = pq.read_schema(path).names
    rows = per_class(read_jobs(path, [c for c in COLUMNS if c in names]).to_pandas())
    hours = [rows["avg_queue"] / 3600, rows["avg_jct"] / 3600]
    top = float(np.nanmax([*hours[0], *hours[1], 0.0]))
    chart = page.chart(Chart("classes_times", "Average queueing delay and JCT per class",
                             {"label": "class", "categories": rows["class"].tolist()},
                             {"label": "hours", "range": [0.0, top * 1.08 or 1.0]}, ["queueing delay", "JCT"],
                             [np.arange(len(rows)), *[h.fillna(0.0) for h in hours]], kind="bars", height=300,
                             caption="Hover a bar for its value; the table above has every figure."))
    return (table(rows, caption=False)
            + '<p class="caption">From jobs.parquet. Queueing: every wait of a job, between its runs included; '
              "JCT of finished jobs. A high-priority job that cannot start evicts spot jobs; a spot job keeps a "
              "guarantee hour for each full hour a run of it lasts and for finishing, and each eviction breaks "
              "one (GFS's count). GPU share: of the GPU time the finished jobs held (GPUs x (JCT - queueing)), "
              "lost work included.</p>"
            + f'<div class="small-multiples">{chart}</div>')
