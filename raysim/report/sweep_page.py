"""report.html of a sweep (a Hydra multirun): one self-contained page (raysim.report.page) with the
run x metric table (sortable, the settings that vary between runs as columns, each run linked to its
own page), comparison charts per metric and per VC, the runs' JCT distributions and cluster series
side by side, and the folders that hold no result. Works for every kind of run a multirun makes:
trace replays of any policy (summary.csv) and FGD inflation runs (fgd_summary.csv, allo.csv)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from raysim import __version__
from raysim.report.bar_axis import bar_axis
from raysim.report.causes import missing_causes, sweep_causes_html
from raysim.report.describe import (common_overrides, has_results, run_compat, run_description, run_folders,
                                    run_labels, run_overrides, time_axis, why_no_results)
from raysim.report.page import Chart, Page, esc, facts, small_multiples, table
from raysim.report.page_data import CDF_POINTS, SERIES_POINTS, cdf_on, cdf_points, series_edges, vc_series
from raysim.report.run_files import check_series, missing_in_runs
from raysim.report.run_page import FILE, duration, fgd_curves
from raysim.report.schema import read_jobs
from raysim.yamlfile import read_yaml
from raysim.report.replicas import FILE as REPLICAS_FILE
from raysim.tables import cell, plural, unit, units_caption

#: The per-VC comparisons drawn (summary columns), where the runs have several VCs
PER_VC = ("avg_queue", "avg_jct")
#: Union of the runs' CDF points kept at most (a common x axis for every run's curve)
CDF_UNION = 3 * CDF_POINTS


def write_sweep_page(sweep_dir, table_: pd.DataFrame, columns: list[str], charted: list[str],
                     replications=None) -> Path:
    """Write `sweep_dir`/report.html for the sweep whose run x metric table is `table_` (its `run`
    column the run labels, as raysim.report.sweep makes them); `columns`: the metrics the page's
    table shows, `charted`: those that get a bar chart, each in order; `replications`: what it
    reports of runs that differ only in seed (raysim.report.sweep.Replications). Returns its path."""
    sweep_dir = Path(sweep_dir)
    path = sweep_dir / FILE
    path.write_text(sweep_page(sweep_dir, table_, columns, charted, replications).render(), encoding="utf-8")
    return path


def sweep_description(run_dirs: list[Path], compat: bool = True) -> str:
    """What a sweep's plots say was run (run_description): how many runs, their semantics mode
    where they share one (`compat`: whether the runs have one; FGD inflation runs have none), and
    the overrides they share; the legend tells the runs apart."""
    modes = {run_compat(run) for run in run_dirs} if compat else set()
    return run_description(plural(len(run_dirs), "run"), modes.pop() if len(modes) == 1 else None,
                           common_overrides(run_dirs))


def sweep_page(sweep_dir: Path, table_: pd.DataFrame, columns: list[str], charted: list[str],
               replications=None) -> Page:
    """The page of a sweep folder (see write_sweep_page)."""
    done = [p for p in run_folders(sweep_dir) if has_results(p)]
    missing = [p for p in run_folders(sweep_dir) if p not in done]
    labels = dict(zip(done, run_labels(done)))
    trace_replay = "vc" in table_.columns
    page = Page(title=f"raysim sweep: {sweep_description(done, compat=trace_replay).splitlines()[0]}",
                subtitle=" ".join(sweep_task(sweep_dir)))
    page.section("runs", "Runs", runs_html(table_, done, labels, columns, missing, trace_replay))
    if replications is not None and replications.shown is not None:
        page.section("replicas", "Mean over seeds, 95 % confidence interval", replicas_html(replications))
    if trace_replay:
        page.section("charts", "Comparison", replay_charts(page, table_, done, labels, charted))
        causes = sweep_causes_html(page, table_, [labels[r] for r in done]) + missing_causes(
            done, [labels[r] for r in done])
        if causes:
            page.section("causes", "Lost work per cause", causes)
    else:
        page.section("charts", "Comparison", fgd_charts(page, table_, done, labels, charted))
    page.section("sweep", "What was run", facts([
        ("command", f"<code>{esc(' '.join(['python -m raysim -m', *sweep_task(sweep_dir)]))}</code>"),
        ("folder", f"<code>{esc(sweep_dir)}</code>"), ("runs", f"{len(done)} with results, {len(missing)} without"),
        ("raysim version", esc(__version__)),
        ("page written", esc(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")))]))
    return page


def sweep_task(sweep_dir: Path) -> list[str]:
    """The multirun's command-line overrides (its multirun.yaml), hydra.* left out."""
    config = read_yaml(sweep_dir / "multirun.yaml", {})
    task = ((config.get("hydra") or {}).get("overrides") or {}).get("task") or []
    return [o for o in task if not str(o).startswith("hydra.")]


