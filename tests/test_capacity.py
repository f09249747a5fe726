"""Capacity that changes (raysim.sim.capacity): nodes go down, come back, join and leave as events of
the VC engine, under every policy family, and a node log (cluster.capacity) drives them end to end.

Hand-built cases on one VC of 8-GPU nodes (clean semantics, consolidated placement): an idle node
leaves and returns; a busy node goes down mid-job (the job is interrupted, counted for the event's
cause, waits and runs again: from the beginning under a policy that does not preempt, from where it
was plus the overhead under one that does); a multi-node job stops whole; a node joins and a
waiting job starts on it; Lucid's GPU-sharing partners stop together. Round-based and elastic
policies on their own small clusters; random traces and node logs never place a job on a down node.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import assert_same_on_ray, batch, pools, random_jobs
from test_elastic_policy import config, inputs  # noqa: F401  (a fixture)
from test_quota import TWO_VCS, assert_resumes_identically, borrow, hand_trace, spec_of
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.errors import ConfigError, TraceError
from raysim.models.forecast import PackingSwitch
from raysim.paths import CONF_DIR, project_path
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.report.capacity import lost_by_cause
from raysim.report.schema import read_jobs
from raysim.run import run
from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
from raysim.run.simulate import simulate, simulate_to
from raysim.sim import SimParams, VCSimulator
from raysim.sim.extensions import Capacity
from raysim.sim.capacity import (DEFAULT_CAUSE, DOWN, RESTART, UP, CapacityPlan, VCCapacity, plan_from_node_log,
                                 read_node_log)

MAINT, FAIL = 0, 1  # cause indices of the hand-built cases


def vc(events, *, nodes=2, policy="fifo", absent=(), jobs=1, **constants):
    """A VC of `nodes` 8-GPU nodes whose capacity events are (time, node, up, cause)."""
    params = SimParams.for_mode("clean")
    if policy == "tiresias":
        constants.setdefault("threshold_gpu_s", 10**9)  # one queue: submit order
    if policy == "lucid":
        constants.update(pairs={}, switch=PackingSwitch())
    return VCSimulator("vc", pools(nodes), make_policy(policy, params=params, **constants),
                       make_placer("consolidate", params=params), params,
                       extensions=[Capacity(CapacityPlan(("maint", "fail"),
                                                         {"vc": VCCapacity(tuple(events), tuple(absent), jobs)}))])


def run_jobs(sim, jobs):
    sim.add_jobs(batch(jobs))
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


def totals(sim, *at):
    """Total GPUs in the time series at grid times `at` (rows are changes: each holds until the next)."""
    times, rows = sim.recorder.emit_rows(10**9)
    return [next(row[0] for t, row in reversed(list(zip(times, rows))) if t <= g) for g in at]


# ---------------------------------------------------------------------------------------- the engine
def test_an_idle_node_leaves_and_returns_without_touching_jobs():
    sim = vc([(100, 1, False, MAINT), (200, 1, True, MAINT)])
    r = run_jobs(sim, [(0, 500, 8)])
    assert (r["start_time"], r["end_time"], r["interruptions"]) == ([0], [500], [0])
    assert totals(sim, 60, 120, 180, 240) == [16, 8, 8, 16]
    sim.vc.check()


def test_a_busy_node_going_down_interrupts_its_job_which_restarts_from_the_beginning():
    sim = vc([(30, 0, False, FAIL), (50, 0, True, FAIL)], nodes=1)
    r = run_jobs(sim, [(0, 100, 8)])
    # fifo does not preempt: no checkpoint, the job starts over when its node is back
    assert (r["start_time"], r["end_time"], r["queue"]) == ([0], [150], [20])
    assert (r["interruptions"], r["intr_1"], r["intr_0"], r["preemptions"]) == ([1], [1], [0], [0])


def test_under_a_preemptive_policy_an_interrupted_job_continues_with_the_overhead():
    sim = vc([(30, 0, False, MAINT), (50, 0, True, MAINT)], nodes=1, policy="tiresias", overhead_s=7,
             large_overhead_s=7)
    r = run_jobs(sim, [(0, 100, 8)])
    # back at Tiresias' next decision (every 60 s): its 70 s of work left plus the overhead
    assert r["end_time"] == [60 + 70 + 7] and r["queue"] == [30]
    assert r["intr_0"] == [1] and r["preemptions"] == [0]


def test_a_restart_event_stops_the_jobs_on_a_node_that_stays_up():
    sim = vc([(30, 0, RESTART, FAIL)], nodes=1)
    r = run_jobs(sim, [(0, 100, 8)])
    assert (r["start_time"], r["end_time"], r["intr_1"]) == ([0], [130], [1])  # again at 30, from the beginning
    assert totals(sim, 0, 30, 60) == [8, 8, 8]


def test_a_job_on_other_nodes_is_untouched_and_a_multi_node_job_stops_whole():
    sim = vc([(30, 1, False, MAINT), (60, 1, True, MAINT)], nodes=3)
    r = run_jobs(sim, [(0, 100, 16), (0, 100, 8)])  # the 16-GPU job spans nodes 0 and 1, the other is on 2
    by_gpus = {g: (s, e, i) for g, s, e, i in zip([16, 8], r["start_time"], r["end_time"], r["interruptions"])}
    assert by_gpus[8] == (0, 100, 0)
    assert by_gpus[16] == (0, 160, 1)  # (first started at 0; again at 60, from the beginning)


def test_a_node_joins_and_a_waiting_job_starts_on_it():
    sim = vc([(40, 1, True, MAINT)], absent=(1,), jobs=2)
    assert sim.vc.total_gpus == 8
    r = run_jobs(sim, [(0, 100, 8), (10, 100, 8)])
    assert r["start_time"] == [0, 40] and r["end_time"] == [100, 140]
    assert totals(sim, 0, 60) == [8, 16]


def test_a_job_ending_when_its_node_goes_down_finishes():
    sim = vc([(100, 0, False, MAINT)], nodes=1)
    r = run_jobs(sim, [(0, 100, 8)])
    assert r["end_time"] == [100] and r["interruptions"] == [0]


def test_events_after_the_vcs_last_job_are_not_simulated():
    sim = vc([(50, 1, False, MAINT), (10_000, 1, True, MAINT)])
    run_jobs(sim, [(0, 100, 8)])
    assert sim.now == 100 and 1 in sim.vc.down  # the run ends with its last job


def test_lucids_sharing_partners_stop_together():
    sim = vc([(300, 0, False, FAIL), (400, 0, True, FAIL)], nodes=1, policy="lucid", jobs=3)
    r = run_jobs(sim, [(0, 5000, 4, 5000.0), (10, 1000, 4, 100.0), (20, 1000, 4, 100.0)])
    assert r["shared"][1:] == [1, 1]
    assert r["intr_1"] == [1, 1, 1]  # the 8-GPU node held all three: they stop together
    assert not sim.policy.partner  # Lucid's partner state cleared with them
    assert all(e > 400 for e in r["end_time"])  # and all ran again after the repair


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "tiresias", "fifo_backfill"])
def test_random_traces_and_node_logs_never_place_on_a_down_node(policy):
    rng = np.random.default_rng(7)
    jobs = random_jobs(rng, 60, 4000)
    events, state = [], [True] * 4
    for t in sorted(rng.choice(np.arange(1, 6000), 30, replace=False).tolist()):
        node = int(rng.integers(0, 4))
        state[node] = not state[node]
        events.append((t, node, state[node], int(rng.integers(0, 2))))
    sim = vc(events, nodes=4, policy=policy, jobs=len(jobs))
    sim.add_jobs(batch(jobs))
    for t in sorted({e[0] for e in events} | {e[0] + 1 for e in events}):
        sim.run(until=t)
        sim.vc.check()  # (placing on a down node is an AssertionError in VCState.allocate)
        assert all(not sim.vc.owner[n] or max(sim.vc.owner[n]) < 0 for n in sim.vc.down)
    sim.run()
    r = {k: v.tolist() for k, v in sim.results().items()}
    assert all(e >= 0 for e in r["end_time"]) and all(s >= j[0] for s, j in zip(r["start_time"], jobs))
    assert sum(r["interruptions"]) == sum(r["intr_0"]) + sum(r["intr_1"]) > 0


def test_pickling_a_vc_with_nodes_down_continues_identically():
    events = [(30, 0, False, MAINT), (80, 0, True, MAINT), (90, 1, False, FAIL), (300, 1, True, FAIL)]
    jobs = [(0, 100, 8), (5, 200, 8), (20, 50, 4)]
    whole = vc(events, jobs=3)
    expect = run_jobs(whole, jobs)
    part = vc(events, jobs=3)
    part.add_jobs(batch(jobs))
    part.run(until=85)
    part = pickle.loads(pickle.dumps(part))
    part.run()
    assert {k: v.tolist() for k, v in part.results().items()} == expect


# ---------------------------------------------------------------------------------------- node logs
LAYOUT_VCS = {"a": 2, "b": 3}


def layout():
    from raysim.cluster.layout import Pool

    return {vc: (Pool("gpu", 8, n),) for vc, n in LAYOUT_VCS.items()}


def write(tmp_path, text, name="log.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_node_log_applies_in_time_then_file_order_with_causes_and_joins(tmp_path):
    path = write(tmp_path, "time,vc,node,event,cause\n50,b,2,up,\n10,a,1,down,maintenance\n5,b,2,join,\n"
                           "10,a,0,down,\n40,b,2,down,gpu\n60,a,1,leave,\n")
    # b/2 joins at 5, goes down at 40 and is up again at 50; a/1 is down from 10 and leaves at 60 (no event)
    plan = plan_from_node_log(path, layout(), {"a": 3, "b": 4})
    assert plan.causes == ("node_down", "maintenance", "gpu")
    assert plan.of("a") == VCCapacity(((10, 1, False, 1), (10, 0, False, 0)), (), 3)
    assert plan.of("b") == VCCapacity(((5, 2, True, 0), (40, 2, False, 2), (50, 2, True, 0)), (2,), 4)


def test_quota_global_names_nodes_by_their_own_vc(tmp_path):
    from raysim.quota import merged_layout

    merged, homes = merged_layout(layout())
    plan = plan_from_node_log(write(tmp_path, "time,vc,node,event\n7,b,1,down\n"), merged, {"global": 9}, homes)
    assert plan.of(next(iter(merged))).events == ((7, 3, False, 0),)  # a has nodes 0-1, b's node 1 is 3


def test_a_parquet_node_log_reads_the_same(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"time": [3, 1], "vc": ["a", "b"], "node": [0, 2], "event": ["down", "down"]}),
                   tmp_path / "log.parquet")
    times, vcs, nodes, kinds, causes = read_node_log(tmp_path / "log.parquet", layout())
    assert times.tolist() == [1, 3] and vcs == ["b", "a"] and causes == [DEFAULT_CAUSE] * 2


@pytest.mark.parametrize("text,where", [
    ("time,vc,node\n1,a,0\n", "column 'event'"),
    ("time,vc,node,event\n", "no events"),
    ("time,vc,node,event\n-1,a,0,down\n", "row 1 (line 2), column 'time'"),
    ("time,vc,node,event\n1.5,a,0,down\n", "row 1 (line 2), column 'time'"),
    ("time,vc,node,event\n1e30,a,0,down\n", "row 1 (line 2), column 'time': must be a whole number from 0"),
    ("time,vc,node,event\n1,a,0,down\n2,z,0,down\n", "row 2 (line 3), column 'vc'"),
    ("time,vc,node,event\n1,a,2,down\n", "row 1 (line 2), column 'node': VC a has 2 node(s)"),
    ("time,vc,node,event\n1,a,0,crash\n", "row 1 (line 2), column 'event'"),
    ("time,vc,node,event\n1,a,0,up\n", "node 0 of VC a is not down"),
    ("time,vc,node,event\n1,a,0,down\n2,a,0,down\n", "row 2 (line 3), column 'event': node 0 of VC a is already down"),
    ("time,vc,node,event\n1,a,0,down\n2,a,0,join\n", "join must be a node's first event"),
    ("time,vc,node,event\n1,a,0,leave\n2,a,0,up\n", "left earlier"),
    ("time,vc,node,event,cause\n1,a,0,down,bad cause!\n", "column 'cause'"),
    ("time,vc,node,event,cause\n1,a,0,down,preemptions\n", "row 1 (line 2), column 'cause'"),  # a stop's own cause
])
def test_a_bad_node_log_is_one_line_naming_the_file_row_and_column(tmp_path, text, where):
    path = write(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_node_log(path, layout())
    assert str(path) in str(err.value) and where in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("column,values", [
    ("time", [True, False]),  # a boolean is not a time (it read as 1 and 0)
    ("time", ["soon", "10"]),
    ("time", [float("nan"), 5.0]),
    ("time", [datetime(2020, 1, 1), datetime(2020, 1, 2)]),
    ("node", [False, False]),
])
def test_a_parquet_node_log_of_the_wrong_type_is_one_line_naming_the_row_and_column(tmp_path, column, values):
    import pyarrow as pa

    table = {"time": [1, 2], "vc": ["a", "a"], "node": [0, 0], "event": ["down", "up"]}
    pq.write_table(pa.table({**table, column: values}), tmp_path / "log.parquet")
    with pytest.raises(TraceError) as err:
        read_node_log(tmp_path / "log.parquet", layout())
    assert f"row 1 (line 2), column {column!r}: must be a whole number" in str(err.value)


# ---------------------------------------------------------------------------------------- whole runs
def venus_log(tmp_path):
    return write(tmp_path, "time,vc,node,event,cause\n86400,vcEwI,0,down,maintenance\n90000,vcEwI,1,down,gpu\n"
                           "100000,vcEwI,0,up,maintenance\n200000,vcEwI,1,up,gpu\n300000,vcWoR,2,down,maintenance\n"
                           "350000,vcWoR,2,up,maintenance\n")


def test_venus_under_tiresias_with_a_node_log(tmp_path):
    """The issue's command: `+experiment=venus policy=tiresias cluster.capacity=<node log>`."""
    log = venus_log(tmp_path)
    out = tmp_path / "run"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=tiresias", "runtime=local",
                                                       f"cluster.capacity={log}"])
    run(cfg, out)
    jobs = read_jobs(out).to_pandas()  # (checked against the result schema: the capacity group)
    assert jobs.finished.all() and (jobs.start_time >= jobs.submit_time).all()
    hit = jobs[jobs.interruptions > 0]
    assert len(hit) and set(hit.vc) == {"vcEwI", "vcWoR"}
    assert (jobs.interruptions == jobs.interruptions_maintenance + jobs.interruptions_gpu).all()
    summary = pd.read_csv(out / "summary.csv").set_index("vc")
    assert summary.interruptions["all"] == jobs.interruptions.sum() and summary.interruptions["vcHvQ"] == 0
    series = pq.read_table(out / "timeseries.parquet").to_pandas()
    ewi = series[series.vc == "vcEwI"].set_index("time").total_gpu_num  # 9 nodes: 72 GPUs

    def at(t):  # (rows are changes on the 60-s grid: each holds until the next)
        return ewi[ewi.index <= t].iloc[-1]

    assert [at(t) for t in (86_340, 86_400, 90_000, 100_020, 200_040)] == [72, 64, 56, 64, 72]
    down = series[series.vc == "vcEwI"].set_index("time").down_gpu_num
    assert [down[down.index <= t].iloc[-1] for t in (86_340, 86_400, 90_000, 100_020, 200_040)] == [0, 8, 16, 8, 0]
    # GPU-hours down: 8 GPUs x the 60-s samples in [86,400, 100,000) and [90,000, 200,000); vcWoR 8 x [300,000, 350,000)
    assert summary.down_gpu_h["vcEwI"] == pytest.approx(8 * (227 + 1834) / 60)
    assert summary.down_gpu_h["vcWoR"] == pytest.approx(8 * 834 / 60) and summary.down_gpu_h["vcHvQ"] == 0
    assert summary.down_gpu_h["all"] == pytest.approx(8 * (227 + 1834 + 834) / 60)
    assert (out / "plots" / "capacity.png").stat().st_size > 10_000


