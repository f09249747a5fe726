"""Lost work and interruptions per cause on the HTML pages (raysim.report.page), from a run's
lost_by_cause.csv (raysim.report.capacity.lost_by_cause): the run page's headline figures with the
policy's own preemptions apart from failures and node events, its table and charts per cause, the
node log and failure model the run read; the sweep's columns per cause and their comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from raysim.report.capacity import EVICTIONS, OTHER_STOPS, PREEMPTIONS, RECLAIMS
from raysim.report.page import Chart, Page, esc, facts, table
from raysim.report.run_files import missing_note, read_lost_by_cause
from raysim.report.schema import reading

FILE = "lost_by_cause.csv"
#: What the page calls the causes of stops that no capacity event made; every other cause is a
#: failure category or a node log's cause ("failures and node events").
STOPS = {PREEMPTIONS: "the policy's preemptions", RECLAIMS: "quota reclaims",
         OTHER_STOPS: "preemptions and reclaims, not split", EVICTIONS: "evictions of spot jobs"}
EVENTS = "failures and node events"


def read_causes(run_dir: Path) -> pd.DataFrame | None:
    """A run's lost_by_cause.csv (VC and cause names as text; `lost_gpu_h` NaN for a run without
    checkpoints, `interruptions` NaN in the preemptions_and_reclaims row of a file written before
    stops were counted per cause), or None where the run has none (no capacity events)."""
    path = Path(run_dir) / FILE
    if not path.exists():
        return None
    return read_lost_by_cause(path)


def kind(cause: str) -> str:
    """What stopped the jobs of `cause`: STOPS' words for a stop no capacity event made, else EVENTS."""
    return STOPS.get(cause, EVENTS)


def groups(causes: pd.DataFrame) -> pd.DataFrame:
    """The cluster's interruptions and lost GPU-hours per kind of cause (`kind`): EVENTS and the
    policy's preemptions always (0 where the run had none), quota reclaims where the run has them;
    NaN where the file has no figure (`lost_gpu_h` without checkpoints; the interruptions of a file
    written before stops were counted per cause)."""
    cluster = causes[causes["vc"] == "all"].assign(kind=lambda f: f["cause"].map(kind))
    sums = cluster.groupby("kind", sort=False)[["interruptions", "lost_gpu_h"]].sum(min_count=1)
    shown = [EVENTS, STOPS[PREEMPTIONS], *(k for k in (STOPS[RECLAIMS], STOPS[OTHER_STOPS], STOPS[EVICTIONS])
                                           if k in sums.index)]
    none = {"interruptions": 0.0, "lost_gpu_h": 0.0 if cluster["lost_gpu_h"].notna().any() else np.nan}
    return pd.DataFrame([sums.loc[k].to_dict() if k in sums.index else none for k in shown]).assign(kind=shown)


def headline(causes: pd.DataFrame) -> list[tuple[str, str]]:
    """The run page's headline figures of the stops (name, text): per kind of cause (`groups`) the
    interruptions and, under checkpoint-restart, the GPU-hours of work lost; never one lumped total."""
    items = []
    for row in groups(causes).itertuples(index=False):
        if pd.notna(row.interruptions):
            items.append((f"stops: {row.kind}", f"{row.interruptions:,.0f}"))
        if pd.notna(row.lost_gpu_h):
            items.append((f"GPU-hours lost: {row.kind}", f"{row.lost_gpu_h:,.1f}"))
    return items


def causes_html(page: Page, causes: pd.DataFrame) -> str:
    """The run page's section of lost work per cause: the cluster's table (each cause with what kind
    of cause it is), a bar chart of the GPU-hours lost (under checkpoint-restart) and one of the
    interruptions per cause, and every VC's rows folded."""
    cluster = causes[causes["vc"] == "all"]
    if cluster.empty:
        return "<p>No job was interrupted: no node event or failure stopped one, and no job was preempted.</p>"
    names = cluster["cause"].tolist()
    lost = cluster["lost_gpu_h"].notna().all()
    shown = cluster.drop(columns="vc").assign(kind=cluster["cause"].map(kind))
    measure, label, what = ("lost_gpu_h", "GPU-hours lost", "GPU-hours of work lost") if lost else (
        "interruptions", "interruptions", "Interruptions")
    charts = [bars(page, f"causes_{measure}", f"{what} per cause, whole cluster", names, cluster[measure], label)]
    if lost:
        charts.append(bars(page, "causes_interruptions", "Interruptions per cause, whole cluster", names,
                           cluster["interruptions"], "interruptions"))
    events = cluster[~cluster["cause"].isin(STOPS)]
    if len(events) and len(events) < len(cluster):  # the events alone, not dwarfed by the stops beside them
        charts.append(bars(page, f"causes_events_{measure}", f"{what} per failure or node event, whole cluster",
                           events["cause"].tolist(), events[measure], label))
    note = ("" if lost else " The run had no checkpoint model (checkpoint.interval_s), so no work lost is counted.")
    return (table(shown[["cause", "kind", "interruptions", "lost_gpu_h"]], caption=False)
            + '<p class="caption">From lost_by_cause.csv. A failure category or a node log\'s cause counts the '
              "jobs its events stopped; “preemptions” are the stops the policy made itself, “reclaims” those "
              "of quota reclaims (a job both preempted and reclaimed is counted under "
              f"“{OTHER_STOPS}”: jobs.parquet does not split the work it lost). GPU-hours lost: work since the "
              f"last completed checkpoint x GPUs.{esc(note)}</p>"
            + f'<div class="small-multiples">{"".join(charts)}</div>'
            + "<details><summary>per VC</summary>" + table(causes[causes["vc"] != "all"], caption=False)
            + "</details>")


