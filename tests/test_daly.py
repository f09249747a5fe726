"""Daly's model holds (issue 34): thousands of identical jobs submitted at once on a cluster where each
finds its nodes, under exponential node failures repaired at once (`failures=exponential
failures.repair_h=0`) and checkpoint-restart, finish on average in the time Daly's formula gives
(raysim.sim.checkpoint.daly_time): within 3 % at points (interval, write, restore, MTBF) with the MTBF
from 0.5 to 10 intervals, and over a sweep of intervals the formula's best one is within 2 % of the
best simulated one; the same for 4-node jobs, whose MTBF is a node's / 4.

Run as a script (`python tests/test_daly.py`) it prints the table of docs/failures.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from raysim.sim.checkpoint import Checkpointing, daly_time
from raysim.trace.lone import write_lone_jobs

WORK = 8 * 3600  # each job's work (s)
#: (interval, write, restore, MTBF as a multiple of the interval)
POINTS = [(3600, 120, 300, 0.5), (3600, 120, 300, 1), (3600, 120, 300, 2), (3600, 120, 300, 4),
          (3600, 120, 300, 10), (1800, 300, 600, 1), (7200, 60, 60, 0.5)]
#: the interval sweep's write, restore and MTBF, and its intervals
SWEEP = (120, 300, 7200, (300, 600, 900, 1200, 1800, 2700, 3600))


def simulated_mean(trace: Path, cp: Checkpointing, node_mtbf_s: float, seed: int = 0) -> float:
    """Mean JCT of the trace's jobs under `python -m raysim trace.path=<trace> failures=exponential
    failures.node_mtbf_h=H failures.repair_h=0 checkpoint.* runtime=local`."""
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    overrides = [f"trace.path={trace}", "failures=exponential", f"failures.node_mtbf_h={node_mtbf_s / 3600!r}",
                 "failures.repair_h=0", f"checkpoint.interval_s={cp.interval_s}", f"checkpoint.write_s={cp.write_s}",
                 f"checkpoint.restart_s={cp.restart_s}", "runtime=local", f"seed={seed}", "trace.cache=false"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    trace_ = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace_)
    jobs, _ = simulate(trace_, spec, None, job_extra=extra)
    jct = jobs.column("jct").to_numpy()
    assert jobs.column("finished").to_numpy().all()
    return float(jct.mean())


def point(trace: Path, interval, write, restart, mtbf_s, nodes_per_job=1):
    """(formula, simulated) mean JCT: the formula at the job's MTBF, the nodes failing nodes_per_job
    times less often."""
    cp = Checkpointing(interval, write, restart)
    return daly_time(WORK, cp, mtbf_s), simulated_mean(trace, cp, mtbf_s * nodes_per_job)


def test_one_point_in_the_fast_suite(tmp_path):
    formula, simulated = point(write_lone_jobs(tmp_path, 500, WORK), 3600, 120, 300, 3600)
    assert abs(simulated / formula - 1) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("nodes_per_job,jobs", [(1, 2000), (4, 500)])
def test_mean_jct_is_dalys_at_every_point(tmp_path, nodes_per_job, jobs):
    trace = write_lone_jobs(tmp_path, jobs, WORK, nodes_per_job)
    for interval, write, restart, m in POINTS:
        formula, simulated = point(trace, interval, write, restart, m * interval, nodes_per_job)
        assert abs(simulated / formula - 1) < 0.03, (interval, write, restart, m, formula, simulated)


@pytest.mark.slow
@pytest.mark.parametrize("nodes_per_job,jobs", [(1, 2000), (4, 500)])
def test_dalys_best_interval_is_the_best_simulated_one(tmp_path, nodes_per_job, jobs):
    trace = write_lone_jobs(tmp_path, jobs, WORK, nodes_per_job)
    write, restart, mtbf, intervals = SWEEP
    formula = {tau: daly_time(WORK, Checkpointing(tau, write, restart), mtbf) for tau in intervals}
    simulated = {tau: simulated_mean(trace, Checkpointing(tau, write, restart), mtbf * nodes_per_job)
                 for tau in intervals}
    best = min(formula, key=formula.get)
    assert simulated[best] <= 1.02 * min(simulated.values()), (best, simulated)


def main(folder: Path) -> None:
    """Print the table of docs/failures.md: every point and the sweep, for 1- and 4-node jobs."""
    print("| nodes/job | tau (s) | delta (s) | R (s) | M (s) | formula (s) | simulated (s) | error % |")
    print("|---|---|---|---|---|---|---|---|")
    for nodes, jobs in ((1, 2000), (4, 500)):
        trace = write_lone_jobs(folder / f"n{nodes}", jobs, WORK, nodes)
        rows = [(i, w, r, m * i) for i, w, r, m in POINTS]
        rows += [(tau, SWEEP[0], SWEEP[1], SWEEP[2]) for tau in SWEEP[3]]
        for interval, write, restart, mtbf in rows:
            formula, simulated = point(trace, interval, write, restart, mtbf, nodes)
            print(f"| {nodes} | {interval} | {write} | {restart} | {mtbf:g} | {formula:.0f} | {simulated:.0f} | "
                  f"{100 * (simulated / formula - 1):+.2f} |", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/raysim-daly"))