def test_failures_with_checkpoints_report_lost_work_by_cause_and_the_effective_training_time(tmp_path, venus_first_day):
    out = tmp_path / "run"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[
            "+experiment=venus", "policy=tiresias", "runtime=local", "failures=llama3", "failures.gpu_mtbf_h=2000",
            "checkpoint.interval_s=1800", "checkpoint.write_s=60", "checkpoint.restart_s=300",
            f"trace.path={venus_first_day}"])
    run(cfg, out)
    jobs = read_jobs(out).to_pandas()
    causes = [c[len("lost_gpu_s_"):] for c in jobs.columns if c.startswith("lost_gpu_s_")]
    assert "faulty_gpu" in causes and all(f"interruptions_{c}" in jobs for c in causes)
    by_cause = jobs[[f"lost_gpu_s_{c}" for c in causes]].sum(axis=1)
    assert (by_cause <= jobs.lost_gpu_s + 1e-6).all() and by_cause.sum() > 0  # the rest: Tiresias' preemptions
    lost = pd.read_csv(out / "lost_by_cause.csv")
    cluster = lost[lost.vc == "all"].set_index("cause")
    assert cluster.lost_gpu_h.sum() == pytest.approx(jobs.lost_gpu_s.sum() / 3600)
    assert cluster.interruptions["faulty_gpu"] == jobs.interruptions_faulty_gpu.sum()
    summary = pd.read_csv(out / "summary.csv").set_index("vc")
    assert summary.lost_gpu_h["all"] == pytest.approx(jobs.lost_gpu_s.sum() / 3600)
    useful = (jobs.duration * jobs.gpu_num).sum()
    assert summary.ettr["all"] == pytest.approx(useful / (useful + jobs.lost_gpu_s.sum() + jobs.overhead_gpu_s.sum()))
    assert 0.5 < summary.ettr["all"] < 1 and summary.down_gpu_h["all"] > 0
    for plot in ("capacity.png", "lost_by_cause.png"):
        assert (out / "plots" / plot).stat().st_size > 10_000


