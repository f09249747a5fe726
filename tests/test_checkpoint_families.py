"""One checkpoint model for every policy family (issue 49, item 3): `checkpoint.*` prices a stop
caused by a node going down the same way under round-based and elastic policies (and harvesting:
tests/test_harvest_checkpoint.py) as under event-driven ones (raysim.sim.checkpoint), with the same result columns, on Ray as in one process;
a lone round-based job's mean JCT under exponential failures is Daly's; without checkpoint settings
nothing changes (tests/test_golden*.py, the Gavel and Sia references)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from test_elastic_policy import config as elastic_config
from test_elastic_policy import inputs  # noqa: F401  (a fixture)
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.sim.checkpoint import Checkpointing, daly_time

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = ("checkpoint.interval_s=1800", "checkpoint.write_s=60", "checkpoint.restart_s=120")


def configured(*overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=["runtime=local", "trace.cache=false", *overrides])


def simulated(tmp_path: Path, *overrides, runtime: str = "local") -> Path:
    """jobs.parquet of the run of `overrides` on `runtime`, written under tmp_path/runtime."""
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
    from raysim.run.simulate import simulate_to

    cfg = configured(*overrides)
    check_cluster_config(cfg)
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    simulate_to(tmp_path / runtime, trace, spec, None, runtime=runtime, job_extra=extra)
    return tmp_path / runtime / "jobs.parquet"


# ------------------------------------------------------------------------------ round-based policies
def lone_job(tmp_path: Path, *overrides) -> dict:
    """One 8-GPU job of 100 s on a VC of one node that goes down at 36 s and comes back at 40 s,
    under max_min_fairness (Gavel's 360-s rounds, 1,000 steps per second of its duration)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                       "1,vc,u,8,4,0,100,COMPLETED\n")
    (tmp_path / "vc_config.csv").write_text(",num\nvc,1\n")
    (tmp_path / "nodes.csv").write_text("time,vc,node,event\n36,vc,0,down\n40,vc,0,up\n")
    path = simulated(tmp_path, "policy=max_min_fairness", f"trace.path={tmp_path / 'jobs.csv'}",
                     f"cluster.capacity={tmp_path / 'nodes.csv'}", *overrides)
    return pq.read_table(path).to_pylist()[0]


def test_a_round_based_job_stopped_once_keeps_its_checkpoint_and_restores(tmp_path):
    job = lone_job(tmp_path, "checkpoint.interval_s=30", "checkpoint.write_s=5", "checkpoint.restart_s=10")
    # its micro-task is its run's 115 s (100 s of work, writes at 30, 60 and 90); down at 36 it has
    # written its first checkpoint (at 35) and done 1 s more, which it loses. The round ends at 115
    # (the micro-task's planned finish); the next run restores (10 s) and does the 70 s left from 30
    # with writes at 60 and 90: 90 s, ending at 205.
    assert job["end_time"] == 205 and job["interruptions"] == 1
    assert job["lost_gpu_s"] == 1 * 8 and job["lost_gpu_s_node_down"] == 1 * 8
    assert job["overhead_gpu_s"] == (5 + 10 + 10) * 8


def test_without_checkpoints_a_round_keeps_the_steps_done_as_it_always_did(tmp_path):
    job = lone_job(tmp_path)  # the 36 s done count; the next round (at 100) does the other 64
    assert job["end_time"] == 164 and "lost_gpu_s" not in job


def demo(*overrides):
    return ("+experiment=gavel_hetero_demo", "failures=exponential", "failures.node_mtbf_h=2",
            "failures.repair_h=0.5", *overrides)


@pytest.fixture(scope="module")
def hetero_100(tmp_path_factory) -> Path:
    """The first 100 jobs of the heterogeneous demo trace (2 VCs over V100, P100 and K80)."""
    path = tmp_path_factory.mktemp("hetero_100") / "jobs.csv"
    lines = (REPO / "traces" / "hetero_demo" / "jobs.csv").read_text().splitlines()
    path.write_text("\n".join(lines[:101]) + "\n")
    return path


def test_round_based_runs_under_failures_price_their_stops(tmp_path, hetero_100):
    jobs = pq.read_table(simulated(tmp_path, *demo("policy=max_min_fairness", f"trace.path={hetero_100}",
                                                   *CHECKPOINTS))).to_pandas()
    assert jobs.finished.all() and (jobs.lost_gpu_s >= 0).all() and (jobs.overhead_gpu_s >= 0).all()
    stopped = jobs.interruptions > 0
    assert stopped.any() and (jobs.lost_gpu_s[~stopped] == 0).all() and jobs.lost_gpu_s[stopped].sum() > 0
    assert (jobs.lost_gpu_s == jobs.lost_gpu_s_failure).all()
    # a job of more than one interval writes checkpoints (the engine's job lengths are in microseconds here)
    assert (jobs.overhead_gpu_s[jobs.duration > 1800] > 0).all() and jobs.overhead_gpu_s.max() < 1e7


@pytest.mark.slow
def test_checkpoints_under_round_based_policies_are_the_same_on_ray(ray_local, tmp_path, hetero_100):  # noqa: F811
    overrides = demo("policy=max_min_fairness", f"trace.path={hetero_100}", *CHECKPOINTS)
    local = simulated(tmp_path, *overrides)
    assert simulated(tmp_path, *overrides, runtime="ray").read_bytes() == local.read_bytes()


# ----------------------------------------------------------------------------------- elastic policies
class Training:
    """A stand-in for an elastic job: one unit of progress per second of training."""

    def __init__(self):
        self.progress, self.epoch, self.completion = 0.0, 0, None

    def _train(self, now, seconds):
        self.progress += seconds

    def _hold(self, gpus, seconds):
        pass


def test_an_elastic_run_goes_back_to_its_last_checkpoint():
    from raysim.elastic.job import CheckpointedRun

    job, run = Training(), CheckpointedRun(Checkpointing(30, 5, 10))
    assert run.begin(job, 2, 25.0) == 25.0  # the first run pays Sia's reconfiguration
    run.advance(job, 0.0, 100.0)  # trains 30, writes 5, trains 30, writes 5, trains 30
    assert job.progress == 90 and run.saved == (60, 0)
    assert run.stop(job) == (30, 10 * 2) and job.progress == 60  # 30 s lost, 2 writes x 2 GPUs
    assert run.begin(job, 1, 25.0) == 0.0  # after a stop: its own restore instead
    run.advance(job, 0.0, 12.0)  # restores 10, trains 2
    assert job.progress == 62 and run.finish() == 10 * 1


def elastic_overrides(inputs, *more):  # noqa: F811
    return elastic_config(inputs, "sia", "failures=exponential", "failures.node_mtbf_h=0.1",
                          "failures.repair_h=0.01", *more)


def elastic_run(inputs, out: Path, *more, runtime: str = "local"):  # noqa: F811
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
    from raysim.run.simulate import simulate_to

    cfg = elastic_overrides(inputs, *more)
    check_cluster_config(cfg)
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    simulate_to(out / runtime, trace, spec, None, runtime=runtime, job_extra=extra)
    return out / runtime / "jobs.parquet"


ELASTIC_CHECKPOINTS = ("checkpoint.interval_s=60", "checkpoint.write_s=5", "checkpoint.restart_s=10")


def test_elastic_runs_under_failures_price_their_stops(inputs, tmp_path):  # noqa: F811
    jobs = pq.read_table(elastic_run(inputs, tmp_path, *ELASTIC_CHECKPOINTS)).to_pandas()
    assert jobs.finished.all() and (jobs.lost_gpu_s >= 0).all() and (jobs.overhead_gpu_s > 0).all()
    stopped = jobs.interruptions > 0
    assert (jobs.lost_gpu_s[~stopped] == 0).all() and jobs.lost_gpu_s[stopped].sum() > 0
    assert (jobs.lost_gpu_s == jobs.lost_gpu_s_failure).all()
    plain = pq.read_table(elastic_run(inputs, tmp_path / "plain")).to_pandas()
    assert "lost_gpu_s" not in plain and not plain.jct.equals(jobs.jct)


@pytest.mark.slow
def test_checkpoints_under_elastic_policies_are_the_same_on_ray(ray_local, inputs, tmp_path):  # noqa: F811
    local = elastic_run(inputs, tmp_path, *ELASTIC_CHECKPOINTS)
    assert elastic_run(inputs, tmp_path, *ELASTIC_CHECKPOINTS, runtime="ray").read_bytes() == local.read_bytes()


# -------------------------------------------------------------------------------------------- Daly
#: (interval, write, restore, MTBF as a multiple of the interval): tests/test_daly.py's points
POINTS = [(3600, 120, 300, 1), (1800, 300, 600, 2)]


def round_mean(trace: Path, cp: Checkpointing, mtbf_s: float) -> float:
    """Mean JCT of the trace's jobs under max_min_fairness with 60-s rounds (a job stopped mid-round
    waits for the round's end: about half a round per failure, which Daly's formula does not have),
    exponential failures repaired at once and checkpoint-restart `cp`."""
    path = simulated(trace.parent, f"trace.path={trace}", "policy=max_min_fairness", "policy.round_s=60",
                     "failures=exponential", f"failures.node_mtbf_h={mtbf_s / 3600!r}", "failures.repair_h=0",
                     f"checkpoint.interval_s={cp.interval_s}", f"checkpoint.write_s={cp.write_s}",
                     f"checkpoint.restart_s={cp.restart_s}")
    jobs = pq.read_table(path, columns=["jct", "finished"]).to_pandas()
    assert jobs.finished.all()
    return float(jobs.jct.mean())


def daly_error(tmp_path: Path, jobs: int, point) -> float:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_daly import WORK

    from raysim.trace.lone import write_lone_jobs

    interval, write, restart, m = point
    cp = Checkpointing(interval, write, restart)
    return round_mean(write_lone_jobs(tmp_path, jobs, WORK), cp, m * interval) / daly_time(WORK, cp, m * interval) - 1


def test_a_lone_round_based_job_takes_dalys_time_in_the_fast_suite(tmp_path):
    assert abs(daly_error(tmp_path, 150, (3600, 120, 300, 4))) < 0.04


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_a_lone_round_based_job_takes_dalys_time(tmp_path, point):
    assert abs(daly_error(tmp_path, 1000, point)) < 0.025


# ---------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("overrides,key", [
    (["+experiment=harvest_summit", "checkpoint.interval_s=60", "checkpoint.column=task",
      "+checkpoint.apps.J0.interval_s=20"], "checkpoint.apps.J0"),
    (["+experiment=gavel_hetero_demo", "policy=max_min_fairness", "checkpoint.interval_s=60",
      "checkpoint.column=model", "+checkpoint.apps.bert.interval_s=20"], "checkpoint.apps.bert"),
])
def test_what_the_model_cannot_price_is_one_line_naming_the_key(overrides, key):
    from raysim.errors import ConfigError, user_error_message
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as err:
        check_cluster_config(configured(*overrides))
    message = user_error_message(err.value)
    assert message.startswith(key) and "\n" not in message
