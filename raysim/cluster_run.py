"""A cluster run: load the trace, simulate every VC, write jobs/time-series/summary into the run folder."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
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
    if t.synth:
        from raysim.trace.synth import load_synth

        return load_synth(dict(t.synth), cache_dir=t.cache_dir)
    if not t.path:
        raise ValueError("trace.path is not set: give a trace file or folder, or use +experiment=venus")
    return load_trace(t.path, fmt=t.format, vc_config=t.vc_config, gpus_per_node=cfg.cluster.gpus_per_node,
                      on_error=t.on_error, state_filter=t.state_filter, origin=t.origin, cache=t.cache,
                      cache_dir=t.cache_dir, reader_options=dict(t.reader_options or {}))


def spec_from_config(cfg: DictConfig, trace: Trace) -> tuple[RunSpec, dict | None]:
    """The run's spec, and extra per-job inputs (Lucid: workload ids and share scores)."""
    params = SimParams.for_mode(cfg.sim.compat, sample_interval=int(cfg.sim.sample_interval), seed=int(cfg.seed))
    if cfg.sim.network not in ("off", "on", False, True):
        raise ValueError(f"sim.network must be off or on, not {cfg.sim.network!r}")
    network = dict(cfg.network) if cfg.sim.network in ("on", True) else None
    spec = RunSpec(cfg.policy.name, cfg.placer.name, params, dict(trace.vc_nodes),
                   gpus_per_node=int(cfg.cluster.gpus_per_node), network=network)
    if cfg.policy.name != "lucid":
        return spec, None
    from raysim.lucid_setup import lucid_inputs

    return lucid_inputs(cfg, trace, spec)


def vc_groups(vc_nodes: dict, vcs_per_actor: int) -> list[list[str]]:
    """VCs in layout order, packed `vcs_per_actor` to a group (one process/actor per group)."""
    names = list(vc_nodes)
    k = max(1, int(vcs_per_actor))
    return [names[i:i + k] for i in range(0, len(names), k)]


def simulate(trace: Trace, spec: RunSpec, estimates=None, *, runtime: str = "local", window_s: int = 604_800,
             vcs_per_actor: int = 1, ray_options: dict | None = None, checkpoint_dir=None,
             checkpoint_every: int = 1, resume: bool = False, progress: bool = False, executor=None,
             job_extra: dict | None = None, stats: dict | None = None, estimator=None):
    """Simulate every VC of `trace`; return the (jobs, time series) Arrow tables.

    `runtime` is "local" (in-process) or "ray" (actors); both give identical jobs tables.
    `job_extra` adds per-job inputs (workload ids, share scores) to the job batches; `stats`, when
    given, receives the run's event and window counts. `estimator` (e.g. a
    PeriodicDurationEstimator) fills in duration estimates while the run goes on.
    """
    if spec.profiler and checkpoint_dir:
        raise ValueError("runtime.checkpoint_dir is not supported with Lucid's profiler stage yet")
    groups = vc_groups(spec.vc_nodes, vcs_per_actor)
    if executor is None:
        executor = make_executor(runtime, spec, groups, ray_options or {})
    coordinator = Coordinator(executor, jobs_batch(trace.table, estimates, job_extra), groups, t0=spec.t0,
                              window_s=window_s, checkpoint_dir=checkpoint_dir,
                              checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                              origin=trace.origin, estimator=estimator)
    records, samples, end, stage = coordinator.run()
    if stats is not None:
        stats.update(events=coordinator.events, windows=coordinator.windows_run)
    series = series_by_vc(samples, list(spec.vc_nodes), last=end)
    return jobs_table(trace.table, merge_profiling(records, stage)), timeseries_table(series)


def merge_profiling(records: pa.Table, stage: pa.Table | None) -> pa.Table:
    """Combine VC job records with the profiler stage's: jobs finished while profiled take the
    profiler's record; the others add their profiling wait to their queue."""
    if stage is None or not stage.num_rows:
        return records
    finished = stage.column("finished").to_numpy(zero_copy_only=False)
    seq = stage.column("seq").to_numpy()
    in_profiler = pa.table({
        "seq": seq[finished], "start_time": stage.column("prof_start").to_numpy()[finished],
        "end_time": stage.column("prof_end").to_numpy()[finished],
        "queue": stage.column("prof_queue").to_numpy()[finished],
        "preemptions": np.zeros(int(finished.sum()), np.int64), "first_node": np.full(int(finished.sum()), -1),
        "num_nodes": np.zeros(int(finished.sum()), np.int64), "shared": np.zeros(int(finished.sum()), np.int64),
    }).cast(records.schema)
    merged = pa.concat_tables([records, in_profiler])
    wait = np.zeros(int(merged.column("seq").to_numpy().max()) + 1 if merged.num_rows else 0, np.int64)
    profiled = np.zeros_like(wait)
    wait[seq[~finished]] = stage.column("prof_queue").to_numpy()[~finished]
    profiled[seq] = 1
    mseq = merged.column("seq").to_numpy()
    queue = merged.column("queue").to_numpy() + wait[mseq]
    merged = merged.set_column(merged.schema.get_field_index("queue"), "queue", pa.array(queue))
    return merged.append_column("profiled", pa.array(profiled[mseq]))


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
    online = None
    if est.source == "model":
        from raysim.models.online import PeriodicDurationEstimator

        online = PeriodicDurationEstimator(trace.table, trace.origin, period_s=int(est.period_days * 86_400),
                                           kind=est.kind, seed=int(cfg.seed))
        estimates = np.full(trace.table.num_rows, np.nan)
    else:
        estimates = estimates_for(trace.table, source=est.source, path=est.path, column=est.column,
                                  negative_to=est.negative_to)
    if cfg.policy.name in NEEDS_ESTIMATE and estimates is None:
        raise ValueError(f"policy={cfg.policy.name} ranks jobs by estimated duration: set "
                         "estimator.source=file estimator.path=<CSV>, estimator.source=model or estimator.source=oracle")
    spec, job_extra = spec_from_config(cfg, trace)
    log.info("trace %s: %d jobs, %d VCs, %d GPUs; policy=%s placer=%s compat=%s runtime=%s",
             trace.source, trace.table.num_rows, len(trace.vc_nodes),
             sum(trace.vc_nodes.values()) * spec.gpus_per_node, spec.policy, spec.placer,
             cfg.sim.compat, cfg.runtime.name)

    sim_start = time.perf_counter()
    rt = cfg.runtime
    jobs, series = simulate(trace, spec, estimates, runtime=rt.name, window_s=int(rt.window_s),
                            vcs_per_actor=int(cfg.ray.vcs_per_actor), ray_options=dict(cfg.ray),
                            checkpoint_dir=rt.checkpoint_dir, checkpoint_every=int(rt.checkpoint_every),
                            resume=bool(rt.resume), progress=True, job_extra=job_extra, estimator=online)
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