def hand_stops(checkpoints: bool = True) -> pa.Table:
    """Four jobs: a (preempted twice, a gpu failure), a (reclaimed once), b (a gpu failure), b
    (preempted once and reclaimed three times); the work each lost, whole hours of GPU time."""
    columns = {"vc": ["a", "a", "b", "b"], "preemptions": [2, 0, 0, 1], "reclaims": [0, 1, 0, 3],
               "interruptions_gpu": [1, 0, 1, 0]}
    if checkpoints:
        columns |= {"lost_gpu_s": [3 * 3600.0, 2 * 3600.0, 1800.0, 3600.0],
                    "lost_gpu_s_gpu": [3600.0, 0.0, 1800.0, 0.0]}
    return pa.table(columns)


def test_lost_by_cause_keeps_the_policys_preemptions_apart_from_reclaims_and_failures():
    """The rest of a job's lost work goes to what stopped it besides capacity events: its policy, a
    lender's reclaims, or both (a job stopped both ways, whose loss jobs.parquet does not split)."""
    table = lost_by_cause(hand_stops())
    rows = {vc: list(g[["cause", "interruptions", "lost_gpu_h"]].itertuples(index=False, name=None))
            for vc, g in table.groupby("vc", sort=False)}
    assert rows == {"a": [("preemptions", 2, 2.0), ("reclaims", 1, 2.0), ("gpu", 1, 1.0)],
                    "b": [("preemptions_and_reclaims", 4, 1.0), ("gpu", 1, 0.5)],
                    "all": [("preemptions", 2, 2.0), ("reclaims", 1, 2.0), ("gpu", 2, 1.5),
                            ("preemptions_and_reclaims", 4, 1.0)]}
    assert table[table.vc == "all"].lost_gpu_h.sum() == 6.5  # every hour lost, once


