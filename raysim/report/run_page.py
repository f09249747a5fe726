"""report.html of a trace replay: one self-contained page (raysim.report.page) with what was run, on
which data, what came out (the summary per VC and for the cluster, interactive charts) and where the
wall time went. Built from the run folder alone, so `raysim report <run folder>` rebuilds it."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from raysim import __version__
from raysim.report.classes import classes_html
from raysim.report.causes import capacity_inputs_html, causes_html, headline, read_causes
from raysim.report.describe import resolved_config, run_overrides, time_axis
from raysim.report.page import Chart, Page, cards, esc, facts, small_multiples, table
from raysim.report.page_data import cdf_points, largest_vcs, peaks_and_others, series_edges, vc_series
from raysim.report.run_files import check_series, missing_note, read_summary, read_trace_report
from raysim.report.schema import read_jobs
from raysim.tables import cell, gpu_counts, plural
from raysim.report.timeseries import column_names
from raysim.yamlfile import read_yaml

FILE = "report.html"
#: What the wall-time table calls each stage a run records in trace_report.json's `wall_s`.
STAGES = {"read_s": "reading the trace and inputs", "ray_start_s": "starting Ray", "simulate_s": "simulating",
          "write_s": "writing results (tables, plots, job views)"}
#: Trace files hashed for the page at most this size (bigger ones are named with their size only).
HASH_MAX_BYTES = 2 << 30
#: Over-time charts: (columns, y-axis label, chart title, fixed y range).
SERIES_CHARTS = (("gpu_utilization", "fraction of GPUs busy", "GPU utilisation", [0, 1]),
                 ("pending_gpujob_num", "jobs waiting", "Pending jobs", None),
                 ("down_gpu_num", "GPUs out of service", "Capacity: GPUs down", None),
                 ("borrowed_gpu_num", "GPUs borrowed from other VCs", "Quota: GPUs borrowed", None),
                 ("shared_node_num", "nodes running two or more jobs", "Nodes shared by several jobs", None),
                 ("used_gpu_milli", "GPU milli allocated (1,000 = one GPU)", "GPU shares allocated", None),
                 ("frag_gpu_milli", "free GPU milli no typical request fits", "GPU fragmentation (FGD's measure)", None))


def write_run_page(run_dir) -> Path:
    """Write `run_dir`/report.html from the run's files; returns its path."""
    run_dir = Path(run_dir)
    path = run_dir / FILE
    path.write_text(run_page(run_dir).render(), encoding="utf-8")
    return path


def run_page(run_dir: Path) -> Page:
    """The page of a trace replay's folder (summary.csv, jobs.parquet, timeseries.parquet,
    trace_report.json and Hydra's .hydra folder)."""
    report = read_trace_report(run_dir)
    config = read_yaml(run_dir / ".hydra" / "config.yaml", {})
    summary = read_summary(run_dir / "summary.csv")
    causes = read_causes(run_dir)
    what = run_name(report, config)
    page = Page(title=f"raysim: {what}", subtitle=" ".join(run_overrides(run_dir)))
    page.section("summary", "Summary", summary_html(summary, causes))
    page.section("plots", "Charts", charts_html(page, run_dir, report, summary))
    classes = classes_html(page, run_dir)
    if classes:
        page.section("classes", "Priority classes", classes)
    if causes is not None:
        page.section("causes", "Lost work per cause", causes_html(page, causes))
    page.section("run", "What was run", run_html(run_dir, report, config))
    page.section("data", "Data", data_html(report) + capacity_inputs_html(report))
    page.section("time", "Wall time", wall_html(report.get("wall_s") or {}) + timing_html(report.get("timing"))
                 + nodes_html(report.get("ray_nodes")))
    page.section("files", "Files", files_html(run_dir))
    return page


def run_name(report: dict, config: dict) -> str:
    """"venus_synth: fifo / consolidate, compat=clean" (with the quota where there is one)."""
    source = Path(str(report.get("source", "")))
    trace = source.parent.name if source.suffix else source.name
    pick = lambda group, key: (config.get(group) or {}).get(key)  # noqa: E731
    quota = pick("quota", "mode")
    parts = [f"{trace or 'trace'}: {pick('policy', 'name')} / {pick('placer', 'name')}"]
    if quota and quota != "none":
        parts.append(f" / quota={quota}")
    compat = pick("sim", "compat")
    return "".join(parts) + (f", compat={compat}" if compat else "")