def bars(page: Page, chart_id: str, title: str, names: list[str], values, label: str) -> str:
    """A bar chart of `values` per cause (`names` on the x axis), from 0."""
    values = np.asarray(values, dtype=np.float64)
    top = float(values.max(initial=0.0))
    return page.chart(Chart(chart_id, title, {"label": "cause", "categories": names},
                            {"label": label, "range": [0.0, top * 1.08 or 1.0]}, [label],
                            [np.arange(len(names)), values], kind="bars", height=300,
                            caption="Hover a bar for its value; the table above has every figure."))


def capacity_inputs_html(report: dict) -> str:
    """What changed the run's nodes (trace_report.json's `capacity`, raysim.run.outputs): the node
    log and the failure model, files by their resolved path with their sha256; "" for a run
    without capacity events."""
    inputs = report.get("capacity") or {}
    if not inputs:
        return ""
    items = []
    log = inputs.get("node_log")
    items.append((f"node log ({log.get('key')})", file_html(log)) if log else ("node log (cluster.capacity)", "none"))
    model = inputs.get("failures")
    if model:
        settings = {k: v for k, v in model.items() if k not in ("name", "path", "categories") and v is not None}
        items.append(("failure model (failures)", f"<code>{esc(model.get('name'))}</code>: "
                      + esc(", ".join(f"{k}={v}" for k, v in settings.items()))))
        if model.get("path"):
            items.append(("failure trace (failures.path)", file_html(model["path"])))
        if model.get("categories"):
            rows = pd.DataFrame(model["categories"])
            items.append(("failure categories", table(rows, sortable=False, caption=False)))
    else:
        items.append(("failure model (failures)", "none"))
    return "<h3>Node log and failure model</h3>" + facts(items)


def file_html(entry: dict) -> str:
    """A file the run read ({path, sha256}) as its path and hash."""
    return f"<code>{esc(entry.get('path'))}</code><br>sha256 <code>{esc(entry.get('sha256'))}</code>"


def cause_columns(causes: pd.DataFrame) -> pd.DataFrame:
    """A run's lost_by_cause.csv as columns of its summary rows (one row per VC and "all"):
    `<cause>_interruptions` and, under checkpoint-restart, `<cause>_lost_gpu_h`, 0 where a VC has
    no row of a cause; the causes in the cluster's order (most lost first)."""
    order = list(dict.fromkeys(causes.loc[causes["vc"] == "all", "cause"]))
    wide = causes.pivot(index="vc", columns="cause")
    parts = {"interruptions": wide["interruptions"].reindex(columns=order).fillna(0).astype(int)}
    if causes["lost_gpu_h"].notna().all():
        parts["lost_gpu_h"] = wide["lost_gpu_h"].reindex(columns=order).fillna(0.0)
    columns = [part.add_suffix(f"_{name}") for name, part in parts.items()]
    return pd.concat(columns, axis=1).rename_axis(index="vc", columns=None)


