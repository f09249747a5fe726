"""A cluster run: load the trace, simulate every VC, write jobs/time-series/summary into the run folder."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig

from raysim.models.estimates import estimates_for
from raysim.policy import NEEDS_ESTIMATE
from raysim.report.results import cluster_series, merge_profiling, merge_series, read_records, write_jobs
from raysim.runtime.codec import jobs_batch
from raysim.runtime.coordinator import Coordinator
from raysim.report.summary import summarize, to_markdown
from raysim.runtime.sink import ResultSink
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


def vc_groups(vc_nodes: dict, vcs_per_actor: int | str) -> list[list[str]]:
    """VCs in layout order, packed `vcs_per_actor` to a group (one process/actor per group).

    "auto" packs them into as many groups as the Ray cluster has CPUs (one group without Ray);
    packing never changes results, only how the work is spread over processes."""
    names = list(vc_nodes)
    if vcs_per_actor == "auto":
        import ray

        cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
        vcs_per_actor = -(-len(names) // max(1, cpus))
    k = max(1, int(vcs_per_actor))
    return [names[i:i + k] for i in range(0, len(names), k)]


def simulate_to(out_dir, trace: Trace, spec: RunSpec, estimates=None, *, runtime: str = "local",
                window_s: int = 604_800, vcs_per_actor: int | str = 1, ray_options: dict | None = None,
                checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False, progress: bool = False,
                executor=None, job_extra: dict | None = None, estimator=None) -> dict:
    """Simulate every VC of `trace`, writing `out_dir`/jobs.parquet and timeseries.parquet.

    Results stream to disk as Parquet row groups while the run goes on. `runtime` is "local"
    (in-process) or "ray" (actors); both write identical files. `job_extra` adds per-job inputs
    (workload ids, share scores) to the job batches; `estimator` (e.g. a
    PeriodicDurationEstimator) fills in duration estimates while the run goes on. Returns the
    run's event and window counts and how many lost actors were rebuilt.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if executor is None and runtime == "ray" and vcs_per_actor == "auto":
        from raysim.runtime.ray_backend import ensure_ray

        ensure_ray((ray_options or {}).get("address"), (ray_options or {}).get("num_cpus"))  # to count its CPUs
    groups = vc_groups(spec.vc_nodes, vcs_per_actor)
    if executor is None:
        executor = make_executor(runtime, spec, groups, ray_options or {})
    # with checkpoints, the partial result files must outlive this process: they live beside them
    spool = Path(checkpoint_dir) / "results" if checkpoint_dir else out_dir / ".partial"
    sink = ResultSink(spool, list(spec.vc_nodes))
    coordinator = Coordinator(executor, jobs_batch(trace.table, estimates, job_extra), groups, sink,
                              t0=spec.t0, window_s=window_s, checkpoint_dir=checkpoint_dir,
                              checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                              origin=trace.origin, estimator=estimator)
    end, stage = coordinator.run()
    files = sink.close(end)
    write_jobs(trace.table, merge_profiling(read_records(files["records"]), stage), out_dir / "jobs.parquet")
    merge_series(files["series"], out_dir / "timeseries.parquet")
    if not checkpoint_dir:
        shutil.rmtree(spool, ignore_errors=True)
    return {"events": coordinator.events, "windows": coordinator.windows_run, "recoveries": coordinator.recoveries}


def simulate(trace: Trace, spec: RunSpec, estimates=None, **kwargs) -> tuple[pa.Table, pa.Table]:
    """`simulate_to` into a temporary folder; returns the (jobs, time series) tables read back.
    For small runs and tests: large runs should use simulate_to and read what they need."""
    with tempfile.TemporaryDirectory(prefix="raysim-") as tmp:
        simulate_to(tmp, trace, spec, estimates, **kwargs)
        return pq.read_table(Path(tmp) / "jobs.parquet"), pq.read_table(Path(tmp) / "timeseries.parquet")


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
    simulate_to(run_dir, trace, spec, estimates, runtime=rt.name, window_s=int(rt.window_s),
                vcs_per_actor=cfg.ray.vcs_per_actor, ray_options=dict(cfg.ray),
                checkpoint_dir=rt.checkpoint_dir, checkpoint_every=int(rt.checkpoint_every),
                resume=bool(rt.resume), progress=True, job_extra=job_extra, estimator=online)
    sim_wall = time.perf_counter() - sim_start
    jobs = pq.read_table(run_dir / "jobs.parquet",
                         columns=["vc", "submit_time", "end_time", "queue", "jct", "preemptions"])
    summary = summarize(jobs, run_dir / "timeseries.parquet")
    _plots(jobs, run_dir, summary, label=spec.policy)
    write_outputs(run_dir, summary, trace, title=f"{spec.policy} / {spec.placer} / {cfg.sim.compat}")
    overall = summary[summary.vc == "all"].iloc[0].to_dict()
    print(to_markdown(summary, title=f"raysim: {spec.policy}, {cfg.sim.compat} semantics"))
    print(f"avg JCT {overall['avg_jct']:.1f} s, avg queue {overall['avg_queue']:.1f} s over "
          f"{overall['jobs']} jobs; simulated in {sim_wall:.2f} s ({time.perf_counter() - wall:.2f} s total)")
    print(f"results: {run_dir}")
    return overall


def _plots(jobs, run_dir: Path, summary, label: str) -> None:
    from raysim.report.plots import run_plots

    run_plots(jobs.select(["jct"]).to_pandas(), cluster_series(run_dir / "timeseries.parquet"), summary,
              run_dir / "plots", label=label)


def write_outputs(run_dir: Path, summary, trace: Trace, title: str) -> None:
    """summary.csv/.md and the trace loading report (jobs and time series are already written)."""
    summary.to_csv(run_dir / "summary.csv", index=False)
    (run_dir / "summary.md").write_text(to_markdown(summary, title=title))
    (run_dir / "trace_report.json").write_text(json.dumps(
        {"source": trace.source, "origin": trace.origin, "jobs": trace.table.num_rows,
         "vcs": trace.vc_nodes, "from_cache": trace.from_cache, **trace.report.to_dict()}, indent=2))