def summary_html(summary: pd.DataFrame, causes: pd.DataFrame | None = None) -> str:
    """Headline figures of the cluster, then the summary per VC (sortable); a run with capacity
    events (`causes`: its lost_by_cause.csv) has its stops and lost work per kind of cause instead
    of their totals (raysim.report.causes.headline)."""
    overall = summary[summary["vc"] == "all"].iloc[0]
    head = [("jobs", f"{int(overall['jobs']):,}"), ("average JCT", hours(overall["avg_jct"])),
            ("average queueing delay", hours(overall["avg_queue"])),
            ("p99 queueing delay", hours(overall.get("p99_queue", np.nan)))]
    if "gpu_utilization" in overall:
        head.append(("GPU utilisation", f"{overall['gpu_utilization']:.3f}"))
    for key, name in (("interruptions", "interruptions"), ("retries", "retries of failed runs"),
                      ("lost_gpu_h", "GPU-hours of work lost")):
        if key in overall and pd.notna(overall[key]) and (causes is None or key == "retries"):
            head.append((name, f"{overall[key]:,.0f}" if key != "lost_gpu_h" else f"{overall[key]:,.1f}"))
    return cards(head + (headline(causes) if causes is not None else [])) + table(summary, total="all")


def hours(seconds) -> str:
    """'7.48 h (26,923 s)'; '–' for a missing value."""
    if seconds is None or pd.isna(seconds):
        return "–"
    return f"{seconds / 3600:,.2f} h ({seconds:,.0f} s)"


def charts_html(page: Page, run_dir: Path, report: dict, summary: pd.DataFrame) -> str:
    """The run's charts: JCT and queueing-delay CDFs, the average queue per VC, and over time the
    GPU utilisation (per GPU type too), pending jobs, and where the run has them GPUs down, GPUs
    borrowed and nodes with shared GPUs, for the cluster and its largest VCs (the cluster alone where
    its layout is one VC)."""
    jobs = read_jobs(run_dir / "jobs.parquet", columns=["jct", "queue"])
    jct, queue = (jobs.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in ("jct", "queue"))
    parts = []
    x, y = cdf_points(np.maximum(jct, 1.0))
    parts.append(page.chart(Chart("jct_cdf", "JCT distribution", {"label": "job completion time (s, log scale)",
                                                                  "log": True},
                                  {"label": "fraction of jobs finished within it", "range": [0, 1]},
                                  ["all jobs"], [x, y], kind="step",
                                  caption=f"Empirical CDF over the {plural(int((~np.isnan(jct)).sum()), 'finished job')} "
                                  "(JCTs under 1 s drawn at 1 s); hover for the fraction at a JCT.")))
    x, y = cdf_points(queue)
    parts.append(page.chart(Chart("queue_cdf", "Queueing delay distribution",
                                  {"label": "queueing delay (s, asinh scale: linear below 1 s)", "asinh": True},
                                  {"label": "fraction of jobs that waited at most this", "range": [0, 1]},
                                  ["all jobs"], [x, y], kind="step",
                                  caption="Empirical CDF over the jobs that started.")))
    vcs = [vc for vc in summary["vc"] if vc != "all"]
    if len(vcs) > 1:
        values = summary.set_index("vc")["avg_queue"].reindex(vcs).to_numpy(dtype=float)
        top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
        parts.append(page.chart(Chart("queue_per_vc", "Average queueing delay per VC",
                                      {"label": "VC", "categories": vcs},
                                      {"label": "average queueing delay (s)", "range": [0, top * 1.08 or 1.0]},
                                      ["avg_queue"], [np.arange(len(vcs)), values], kind="bars",
                                      height=300 + 4 * min(len(vcs), 40), text=[[cell(v, "avg_queue") for v in values]],
                                      caption="From the summary's avg_queue; a VC whose jobs never waited has no bar.")))
    series_path = run_dir / "timeseries.parquet"
    if series_path.exists():
        check_series(series_path)
        layout = report.get("layout") or {}  # (one VC, quota=global's merged one among them, is the cluster)
        vcs = list(layout) if len(layout) > 1 else []
        parts += over_time_charts(page, series_path, largest_vcs(layout) if vcs else [], vcs)
    else:
        parts.append(missing_note("timeseries.parquet is missing: no over-time charts"))
    if not (run_dir / "lost_by_cause.csv").exists() and any(
            c.startswith("lost_gpu_s_") for c in pq.read_schema(run_dir / "jobs.parquet").names):
        parts.append(missing_note("lost_by_cause.csv is missing: no table of the work lost per cause"))
    return "\n".join(parts)


