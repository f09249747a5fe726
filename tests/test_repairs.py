"""The repair pipeline (`repair=pipeline`, raysim.sim.repairs): its draws against AIReSim's
probabilities, its own per-node generator (repair=fixed draws as before), bad nodes made good by a
true success only, its settings, and its counts in the time series and the summary."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from raysim.sim.capacity import DOWN, UP
from raysim.sim.failures import Category, FailureModel, repair_counts
from raysim.sim.repairs import Pipeline
from test_failures import compose, events, tiny_run

HW = Category("gpu", 1.0, "down")
CAUSES = ("gpu",)
#: AIReSim's Table I: automated 2 h, escalated with probability 0.8 to manual (2 days), false
#: successes 0.4 (automated) and 0.2 (manual)
TABLE_I = Pipeline(2 * 3600, 0.8, 48 * 3600, 0.4, 0.2)


def test_draws_match_the_pipelines_probabilities_and_mean():
    rng = np.random.default_rng(7)
    n = 40_000
    repairs = [TABLE_I.draw(rng) for _ in range(n)]
    manual = np.array([r.manual for r in repairs])
    false = np.array([r.false for r in repairs])
    assert manual.mean() == pytest.approx(0.8, abs=0.01)
    assert false[~manual].mean() == pytest.approx(0.4, abs=0.02)  # of repairs the automated stage ended
    assert false[manual].mean() == pytest.approx(0.2, abs=0.01)
    mean = np.mean([r.time_s for r in repairs])
    assert TABLE_I.mean_s() == pytest.approx(2 * 3600 + 0.8 * 48 * 3600)  # 40.4 h
    assert mean == pytest.approx(TABLE_I.mean_s(), rel=0.02)


def test_fixed_times_are_the_stages_means():
    fixed = Pipeline(100.0, 0.5, 1000.0, 0.0, 1.0, times="fixed")
    rng = np.random.default_rng(1)
    for r in (fixed.draw(rng) for _ in range(200)):
        assert (r.time_s, r.false) == ((1100.0, True) if r.manual else (100.0, False))


def pipelined(pipeline, **kw):
    return FailureModel((HW,), node_mtbf_s=10_000, pipeline=pipeline, **kw)


def test_a_stream_hands_out_the_pipelines_repairs_drawn_from_the_nodes_own_generator():
    """Seed 0, VC "vc", node 0: lifetimes and categories come from [0, crc32("vc"), 0] as under
    repair=fixed, each repair from [0, crc32("vc"), 0, 2] in AIReSim's order (automated time,
    escalation, manual time, false success)."""
    pipeline = Pipeline(600.0, 0.5, 6000.0, 0.3, 0.3, times="fixed")
    stream = pipelined(pipeline).stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    fails = np.random.default_rng([0, zlib.crc32(b"vc"), 0])
    fixes = np.random.default_rng([0, zlib.crc32(b"vc"), 0, 2])
    up, want, counts = 0.0, [], [0, 0, 0]
    for _ in range(5):
        t = up + fails.exponential(10_000)
        fails.random()  # (the category: one here)
        manual = fixes.random() < 0.5
        false = fixes.random() < 0.3
        up = t + 600.0 + (6000.0 if manual else 0.0)
        want += [(int(t), 0, DOWN, 0), (int(up), 0, UP, 0)]
        counts = [counts[0] + 1, counts[1] + manual, counts[2] + false]
    assert events(stream, 10) == want
    assert [stream.auto_repairs, stream.manual_repairs, stream.false_successes] == counts
    assert repair_counts([stream, None]) == tuple(counts)


def test_failure_times_do_not_depend_on_the_pipeline():
    """A pipeline of instant repairs hands out the failures repair=fixed with repair_s 0 does."""
    instant = Pipeline(0.0, 0.7, 0.0, 0.5, 0.5, times="fixed")
    for node in range(5):
        a = pipelined(instant).stream(3, "vcX", node, 8, causes=CAUSES, rank=node)
        b = FailureModel((HW,), node_mtbf_s=10_000).stream(3, "vcX", node, 8, causes=CAUSES, rank=node)
        assert events(a, 40) == events(b, 40)


@pytest.mark.parametrize("false,stays_bad", [(0.0, False), (1.0, True)])
def test_a_bad_node_is_made_good_by_a_true_success_only(false, stays_bad):
    pipeline = Pipeline(60.0, 0.0, 0.0, false, false, times="fixed")
    model = pipelined(pipeline, bad_fraction=1.0, bad_multiplier=100.0)
    stream = model.stream(0, "vc", 0, 8, causes=CAUSES, rank=0)
    assert stream.bad
    evs = events(stream, 2000)
    assert stream.bad == stays_bad and stream.false_successes == (1000 if stays_bad else 0)
    lives = np.diff([0] + [e[0] for e in evs])[2::2]  # (the lifetimes after the first repair)
    assert np.mean(lives) == pytest.approx(100.0 if stays_bad else 10_000.0, rel=0.1)


# ------------------------------------------------------------------------------------------ settings
def test_the_presets_pass_the_checks_and_reach_the_model():
    from raysim.run.config import check_cluster_config
    from raysim.run.repair import pipeline

    for repair in ("fixed", "pipeline"):
        check_cluster_config(compose("failures=exponential", f"repair={repair}"))
    check_cluster_config(compose())  # (repair=fixed with failures=none)
    assert pipeline(compose("failures=exponential")) is None
    assert pipeline(compose("failures=llama3", "repair=pipeline")) == TABLE_I


@pytest.mark.parametrize("overrides,key", [
    (["repair=pipeline"], "repair"),
    (["failures=trace", "failures.path=f.csv", "repair=pipeline"], "repair"),
    (["failures=exponential", "repair.name=weekly"], "repair.name"),
    (["failures=exponential", "repair=pipeline", "repair.escalate=1.5"], "repair.escalate"),
    (["failures=exponential", "repair=pipeline", "repair.escalate=-0.1"], "repair.escalate"),
    (["failures=exponential", "repair=pipeline", "repair.auto_false=nan"], "repair.auto_false"),
    (["failures=exponential", "repair=pipeline", "repair.manual_false=2"], "repair.manual_false"),
    (["failures=exponential", "repair=pipeline", "repair.auto_h=-1"], "repair.auto_h"),
    (["failures=exponential", "repair=pipeline", "repair.manual_h=inf"], "repair.manual_h"),
    (["failures=exponential", "repair=pipeline", "repair.times=weibull"], "repair.times"),
    (["failures=exponential", "+repair.escalate=0.5"], "repair.escalate"),
    # the pipeline draws every repair: a model repair time set with it would be ignored
    (["failures=exponential", "repair=pipeline", "failures.repair_h=3"], "failures.repair_h"),
    (["failures=exponential", "repair=pipeline", "failures.repair=exponential"], "failures.repair"),
    (["failures=exponential", "repair=pipeline",
      "failures.categories=[{name: gpu, share: 1, kind: down, repair_h: 5}]"], "failures.categories[0].repair_h"),
    (["failures=exponential", "failures.repair_h=null"], "failures.repair_h"),
])
def test_bad_repair_settings_are_one_line_naming_the_key(overrides, key):
    from raysim.errors import ConfigError, user_error_message
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as err:
        check_cluster_config(compose(*overrides))
    message = user_error_message(err.value)
    assert f"{key}:" in message or f"{key} " in message or message.startswith(f"raysim: error: {key}")
    assert "\n" not in message


# ------------------------------------------------------------------------------------------- results
def test_a_runs_repairs_are_counted_per_vc_in_its_time_series_and_summary(tmp_path):
    import pyarrow.parquet as pq

    from raysim.report.summary import summarize
    from raysim.run.simulate import simulate_to

    rows = [(vc, 8, i * 600, 3000) for vc in ("vcA", "vcB") for i in range(20)]
    trace, spec, extra = tiny_run(tmp_path, rows, {"vcA": 4, "vcB": 4}, "failures=exponential",
                                  "failures.node_mtbf_h=2", "repair=pipeline", "repair.manual_h=1")
    assert spec.capacity.repairs
    simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra)
    summary = summarize(pq.read_table(tmp_path / "out" / "jobs.parquet"), tmp_path / "out" / "timeseries.parquet")
    s = summary.set_index("vc")
    for column in ("auto_repairs", "manual_repairs", "false_successes"):
        assert s.at["all", column] == s.at["vcA", column] + s.at["vcB", column]
    assert s.at["all", "auto_repairs"] > 20 and s.at["all", "auto_repairs"] >= s.at["all", "manual_repairs"]
    # (each repair begins as its node goes down: at most one begun per failure that stopped a job or not)
    assert s.at["all", "false_successes"] <= s.at["all", "auto_repairs"]


def test_repair_fixed_runs_have_no_repair_columns(tmp_path):
    import pyarrow.parquet as pq

    from raysim.run.simulate import simulate_to

    trace, spec, extra = tiny_run(tmp_path, [("vcA", 8, 0, 3000)], {"vcA": 2}, "failures=exponential",
                                  "failures.node_mtbf_h=2")
    assert not spec.capacity.repairs
    simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra)
    assert "auto_repairs" not in pq.read_schema(tmp_path / "out" / "timeseries.parquet").names


def test_a_stream_pickled_midway_continues_with_its_repairs_and_counts():
    import pickle

    model = pipelined(TABLE_I, bad_fraction=0.5, bad_multiplier=6.0)
    stream = model.stream(5, "vc", 3, 8, causes=CAUSES, rank=3)
    events(stream, 7)  # (midway: a DOWN handed out, its repair not yet counted)
    copy = pickle.loads(pickle.dumps(stream))
    assert events(copy, 30) == events(stream, 30)
    assert repair_counts([copy]) == repair_counts([stream]) and repair_counts([stream])[0] == 18


def test_many_nodes_repairs_have_the_pipelines_shares_and_mean_down_time():
    """1,000 nodes, 15 % bad, 20 failures each under Table I: escalations 0.8 of repairs, false
    successes 0.2 x 0.4 + 0.8 x 0.2 = 0.24, a node down 40.4 h a repair on average, and a bad node
    still bad after its first repair exactly when that repair's success was false (0.24 of them)."""
    model = pipelined(TABLE_I, bad_fraction=0.15, bad_multiplier=6.0)
    streams = [model.stream(11, "vcR", node, 8, causes=CAUSES, rank=node) for node in range(1000)]
    bad = [s for s in streams if s.bad]
    down, first = [], []
    for s in streams:
        evs = events(s, 2)
        first.append((s in bad, s.bad, s.false_successes))
        evs += events(s, 38)
        down += [up[0] - fail[0] for fail, up in zip(evs[::2], evs[1::2])]
    auto, manual, false = repair_counts(streams)
    assert auto == 1000 * 20 == len(down)
    assert manual / auto == pytest.approx(0.8, abs=0.01)
    assert false / auto == pytest.approx(0.24, abs=0.01)
    assert np.mean(down) / 3600 == pytest.approx(40.4, rel=0.02)
    assert len(bad) == pytest.approx(150, abs=30)
    assert all(still == bool(f) for was, still, f in first if was)
    assert sum(still for _, still, _ in first) / len(bad) == pytest.approx(0.24, abs=0.06)
