"""Retirement (`retire=threshold | scored`, raysim.sim.retirement) and diagnosis (`failures.diagnosis`):
hand-computed streams (a retired node's stream ends with its repair's down), draws unchanged where
neither is on, their settings (one line per bad value), and their counts in a run's time series and
summary, with a run whose retirements leave a job too few nodes."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from raysim.sim.capacity import DOWN, RESTART, UP
from raysim.sim.failures import Category, FailureModel, repair_counts
from raysim.sim.repairs import Pipeline
from raysim.sim.retirement import Scored, Threshold
from test_failures import compose, events, tiny_run

HW = Category("gpu", 1.0, "down")
SW = Category("nccl", 1.0, "restart")
CAUSES = ("gpu", "nccl")


def model(**kw):
    return FailureModel((HW,), node_mtbf_s=10_000, repair_s=2_000, **kw)


def drawn(node=0):
    """Node `node` of VC "vc" (seed 0): its failure-time generator, as the stream seeds it."""
    return np.random.default_rng([0, zlib.crc32(b"vc"), node])


def until_none(stream, most=10_000):
    out = []
    for _ in range(most):
        event = stream.next()
        if event is None:
            return out
        out.append(event)
    raise AssertionError("the stream did not end")


# ------------------------------------------------------------------------------------------- streams
def test_threshold_retires_a_node_at_the_first_repair_with_max_failures_in_the_window():
    """Two failures within 4,500 s of a repair's end: the stream ends with that repair's down and a
    restart at its end (the node is down: it stops no job), and counts the retirement."""
    stream = model(retire=Threshold(2, 4_500.0)).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    fails, up, times, want = drawn(), 0.0, [], []
    while True:
        t = up + fails.exponential(10_000)
        fails.random()  # (the category: one here)
        times.append(t)
        want.append((int(t), 0, DOWN, 0))
        end = t + 2_000
        if sum(s >= end - 4_500 for s in times) >= 2:
            want.append((int(end), 0, RESTART, 0))  # (the retirement's mark: a restart of a node down for good)
            break
        want.append((int(end), 0, UP, 0))
        up = end
    assert len(times) == 8  # (the 7th and 8th failures, 2,365 s apart, are the first two close enough)
    assert until_none(stream) == want
    assert stream.retired == 1 and stream.next() is None and repair_counts([stream], ("retired",)) == (1,)


@pytest.mark.parametrize("period_s", [5_000.0, 0.0])
def test_scored_retires_a_node_once_its_score_is_at_or_below_the_threshold(period_s):
    """Score 100, -30 per failure repaired, +10 per whole period of each lifetime (one per lifetime
    with period 0): retired at the repair after which it is <= 0."""
    policy = Scored(100.0, 30.0, 10.0, period_s, 0.0)
    stream = model(retire=policy).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    fails, up, score, want = drawn(), 0.0, 100.0, []
    while True:
        life = fails.exponential(10_000)
        fails.random()
        score += (1 if period_s == 0 else life // period_s) * 10 - 30
        want.append((int(up + life), 0, DOWN, 0))
        if score <= 0:
            want.append((int(up + life + 2_000), 0, RESTART, 0))
            break
        up += life + 2_000
        want.append((int(up), 0, UP, 0))
    assert until_none(stream) == want and stream.retired == 1


def test_a_restart_counts_for_the_threshold_and_ends_a_lifetime_but_is_not_repaired():
    """Failures of either kind count within the window; a retirement happens only after a repair."""
    both = FailureModel((HW, SW), node_mtbf_s=10_000, repair_s=2_000, retire=Threshold(3, 1e9))
    stream = both.stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    evs = until_none(stream)
    kinds = [e[2] for e in evs[:-1]]  # (the last: the retirement's restart)
    assert kinds[-1] == DOWN and evs[-1][2] == RESTART and len([k for k in kinds if k != UP]) >= 3
    assert stream.retired == 1
    failures = [k for k in kinds if k != UP]
    # (the third failure or a later one, the first down at or after the third failure, retires it)
    assert DOWN not in failures[2:-1]


def test_retirement_draws_nothing_and_diagnosis_one_draws_as_before():
    """A policy that never retires, and diagnosis 1, hand out exactly the events of a model with
    neither (pipelined too)."""
    pipeline = Pipeline(600.0, 0.5, 6000.0, 0.3, 0.3)
    for kw in ({}, {"pipeline": pipeline}):
        for node in range(4):
            plain = FailureModel((HW, SW), node_mtbf_s=10_000, repair_s=2_000, **kw)
            never = FailureModel((HW, SW), node_mtbf_s=10_000, repair_s=2_000, retire=Threshold(10 ** 9, 1e9),
                                 diagnosis=1.0, **kw)
            a = plain.stream(3, "vcX", node, 8, causes=CAUSES, rank=node)
            b = never.stream(3, "vcX", node, 8, causes=CAUSES, rank=node)
            assert events(a, 60) == events(b, 60) and b.retired == b.undiagnosed == 0


def test_diagnosis_zero_keeps_every_node_up_and_counts_every_down_failure():
    stream = model(diagnosis=0.0).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    fails, t, want = drawn(), 0.0, []
    for _ in range(50):
        t += fails.exponential(10_000)  # (no repair: the next lifetime starts at the failure)
        fails.random()
        want.append((int(t), 0, RESTART, 0))
    assert events(stream, 50) == want and stream.undiagnosed == 50
    assert repair_counts([stream], ("undiagnosed", "retired")) == (50, 0)


def test_diagnosis_is_drawn_from_the_nodes_own_generator():
    """Seed 0, VC "vc", node 0: each down failure is diagnosed when a draw of [0, crc32("vc"), 0, 3]
    is below `diagnosis`; an undiagnosed one restarts the node's jobs."""
    stream = model(diagnosis=0.4).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    fails, diagnoses = drawn(), np.random.default_rng([0, zlib.crc32(b"vc"), 0, 3])
    up, want, missed = 0.0, [], 0
    while len(want) < 60:
        t = up + fails.exponential(10_000)
        fails.random()
        if diagnoses.random() < 0.4:
            want += [(int(t), 0, DOWN, 0), (int(t + 2_000), 0, UP, 0)]
            up = t + 2_000
        else:
            want.append((int(t), 0, RESTART, 0))
            up, missed = t, missed + 1
    assert events(stream, len(want)) == want and stream.undiagnosed == missed > 0


