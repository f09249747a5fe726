"""A cluster run: load the trace, simulate every VC, write jobs/time-series/summary into the run folder."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pyarrow.parquet as pq
from omegaconf import DictConfig

from raysim.models.estimates import estimates_for
from raysim.policy import NEEDS_ESTIMATE
from raysim.report.results import jobs_table, series_by_vc, timeseries_table
from raysim.runtime.codec import jobs_batch
from raysim.runtime.coordinator import Coordinator
from raysim.report.summary import summarize, to_markdown
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import Trace, load_trace

log = logging.getLogger("raysim")


def load_from_config(cfg: DictConfig) -> Trace:
    """The validated trace named by cfg.trace (with cfg.cluster's node size)."""
    t = cfg.trace
    if not t.path:
        raise ValueError("trace.path is not set: give a trace file or folder, or use +experiment=venus")
    return load_trace(t.path, fmt=t.format, vc_config=t.vc_config, gpus_per_node=cfg.cluster.gpus_per_node,
                      on_error=t.on_error, state_filter=t.state_filter, origin=t.origin, cache=t.cache,
                      cache_dir=t.cache_dir)


def spec_from_config(cfg: DictConfig, trace: Trace) -> RunSpec:
    params = SimParams.for_mode(cfg.sim.compat, sample_interval=int(cfg.sim.sample_interval), seed=int(cfg.seed))
    return RunSpec(cfg.policy.name, cfg.placer.name, params, dict(trace.vc_nodes),
                   gpus_per_node=int(cfg.cluster.gpus_per_node))


def vc_groups(vc_nodes: dict, vcs_per_actor: int) -> list[list[str]]:
    """VCs in layout order, packed `vcs_per_actor` to a group (one process/actor per group)."""
    names = list(vc_nodes)
    k = max(1, int(vcs_per_actor))
    return [names[i:i + k] for i in range(0, len(names), k)]


def simulate(trace: Trace, spec: RunSpec, estimates=None, *, runtime: str = "local", window_s: int = 86_400,
             vcs_per_actor: int = 1, ray_options: dict | None = None, checkpoint_dir=None,
             checkpoint_every: int = 1, resume: bool = False, progress: bool = False, executor=None):
    """Simulate every VC of `trace`; return the (jobs, time series) Arrow tables.

    `runtime` is "local" (in-process) or "ray" (actors); both give identical jobs tables.
    """
    groups = vc_groups(trace.vc_nodes, vcs_per_actor)
    if executor is None:
        executor = make_executor(runtime, spec, groups, ray_options or {})
    coordinator = Coordinator(executor, jobs_batch(trace.table, estimates), groups, t0=spec.t0,
                              window_s=window_s, checkpoint_dir=checkpoint_dir,
                              checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                              origin=trace.origin)
    records, samples, end = coordinator.run()
    series = series_by_vc(samples, list(trace.vc_nodes), last=end)
    return jobs_table(trace.table, records), timeseries_table(series)


def make_executor(runtime: str, spec: RunSpec, groups, ray_options: dict):
    if runtime == "local":
        from raysim.runtime.local import LocalExecutor

        return LocalExecutor(spec, groups)
    if runtime == "ray":
        from raysim.runtime.ray_backend import RayExecutor, ensure_ray

        ensure_ray(ray_options.get("address"), ray_options.get("num_cpus"))
        return RayExecutor(spec, groups, actor_cpus=float(ray_options.get("actor_cpus", 0.1)))
    raise ValueError(f"runtime.name must be 'local' or 'ray', not {runtime!r}")


def run_cluster(cfg: DictConfig, run_dir: Path) -> dict:
    """Run a trace replay as configured; returns the cluster-wide summary row as a dict."""
    wall = time.perf_counter()
    trace = load_from_config(cfg)
    for line in trace.report.lines():
        log.warning("%s", line)
    est = cfg.estimator
    estimates = estimates_for(trace.table, source=est.source, path=est.path, column=est.column,
                              negative_to=est.negative_to)
    if cfg.policy.name in NEEDS_ESTIMATE and estimates is None:
        raise ValueError(f"policy={cfg.policy.name} ranks jobs by estimated duration: set "
                         "estimator.source=file estimator.path=<CSV> (or estimator.source=oracle)")
    spec = spec_from_config(cfg, trace)
    log.info("trace %s: %d jobs, %d VCs, %d GPUs; policy=%s placer=%s compat=%s runtime=%s",
             trace.source, trace.table.num_rows, len(trace.vc_nodes),
             sum(trace.vc_nodes.values()) * spec.gpus_per_node, spec.policy, spec.placer,
             cfg.sim.compat, cfg.runtime.name)

    sim_start = time.perf_counter()
    rt = cfg.runtime
    jobs, series = simulate(trace, spec, estimates, runtime=rt.name, window_s=int(rt.window_s),
                            vcs_per_actor=int(cfg.ray.vcs_per_actor), ray_options=dict(cfg.ray),
                            checkpoint_dir=rt.checkpoint_dir, checkpoint_every=int(rt.checkpoint_every),
                            resume=bool(rt.resume), progress=True)
    sim_wall = time.perf_counter() - sim_start
    summary = summarize(jobs, series)
    _plots(jobs, series, summary, run_dir, label=spec.policy)
    write_outputs(run_dir, jobs, series, summary, trace, title=f"{spec.policy} / {spec.placer} / {cfg.sim.compat}")
    overall = summary[summary.vc == "all"].iloc[0].to_dict()
    print(to_markdown(summary, title=f"raysim: {spec.policy}, {cfg.sim.compat} semantics"))
    print(f"avg JCT {overall['avg_jct']:.1f} s, avg queue {overall['avg_queue']:.1f} s over "
          f"{overall['jobs']} jobs; simulated in {sim_wall:.2f} s ({time.perf_counter() - wall:.2f} s total)")
    print(f"results: {run_dir}")
    return overall


def _plots(jobs, series, summary, run_dir: Path, label: str) -> None:
    from raysim.report.plots import run_plots

    ts = series.select(["vc", "time", "gpu_utilization", "pending_gpujob_num"]).to_pandas()
    ts["vc"] = ts["vc"].astype(str)
    run_plots(jobs.select(["jct"]).to_pandas(), ts, summary, run_dir / "plots", label=label)


def write_outputs(run_dir: Path, jobs, series, summary, trace: Trace, title: str) -> None:
    """jobs.parquet, timeseries.parquet, summary.csv/.md and the trace loading report."""
    pq.write_table(jobs, run_dir / "jobs.parquet", compression="zstd")
    pq.write_table(series, run_dir / "timeseries.parquet", compression="zstd")
    summary.to_csv(run_dir / "summary.csv", index=False)
    (run_dir / "summary.md").write_text(to_markdown(summary, title=title))
    (run_dir / "trace_report.json").write_text(json.dumps(
        {"source": trace.source, "origin": trace.origin, "jobs": trace.table.num_rows,
         "vcs": trace.vc_nodes, "from_cache": trace.from_cache, **trace.report.to_dict()}, indent=2))

