"""Checkpoint-restart (raysim.sim.checkpoint): the arithmetic of a run's span and of where a stopped
run stands, and hand-built cases on one VC of 8-GPU nodes (clean semantics): a failure during a
checkpoint write loses the segment; a failure during a restore restores again; a 2-node job loses
both nodes' work; a policy preemption costs the work since the last checkpoint; without
checkpoint settings nothing changes."""

from __future__ import annotations

import math

import pytest
from simutil import NO_PAGES, batch, pools

from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.capacity import DOWN, UP, CapacityPlan, VCCapacity
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.extensions import Capacity, Checkpoints

CP = Checkpointing(interval_s=30, write_s=5, restart_s=10)


# ------------------------------------------------------------------------------------ the arithmetic
def test_writes_fall_strictly_between_the_start_and_the_end():
    assert CP.writes(0, 100) == 3  # at 30, 60, 90
    assert CP.writes(0, 90) == 2  # not at 90: no write at completion
    assert CP.writes(30, 100) == 2 and CP.writes(90, 100) == 0 and CP.writes(0, 0) == 0
    assert CP.span(0, 100, False) == 115 and CP.span(30, 100, True) == 10 + 70 + 10


@pytest.mark.parametrize("elapsed, where", [
    (5, (0, 0, 5)),  # restoring: nothing new kept, the restore starts over
    (10 + 20, (0, 20, 10)),  # working on the first segment
    (10 + 33, (0, 30, 13)),  # writing the first checkpoint: the segment is lost
    (10 + 35, (30, 0, 15)),  # the write completed
    (10 + 36, (30, 1, 15)),
    (10 + 3 * 35 + 9, (90, 9, 25)),  # the last segment: no write follows it
])
def test_where_a_stopped_run_stands(elapsed, where):
    assert CP.at(0, 100, True, elapsed) == where


def test_fractional_elapsed_times_of_jobs_at_a_rate():
    assert CP.at(0, 100, False, 47.5) == (30, 12.5, 5)


# ---------------------------------------------------------------------------------------- the engine
def vc(events, *, nodes=1, policy="fifo", jobs=1, checkpoint=CP):
    """A VC of `nodes` 8-GPU nodes whose capacity events are (time, node, DOWN or UP, cause)."""
    params = SimParams.for_mode("clean")
    return VCSimulator("vc", pools(nodes), make_policy(policy, params=params),
                       make_placer("consolidate", params=params), params,
                       extensions=[Capacity(CapacityPlan(("failure",), {"vc": VCCapacity(tuple(events), (), jobs)}))]
                       + ([Checkpoints(checkpoint)] if checkpoint else []))


def run_jobs(sim, jobs):
    sim.add_jobs(batch(jobs))
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


def test_an_uninterrupted_job_writes_its_checkpoints_and_none_at_the_end():
    r = run_jobs(vc([]), [(0, 100, 8)])
    assert r["end_time"] == [115] and r["lost_gpu_s"] == [0] and r["overhead_gpu_s"] == [15 * 8]


def test_a_failure_during_a_checkpoint_write_loses_the_segment():
    r = run_jobs(vc([(33, 0, DOWN, 0), (40, 0, UP, 0)]), [(0, 100, 8)])
    # at 33 it was writing its first checkpoint: nothing kept; from 40 a restore and the whole run again
    assert r["end_time"] == [40 + 10 + 115]
    assert r["lost_gpu_s"] == [30 * 8] and r["overhead_gpu_s"] == [(3 + 10 + 15) * 8]


def test_a_failure_after_a_write_keeps_the_checkpoint():
    r = run_jobs(vc([(36, 0, DOWN, 0), (40, 0, UP, 0)]), [(0, 100, 8)])
    assert r["end_time"] == [40 + 10 + 70 + 2 * 5]
    assert r["lost_gpu_s"] == [1 * 8] and r["overhead_gpu_s"] == [(5 + 10 + 10) * 8]


def test_a_failure_during_a_restart_restarts_the_restart():
    events = [(33, 0, DOWN, 0), (40, 0, UP, 0), (45, 0, DOWN, 0), (50, 0, UP, 0)]
    r = run_jobs(vc(events), [(0, 100, 8)])
    assert r["end_time"] == [50 + 10 + 115] and r["interruptions"] == [2]
    assert r["lost_gpu_s"] == [30 * 8] and r["overhead_gpu_s"] == [(3 + 5 + 10 + 15) * 8]


