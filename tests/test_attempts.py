"""trace.failed=replay (raysim.sim.attempts): jobs the trace shows failing and retried run as it shows.

A job's runs and gaps come from `attempts_s` (raysim's CSV schema) or Philly's attempts. Hand-built
cases on one VC of one 8-GPU node: a failed run frees the GPUs at once, the gap is not queueing, a
preemption keeps the run's progress, a node going down restarts the current run only; the results
count retries and failed work; with trace.failed=keep nothing changes; bad values are one line.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.errors import ConfigError, TraceError
from raysim.paths import CONF_DIR
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
from raysim.run.simulate import simulate, simulate_to
from raysim.sim import SimParams, VCSimulator
from raysim.sim.attempts import Attempts
from raysim.sim.capacity import DOWN, UP, CapacityPlan, VCCapacity
from raysim.sim.extensions import Capacity, Replays
from raysim.trace.attempts import check_attempts, parse_attempts

HEADER = "job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,attempts_s\n"
#: job 1 runs 100 s, fails, waits 50 s, runs 200 s; job 2 fails at its end; job 3 runs once
ROWS = ["1,vc,u,8,4,0,300,COMPLETED,100 50 200", "2,vc,u,8,4,10,100,FAILED,", "3,vc,u,8,4,20,60,COMPLETED,"]


def write(folder, rows=ROWS, nodes=1):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text(HEADER + "\n".join(rows) + "\n")
    (folder / "vc_config.csv").write_text(f",num\nvc,{nodes}\n")
    return folder / "jobs.csv"


def config(trace, *overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"trace.path={trace}", "runtime=local", "trace.cache=false",
                                                        *overrides])


def run(trace, *overrides):
    cfg = config(trace, *overrides)
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    jobs, _ = simulate(loaded, spec, None, job_extra=extra)
    return jobs.to_pydict()


# ------------------------------------------------------------------------------------ the column
def test_attempts_parse_and_check():
    assert parse_attempts("100 50 200") == ((100, 200), (50,))
    assert parse_attempts("7") == ((7,), ())
    for bad in ("100 50", "100 x 200", "0 5 10", "10 -1 10"):
        with pytest.raises(ValueError):
            parse_attempts(bad)
    assert check_attempts(["100 50 200", None, "", "10 5 10"], [300, 1, 1, 30]) == (
        [3], ["the runs do not add up to the job's duration"])
    assert check_attempts(["100 99999999999999999999 200"], [300], 3600)[0] == [0]  # (a gap past the bound)


def test_a_bad_attempts_value_is_one_line_naming_row_and_column(tmp_path):
    trace = write(tmp_path, ["1,vc,u,8,4,0,300,COMPLETED,100 50 100"])
    with pytest.raises(TraceError) as err:
        load_from_config(config(trace, "trace.failed=replay"))
    text = str(err.value)
    assert "row 1" in text and "attempts_s" in text and "add up" in text and "\n" not in text


# ---------------------------------------------------------------------------------------- the engine
def test_a_failed_run_frees_its_gpus_and_the_gap_is_not_queueing(tmp_path):
    r = run(write(tmp_path), "trace.failed=replay")
    # job 1: 0-100 fails; job 2 (waiting since 10) runs 100-200; job 1 is back at 150 and waits
    # for job 2, then runs 200-400; job 3 follows
    assert r["start_time"] == [0, 100, 400] and r["end_time"] == [400, 200, 460]
    assert r["queue"] == [50, 90, 380]
    assert r["retries"] == [1, 0, 0] and r["failed"] == [False, True, False]
    assert r["failed_gpu_s"] == [100 * 8, 100 * 8, 0]


def test_keep_ignores_the_runs(tmp_path):
    r = run(write(tmp_path), "trace.failed=keep")
    assert r["end_time"] == [300, 400, 460] and "retries" not in r
    plain = run(write(tmp_path / "plain", [row.rsplit(",", 1)[0] + "," for row in ROWS]))
    assert plain == r


def test_a_job_that_arrives_in_the_gap_runs_in_it(tmp_path):
    r = run(write(tmp_path, ["1,vc,u,8,4,0,300,COMPLETED,100 50 200", "2,vc,u,8,4,110,30,COMPLETED,"]),
            "trace.failed=replay")
    assert r["start_time"] == [0, 110] and r["end_time"] == [350, 140] and r["queue"] == [0, 0]


def engine(policy="fifo", events=(), runs=((100, 200),), gaps=((50,),)):
    params = SimParams.for_mode("clean")
    capacity = CapacityPlan(("failure",), {"vc": VCCapacity(tuple(events), (), 1)}) if events else None
    return VCSimulator("vc", pools(1), make_policy(policy, params=params), make_placer("consolidate", params=params),
                       params, extensions=([Capacity(capacity)] if capacity else [])
                       + [Replays(Attempts(dict(enumerate(runs)), dict(enumerate(gaps))))])


def results(sim, jobs):
    sim.add_jobs(batch(jobs))
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


def test_a_node_going_down_restarts_the_current_run_only():
    # run 2 began at 150; the node is down 200-210: run 2 starts over at 210 (its 200 s, not 300)
    r = results(engine(events=((200, 0, DOWN, 0), (210, 0, UP, 0))), [(0, 300, 8)])
    assert r["end_time"] == [210 + 200] and r["retries"] == [1] and r["interruptions"] == [1]


def test_a_preempted_run_keeps_its_progress():
    # srtf: job 2 (50 s) preempts job 1 at 40; job 1 resumes with its run's 60 s left (+ the overhead)
    sim = engine("srtf")
    r = results(sim, [(0, 300, 8), (40, 50, 8)])
    overhead = sim.policy.preempt_overhead(8)
    assert r["end_time"][1] == 90 and r["preemptions"] == [1, 0]
    assert r["end_time"][0] == 90 + 60 + overhead + 50 + 200 and r["retries"] == [1, 0]


def test_several_retries_and_windows_agree():
    def go(until_steps):
        sim = engine(runs=((10, 20, 30),), gaps=((5, 0),))
        sim.add_jobs(batch([(0, 60, 8)]))
        for until in until_steps:
            sim.run(until)
        sim.run()
        return {k: v.tolist() for k, v in sim.results().items()}

    whole = go([])
    assert whole["end_time"] == [10 + 5 + 20 + 0 + 30] and whole["retries"] == [2]
    assert go([3, 12, 15, 16, 35, 36]) == whole


def test_philly_attempts_replayed(tmp_path):
    def gpus(n):
        return [{"ip": "m1", "gpus": [f"gpu{i}" for i in range(n)]}]

    jobs = [{"status": "Pass", "vc": "a", "jobid": "j1", "user": "u", "submitted_time": "2017-10-07 01:00:00",
             "attempts": [{"start_time": "2017-10-07 01:00:00", "end_time": "2017-10-07 01:01:40", "detail": gpus(8)},
                          {"start_time": "2017-10-07 01:10:00", "end_time": "2017-10-07 01:20:00",
                           "detail": gpus(8)}]},
            {"status": "Failed", "vc": "a", "jobid": "j2", "user": "u", "submitted_time": "2017-10-07 01:00:10",
             "attempts": [{"start_time": "2017-10-07 01:00:10", "end_time": "2017-10-07 01:00:40",
                           "detail": gpus(8)}]}]
    (tmp_path / "cluster_job_log").write_text(json.dumps(jobs))
    (tmp_path / "vc_config.csv").write_text(",num\na,1\n")
    r = run(tmp_path, "trace.failed=replay")
    # j1: 100 s, a gap of 500 s, 600 s; j2 runs in the gap and fails at its end
    assert r["start_time"] == [3600, 3700] and r["end_time"] == [3600 + 100 + 500 + 600, 3730]
    assert r["retries"] == [1, 0] and r["failed"] == [False, True]
    assert r["failed_gpu_s"] == [800, 240]


# ----------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("overrides, says", [
    (["trace.failed=retry"], "must be one of keep, replay"),
    (["trace.failed=replay", "policy=gavel_fifo"], "times its jobs itself"),
    (["trace.failed=replay", "sim.compat=lucid"], "sim.compat=clean"),
    (["trace.failed=replay", "checkpoint.interval_s=600"], "checkpoint model"),
    (["trace.failed=replay", "+trace.reader_options.duration=span"], "duration rule sum"),
])
def test_what_replay_cannot_apply_to_is_one_line(tmp_path, overrides, says):
    cfg = config(write(tmp_path), *overrides)
    with pytest.raises(ConfigError) as err:
        check_cluster_config(cfg)
    assert "trace.failed" in str(err.value) and says in str(err.value)


# ------------------------------------------------------------------- windows, packing, Ray, resume
def random_trace(folder, seed=3, jobs=400):
    """Three VCs of 2 nodes; a third of the jobs ran 2-3 times, some failed at the end."""
    rng = np.random.default_rng(seed)
    rows, t = [], 0
    for i in range(jobs):
        t += int(rng.integers(0, 400))
        runs = [int(x) for x in rng.integers(30, 3000, size=int(rng.choice([1, 1, 2, 3])))]
        gaps = [int(x) for x in rng.integers(0, 900, size=len(runs) - 1)]
        text = " ".join(str(v) for pair in zip(runs, gaps + [None]) for v in pair if v is not None)
        state = "FAILED" if rng.random() < 0.2 else "COMPLETED"
        rows.append(f"{i + 1},vc{i % 3},u,{int(rng.choice([1, 2, 4, 8, 16]))},4,{t},{sum(runs)},{state},"
                    f"{text if len(runs) > 1 else ''}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text(HEADER + "\n".join(rows) + "\n")
    (folder / "vc_config.csv").write_text(",num\nvc0,2\nvc1,2\nvc2,2\n")
    return folder / "jobs.csv"


def replay_spec(tmp_path, policy="tiresias"):
    more = ["policy.profiler.nodes=0", "estimator.source=oracle"] if policy == "lucid" else []
    cfg = config(random_trace(tmp_path / "trace"), "trace.failed=replay", f"policy={policy}", *more)
    loaded = load_from_config(cfg)
    return (loaded, *spec_from_config(cfg, loaded))


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "lucid"])
def test_windows_and_packing_write_the_same_files(tmp_path, policy):
    trace, spec, extra = replay_spec(tmp_path, policy)
    assert len(spec.attempts) > 50
    est = trace.table.column("duration").to_numpy().astype(float) if policy == "lucid" else None  # (oracle)
    simulate_to(tmp_path / "a", trace, spec, est, window_s=3_600, vcs_per_actor=1, job_extra=extra)
    simulate_to(tmp_path / "b", trace, spec, est, window_s=86_400, vcs_per_actor=2, job_extra=extra)
    for name in ("jobs.parquet", "timeseries.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    jobs = pq.read_table(tmp_path / "a" / "jobs.parquet").to_pydict()
    assert all(jobs["finished"]) and sum(jobs["retries"]) == sum(len(g) for g in spec.attempts.gaps.values())
    assert all(s >= t for s, t in zip(jobs["start_time"], jobs["submit_time"]))


def test_a_replay_resumes_from_its_checkpoint_identically(tmp_path):
    from test_quota import assert_resumes_identically

    trace, spec, _ = replay_spec(tmp_path)  # (its extra inputs are the defaults)
    assert_resumes_identically(trace, spec, None, tmp_path)


@pytest.mark.slow
def test_a_replay_is_the_same_on_ray(tmp_path, ray_local):  # noqa: F811
    trace, spec, extra = replay_spec(tmp_path)
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"vcs_per_actor": 2, "window_s": 86_400}])
