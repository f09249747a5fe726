"""A cluster run, top-down: load the trace and the cluster, prepare the policy's inputs, simulate
every VC, then write the summary, plots and reports into the run folder."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pyarrow.parquet as pq
from omegaconf import DictConfig

from raysim.policy import policy_class
from raysim.report.summary import summarize, to_markdown
from raysim.run.config import estimates_from_config, load_from_config, spec_from_config
from raysim.run.outputs import write_outputs, write_plots
from raysim.run.simulate import simulate_to

log = logging.getLogger("raysim")


def run_cluster(cfg: DictConfig, run_dir: Path) -> dict:
    """Run a trace replay as configured; returns the cluster-wide summary row as a dict."""
    if cfg.policy.get("kind") == "round":
        raise ValueError(f"policy={cfg.policy.name} is a round-based policy of Gavel's family: run it with "
                         "+experiment=gavel_trace (or gavel_continuous), see docs/gavel.md")
    wall = time.perf_counter()
    trace = load_from_config(cfg)
    for line in trace.report.lines():
        log.warning("%s", line)
    estimates, online = estimates_from_config(cfg, trace)
    if policy_class(cfg.policy.name).needs_estimate and estimates is None:
        raise ValueError(f"policy={cfg.policy.name} ranks jobs by estimated duration: set "
                         "estimator.source=file estimator.path=<CSV>, estimator.source=model or estimator.source=oracle")
    spec, job_extra = spec_from_config(cfg, trace)
    gpus = {t: 0 for t in spec.catalog.gpu_types}
    for pools in spec.layout.values():
        for p in pools:
            gpus[p.gpu_type] += p.gpus_per_node * p.nodes
    log.info("trace %s: %d jobs, %d VCs, %s GPUs; policy=%s placer=%s compat=%s runtime=%s",
             trace.source, trace.table.num_rows, len(spec.layout), ", ".join(f"{n} {t}" for t, n in gpus.items()),
             spec.policy, spec.placer, cfg.sim.compat, cfg.runtime.name)

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
    write_plots(jobs, run_dir, summary, label=spec.policy)
    write_outputs(run_dir, summary, trace, spec, title=f"{spec.policy} / {spec.placer} / {cfg.sim.compat}")
    overall = summary[summary.vc == "all"].iloc[0].to_dict()
    print(to_markdown(summary, title=f"raysim: {spec.policy}, {cfg.sim.compat} semantics"))
    print(f"avg JCT {overall['avg_jct']:.1f} s, avg queue {overall['avg_queue']:.1f} s over "
          f"{overall['jobs']} jobs; simulated in {sim_wall:.2f} s ({time.perf_counter() - wall:.2f} s total)")
    print(f"results: {run_dir}")
    return overall