def test_lost_by_cause_without_checkpoints_counts_the_stops():
    table = lost_by_cause(hand_stops(checkpoints=False))
    cluster = table[table.vc == "all"]
    assert list(zip(cluster.cause, cluster.interruptions)) == [("preemptions_and_reclaims", 4), ("gpu", 2),
                                                               ("preemptions", 2), ("reclaims", 1)]
    assert cluster.lost_gpu_h.isna().all()


def test_a_run_with_a_node_log_and_no_checkpoints_writes_its_stops_per_cause(tmp_path, venus_first_day):
    """The maintenance experiment (no checkpoints): lost_by_cause.csv counts the stops of each of the
    node log's causes and the policy's preemptions, and trace_report.json names the node log read."""
    out = tmp_path / "run"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus_maintenance", "policy=tiresias",
                                                       "runtime=local", "report.plots=none", "report.html=false",
                                                       f"trace.path={venus_first_day}"])
    run(cfg, out)
    jobs = read_jobs(out).to_pandas()
    cluster = pd.read_csv(out / "lost_by_cause.csv").query("vc == 'all'").set_index("cause")
    causes = [c[len("interruptions_"):] for c in jobs.columns if c.startswith("interruptions_")]
    assert {c: cluster.interruptions.get(c, 0) for c in causes} == {c: jobs[f"interruptions_{c}"].sum() for c in causes}
    assert cluster.interruptions["preemptions"] == jobs.preemptions.sum() > 0 and cluster.lost_gpu_h.isna().all()
    log = Path(project_path("traces/venus_synth/maintenance.csv")).resolve()
    digest = hashlib.sha256(log.read_bytes()).hexdigest()
    assert json.loads((out / "trace_report.json").read_text())["capacity"] == {
        "node_log": {"key": "cluster.capacity", "path": str(log), "sha256": digest}, "failures": None}