def varied_settings(runs: list[Path]) -> pd.DataFrame:
    """One row per run, one column per setting whose value differs between the runs (from each
    run's overrides; a setting a run does not override is empty)."""
    rows = []
    for run in runs:
        pairs = (o.split("=", 1) for o in run_overrides(run) if "=" in o)
        rows.append({key.lstrip("+~"): value for key, value in pairs})
    frame = pd.DataFrame(rows, index=range(len(runs)))
    varied = [c for c in frame.columns if frame[c].nunique(dropna=False) > 1]
    return frame[varied]


def runs_html(table_: pd.DataFrame, runs: list[Path], labels: dict, metrics: list[str], missing: list[Path],
              trace_replay: bool) -> str:
    """The run x metric table (cluster rows of a trace replay), sortable, with the varied settings as
    columns and a link to each run's page; the folders without results named under it."""
    overall = table_[table_["vc"] == "all"] if trace_replay else table_
    settings = varied_settings(runs)
    settings.insert(0, "run", [labels[r] for r in runs])
    shown = settings.merge(overall[["run", *[m for m in metrics if m in overall.columns]]], on="run", how="left")
    pages = {labels[r]: f"{r.name}/{FILE}" for r in runs if (r / FILE).exists()}
    shown.insert(0, "folder", [r.name for r in runs])
    links = {"run": pages, "folder": {r.name: f"{r.name}/" for r in runs}}
    out = table(shown, links=links)
    if pages:
        out += "<p class=\"caption\">A run's name opens its own page (report.html in its folder).</p>"
    if missing:
        out += ("<p><strong>Without results</strong> (left out of the table and charts; the run's raysim.log "
                "says more):</p><ul>" + "".join(f'<li><a href="{esc(p.name)}/">{esc(p.name)}</a> '
                                                f"({esc(' '.join(run_overrides(p)))}): {esc(why_no_results(p))}</li>"
                                                for p in missing) + "</ul>")
    return out


def replicas_html(replications) -> str:
    """The group x metric table of mean ± half-width over each group's seeds (the whole cluster),
    what it is, and an adaptive sweep's outcome per group."""
    shown = replications.shown
    return (table(shown, caption=False)
            + f"<p class=\"caption\">Runs that differ only in seed, one row per group: the mean over its runs "
              f"± the half-width of the 95 % confidence interval (Student's t). Every metric, per VC too: "
              f"{esc(REPLICAS_FILE)}. {esc(units_caption(shown.columns))}</p>"
            + ("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in replications.lines) + "</ul>"
               if replications.lines else ""))


def replay_charts(page: Page, table_: pd.DataFrame, runs: list[Path], labels: dict, metrics: list[str]) -> str:
    """Trace replays: a bar chart per metric (runs on the x axis), the per-VC comparisons, the
    runs' JCT CDFs and their cluster utilisation and pending jobs over time."""
    overall = table_[table_["vc"] == "all"].set_index("run")
    names = [labels[r] for r in runs]
    parts = [small_multiples([metric_chart(page, overall, names, m, short_names(runs, names)) for m in metrics
                              if m in overall.columns and m != "jobs" and pd.api.types.is_numeric_dtype(overall[m])
                              and overall[m].notna().any()])]
    vcs = [vc for vc in dict.fromkeys(table_["vc"]) if vc != "all"]
    if len(vcs) > 1:
        for metric in PER_VC:
            grid = table_[table_["vc"] != "all"].pivot(index="vc", columns="run", values=metric).reindex(vcs)
            parts.append(page.chart(Chart(
                f"per_vc_{metric}", f"{metric} per VC", {"label": "VC", "categories": vcs},
                {"label": f"{metric} (s)"}, names, [np.arange(len(vcs)), *(grid[n].to_numpy(float) for n in names)],
                kind="points", height=320 + 4 * min(len(vcs), 40),
                text=[[cell(v, metric) for v in grid[n]] for n in names],
                caption=f"One dot per run and VC; hover a VC for every run's {metric}. Click a run in the legend to hide it.")))
    parts.append(missing_in_runs(runs, names, "jobs.parquet", "not in the JCT distribution"))
    parts.append(jct_cdfs(page, runs, names))
    parts.append(missing_in_runs(runs, names, "timeseries.parquet", "not in the over-time charts"))
    parts += series_charts(page, runs, names)
    return "\n".join(p for p in parts if p)


def short_names(runs: list[Path], names: list[str]) -> list[str]:
    """What a chart's axis calls each run: the value of the one setting that varies (`fifo` for
    `policy=fifo`), else the run's label."""
    varied = varied_settings(runs)
    return [str(v) for v in varied.iloc[:, 0]] if varied.shape[1] == 1 else names