def with_cause_columns(table_: pd.DataFrame, causes: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """A sweep's run x VC table (sweep_summary.csv) with each run's `cause_columns` (`causes`:
    {run label: its lost_by_cause.csv}): 0 where a run with capacity events had no stop of a cause,
    empty for a run without capacity events; the causes in order of the most lost (else the most
    interruptions) over the runs' clusters."""
    if not causes:
        return table_
    wide = pd.concat({run: cause_columns(c) for run, c in causes.items()}, names=["run"]).reset_index()
    added = [c for c in wide.columns if c not in ("run", "vc")]
    out = table_.merge(wide, on=["run", "vc"], how="left")
    has = out["run"].isin(list(causes))
    out.loc[has, added] = out.loc[has, added].fillna(0)
    cluster = out.loc[out["vc"] == "all", added]
    named = [c.removesuffix("_interruptions") for c in added if c.endswith("_interruptions")]
    lost = {c: cluster.get(f"{c}_lost_gpu_h", pd.Series(dtype=float)).sum() for c in named}
    order = sorted(named, key=lambda c: (-lost[c], -cluster[f"{c}_interruptions"].sum()))
    for cause in order:
        out[f"{cause}_interruptions"] = out[f"{cause}_interruptions"].astype("Int64")
    ordered = [f"{c}_{m}" for c in order for m in ("interruptions", "lost_gpu_h") if f"{c}_{m}" in added]
    return out[[c for c in out.columns if c not in added] + ordered]


def missing_causes(runs: list[Path], names: list[str]) -> str:
    """A sweep page's line naming the runs (`names`, of the folders `runs`) that had capacity events
    (their jobs.parquet counts interruptions) but have no lost_by_cause.csv; "" where there are none."""
    def lacks(run: Path) -> bool:
        if (run / FILE).exists() or not (run / "jobs.parquet").exists():
            return False
        with reading(run / "jobs.parquet", "the run's jobs"):
            return "interruptions" in pq.read_schema(run / "jobs.parquet").names

    without = [name for run, name in zip(runs, names) if lacks(run)]
    return missing_note(f"{FILE} is missing in {', '.join(without)}: not in the comparison per cause") if without else ""


def sweep_causes_html(page: Page, table_: pd.DataFrame, names: list[str]) -> str:
    """The sweep page's comparison per cause (`table_` with_cause_columns, `names`: the runs in
    order): the cluster's GPU-hours lost (under checkpoint-restart, else the interruptions) per cause,
    a dot per run (again for the failures and node events alone, where the policy's preemptions or
    reclaims are beside them), and a cause x run table of both; "" where no run had capacity events."""
    cluster = table_[table_["vc"] == "all"].set_index("run").reindex(names)
    causes = [c.removesuffix("_interruptions") for c in cluster.columns if c.endswith("_interruptions")]
    if not causes:
        return ""
    cluster = cluster[[c for c in cluster.columns if c.endswith(("_interruptions", "_lost_gpu_h"))]].astype(float)
    lost = all(f"{c}_lost_gpu_h" in cluster for c in causes)
    measure, what = ("lost_gpu_h", "GPU-hours lost") if lost else ("interruptions", "interruptions")
    events = [c for c in causes if c not in STOPS]
    charts = [causes_points(page, f"sweep_causes_{measure}", f"{what} per cause and run, whole cluster", cluster,
                            causes, measure, what)]
    if events and len(events) < len(causes):  # the events alone, not dwarfed by the stops beside them
        charts.append(causes_points(page, f"sweep_events_{measure}", f"{what} per failure or node event and run, "
                                    "whole cluster", cluster, events, measure, what))
    shown = pd.DataFrame({"cause": causes, "kind": [kind(c) for c in causes]})
    for run in names:
        for m in ("interruptions", "lost_gpu_h"):
            if all(f"{c}_{m}" in cluster for c in causes):
                shown[f"{run}: {m}"] = [cluster.at[run, f"{c}_{m}"] for c in causes]
    return ("".join(charts) + table(shown, caption=False)
            + '<p class="caption">Per cause and run: interruptions (stops) and lost_gpu_h (GPU-hours of work '
              "lost since the last completed checkpoint), sweep_summary.csv's &lt;cause&gt;_interruptions and "
              "&lt;cause&gt;_lost_gpu_h; "
              "“preemptions” are the stops the policy made itself, every other cause but “reclaims” a failure "
              "category or a node log's cause. Empty: the run had no capacity events.</p>")


def causes_points(page: Page, chart_id: str, title: str, cluster: pd.DataFrame, causes: list[str], measure: str,
                  what: str) -> str:
    """A dot per run (`cluster`'s rows, numbers as floats) and cause (`causes` on the x axis) of
    `measure`, from 0."""
    values = cluster[[f"{c}_{measure}" for c in causes]].to_numpy()
    top = float(np.nanmax(values, initial=0.0))
    return page.chart(Chart(
        chart_id, title, {"label": "cause", "categories": causes}, {"label": what, "range": [0.0, top * 1.08 or 1.0]},
        list(cluster.index), [np.arange(len(causes)), *values], kind="points", height=320,
        caption="One dot per run and cause (from each run's lost_by_cause.csv); hover a cause for every run's figure. "
                "Click a run in the legend to hide it."))