@pytest.mark.parametrize("policy", ["max_min_fairness_perf", "gavel_fifo"])
def test_round_based_jobs_interrupted_mid_round_run_again(tmp_path, policy, hetero_head):
    """Gavel's demo cluster (VCs vcA and vcB over V100, P100, K80): nodes go down and come back
    while the demo trace's first 300 jobs run."""
    log = write(tmp_path, "time,vc,node,event\n1000,vcA,0,down\n1500,vcB,0,down\n5000,vcA,0,up\n"
                          "9000,vcB,0,up\n20000,vcA,1,down\n20100,vcA,1,up\n")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=gavel_hetero_demo", f"policy={policy}",
                                                       "runtime=local", f"cluster.capacity={log}",
                                                       f"trace.path={hetero_head}"])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    jobs, series = simulate(trace, spec, None, job_extra=extra)
    jobs = jobs.to_pandas()
    assert (jobs.start_time >= jobs.submit_time).all() and jobs.interruptions.sum() > 0
    fixed, _ = simulate(trace, replace(spec, capacity=None), None, job_extra=extra)
    # every job finishes, but those Gavel's mechanism drops (failed micro-tasks) without node events too
    assert jobs.finished.tolist() == fixed.column("finished").to_pylist()
    # same files in small windows (capacity events between windows) and in one
    small, _ = simulate(trace, spec, None, job_extra=extra, window_s=600)
    assert small.to_pandas().equals(jobs)


