"""What a cluster run writes besides jobs.parquet and timeseries.parquet: summary, plots, report."""

from __future__ import annotations

import json
from pathlib import Path

from raysim.report.timeseries import cluster_series
from raysim.tables import to_markdown


def write_plots(jobs, run_dir: Path, summary, label: str, interval: int = 60, title: str = "") -> None:
    """JCT CDF, queueing per VC, utilisation (per GPU type too) and pending jobs over time; with
    quota=borrow also the borrowed and lent GPU-hours per VC, with capacity events the GPUs out of
    service over time (time series sampled every `interval` s); `title`: what was run
    (raysim.report.describe.run_description)."""
    from raysim.report.capacity import down_plot, has_capacity
    from raysim.report.loans import has_loans, loans_plot
    from raysim.report.plots import run_plots

    series = run_dir / "timeseries.parquet"
    run_plots(jobs.select(["jct"]).to_pandas(), cluster_series(series), summary, run_dir / "plots", label=label,
              title=title)
    if has_loans(series):
        loans_plot(series, run_dir / "plots" / "loans.png", interval, title=title)
    if has_capacity(series):
        down_plot(series, run_dir / "plots" / "capacity.png", interval, title=title)


def write_outputs(run_dir: Path, summary, trace, spec, title: str) -> None:
    """summary.csv/.md and the trace loading report (jobs and time series are already written)."""
    summary.to_csv(run_dir / "summary.csv", index=False)
    (run_dir / "summary.md").write_text(to_markdown(summary, title=title))
    layout = {vc: [{"gpu_type": p.gpu_type, "gpus_per_node": p.gpus_per_node, "nodes": p.nodes,
                    **({"cpu_milli": p.cpu_milli, "memory_mib": p.memory_mib} if p.limits_resources else {})}
                   for p in pools] for vc, pools in spec.layout.items()}
    (run_dir / "trace_report.json").write_text(json.dumps(
        {"source": trace.source, "origin": trace.origin, "jobs": trace.table.num_rows,
         "vcs": trace.vc_nodes, "layout": layout, "from_cache": trace.from_cache,
         **trace.report.to_dict()}, indent=2))


def record_wall(run_dir: Path, wall_s: dict, timing: dict | None = None, ray_nodes: dict | None = None) -> None:
    """Add to trace_report.json the seconds each stage of the run took (`wall_s`: read_s,
    ray_start_s (None under runtime=local), simulate_s, write_s) and where the simulation's went
    (`timing`: raysim.runtime.timing.RunTiming.report; None: nothing was simulated, a resumed run
    had finished), which report.html shows; on Ray the node of the driver and of each VC group
    (`ray_nodes`: raysim.runtime.ray_backend.RayExecutor.placement)."""
    path = run_dir / "trace_report.json"
    report = json.loads(path.read_text())
    report["wall_s"] = wall_s
    if timing is not None:
        report["timing"] = timing
    if ray_nodes is not None:
        report["ray_nodes"] = ray_nodes
    path.write_text(json.dumps(report, indent=2))


def record_capacity_inputs(run_dir: Path, key: str, node_log, failures: dict | None) -> None:
    """Add to trace_report.json what changed the run's nodes, which report.html shows: the node log
    (`node_log`, the resolved value of setting `key`: cluster.capacity, or harvesting's
    harvest.node_log; None: none) and the failure model (the `failures` group, resolved; its failure
    trace, failures=trace, as `path`), each file as its absolute path with its sha256."""
    from raysim.data.store import sha256_of
    from raysim.paths import original_cwd

    def named(path) -> dict:  # (a relative path is relative to where raysim was launched, as read)
        path = (original_cwd() / Path(str(path)).expanduser()).resolve()
        return {"path": str(path), "sha256": sha256_of(path)}

    report_path = run_dir / "trace_report.json"
    report = json.loads(report_path.read_text())
    model = dict(failures or {})
    if model.get("path") is not None:
        model["path"] = named(model["path"])
    report["capacity"] = {"node_log": {"key": key, **named(node_log)} if node_log is not None else None,
                          "failures": model if model.get("name", "none") != "none" else None}
    report_path.write_text(json.dumps(report, indent=2))
