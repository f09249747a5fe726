"""Compare the runs of a Hydra multirun: sweep_summary.csv/.md and comparison plots."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from raysim.forking import forked_map
from raysim.report.bar_axis import bar_axis
from raysim.report.causes import read_causes, with_cause_columns
from raysim.report.describe import (common_overrides, has_results, run_folders, run_labels, run_overrides,
                                    why_no_results)
from raysim.report.plots import plot_tasks, save_figure, set_title, subplots
from raysim.report.replicas import FILE as REPLICAS_FILE, adaptive_lines, cluster_intervals, replica_table, seed_groups
from raysim.report.replicate import replicate_settings
from raysim.report.run_files import check_series, read_summary
from raysim.report.schema import read_jobs
from raysim.report.timeseries import cluster_series
from raysim.report.settings import report_settings
from raysim.tables import markdown_table, unit, units_caption
from raysim.yamlfile import read_yaml
from raysim.report.sweep_page import sweep_description, write_sweep_page

METRICS = ["jobs", "avg_jct", "avg_queue", "p50_queue", "p99_queue", "p99.9_queue", "p99.9_jct",
           "makespan", "gpu_utilization", "reclaims", "ran_elsewhere", "borrowed_gpu_h", "interruptions",
           # harvesting runs (raysim.harvest.metrics)
           "makespan_h", "efficiency", "harvested_fraction", "precost", "rescost"]


def runs_without_results(sweep_dir: str | Path) -> list[Path]:
    """The run folders of a multirun without their summary, or with failed.json: runs that failed,
    were stopped or are still running, which a sweep summary leaves out."""
    return [run for run in run_folders(sweep_dir) if not has_results(run)]


def missing_runs_lines(sweep_dir: str | Path) -> list[str]:
    """One line per run folder without results (`runs_without_results`): the folder, its swept
    settings and why (its failed.json's reason, else that it has no summary)."""
    missing = runs_without_results(sweep_dir)
    if not missing:
        return []
    common = set(common_overrides(run_folders(sweep_dir)))
    lines = []
    for run in missing:
        swept = " ".join(o for o in run_overrides(run) if o not in common)
        lines.append(f"run folder {run}" + (f" ({swept})" if swept else "")
                     + f" left out of the sweep summary: {why_no_results(run)}")
    return lines


def summarize_sweep(sweep_dir: str | Path, plots: bool = True, html: bool = True) -> pd.DataFrame:
    """Build sweep_summary.csv/.md (run x metric, overall and per VC; with capacity events, per
    cause too: raysim.report.causes.with_cause_columns), the PNG plots (`plots`) and report.html
    (`html`) in `sweep_dir`."""
    sweep_dir = Path(sweep_dir)
    runs = sorted(p.parent for p in sweep_dir.glob("*/summary.csv") if has_results(p.parent))
    if not runs:
        raise FileNotFoundError(f"{sweep_dir}: no run folder with a summary.csv (is this a multirun folder?)")
    frames, data, causes = [], {}, {}
    for run, label in zip(runs, run_labels(runs)):
        summary = read_summary(run / "summary.csv")
        frames.append(summary.assign(run=label))
        lost = read_causes(run)
        if lost is not None:
            causes[label] = lost
        if plots and (run / "jobs.parquet").exists() and (run / "timeseries.parquet").exists():
            jobs = read_jobs(run / "jobs.parquet", columns=["jct"]).to_pandas()
            check_series(run / "timeseries.parquet")
            series = cluster_series(run / "timeseries.parquet")
            data[label] = (jobs, series, summary)
    table = pd.concat(frames, ignore_index=True)
    table = with_cause_columns(table[["run"] + [c for c in table.columns if c != "run"]], causes)
    table.to_csv(sweep_dir / "sweep_summary.csv", index=False)
    missing = missing_runs_lines(sweep_dir)
    replicas = replications(sweep_dir, table, runs, METRICS)
    (sweep_dir / "sweep_summary.md").write_text(_markdown(table) + replicas.markdown
                                                + "".join(f"\n{line}\n" for line in missing))
    title = sweep_description(runs)
    tasks = []  # drawn one per CPU at a time where this process may fork (raysim.forking)
    if plots and data:
        tasks += plot_tasks(data, sweep_dir / "plots", title=title)
    if plots:
        tasks.append((rate_figure, (table, sweep_dir / "plots" / "avg_jct_vs_rate.png", title)))
    if html:
        tasks.append((write_sweep_page, (sweep_dir, table, METRICS, METRICS, replicas)))
    forked_map(tasks)
    return table


@dataclass(frozen=True)
class Replications:
    """What a sweep reports of its runs that differ only in seed (raysim.report.replicas): every
    metric's mean and 95 % interval per group (None: no replications), the cluster's for people
    (group x `metrics`), a line per group on an adaptive sweep's outcome, and that as Markdown."""

    replicas: pd.DataFrame | None = None
    shown: pd.DataFrame | None = None
    lines: tuple[str, ...] = ()

    @property
    def markdown(self) -> str:
        if self.shown is None:
            return ""
        return ("\n## Mean and 95 % confidence interval over seeds (whole cluster)\n\n"
                + markdown_table(self.shown) + "\n\n" + units_caption(self.shown.columns) + "\n"
                + "".join(f"\n{line}\n" for line in self.lines))


def replications(sweep_dir: Path, table: pd.DataFrame, runs: list[Path], metrics: list[str]) -> Replications:
    """Write `sweep_dir`/sweep_replicas.csv where runs of the sweep differ only in seed (removing
    one an earlier report left where none do) and return what the summaries show of it; `metrics`:
    those its tables show, with an adaptive sweep's own (multirun.yaml's replicate.metric)."""
    groups = seed_groups(runs, run_labels(runs))
    path = sweep_dir / REPLICAS_FILE
    if not groups:
        path.unlink(missing_ok=True)
        return Replications()
    replicas = replica_table(table, groups)
    replicas.to_csv(path, index=False)
    settings = replicate_settings(read_yaml(sweep_dir / "multirun.yaml", {}).get("replicate"))
    metric = [settings.metric] if settings.metric and settings.metric not in metrics else []
    return Replications(replicas, cluster_intervals(replicas, [*metrics, *metric]),
                        tuple(adaptive_lines(replicas, settings)))


RATE = "rounds.rate_jobs_per_hour="


def rate_figure(table: pd.DataFrame, path: Path, title: str = "") -> bool:
    """Gavel's "average JCT vs input job rate" figure, for a sweep over `rounds.rate_jobs_per_hour`
    (+experiment=gavel_continuous): per policy (the other overrides but the seed), the average JCT
    of the measured window (`avg_jct_window`, else all jobs), mean over seeds. Returns whether it
    was drawn (only when the sweep has several rates); `title`: what was run."""
    overall = table[table["vc"] == "all"]
    metric = "avg_jct_window" if "avg_jct_window" in overall.columns else "avg_jct"
    points = []
    for run, value in zip(overall["run"], overall[metric]):
        parts = run.split(",")
        rate = next((float(p[len(RATE):]) for p in parts if p.startswith(RATE)), None)
        if rate is not None:
            label = ",".join(p for p in parts if not p.startswith(RATE) and not p.startswith("seed=")) or "run"
            points.append((label, rate, value))
    if len({rate for _, rate, _ in points}) < 2:
        return False
    frame = pd.DataFrame(points, columns=["label", "rate", "value"]).groupby(["label", "rate"], as_index=False).mean()
    fig, ax = subplots(figsize=(6, 4))
    for label, part in frame.groupby("label"):
        ax.plot(part["rate"], part["value"] / 3600, marker="o", label=label)
    ax.set_xlabel("input job rate (jobs/hour)")
    ax.set_ylabel(("average JCT of the measured window" if metric == "avg_jct_window" else "average JCT") + " (hours)")
    set_title(ax, "Average JCT vs input job rate (mean over seeds)", title)
    ax.legend(fontsize=7)
    save_figure(fig, path)
    return True


def headline(table: pd.DataFrame) -> str:
    """The sweep's main table as Markdown, with its units in a caption: run x metric of the whole
    cluster (METRICS) for trace replays, the FGD_METRICS of each run for FGD inflation runs. What
    sweep_summary.md shows first and `raysim report` prints."""
    if "vc" in table.columns:
        shown = table[table["vc"] == "all"][["run"] + [m for m in METRICS if m in table.columns]]
    else:
        shown = table[["run"] + [m for m in FGD_METRICS if m in table.columns]]
    return markdown_table(shown) + "\n\n" + units_caption(shown.columns)


def _markdown(table: pd.DataFrame) -> str:
    lines = ["# Sweep summary", "", "## All VCs", "", headline(table)]
    for metric in ("avg_queue", "avg_jct"):
        per_vc = table[table["vc"] != "all"].pivot(index="vc", columns="run", values=metric)
        lines += ["", f"## {metric} per VC (s)", "", markdown_table(per_vc.reset_index())]
    for metric in ("avg_queue", "p99_queue"):
        change = quota_change(table, metric)
        if change is not None:
            lines += ["", f"## {metric} change per VC against quota=none (s; negative: the VC gained)", "",
                      markdown_table(change.reset_index())]
    return "\n".join(lines) + "\n"


def quota_change(table: pd.DataFrame, metric: str) -> pd.DataFrame | None:
    """Per VC (and all), `metric` of each run with quota=borrow or global minus that of the
    quota=none run with the same other overrides; None when the sweep has no such pair."""
    runs = list(dict.fromkeys(table["run"]))
    vcs = list(dict.fromkeys(table["vc"]))  # layout order, then "all"
    by_run = {run: table[table["run"] == run].set_index("vc")[metric] for run in runs}
    columns = {}
    for run in runs:
        for mode in ("borrow", "global"):
            if f"quota={mode}" in run.split(","):
                base = ",".join("quota=none" if o == f"quota={mode}" else o for o in run.split(","))
                if base in by_run:
                    columns[run] = by_run[run] - by_run[base]
    return pd.DataFrame(columns).reindex([vc for vc in vcs if vc != "all"] + ["all"]) if columns else None


def report_sweep(sweep_dir: str | Path, plots: bool = True, html: bool = True) -> pd.DataFrame:
    """sweep_summary.csv/.md, PNG plots (`plots`) and report.html (`html`) for any multirun, by what
    its runs wrote: trace replays (summary.csv: every policy, event-driven, round-based or
    harvesting) get `summarize_sweep`; FGD inflation runs (fgd_summary.csv) one row per run, with
    the FGD curves (raysim.report.fgd.summarize_fgd_sweep) and a bar chart per metric. Returns the table."""
    sweep_dir = Path(sweep_dir)
    if any(sweep_dir.glob("*/summary.csv")):
        return summarize_sweep(sweep_dir, plots=plots, html=html)
    name = "fgd_summary.csv"
    runs = sorted(p.parent for p in sweep_dir.glob(f"*/{name}") if has_results(p.parent))
    if not runs:
        raise FileNotFoundError(f"{sweep_dir}: no run folder with a summary.csv or fgd_summary.csv "
                                "(is this a multirun folder?)")
    rows = [{"run": label, **pd.read_csv(run / name).iloc[0].to_dict()} for run, label in zip(runs, run_labels(runs))]
    table = pd.DataFrame(rows)
    table.to_csv(sweep_dir / "sweep_summary.csv", index=False)
    kind = "FGD inflation"
    missing = missing_runs_lines(sweep_dir)
    replicas = replications(sweep_dir, table, runs, FGD_RESULTS)
    (sweep_dir / "sweep_summary.md").write_text(f"# Sweep summary ({kind} runs)\n\n" + headline(table) + "\n"
                                                + replicas.markdown + "".join(f"\n{line}\n" for line in missing))
    if plots:
        from raysim.report.fgd import summarize_fgd_sweep

        title = sweep_description(runs, compat=False)
        summarize_fgd_sweep(sweep_dir, title)
        fig = metric_bars(table, kind, title)
        if fig is not None:
            save_figure(fig, sweep_dir / "plots" / "sweep_metrics.png")
    if html:
        write_sweep_page(sweep_dir, table, FGD_METRICS, FGD_RESULTS, replicas)
    return table


#: What the sweep summaries of the FGD inflation experiment show, in order.
FGD_METRICS = ["workload", "sc_policy", "seed", "arrivals", "failed", "allo_100", "allo_130", "frag_ratio_100",
               "frag_ratio_130", "wall_s"]
#: The results `metric_bars` draws (wall time is not a result of the experiment: it stays in the table).
FGD_RESULTS = ["allo_100", "allo_130", "frag_ratio_100", "frag_ratio_130"]


def metric_bars(table: pd.DataFrame, kind: str, title: str = ""):
    """A bar chart per metric of FGD_RESULTS (with its unit), runs on the x axis, each bar labelled
    with its value. The y axis as raysim.report.bar_axis puts it (spanning the values, not from 0,
    where they lie close together, so that 86.7 % and 95.1 % look apart; its label says so).
    Returns the Figure (None without such a metric); `title`: what was run."""
    metrics = [m for m in FGD_RESULTS if m in table.columns and pd.api.types.is_numeric_dtype(table[m])]
    if not metrics:
        return None
    fig, axes = subplots(len(metrics), 1, figsize=(max(6, 0.5 * len(table) + 3), 1.8 * len(metrics) + 1),
                         squeeze=False, sharex=True)
    for ax, metric in zip(axes[:, 0], metrics):
        values = table[metric].to_numpy(dtype=float)
        ax.bar_label(ax.bar(range(len(table)), values, color="C0"), fmt="%.1f", fontsize=7, padding=2)
        spans = bar_axis(values)
        if spans is not None:
            ax.set_ylim(spans.low, spans.high)
        from_zero = spans is None or spans.from_zero
        ax.set_ylabel(f"{metric}\n({unit(metric)}" + (")" if from_zero else ";\naxis not from 0)"), fontsize=7)
        ax.set_xticks(range(len(table)))
        ax.set_xticklabels(table["run"], rotation=30, ha="right", fontsize=7)
        ax.grid(alpha=0.3, axis="y")
    set_title(axes[0, 0], f"{kind} sweep: results per run", title)
    return fig


class SweepSummary(Callback):
    """Hydra callback: after a multirun, write the comparison table and plots into its folder."""

    def on_multirun_end(self, config, **kwargs) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        report = config.get("report")
        settings = report_settings(None if report is None else OmegaConf.to_container(report, resolve=True))
        try:
            table = report_sweep(sweep_dir, plots=settings.sweep_plots(), html=settings.html)
        except FileNotFoundError:
            return  # no run finished
        print(f"sweep summary ({len(table['run'].unique())} runs): {sweep_dir / 'sweep_summary.md'}"
              + (f", page: {sweep_dir / 'report.html'}" if settings.html else ""))