def over_time_charts(page: Page, path: Path, top: list[str], every: list[str] = ()) -> list[str]:
    """Over-time charts of a timeseries.parquet: each SERIES_CHARTS column it has (and that is not 0
    throughout), the cluster in bold with its `top` VCs, but the GPU utilisation of the cluster alone
    and then of each of several VCs in a small chart of its own (against the cluster's), and the
    pending jobs of the cluster with the VCs of `every` whose queues peak highest and the others'
    sum (page_data.peaks_and_others); the utilisation per GPU type where there are several types."""
    names = column_names(path)
    edges, step = series_edges(path)
    origin, per, label = time_axis(edges)
    x = (edges[:-1] - origin) / per
    span = float(edges[1] - edges[0])
    means = f"each point: the mean over {duration(span)}" if span > step * 1.5 else f"sampled every {duration(step)}"
    charts = [c for c in SERIES_CHARTS if c[0] in names]
    types = [c for c in names if c.startswith("gpu_utilization_")]
    data = vc_series(path, ["all", *top], [c[0] for c in charts] + types, edges)
    vcs = [vc for vc in ["all", *top] if vc in data]
    out = []
    for column, ylabel, title, y_range in charts:
        lines = [data[vc][column] for vc in vcs]
        if column != "gpu_utilization" and not any(np.nansum(np.abs(v)) for v in lines):
            continue  # nothing to see (no node ever down, no loan, no node shared)
        y = {"label": ylabel, **({"range": y_range} if y_range else {})}
        if column == "pending_gpujob_num" and every:
            out.append(pending_chart(page, path, every, edges, x, lines[0], (label, ylabel, title, means)))
            continue
        if column == "gpu_utilization" and len(vcs) > 2:  # ten VCs' utilisations tangle: one small chart each
            out.append(page.chart(Chart(f"series_{column}", title, {"label": label}, y, ["cluster"], [x, lines[0]],
                                        bold=0, caption=f"{title} of the cluster ({means}). Drag to zoom, "
                                        "double-click to zoom out.")))
            out.append(small_multiples([page.chart(Chart(f"series_{column}_{i}", vc, {"label": label}, y,
                                                         ["cluster", vc], [x, lines[0], line], bold=1, height=240))
                                        for i, (vc, line) in enumerate(zip(vcs[1:], lines[1:]))]))
            out.append(f'<p class="caption">{title} of each of the {len(vcs) - 1} largest VCs (thick) against the '
                       f"cluster's (thin), on the same axes ({means}).</p>")
            continue
        shown = f"the cluster and its {len(top)} largest VCs" if len(top) > 1 else "the cluster"
        out.append(page.chart(Chart(f"series_{column}", title, {"label": label}, y,
                                    ["cluster" if vc == "all" else vc for vc in vcs], [x, *lines], bold=0,
                                    caption=f"{title} of {shown} ({means}). Drag to zoom, double-click to zoom out.")))
    if len(types) > 1:
        out.append(page.chart(Chart("series_gpu_types", "GPU utilisation per GPU type", {"label": label},
                                    {"label": "fraction of the type's GPUs busy", "range": [0, 1]},
                                    [t.removeprefix("gpu_utilization_") for t in types],
                                    [x, *(data["all"][t] for t in types)], caption=f"The cluster ({means}).")))
    return out