def test_an_undiagnosed_bad_node_stays_bad():
    """Under a pipeline whose repairs always truly fix, a bad node is made good by its first repair,
    unless no failure is ever diagnosed."""
    fixes = Pipeline(60.0, 0.0, 0.0, 0.0, 0.0, times="fixed")
    for diagnosis, stays_bad in ((1.0, False), (0.0, True)):
        stream = model(pipeline=fixes, diagnosis=diagnosis, bad_fraction=1.0, bad_multiplier=100.0).stream(
            0, "vc", 0, 8, causes=CAUSES, rank=0)
        events(stream, 20)
        assert stream.bad == stays_bad


def test_a_stream_pickled_midway_keeps_its_record():
    import pickle

    for policy in (Threshold(3, 50_000.0), Scored(100.0, 30.0, 1.0, 3_000.0, 0.0)):
        stream = FailureModel((HW, SW), node_mtbf_s=10_000, repair_s=2_000, retire=policy,
                              diagnosis=0.7).stream(5, "vc", 3, 8, causes=CAUSES, rank=3)
        events(stream, 3)
        copy = pickle.loads(pickle.dumps(stream))
        assert until_none(copy) == until_none(stream)
        assert (copy.retired, copy.undiagnosed) == (stream.retired, stream.undiagnosed)


# ------------------------------------------------------------------------------------------ settings
def test_the_presets_pass_the_checks_and_reach_the_model():
    from raysim.run.config import check_cluster_config
    from raysim.run.failures import failure_model
    from raysim.run.retire import retirement

    for retire in ("never", "threshold", "scored"):
        check_cluster_config(compose("failures=exponential", f"retire={retire}"))
    check_cluster_config(compose())  # (retire=never with failures=none)
    assert retirement(compose("failures=exponential")) is None
    assert retirement(compose("failures=exponential", "retire=threshold")) == Threshold(5, 168 * 3600.0)
    assert retirement(compose("failures=weibull", "retire=scored", "retire.period_h=12")) == \
        Scored(100.0, 30.0, 10.0, 12 * 3600.0, 0.0)
    assert failure_model(compose("failures=exponential")).diagnosis == 1.0
    assert failure_model(compose("failures=llama3", "failures.diagnosis=0.25")).diagnosis == 0.25


