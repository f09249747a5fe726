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

from raysim.harvest.engine import HarvestParams, HarvestResult, simulate
from raysim.harvest.metrics import jobs_table, steps_table, summarize
from raysim.harvest.replay import load_node_log, slice_events
from raysim.harvest.tasks import load_tasks
from raysim.paths import original_cwd

DATA_HELP = ("The harvest data is the BFTrainer replayer dataset (Liu et al., arXiv 2106.12091; "
             "https://github.com/BFTrainer/Replayer, folder dataset/) stored as Parquet: raysim's shared "
             "data folder holds it under harvest/. Set RAYSIM_SHARED to the folder that contains harvest/, "
             "or override harvest.data_dir (or harvest.node_log / harvest.tasks). See docs/harvest.md.")


def resolve_data(path: str, key: str, base: Path) -> Path:
    """`path` made absolute against `base`; FileNotFoundError with how to get the data if missing."""
    resolved = (base / os.path.expanduser(str(path))).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"harvest.{key}: file not found: {resolved} (from {path!r}, relative to "
                                f"{base}).\n{DATA_HELP}")
    return resolved


def parse_nodes(value) -> int | None:
    """`harvest.nodes`: a positive int, or 'all' / null for the whole machine."""
    if value is None or str(value).lower() == "all":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"harvest.nodes={value!r}: expected a node count or 'all'") from None


def params_from(h: DictConfig) -> HarvestParams:
    """HarvestParams from the `harvest` config section."""
    return HarvestParams(tfwd=float(h.tfwd), max_jobs=int(h.max_jobs), allocator=str(h.allocator),
                         compat_cap=bool(h.compat_cap), precise=bool(h.precise),
                         milp_time_limit=float(h.milp_time_limit))


def run_harvest(cfg: DictConfig, run_dir: Path) -> dict:
    """Replay the node log of `cfg.harvest` and write its results into `run_dir`; return the summary."""
    h = cfg.get("harvest")
    if h is None:
        raise ValueError("mode=harvest needs a `harvest:` config section; run e.g. "
                         "`python -m raysim +experiment=harvest_summit`")
    tic = time.perf_counter()
    run_dir = Path(run_dir).resolve()
    base = original_cwd()
    log_path = resolve_data(h.node_log, "node_log", base)
    tasks_path = resolve_data(h.tasks, "tasks", base)
    start_time = h.get("start_time")
    start_ns = None if start_time is None else int(np.datetime64(str(start_time), "ns").astype(np.int64))
    events = slice_events(load_node_log(log_path), parse_nodes(h.nodes), start_row=int(h.start_row),
                          start_time_ns=start_ns)
    tasks = load_tasks(tasks_path)
    result = simulate(events, tasks, params_from(h))
    summary = {**summarize(result), "node_log": str(log_path), "tasks": str(tasks_path),
               "nodes": events.num_nodes, "tfwd": float(h.tfwd), "max_jobs": int(h.max_jobs),
               "allocator": str(h.allocator), "compat_cap": bool(h.compat_cap), "precise": bool(h.precise)}
    write_tables(result, run_dir, plots=bool(h.get("plots", True)))
    summary["wall_seconds"] = time.perf_counter() - tic
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def write_tables(result: HarvestResult, run_dir: Path, *, plots: bool = True) -> None:
    """Write steps.parquet/.csv, jobs.parquet/.csv and (optionally) plots/*.png into `run_dir`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, table in (("steps", steps_table(result)), ("jobs", jobs_table(result))):
        pq.write_table(table, run_dir / f"{name}.parquet")
        pacsv.write_csv(table, run_dir / f"{name}.csv")
    if plots:
        from raysim.harvest.plots import plot_nodes

        plot_nodes(result, run_dir / "plots" / "nodes.png")