def test_the_vcs_of_a_run_and_their_node_numbers_come_from_the_layout(tmp_path):
    log = write(tmp_path, "time,vc,node,event\n10,nope,0,down\n")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "runtime=local",
                                                       f"cluster.capacity={log}"])
    with pytest.raises(TraceError, match="column 'vc': not a VC of the run's cluster"):
        spec_from_config(cfg, load_from_config(cfg))


def test_what_capacity_events_do_not_mix_with_yet_is_refused_in_one_line(tmp_path):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=lucid", "estimator.source=oracle",
                                                       f"cluster.capacity={tmp_path / 'log.csv'}"])
    with pytest.raises(ConfigError, match="policy.profiler.nodes=0"):
        check_cluster_config(cfg)


# ------------------------------------------------------------------------- nodes on loan (quota=borrow)
def loan_run(events, **settings):
    """tests/test_quota.py's two VCs (A: 2 idle nodes until its 16-GPU job at t=1000; B: 1 node and
    two queued 8-GPU jobs, which borrow A's nodes at t=300) with A's capacity events (cause "fail")."""
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    spec = spec_of(trace, quota=borrow(**settings))
    plan = CapacityPlan(("fail",), {"A": VCCapacity(tuple(events), (), 1), "B": VCCapacity((), (), 3)})
    spec = replace(spec, capacity=plan, quota=replace(spec.quota, named_nodes=True))
    jobs, series = simulate(trace, spec, None)
    for window_s, per_actor in ((100, 1), (300, 2), (900, 1)):  # the same in any window and packing
        again = simulate(trace, spec, None, window_s=window_s, vcs_per_actor=per_actor)
        assert again[0].equals(jobs) and again[1].equals(series), (window_s, per_actor)
    cols = ("start_time", "end_time", "interruptions", "reclaims", "ran_on_vc")
    return [tuple(jobs.column(c)[i].as_py() for c in cols) for i in range(jobs.num_rows)]