@pytest.mark.parametrize("overrides,key", [
    (["retire=threshold"], "retire"),
    (["failures=trace", "failures.path=f.csv", "retire=scored"], "retire"),
    (["failures=exponential", "retire.name=sometimes"], "retire.name"),
    (["failures=exponential", "retire=threshold", "retire.max_failures=0"], "retire.max_failures"),
    (["failures=exponential", "retire=threshold", "retire.max_failures=-2"], "retire.max_failures"),
    (["failures=exponential", "retire=threshold", "retire.max_failures=2.5"], "retire.max_failures"),
    (["failures=exponential", "retire=threshold", "retire.max_failures=many"], "retire.max_failures"),
    (["failures=exponential", "retire=threshold", "retire.window_h=-1"], "retire.window_h"),
    (["failures=exponential", "retire=threshold", "retire.window_h=nan"], "retire.window_h"),
    (["failures=exponential", "retire=scored", "retire.penalty=-1"], "retire.penalty"),
    (["failures=exponential", "retire=scored", "retire.increment=nan"], "retire.increment"),
    (["failures=exponential", "retire=scored", "retire.period_h=inf"], "retire.period_h"),
    (["failures=exponential", "retire=scored", "retire.threshold=low"], "retire.threshold"),
    (["failures=exponential", "retire=scored", "retire.initial=1e300"], "retire.initial"),
    (["failures=exponential", "retire=threshold", "+retire.penalty=3"], "retire.penalty"),
    (["failures=exponential", "+retire.max_failures=3"], "retire.max_failures"),
    (["failures=exponential", "failures.diagnosis=-0.1"], "failures.diagnosis"),
    (["failures=exponential", "failures.diagnosis=1.5"], "failures.diagnosis"),
    (["failures=exponential", "failures.diagnosis=nan"], "failures.diagnosis"),
    (["failures=exponential", "failures.diagnosis=yes"], "failures.diagnosis"),
    (["failures=trace", "failures.path=f.csv", "+failures.diagnosis=0.5"], "failures.diagnosis"),
])
def test_bad_retire_and_diagnosis_settings_are_one_line_naming_the_key(overrides, key):
    from raysim.errors import ConfigError, user_error_message
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as err:
        check_cluster_config(compose(*overrides))
    message = user_error_message(err.value)
    assert f"{key}:" in message or f"{key} " in message or message.startswith(f"raysim: error: {key}")
    assert "\n" not in message


# ------------------------------------------------------------------------------------------- results
def summary_of(out):
    import pyarrow.parquet as pq

    from raysim.report.summary import summarize

    return summarize(pq.read_table(out / "jobs.parquet"), out / "timeseries.parquet").set_index("vc")


def test_retired_nodes_and_undiagnosed_failures_are_counted_per_vc_in_the_time_series_and_summary(tmp_path):
    from raysim.run.simulate import simulate_to

    rows = [(vc, 8, i * 600, 3000) for vc in ("vcA", "vcB") for i in range(20)]
    trace, spec, extra = tiny_run(tmp_path, rows, {"vcA": 4, "vcB": 4}, "failures=exponential",
                                  "failures.node_mtbf_h=2", "failures.diagnosis=0.5", "retire=threshold",
                                  "retire.max_failures=3", "retire.window_h=10")
    assert spec.capacity.counts == ("undiagnosed", "retired")
    simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra)
    s = summary_of(tmp_path / "out")
    for column in ("undiagnosed", "retired_nodes"):
        assert s.at["all", column] == s.at["vcA", column] + s.at["vcB", column]
    assert s.at["all", "undiagnosed"] > 5 and 1 <= s.at["all", "retired_nodes"] <= 8
    assert s.at["all", "finished"] == 40


def test_default_runs_have_no_retirement_or_diagnosis_columns(tmp_path):
    import pyarrow.parquet as pq

    from raysim.run.simulate import simulate_to

    trace, spec, extra = tiny_run(tmp_path, [("vcA", 8, 0, 3000)], {"vcA": 2}, "failures=exponential",
                                  "failures.node_mtbf_h=2")
    assert spec.capacity.counts == ()
    simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra)
    names = pq.read_schema(tmp_path / "out" / "timeseries.parquet").names
    assert "retired_nodes" not in names and "undiagnosed" not in names