def pending_chart(page: Page, path: Path, every: list[str], edges: np.ndarray, x: np.ndarray,
                  cluster: np.ndarray, words: tuple[str, str, str, str]) -> str:
    """The pending-jobs chart over the spans `edges` (drawn at `x`): the cluster in bold, the VCs of
    `every` whose queues peak highest one line each, and one line for the others' sum (`words`: x
    label, y label, title, what a point is)."""
    label, ylabel, title, means = words
    column = "pending_gpujob_num"
    lines = peaks_and_others({vc: d[column] for vc, d in vc_series(path, every, [column], edges).items()})
    shown = [vc for vc in lines if vc in every]
    others = [name for name in lines if name not in every]
    what = (f"the {len(shown)} VCs whose queues peak highest, and the {others[0]} summed" if others
            else f"its {plural(len(shown), 'VC')}")
    return page.chart(Chart("series_pending_gpujob_num", title, {"label": label}, {"label": ylabel},
                            ["cluster", *lines], [x, cluster, *lines.values()], bold=0,
                            caption=f"{title} of the cluster and {what} ({means}). Drag to zoom, double-click "
                                    "to zoom out."))


def fgd_curves(page: Page, runs: dict[str, Path]) -> list[str]:
    """FGD inflation runs ({label: run folder}): the GPU allocation ratio and the fragmentation
    ratio against the arrived workload, a line per run (allo.csv, frag_ratio.csv: one row each)."""
    out = []
    for file, ylabel, title in (("allo.csv", "GPUs allocated (%)", "GPU allocation ratio"),
                                ("frag_ratio.csv", "idle GPU capacity fragmented (%)", "Fragmentation ratio")):
        curves = {label: pd.read_csv(folder / file) for label, folder in runs.items() if (folder / file).exists()}
        if not curves:
            continue
        points = [c for c in next(iter(curves.values())).columns if c.replace(".", "", 1).isdigit()]
        out.append(page.chart(Chart(f"fgd_{file.split('.')[0]}", title,
                                    {"label": "arrived workload (% of the cluster's GPUs)"}, {"label": ylabel},
                                    list(curves), [np.array([float(c) for c in points]),
                                                   *(c[points].iloc[0].to_numpy(float) for c in curves.values())],
                                    caption="A line per run. Drag to zoom, double-click to zoom out.")))
    return out


def write_fgd_page(run_dir) -> Path:
    """Write report.html of an FGD inflation run (mode=fgd): its summary row, its two curves and what
    was run; returns its path."""
    run_dir = Path(run_dir)
    config = read_yaml(run_dir / ".hydra" / "config.yaml", {})
    fgd = config.get("fgd") or {}
    page = Page(title=f"raysim FGD inflation: {fgd.get('policy')} on {fgd.get('workload')}, seed {config.get('seed')}",
                subtitle=" ".join(run_overrides(run_dir)))
    page.section("summary", "Summary", table(pd.read_csv(run_dir / "fgd_summary.csv"), sortable=False))
    page.section("plots", "Charts", "\n".join(fgd_curves(page, {"run": run_dir})))
    overrides = read_yaml(run_dir / ".hydra" / "overrides.yaml", [])
    page.section("run", "What was run", facts(
        [("command", f"<code>{esc(' '.join(['python -m raysim', *overrides]))}</code>"),
         *((key, esc(value)) for key, value in fgd.items()), ("seed", esc(config.get("seed"))),
         ("raysim version", esc(__version__))]))
    page.section("files", "Files", files_html(run_dir))
    path = run_dir / FILE
    path.write_text(page.render(), encoding="utf-8")
    return path


def duration(seconds: float) -> str:
    """'60 s', '4.3 min', '2.0 h', '1.5 days'."""
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"