def test_a_lent_node_that_goes_down_stops_the_borrowers_job_once():
    # A lends its nodes 1 and 0 (last first) at t=300; node 1 fails at 500 under B's first queued
    # job, which FIFO restarts from scratch when the node is back at 700 (A counts nothing: the
    # node's jobs are B's); A reclaims both nodes at 1200 as without the failure
    b0, b1, b2, a = loan_run([(500, 1, DOWN, 0), (700, 1, UP, 0)])
    assert b0 == (0, 5000, 0, 0, "B") and a == (1200, 1800, 0, 0, "A")
    assert b1 == (300, 5100, 1, 1, "A") and b2 == (300, 5100, 0, 1, "A")


def test_a_lent_node_given_back_while_down_returns_down_and_its_lender_waits_for_it():
    # node 1 fails at 1100 under B's job; at 1200 A reclaims both nodes, the down one too, and its
    # 16-GPU job starts when node 1 is up again at 1500 (not at 1200)
    b0, b1, b2, a = loan_run([(1100, 1, DOWN, 0), (1500, 1, UP, 0)])
    assert a == (1500, 2100, 0, 0, "A")
    assert (b1[2], b1[3]) == (1, 0) and (b2[2], b2[3]) == (0, 1)  # one count per stop: failure or reclaim


def test_a_lent_node_that_goes_down_is_drained_back_at_once():
    b0, b1, b2, a = loan_run([(1100, 1, DOWN, 0), (1300, 1, UP, 0)], reclaim="drain")
    # B's other job keeps A's node 0 until it ends at 3300 (drain); the down node went back at 1200
    assert b2[:4] == (300, 3300, 0, 0) and b1[2] == 1
    assert a[0] == 3600  # (the drained node returns at 3300 and is taken back at the next epoch)


@pytest.mark.slow  # 8 s; the hand-built loan and node-log cases stay in the main suite
def test_venus_with_quota_loans_and_a_node_log(tmp_path, venus_first_day, policy="tiresias"):
    """The shipped week's first day (its jobs run into the node log's events, which come after it)."""
    log = venus_log(tmp_path)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", f"policy={policy}", "quota=borrow",
                                                       "runtime=local", f"cluster.capacity={log}",
                                                       f"trace.path={venus_first_day}"])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert spec.quota.named_nodes
    jobs, series = simulate(trace, spec, None, job_extra=extra)
    df = jobs.to_pandas()
    assert df.finished.all() and (df.start_time >= df.submit_time).all() and df.interruptions.sum() > 0
    assert df.reclaims.sum() > 0 and (df.ran_on_vc != df.vc).any()
    again = simulate(trace, spec, None, job_extra=extra, window_s=3_600, vcs_per_actor=4)
    assert again[0].equals(jobs) and again[1].equals(series)


