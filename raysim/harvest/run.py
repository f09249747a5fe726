"""Harvest mode entry point: config -> replay -> run folder (summary, step log, job table, plots).

`run_harvest` is safe inside a Ray task: no global state (plots use matplotlib's object API with
the Agg canvas, not pyplot), numpy is used only element-wise (no BLAS thread pools), and every
path is made absolute before use.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from omegaconf import DictConfig

from raysim.errors import ConfigError, UserError
from raysim.run.unused import refuse_unused
from raysim.harvest.engine import HarvestParams, HarvestResult, simulate
from raysim.harvest.metrics import jobs_table, steps_table, summarize, timeseries_table
from raysim.harvest.replay import load_node_log, slice_events
from raysim.harvest.tasks import load_tasks
from raysim.paths import original_cwd

DATA_HELP = ("The harvest data is the BFTrainer replayer dataset (Liu et al., arXiv 2106.12091; "
             "https://github.com/BFTrainer/Replayer, folder dataset/) stored as Parquet: the dataset "
             "summit_nodes (`raysim data fetch summit_nodes`, harvest.data_dir=data:summit_nodes), or set "
             "harvest.data_dir to a folder holding it (or harvest.node_log / harvest.tasks). See docs/data.md "
             "and docs/harvest.md.")


def resolve_data(path: str, key: str, base: Path) -> Path:
    """`path` made absolute against `base`; FileNotFoundError (a user error: one line) with how to
    get the data if missing."""
    resolved = (base / os.path.expanduser(str(path))).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"harvest.{key}: file not found: {resolved} (from {path!r}, relative to "
                                f"{base}). {DATA_HELP}")
    return resolved


def parse_nodes(value) -> int | None:
    """`harvest.nodes`: a positive int, or 'all' / null for the whole machine."""
    if value is None or str(value).lower() == "all":
        return None
    try:
        nodes = int(value)
    except (TypeError, ValueError):
        nodes = 0
    if isinstance(value, bool) or nodes <= 0 or nodes != value and str(nodes) != str(value).strip():
        raise ConfigError("harvest.nodes", "expected a positive node count or 'all'", value)
    return nodes


def check_harvest_config(cfg: DictConfig) -> None:
    """The `harvest` values a replay uses, checked before any data is read (ConfigError: one line)."""
    from raysim.harvest.allocators import ALLOCATORS
    from raysim.run.config import boolean, choice, integer, number

    if cfg.get("harvest") is None:
        raise ConfigError("harvest", "mode=harvest needs a `harvest:` config section; run e.g. "
                          "`python -m raysim +experiment=harvest_summit`")
    number(cfg, "harvest.tfwd", above=0)
    integer(cfg, "harvest.max_jobs", minimum=1)
    integer(cfg, "harvest.start_row", minimum=0)
    choice(cfg, "harvest.allocator", sorted(ALLOCATORS))
    number(cfg, "harvest.milp_time_limit", above=0)
    boolean(cfg, "harvest.compat_cap")
    boolean(cfg, "harvest.precise")
    parse_nodes(cfg.harvest.nodes)


def _input(read, *prefixes: str):
    """`read()`, whose ValueErrors that name its input (the harvest readers' own checks of the data
    and of harvest.nodes / start_row) become user errors; any other ValueError stays a bug."""
    try:
        return read()
    except ValueError as exc:
        if type(exc) is ValueError and str(exc).startswith(prefixes):
            raise UserError(str(exc)) from exc
        raise


def params_from(h: DictConfig) -> HarvestParams:
    """HarvestParams from the `harvest` config section."""
    return HarvestParams(tfwd=float(h.tfwd), max_jobs=int(h.max_jobs), allocator=str(h.allocator),
                         compat_cap=bool(h.compat_cap), precise=bool(h.precise),
                         milp_time_limit=float(h.milp_time_limit))


def run_harvest(cfg: DictConfig, run_dir: Path) -> dict:
    """Replay the node log of `cfg.harvest` and write its results into `run_dir`; return the summary."""
    refuse_unused(cfg)  # any setting of a trace replay or of the FGD experiment (raysim.run.unused)
    h = cfg.get("harvest")
    if h is None:
        raise ConfigError("harvest", "mode=harvest needs a `harvest:` config section; run e.g. "
                          "`python -m raysim +experiment=harvest_summit`")
    tic = time.perf_counter()
    run_dir = Path(run_dir).resolve()
    base = original_cwd()
    log_path = resolve_data(h.node_log, "node_log", base)
    tasks_path = resolve_data(h.tasks, "tasks", base)
    check_harvest_config(cfg)  # (raysim.run.run checked it before anything was resolved)
    start_time = h.get("start_time")
    try:
        start_ns = None if start_time is None else int(np.datetime64(str(start_time), "ns").astype(np.int64))
    except ValueError:
        raise ConfigError("harvest.start_time", "not an ISO date and time", start_time) from None
    node_log = _input(lambda: load_node_log(log_path), str(log_path))
    events = _input(lambda: slice_events(node_log, parse_nodes(h.nodes), start_row=int(h.start_row),
                                         start_time_ns=start_ns), str(log_path), "harvest.")
    tasks = _input(lambda: load_tasks(tasks_path), str(tasks_path))
    result = simulate(events, tasks, params_from(h))
    summary = {**summarize(result), "node_log": str(log_path), "tasks": str(tasks_path),
               "nodes": events.num_nodes, "tfwd": float(h.tfwd), "max_jobs": int(h.max_jobs),
               "allocator": str(h.allocator), "compat_cap": bool(h.compat_cap), "precise": bool(h.precise)}
    write_tables(result, run_dir, plots=bool(h.get("plots", True)))
    summary["wall_seconds"] = time.perf_counter() - tic
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(summary_markdown(summary))
    print(f"results: {run_dir}")
    return summary


#: (summary key, label, format) of the table a harvest run prints, each with its unit.
TABLE = (("jobs_finished", "tasks finished", "{:,}"), ("jobs_total", "tasks", "{:,}"),
         ("makespan_h", "makespan (h)", "{:,.2f}"),
         ("efficiency", "efficiency (net / gross samples)", "{:.3f}"),
         ("total_samples", "samples", "{:,.0f}"),
         ("busy_node_hours", "node-hours used by tasks (node-h)", "{:,.1f}"),
         ("idle_node_hours", "idle node-hours (node-h)", "{:,.1f}"),
         ("harvested_fraction", "idle node-hours used (% of idle node-hours)", "{:.1%}"),
         ("preemptions", "preemptions", "{:,}"), ("rescales", "rescales", "{:,}"),
         ("replay_h", "replayed (h)", "{:,.2f}"))


def summary_markdown(summary: dict) -> str:
    """The run's headline figures as a Markdown table (what the run prints; summary.json has all)."""
    title = (f"raysim harvest: {summary['allocator']} allocator, {summary['nodes']} nodes, tfwd {summary['tfwd']:g} s, "
             f"{summary['start']} to {summary['end']}")
    lines = [f"### {title}", "", "| metric | value |", "|---|---|"]
    for key, label, fmt in TABLE:
        v = summary.get(key)
        lines.append(f"| {label} | {'-' if v is None else fmt.format(v)} |")
    lines.append(f"\nsimulated in {summary['wall_seconds']:.2f} s")
    return "\n".join(lines)


def write_tables(result: HarvestResult, run_dir: Path, *, plots: bool = True) -> None:
    """Write steps.parquet/.csv, jobs.parquet/.csv, timeseries.parquet and (optionally) plots/*.png
    into `run_dir`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, table in (("steps", steps_table(result)), ("jobs", jobs_table(result))):
        pq.write_table(table, run_dir / f"{name}.parquet")
        pacsv.write_csv(table, run_dir / f"{name}.csv")
    pq.write_table(timeseries_table(result), run_dir / "timeseries.parquet", compression="zstd")
    if plots:
        from raysim.harvest.plots import plot_nodes

        plot_nodes(result, run_dir / "plots" / "nodes.png")