def test_a_node_with_near_fixed_failure_times_leaves_at_the_computed_time(tmp_path):
    """Weibull lifetimes of shape 1,000 (within 1 % of their 10 h mean), repairs of 1 h: failures at
    about 10 h and 21 h; two within 13 h of the second repair's end (22 h) retire the VC's one node
    there. Its 8-GPU job of 30 h never finishes, nor does one arriving at 25 h, and the run ends with
    that arrival (no events are left): unfinished, not hung, one node retired."""
    import pyarrow.parquet as pq

    from raysim.run.simulate import simulate_to

    trace, spec, extra = tiny_run(tmp_path, [("vcA", 8, 0, 30 * 3600), ("vcA", 8, 25 * 3600, 60)], {"vcA": 1},
                                  "failures=weibull",
                                  "failures.shape=1000", "failures.node_mtbf_h=10", "failures.repair_h=1",
                                  "retire=threshold", "retire.max_failures=2", "retire.window_h=13")
    simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra, stall_s="auto")
    jobs = pq.read_table(tmp_path / "out" / "jobs.parquet").to_pandas()
    assert not jobs.finished.any() and jobs.interruptions.tolist() == [2, 0]
    series = pq.read_table(tmp_path / "out" / "timeseries.parquet").to_pandas()
    mine = series[series.vc == "vcA"]
    left = mine[mine.retired_nodes == 1].time.min()
    assert 20.8 * 3600 <= left <= 21.2 * 3600  # (counted as its last repair begins, at the second failure)
    assert mine.down_gpu_num.iloc[-1] == 8 and summary_of(tmp_path / "out").at["all", "retired_nodes"] == 1


def test_the_unfinished_jobs_warning_names_retired_nodes():
    import pandas as pd

    from raysim.run.cluster import retired_reason

    assert retired_reason(pd.DataFrame({"vc": ["vcA", "all"], "jobs": [1, 1]})) == ""
    assert retired_reason(pd.DataFrame({"vc": ["vcA", "all"], "retired_nodes": [0, 0]})) == ""
    assert "2 node(s) were retired for good" in retired_reason(
        pd.DataFrame({"vc": ["vcA", "all"], "retired_nodes": [2, 2]}))


def test_a_run_whose_retirements_leave_a_job_too_few_nodes_stops_at_its_stall_bound_saying_so(tmp_path):
    """vcA's 16-GPU job needs both its nodes; node 1 is bad (fails 1,000 times as often) and retires
    within hours (3 failures in a day), node 0 keeps failing now and then, so events go on: the
    stall guard stops the run, its one line naming the retired node."""
    from raysim.run.simulate import RunStalled, simulate_to

    trace, spec, extra = tiny_run(tmp_path, [("vcA", 16, 0, 36_000)], {"vcA": 2}, "failures=exponential",
                                  "failures.node_mtbf_h=1000", "failures.bad_fraction=0.5",
                                  "failures.bad_multiplier=1000", "failures.repair_h=1", "retire=threshold",
                                  "retire.max_failures=3", "retire.window_h=24")
    assert [spec.capacity.vcs["vcA"].model.is_bad(0, "vcA", n) for n in range(2)] == [False, True]
    with pytest.raises(RunStalled) as stop:
        simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra, stall_s="auto")
    said = str(stop.value)
    assert "\n" not in said and "VC vcA has 1 unfinished job(s)" in said
    assert "(retired for good: 1 node(s) of VC vcA; a job needing more nodes than its VC has left never starts)" \
        in said


def test_a_node_retired_while_its_node_log_has_it_down_never_comes_back():
    """A failure while the log has the node down does not happen, but its repair is drawn and
    counted (docs/failures.md) and so is the retirement after it: the log's up does not bring the
    node back."""
    from raysim.sim.capacity import LogStream
    from raysim.sim.failures import Merged

    failures = model(retire=Threshold(1, 1e9)).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    merged = Merged(failures, LogStream(((0, 0, DOWN, 1), (10 ** 7, 1, UP, 1))), absent=False)
    assert until_none(merged) == [(0, 0, DOWN, 1), (3594, 0, RESTART, 0)] and failures.retired == 1
    kept = Merged(model().stream(0, "vc", 0, 8, causes=CAUSES, rank=0),
                  LogStream(((0, 0, DOWN, 1), (10 ** 7, 1, UP, 1))), absent=False)
    assert events(kept, 2) == [(0, 0, DOWN, 1), (10 ** 7, 1, UP, 1)]  # (without retirement the log's up stands)
    # the log brings the node up before the end of the repair it retires after: it goes down there
    failures = model(retire=Threshold(1, 1e9)).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    merged = Merged(failures, LogStream(((0, 0, DOWN, 1), (2_500, 1, UP, 1))), absent=False)
    assert until_none(merged) == [(0, 0, DOWN, 1), (2_500, 1, UP, 1), (3594, 0, DOWN, 0)]