def test_a_two_node_job_loses_both_nodes_work():
    r = run_jobs(vc([(36, 1, DOWN, 0), (40, 1, UP, 0)], nodes=2), [(0, 100, 16)])
    assert r["num_nodes"] == [2] and r["end_time"] == [40 + 10 + 70 + 2 * 5]
    assert r["lost_gpu_s"] == [1 * 16] and r["overhead_gpu_s"] == [(5 + 10 + 10) * 16]


def test_a_job_at_half_speed_writes_and_loses_in_its_own_seconds():
    sim = vc([(62, 0, DOWN, 0), (70, 0, UP, 0)])
    sim.add_jobs(batch([(0, 100, 8)]))
    sim.run(until=11)
    sim.set_rate_factor(0, "share", 0.5, 10)  # (as a GPU-sharing partner would)
    sim.run()
    r = {k: v.tolist() for k, v in sim.results().items()}
    # by 62: 10 + 52 x 0.5 = 36 job seconds: the first write done at 35, 1 s of work lost; at full speed again
    assert r["end_time"] == [70 + 10 + 70 + 2 * 5]
    assert r["lost_gpu_s"] == [1 * 8] and r["overhead_gpu_s"] == [(5 + 10 + 10) * 8]


def test_policy_preemptions_cost_the_work_since_the_last_checkpoint():
    cp = Checkpointing(interval_s=30, write_s=0, restart_s=10)
    r = run_jobs(vc([], policy="srtf", jobs=2, checkpoint=cp), [(0, 1000, 8), (50, 100, 8)])
    # srtf preempts the long job for the short one at 50: it keeps 30 s of work, loses 20
    assert r["preemptions"] == [1, 0] and r["end_time"][1] == 150
    assert r["end_time"][0] == 150 + 10 + 970
    assert r["lost_gpu_s"] == [20 * 8, 0] and r["overhead_gpu_s"] == [10 * 8, 0]


def test_without_checkpoints_results_have_no_checkpoint_columns():
    r = run_jobs(vc([(36, 0, DOWN, 0), (40, 0, UP, 0)], checkpoint=None), [(0, 100, 8)])
    assert r["end_time"] == [140] and "lost_gpu_s" not in r


# ---------------------------------------------------------------------------------------- whole runs
def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=["+experiment=venus", "runtime=local", *overrides])


def test_venus_with_a_node_log_and_checkpoints(tmp_path):
    from raysim.report.schema import read_jobs
    from raysim.run import run

    log = tmp_path / "log.csv"
    log.write_text("time,vc,node,event\n86400,vcEwI,0,down\n90000,vcEwI,1,down\n100000,vcEwI,0,up\n"
                   "200000,vcEwI,1,up\n")
    out = tmp_path / "run"
    run(compose("policy=tiresias", f"cluster.capacity={log}", "checkpoint.interval_s=1800",
                "checkpoint.write_s=60", "checkpoint.restart_s=120", *NO_PAGES), out)
    jobs = read_jobs(out).to_pandas()  # (checked against the result schema: the checkpoint group)
    assert jobs.finished.all() and (jobs.overhead_gpu_s >= 0).all() and (jobs.lost_gpu_s >= 0).all()
    stopped = jobs[(jobs.interruptions > 0) | (jobs.preemptions > 0)]
    assert (jobs.lost_gpu_s[jobs.index.difference(stopped.index)] == 0).all() and stopped.lost_gpu_s.sum() > 0
    # every job of more than one interval writes checkpoints
    assert (jobs.overhead_gpu_s[jobs.duration > 1800] > 0).all()


@pytest.mark.parametrize("overrides,key", [
    (["checkpoint.interval_s=-5"], "checkpoint.interval_s"),
    (["checkpoint.interval_s=nan"], "checkpoint.interval_s"),
    (["checkpoint.interval_s=1.5"], "checkpoint.interval_s"),
    (["checkpoint.interval_s=60", "checkpoint.write_s=inf"], "checkpoint.write_s"),
    (["checkpoint.interval_s=60", "checkpoint.restart_s=-1"], "checkpoint.restart_s"),
    (["checkpoint.interval_s=60", "checkpoint.restart_s=1e18"], "checkpoint.restart_s"),
    (["checkpoint.interval_s=1e30"], "checkpoint.interval_s"),
    (["checkpoint.write_s=5"], "checkpoint.write_s"),
    (["checkpoint.restart_s=5"], "checkpoint.restart_s"),
    (["checkpoint.interval_s=60", "policy=max_min_fairness",
      "checkpoint.column=model", "+checkpoint.apps.bert.interval_s=20"], "checkpoint.apps.bert"),
    (["checkpoint.interval_s=60", "sim.compat=lucid"], "checkpoint.interval_s"),
    (["checkpoint.interval_s=60", "policy=lucid"], "checkpoint.interval_s"),
])
def test_bad_checkpoint_settings_are_one_line_naming_the_key(overrides, key):
    from raysim.errors import ConfigError, user_error_message
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as err:
        check_cluster_config(compose(*overrides))
    message = user_error_message(err.value)
    assert key in message and "\n" not in message