def metric_chart(page: Page, overall: pd.DataFrame, names: list[str], metric: str, axis: list[str] | None = None) -> str:
    """Bars of `metric` per run (`names`: the table's labels; `axis`: what the x axis calls them),
    exact, the legend showing the table's text; the value axis as raysim.report.bar_axis puts it
    (not from 0 where the values lie close together, which the title says; the caption says how
    close)."""
    values = overall[metric].reindex(names)
    spans = bar_axis(values.to_numpy(dtype=float))
    y = {"label": ""}
    title = f"{metric} ({unit(metric) or 'count'}), whole cluster"
    caption = ""
    if spans is not None:
        y["range"] = [spans.low, spans.high]
        title += "" if spans.from_zero else " (axis not from 0)"
        caption = spans.note(lambda v: cell(v, metric))
    return page.chart(Chart(f"metric_{metric}", title, {"label": "run", "categories": axis or names},
                            y, [metric], [np.arange(len(names)), values.to_numpy(dtype=float)], kind="bars",
                            height=260, caption=caption, text=[[cell(v, metric) for v in values]]))


def jct_cdfs(page: Page, runs: list[Path], names: list[str]) -> str:
    """Every run's JCT CDF on one log axis (at the union of the runs' CDF points)."""
    jcts = {n: read_jobs(r / "jobs.parquet", columns=["jct"]).column("jct").to_numpy(zero_copy_only=False)
            .astype(np.float64) for r, n in zip(runs, names) if (r / "jobs.parquet").exists()}
    if not jcts:
        return ""
    xs = np.unique(np.concatenate([cdf_points(np.maximum(v, 1.0))[0] for v in jcts.values()]))
    if len(xs) > CDF_UNION:
        xs = np.unique(np.quantile(xs, np.linspace(0, 1, CDF_UNION), method="inverted_cdf"))
    return page.chart(Chart("jct_cdf", "JCT distribution per run", {"label": "job completion time (s, log scale)",
                                                                    "log": True},
                            {"label": "fraction of jobs finished within it", "range": [0, 1]}, list(jcts),
                            [xs, *(cdf_on(xs, np.maximum(v, 1.0)) for v in jcts.values())], kind="step",
                            caption="Empirical CDFs (JCTs under 1 s drawn at 1 s). Drag to zoom, double-click to zoom out."))


def series_charts(page: Page, runs: list[Path], names: list[str]) -> list[str]:
    """Cluster GPU utilisation and pending jobs over time, a line per run, on common spans."""
    paths = {n: r / "timeseries.parquet" for r, n in zip(runs, names) if (r / "timeseries.parquet").exists()}
    for path in paths.values():
        check_series(path)
    if not paths:
        return []
    spans = [series_edges(p) for p in paths.values()]
    first, end = min(e[0] for e, _ in spans), max(e[-1] for e, _ in spans)
    step = min(s for _, s in spans)
    edges = np.linspace(first, end, int(min(SERIES_POINTS, max(1, round((end - first) / step)))) + 1)
    data = {n: vc_series(p, ["all"], ["gpu_utilization", "pending_gpujob_num"], edges).get("all", {})
            for n, p in paths.items()}
    origin, per, label = time_axis(edges)
    x = (edges[:-1] - origin) / per
    span = float(edges[1] - edges[0])
    means = f"each point: the mean over {duration(span)}" if span > step * 1.5 else f"sampled every {duration(step)}"
    out = []
    for column, ylabel, title, y_range in (("gpu_utilization", "fraction of GPUs busy", "GPU utilisation", [0, 1]),
                                           ("pending_gpujob_num", "jobs waiting", "Pending jobs", None)):
        shown = [n for n in paths if column in data[n]]
        if shown:
            out.append(page.chart(Chart(f"series_{column}", f"{title} (cluster) per run", {"label": label},
                                        {"label": ylabel, **({"range": y_range} if y_range else {})}, shown,
                                        [x, *(data[n][column] for n in shown)],
                                        caption=f"The whole cluster ({means}). Drag to zoom, double-click to zoom out.")))
    return out


def fgd_charts(page: Page, table_: pd.DataFrame, runs: list[Path], labels: dict, metrics: list[str]) -> str:
    """FGD inflation runs: a bar chart per result metric of `metrics`, and each run's GPU allocation
    ratio and fragmentation ratio against the arrived workload (fgd_curves)."""
    indexed = table_.set_index("run")
    names = [labels[r] for r in runs]
    bars = small_multiples([metric_chart(page, indexed, names, m, short_names(runs, names)) for m in metrics
                            if m in indexed.columns])
    return "\n".join([bars, *fgd_curves(page, {labels[r]: r for r in runs})])