@pytest.mark.slow  # 7 s; test_failures keeps a resume with capacity events in the main suite
def test_a_run_with_a_node_log_and_loans_resumes_from_its_checkpoint_with_identical_results(tmp_path):
    from test_invariants import synthetic_trace

    trace, est = synthetic_trace(seed=9, n=300)  # VCs a (2 nodes), b (4) and c (1), 300 jobs over 40,000 s
    plan = CapacityPlan(("gpu",), {
        "a": VCCapacity(((3_000, 1, DOWN, 0), (9_000, 1, UP, 0), (20_000, 0, DOWN, 0), (20_500, 0, UP, 0)), (), 10**6),
        "b": VCCapacity(((5_000, 3, DOWN, 0), (30_000, 3, UP, 0)), (), 10**6), "c": VCCapacity((), (), 10**6)})
    spec = spec_of(trace, "tiresias", quota=borrow(vcs={"b": {"reclaim": "drain"}}))
    spec = replace(spec, capacity=plan, quota=replace(spec.quota, named_nodes=True))
    whole, _ = simulate(trace, spec, est, window_s=300)
    assert whole.column("interruptions").to_numpy().sum() > 0 and whole.column("reclaims").to_numpy().sum() > 0
    assert_resumes_identically(trace, spec, est, tmp_path)


@pytest.mark.parametrize("policy", ["sia", "pollux", "gavel_elastic"])
def test_elastic_jobs_on_a_node_that_goes_down_train_until_then_and_restart(inputs, tmp_path, policy):
    """tests/test_elastic_policy.py's cluster (fast node 0, slow nodes 1 and 2) loses nodes mid-round."""
    log = write(tmp_path, "time,vc,node,event,cause\n90,cluster,1,down,gpu\n215,cluster,0,down,host\n"
                          "260,cluster,0,up,host\n700,cluster,1,up,gpu\n1500,cluster,2,down,gpu\n")
    cfg = config(inputs, policy, f"cluster.capacity={log}", f"hydra.run.dir={tmp_path}")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    simulate_to(tmp_path / "run", trace, spec, None, runtime="local", job_extra=extra)
    jobs = read_jobs(tmp_path / "run").to_pandas()
    assert jobs.finished.all() and (jobs.start_time >= jobs.submit_time).all()
    hit = jobs[jobs.interruptions > 0]
    assert len(hit) and (hit.restarts >= hit.interruptions).all()  # each interruption costs a restart
    assert (jobs.interruptions == jobs.interruptions_gpu + jobs.interruptions_host).all()


@pytest.mark.parametrize("policy", ["sia", "pollux", "gavel_elastic"])
def test_elastic_jobs_wait_while_every_node_is_down(inputs, tmp_path, policy):
    """Every node of the cluster down at once: no configuration is left, the jobs wait (Sia's
    allocator once failed on an empty configuration list)."""
    log = write(tmp_path, "time,vc,node,event\n" + "".join(f"90,cluster,{n},down\n400,cluster,{n},up\n"
                                                             for n in range(3)))
    cfg = config(inputs, policy, f"cluster.capacity={log}", f"hydra.run.dir={tmp_path}")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    simulate_to(tmp_path / "run", trace, spec, None, runtime="local", job_extra=extra)
    jobs = read_jobs(tmp_path / "run").to_pandas()
    assert jobs.finished.all()
    assert not ((jobs.start_time > 90) & (jobs.start_time < 400)).any()  # nothing starts while all are down


@pytest.mark.slow
@pytest.mark.parametrize("quota", ["none", "borrow"])
def test_a_run_with_a_node_log_is_the_same_on_ray(tmp_path, ray_local, quota):  # noqa: F811
    log = venus_log(tmp_path)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=srtf", "runtime=local",
                                                       f"quota={quota}", f"cluster.capacity={log}"])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"vcs_per_actor": 4, "window_s": 86_400}])