def test_dalys_time_tends_to_the_span_when_failures_are_rare_and_grows_with_them():
    from raysim.sim.checkpoint import daly_time

    assert daly_time(100, CP, 1e12) == pytest.approx(CP.span(0, 100, False))
    assert daly_time(100, CP, 1000) > daly_time(100, CP, 10_000) > 115
    # one segment, no restore: M (e^(L/M) - 1)
    assert daly_time(30, Checkpointing(30), 60) == pytest.approx(60 * (math.e ** 0.5 - 1))


# ---------------------------------------------------------------------------- per application
def apps_run(tmp_path, *overrides):
    """Three 8-GPU jobs of 100 s (models bert, resnet, gpt), each alone on a node; every node is down
    from 36 s to 40 s. The run's settings: a checkpoint every 30 s, writes of 5 s, restores of 10 s."""
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,model\n"
                                       + "".join(f"{i},vc,u,8,4,0,100,COMPLETED,{m}\n"
                                                 for i, m in enumerate(("bert", "resnet", "gpt"), 1)))
    (tmp_path / "vc_config.csv").write_text(",num\nvc,3\n")
    (tmp_path / "nodes.csv").write_text("time,vc,node,event\n" + "".join(
        f"36,vc,{n},down\n40,vc,{n},up\n" for n in range(3)))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[
            f"trace.path={tmp_path / 'jobs.csv'}", "runtime=local", "trace.cache=false",
            f"cluster.capacity={tmp_path / 'nodes.csv'}", "checkpoint.interval_s=30", "checkpoint.write_s=5",
            "checkpoint.restart_s=10", *overrides])
    check_cluster_config(cfg)
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    jobs, _ = simulate(trace, spec, None, job_extra=extra)
    return jobs.to_pydict()


def test_applications_checkpoint_as_their_own_settings_say(tmp_path):
    r = apps_run(tmp_path, "checkpoint.column=model", "+checkpoint.apps.bert.interval_s=20",
                 "+checkpoint.apps.resnet.interval_s=null")
    # bert: checkpoint at 20 (written by 25), down at 36 loses 11 s; from 40 a restore and 80 s with 3 writes
    # resnet: no checkpoints, restarts from the beginning and loses its 36 s; gpt: the run's settings
    assert r["end_time"] == [40 + 10 + 80 + 15, 40 + 100, 40 + 10 + 70 + 10]
    assert r["lost_gpu_s"] == [11 * 8, 36 * 8, 1 * 8]
    assert r["overhead_gpu_s"] == [(5 + 10 + 15) * 8, 0, (5 + 10 + 10) * 8]


def test_an_application_with_the_runs_settings_changes_nothing(tmp_path):
    assert apps_run(tmp_path / "a") == apps_run(tmp_path / "b", "checkpoint.column=model",
                                                 "+checkpoint.apps.gpt.interval_s=30")


@pytest.mark.parametrize("overrides, key", [
    (["checkpoint.column=model"], "checkpoint.column"),
    (["+checkpoint.apps.bert.interval_s=20"], "checkpoint.column"),
    (["checkpoint.column=model", "+checkpoint.apps.bert.interval_s=0"], "checkpoint.apps.bert.interval_s"),
    (["checkpoint.column=model", "+checkpoint.apps.bert.every=20"], "checkpoint.apps.bert.every"),
    (["checkpoint.column=model", "+checkpoint.apps.bart.interval_s=20"], "checkpoint.apps.bart"),
    (["checkpoint.column=app", "+checkpoint.apps.bert.interval_s=20"], "checkpoint.column"),
    (["checkpoint.column=model", "+checkpoint.apps.bert.restart_s=1e13"], "checkpoint.apps.bert.restart_s"),
    (["checkpoint.column=model", "+checkpoint.apps.bert=7"], "checkpoint.apps.bert"),
    (["checkpoint.apps=5"], "checkpoint.apps"),
])
def test_a_bad_application_setting_is_one_line_naming_its_key(tmp_path, overrides, key):
    from raysim.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        apps_run(tmp_path, *overrides)
    assert err.value.key == key and "\n" not in str(err.value)