def run_html(run_dir: Path, report: dict, config: dict) -> str:
    """The command, the chosen plug-ins, seed, cluster and version; the whole composed config folded."""
    overrides = read_yaml(run_dir / ".hydra" / "overrides.yaml", [])
    pick = lambda group, key: (config.get(group) or {}).get(key)  # noqa: E731
    layout = report.get("layout") or {}
    gpus: dict[str, int] = {}
    for pools in layout.values():
        for p in pools:
            gpus[p["gpu_type"]] = gpus.get(p["gpu_type"], 0) + p["gpus_per_node"] * p["nodes"]
    items = [("command", f"<code>{esc(' '.join(['python -m raysim', *overrides]))}</code>"),
             ("policy", esc(pick("policy", "name"))), ("placer", esc(pick("placer", "name"))),
             ("quota", esc(pick("quota", "mode"))), ("runtime", esc(pick("runtime", "name"))),
             ("semantics (sim.compat)", esc(pick("sim", "compat"))), ("seed", esc(config.get("seed"))),
             ("trace", esc(report.get("source", ""))), ("jobs", f"{report.get('jobs', 0):,}"),
             ("cluster", esc(f"{vcs_in(report, config)}, {gpu_counts(gpus)}")),
             ("raysim version", esc(__version__)),
             ("page written", esc(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")))]
    composed = (yaml.safe_dump(resolved_config(config), sort_keys=False) if config
                else "(no .hydra/config.yaml in the run folder)")
    return facts(items) + f"<details><summary>the whole configuration</summary><pre>{esc(composed)}</pre></details>"


def vcs_in(report: dict, config: dict) -> str:
    """"15 VCs", or under quota=global (its layout merged into one VC) "15 VCs sharing one queue":
    the VCs of the trace's layout (trace_report.json's `vcs`; the layout's where a run lacks it)."""
    layout = report.get("layout") or {}
    if (config.get("quota") or {}).get("mode") != "global":
        return plural(len(layout), "VC")
    vcs = report.get("vcs")
    return f"{plural(len(vcs) if isinstance(vcs, dict) and vcs else len(layout), 'VC')} sharing one queue"


def data_html(report: dict) -> str:
    """The trace file with its hash, the datasets read by name with theirs, and the rows skipped or
    converted while reading, with why."""
    source = Path(str(report.get("source", "")))
    parts = [facts([("trace file", f"<code>{esc(source)}</code>"), ("sha256", f"<code>{esc(file_hash(source))}</code>"),
                    ("read from raysim's trace cache", "yes" if report.get("from_cache") else "no")])]
    datasets = report.get("datasets") or []
    if datasets:
        rows = [{"setting": d["key"], "dataset": d["dataset"], "file": f["file"], "sha256": f["sha256"],
                 "pinned": "pinned" if f.get("pinned") else "trusted on first use"}
                for d in datasets for f in d.get("files", [])]
        parts.append("<h3>Datasets read by name</h3>" + table(pd.DataFrame(rows), caption=False))
    counts, converted = report.get("counts") or {}, report.get("converted") or {}
    if counts or converted:
        rows = [{"what": "skipped", "reason": r, "rows": n, "columns": ", ".join((report.get("by_column") or {}).get(r, {})),
                 "example": json.dumps((report.get("examples") or {}).get(r, ""))[:200]} for r, n in counts.items()]
        rows += [{"what": "converted", "reason": r, "rows": n, "columns": "", "example": ""} for r, n in converted.items()]
        parts.append("<h3>Rows skipped or converted while reading</h3>" + table(pd.DataFrame(rows), caption=False))
    else:
        parts.append("<p>Every row of the trace was read as it is: none skipped, none converted.</p>")
    return "\n".join(parts)


def file_hash(path: Path) -> str:
    """The sha256 of a trace file (its size only where it is over HASH_MAX_BYTES; a folder or a
    generated trace has none)."""
    if not path.is_file():
        return "(not a file: a folder or a generated trace)"
    size = path.stat().st_size
    if size > HASH_MAX_BYTES:
        return f"(not hashed: {size:,} bytes)"
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wall_html(wall: dict) -> str:
    """Where the run's wall time went (trace_report.json's `wall_s`), each stage with its share."""
    stages = [(STAGES.get(k, k), float(v)) for k, v in wall.items() if k in STAGES and v is not None]
    if not stages:
        return "<p>This run recorded no wall-time split (it was written by an older raysim).</p>"
    total = sum(v for _, v in stages) or 1.0
    rows = "".join(f'<tr><td>{esc(name)}</td><td class=n>{v:,.2f}</td><td class=n>{100 * v / total:.0f} %</td>'
                   f'<td><span class="bar" style="width:{200 * v / total:.0f}px"></span></td></tr>' for name, v in stages)
    return (f"<table><thead><tr><th>stage</th><th>seconds</th><th>share</th><th></th></tr></thead><tbody>{rows}"
            f'<tr class=total><td>total</td><td class=n>{total:,.2f}</td><td></td><td></td></tr></tbody></table>'
            '<p class="caption">Measured in the run\'s process; start-up (Python, imports, Hydra) and this '
            "page are not included.</p>")


#: What the simulation's split calls each part of trace_report.json's `timing` totals.
PARTS = {"critical_s": "VC groups: the critical path (each window's slowest group, CPU time)",
         "waiting_s": "waiting beyond it (the other groups' turns where there are more groups than CPUs, CPUs "
                      "shared with other work, Ray's scheduling)",
         "transfer_s": "serialising and moving batches and results (Ray's put and get)",
         "own_s": "the coordinator's own work (routing arrivals, merging results, checkpoints)"}
#: Groups listed by name in the split, costliest first.
TOP_GROUPS = 8


def timing_html(timing: dict | None) -> str:
    """Where the simulation's time went (trace_report.json's `timing`): the windows' critical path
    vs waiting, transfer and the coordinator, the time outside windows, the costliest VC groups,
    and the speedup bound for k CPUs."""
    if not timing:
        return ""
    totals = timing["totals"]
    parts = [(name, float(totals[key])) for key, name in PARTS.items()]
    parts.append(("outside the windows (starting the groups, collecting and writing results)", float(timing["outside_s"])))
    total = sum(v for _, v in parts) or 1.0
    rows = "".join(f'<tr><td>{esc(name)}</td><td class=n>{v:,.2f}</td><td class=n>{100 * v / total:.0f} %</td>'
                   f'<td><span class="bar" style="width:{200 * v / total:.0f}px"></span></td></tr>' for name, v in parts)
    groups = timing["groups"]
    top = sorted(zip(groups["cpu_s"], groups["wall_s"], groups["idle_s"], groups["vcs"]), key=lambda r: -r[0])[:TOP_GROUPS]
    group_rows = "".join(f"<tr><td>{esc(', '.join(vcs))}</td><td class=n>{cpu:,.2f}</td><td class=n>{w:,.2f}</td>"
                         f"<td class=n>{idle:,.2f}</td></tr>" for cpu, w, idle, vcs in top)
    bounds = ", ".join(f"<b>{b:.2f}x</b> on {esc(k)} CPUs" for k, b in timing["speedup_bound"].items())
    return (f"<h3>Inside the simulation: {plural(timing['windows'], 'window')}, "
            f"{plural(len(groups['vcs']), 'VC group')}</h3>"
            f"<table><thead><tr><th>part</th><th>seconds</th><th>share</th><th></th></tr></thead><tbody>{rows}"
            f'<tr class=total><td>total</td><td class=n>{total:,.2f}</td><td></td><td></td></tr></tbody></table>'
            f"<p>Predicted speedup bound: {bounds}, against {timing['serial_work_s']:,.1f} s of serial work (every "
            "group's CPU time and the serial time above). Per window the VCs are packed as "
            "<code>ray.vcs_per_actor=auto</code> packs them for k CPUs, and the costliest group plus the "
            "coordinator's serial time is that window's least wall time; Ray's start-up, transfer and CPUs "
            "shared with other work only add to it.</p>"
            f"<table><thead><tr><th>VC group (costliest {len(top)})</th><th>CPU s</th><th>wall s</th>"
            "<th>waiting for the others, s</th></tr></thead>"
            f"<tbody>{group_rows}</tbody></table>")


def nodes_html(nodes: dict | None) -> str:
    """The Ray nodes a run ran on (trace_report.json's `ray_nodes`): per node its host, address, id,
    how many VC groups it ran and whether the driver ran there; '' for a run not on Ray."""
    if not nodes:
        return ""
    items = []
    for node, where in nodes["nodes"].items():
        what = [plural(nodes["groups"].count(node), "VC group")] + (["the driver"] if node == nodes["driver"] else [])
        items.append(f"<li>{esc(where['host'])} ({esc(where['address'])}, node <code>{esc(node[:12])}</code>): "
                     f"{esc(' and '.join(what))}</li>")
    return f"<h3>On {plural(len(items), 'Ray node')}</h3><ul>{''.join(items)}</ul>"


def files_html(run_dir: Path) -> str:
    """The run folder's result files, linked (relative links: the folder can be moved or copied)."""
    files = sorted(p for p in run_dir.rglob("*") if p.is_file() and ".hydra" not in p.parts and p.name != FILE)
    rows = "".join(f'<tr><td><a href="{esc(p.relative_to(run_dir).as_posix())}">{esc(p.relative_to(run_dir))}</a></td>'
                   f"<td class=n>{p.stat().st_size:,}</td></tr>" for p in files)
    return f"<table><thead><tr><th>file</th><th>bytes</th></tr></thead><tbody>{rows}</tbody></table>"
