"""A cluster run, top-down: load the trace and the cluster, prepare the policy's inputs, simulate
every VC, then write the summary, plots and reports into the run folder."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
from omegaconf import DictConfig

from raysim.errors import ConfigError, TraceError
from raysim.policy import policy_class, policy_kind
from raysim.report.describe import run_description, run_overrides
from raysim.report.settings import report_settings
from raysim.run.values import plain, value
from raysim.report.summary import summarize
from raysim.tables import gpu_counts, plural, to_markdown
from raysim.run.cluster_settings import ClusterMode
from raysim.run.config import (check_cluster_config, estimates_from_config, load_from_config, policy_constants_of,
                               spec_from_config)
from raysim.run.outputs import record_capacity_inputs, record_wall, write_outputs, write_plots
from raysim.run.grouping import vc_groups
from raysim.run.simulate import simulate_to
from raysim.runtime.timing import bound_line
from raysim.run.overrides import in_multirun

log = logging.getLogger("raysim")


def run_cluster(cfg: DictConfig, run_dir: Path, checked: ClusterMode | None = None) -> dict:
    """Run a trace replay as configured; returns the cluster-wide summary row as a dict (the
    caller, raysim.run.run, writes report.html and names the folder). `checked`: the settings
    check_cluster_config returned for `cfg` (raysim.run.check_settings; None: checked here)."""
    m = checked or check_cluster_config(cfg)  # every value checked before anything is loaded or Ray is started
    if policy_class(cfg.policy.name).needs_estimate and cfg.estimator.source == "none":
        raise ConfigError("estimator.source", f"policy={cfg.policy.name} ranks jobs by estimated duration: set "
                          "estimator.source=file estimator.path=<CSV>, estimator.source=model or "
                          "estimator.source=oracle", "none")
    wall = time.perf_counter()
    trace = load_from_config(cfg)
    for line in trace.report.lines():
        log.warning("%s", line)
    check_not_empty(trace)
    estimates, online = estimates_from_config(cfg, trace)
    spec, job_extra = spec_from_config(cfg, trace, m)
    gpus = {t: 0 for t in spec.catalog.gpu_types}
    for pools in spec.layout.values():
        for p in pools:
            gpus[p.gpu_type] += p.gpus_per_node * p.nodes
    log.info("trace %s: %s, %s, %s; policy=%s placer=%s compat=%s runtime=%s quota=%s",
             trace.source, plural(trace.table.num_rows, "job"), plural(len(spec.layout), "VC"), gpu_counts(gpus),
             spec.policy, spec.placer, cfg.sim.compat, cfg.runtime.name, spec.quota.mode)

    read_s = time.perf_counter() - wall
    ray_s, own_ray = start_ray(cfg)
    check_local_ray_fits(cfg, spec)
    sim_start = time.perf_counter()
    rt = cfg.runtime
    counts = simulate_to(run_dir, trace, spec, estimates, runtime=rt.name, window_s=int(rt.window_s),
                vcs_per_actor=cfg.ray.vcs_per_actor, packing=cfg.ray.packing, ray_options=dict(cfg.ray),
                checkpoint_dir=rt.checkpoint_dir, checkpoint_every=int(rt.checkpoint_every),
                resume=bool(rt.resume), progress=True, job_extra=job_extra, estimator=online,
                stall_s=None if cfg.sim.stall_s == "off" else cfg.sim.stall_s)
    sim_wall = time.perf_counter() - sim_start
    if own_ray and not in_multirun():  # a sweep's runs share the Ray its first run started
        from raysim.runtime.ray_backend import stop_ray_in_background

        stop_ray_in_background()
    settings = report_settings(plain(cfg, "report"))
    columns = ["vc", "submit_time", "end_time", "queue", "jct", "preemptions", "finished"]
    if spec.quota.mode != "none":
        columns += ["ran_on_vc", "reclaims"]
    names = pq.ParquetFile(run_dir / "jobs.parquet").schema_arrow.names
    if spec.capacity is not None:
        columns += [c for c in names if c.startswith("interruptions")]
    if spec.spot is not None:
        columns += ["priority_class", "evictions", "hours_kept", "gpu_num"] + [c for c in names if c == "gpu_milli"]
    if spec.checkpoints:
        columns += ((["duration", "gpu_num"] if policy_class(spec.policy).duration_is_work else [])
                    + [c for c in names if c.startswith(("lost_gpu_s", "overhead_gpu_s"))])
    if spec.attempts is not None:
        columns += ["retries", "failed", "failed_gpu_s"]
    jobs = pq.read_table(run_dir / "jobs.parquet", columns=list(dict.fromkeys(columns)))
    summary = summarize(jobs, run_dir / "timeseries.parquet", interval=int(cfg.sim.sample_interval))
    unfinished = jobs.num_rows - int(pa.compute.sum(jobs.column("finished")).as_py() or 0)
    harvest = policy_kind(spec.policy) == "harvest"
    if unfinished:
        log.warning("%d job(s) did not finish%s (jobs.parquet: finished = false)", unfinished,
                    ": the node log ended first" if harvest else
                    ": Gavel's round mechanism dropped them after 5 failed micro-tasks (fewer steps left than GPUs)"
                    if policy_class(spec.policy).times_jobs else retired_reason(summary))
    if harvest:
        from raysim.harvest.metrics import with_harvest_figures

        summary = with_harvest_figures(summary, Path(run_dir), int(cfg.sim.sample_interval))
    window = policy_constants_of(cfg).get("window") if policy_class(spec.policy).kind == "round" else None
    if window is not None:
        summary = with_window_jct(summary, run_dir / "jobs.parquet", window)
    title = run_description(f"{Path(trace.source).parent.name or trace.source}: {spec.policy} / {spec.placer}" + (
        f" / quota={spec.quota.mode}" if spec.quota.mode != "none" else ""), cfg.sim.compat, run_overrides(run_dir))
    plots = settings.run_plots(in_multirun())
    if plots:
        write_plots(jobs, run_dir, summary, label=spec.policy, interval=int(cfg.sim.sample_interval), title=title)
    write_outputs(run_dir, summary, trace, spec, title=f"{spec.policy} / {spec.placer} / {cfg.sim.compat}")
    if spec.capacity is not None or spec.spot is not None:
        from raysim.report.capacity import write_lost_by_cause

        write_lost_by_cause(jobs, run_dir, title, plot=plots)
    if spec.capacity is not None:
        key = "harvest.node_log" if harvest else "cluster.capacity"
        record_capacity_inputs(run_dir, key, value(cfg, key), plain(cfg, "failures"))
    write_job_views(run_dir, settings, spec)
    record_wall(run_dir, {"read_s": read_s, "ray_start_s": ray_s, "simulate_s": sim_wall,
                          "write_s": time.perf_counter() - sim_start - sim_wall}, counts.get("timing"),
                counts.get("ray_nodes"))
    overall = summary[summary.vc == "all"].iloc[0].to_dict()
    print(to_markdown(summary, title=f"raysim: {spec.policy}, {cfg.sim.compat} semantics"))
    ray_text = f"; Ray start-up {ray_s:.2f} s" if ray_s is not None else ""
    print(f"avg JCT {overall['avg_jct']:,.1f} s, avg queue {overall['avg_queue']:,.1f} s over "
          f"{overall['jobs']:,} jobs; simulated in {sim_wall:.2f} s{ray_text} ({time.perf_counter() - wall:.2f} s total)")
    if "timing" in counts:  # (not when a resumed run had finished: nothing was simulated)
        print(bound_line(counts["timing"]))
    return overall


def retired_reason(summary) -> str:
    """Why jobs may not have finished under a retirement policy: the nodes it retired ('' if none)."""
    if "retired_nodes" not in summary.columns:
        return ""
    retired = int(summary.set_index("vc").at["all", "retired_nodes"])
    return (f": {retired:,} node(s) were retired for good, and a job needing more nodes than its VC has left never "
            "starts" if retired else "")


def write_job_views(run_dir: Path, settings, spec) -> None:
    """The views of jobs.parquet that `report.*` asks for: out_jobs.csv (Batsim's job table) and
    timeline.json (the per-job timeline)."""
    if settings.out_jobs:
        from raysim.report.batsim import write_out_jobs

        log.info("wrote %s (Batsim's job table)", write_out_jobs(run_dir))
    if settings.timeline:
        from raysim.report.timeline import write_timeline

        write_timeline(run_dir, max_jobs=settings.timeline_max_jobs, span=settings.timeline_range,
                       capacity=spec.capacity)


def with_window_jct(summary, jobs_path: Path, window):
    """The summary with `avg_jct_window`: the average JCT of the finished jobs whose ids lie in
    `window` ([first, last], Gavel's measured window), per VC and overall (`policy.window`)."""
    first, last = (int(v) for v in window)
    jobs = pq.read_table(jobs_path, columns=["job_id", "vc", "jct"]).to_pandas()
    jobs = jobs[(jobs.job_id >= first) & (jobs.job_id <= last)]
    means = jobs.groupby(jobs.vc.astype(str)).jct.mean().to_dict()
    means["all"] = jobs.jct.mean()
    summary = summary.copy()
    summary["avg_jct_window"] = summary.vc.map(means)
    return summary


def start_ray(cfg: DictConfig) -> tuple[float | None, bool]:
    """With runtime=ray: start (or connect to) Ray now, so that its start-up is not counted as
    simulation. Returns the seconds it took (None for runtime=local) and whether this run started
    it (False where it was up already, e.g. started by an earlier run of a sweep)."""
    if cfg.runtime.name != "ray":
        return None, False
    from raysim.runtime.ray_backend import ensure_ray

    start = time.perf_counter()
    started = ensure_ray(cfg.ray.address, cfg.ray.num_cpus)
    return time.perf_counter() - start, started


def check_not_empty(trace) -> None:
    """A trace with no job left to simulate is an error naming the file, not a run of nothing."""
    if trace.table.num_rows:
        return
    report = trace.report
    if not report.total:
        raise TraceError(trace.source, "no jobs to simulate: the trace has no data rows")
    reasons = "; ".join(f"{n} {reason}" for reason, n in report.counts.most_common(3))
    raise TraceError(trace.source, f"no jobs to simulate: all {report.total} row(s) were skipped or filtered "
                                   f"({reasons})")


def check_local_ray_fits(cfg: DictConfig, spec) -> None:
    """The actors of a run on a local Ray (started by this run or by an earlier run of its sweep)
    must fit its CPUs, each reserving ray.actor_cpus: otherwise Ray waits for them forever.
    Checked once Ray is up, before any actor starts, against the CPUs Ray counts (a container's
    limit included) and the groups the run will use (ray.vcs_per_actor=auto packs the VCs into one
    group per CPU), and the profiler stage's actor where the run has one (policy=lucid)."""
    if cfg.runtime.name != "ray" or cfg.ray.address or os.environ.get("RAY_ADDRESS"):
        return
    import ray

    cpus = float(ray.cluster_resources().get("CPU", 0))
    # (by cost, how many groups there are does not depend on the costs: any positive ones count them)
    costs = dict.fromkeys(spec.vcs, 1.0) if cfg.ray.packing == "cost" else None
    groups = len(vc_groups(spec.vcs, cfg.ray.vcs_per_actor, spec.quota, costs=costs))
    actors = groups + (1 if spec.profiler else 0)
    need = actors * float(cfg.ray.actor_cpus)
    if need > cpus + 1e-9:
        stage = ", and the profiler stage" if spec.profiler else ""
        raise ConfigError("ray.actor_cpus", f"{plural(actors, 'actor')} ({plural(groups, 'VC group')} of "
                          f"ray.vcs_per_actor={cfg.ray.vcs_per_actor}{stage})"
                          f" x {float(cfg.ray.actor_cpus):g} CPU = {need:g} CPUs, more than the {cpus:g} of the local "
                          "Ray (ray.num_cpus): Ray would wait for them forever; lower ray.actor_cpus, or raise "
                          "ray.vcs_per_actor", cfg.ray.actor_cpus)
