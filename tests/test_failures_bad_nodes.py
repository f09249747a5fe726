"""Lognormal lifetimes and bad nodes (raysim.sim.failures, issue 50): lognormal lifetimes have the
node's MTBF as their mean and exp(sigma^2) - 1 as their squared coefficient of variation; a node is
bad with probability `bad_fraction`, drawn from its own seed apart from its failure times, and a bad
node fails `bad_multiplier` times as often, so its share of a cluster's failures follows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_failures import stream_lifetimes as lifetimes

from raysim.sim.capacity import UP
from raysim.sim.failures import BAD_NODE, Category, FailureModel

HW = Category("gpu", 1.0, "down")
CAUSES = ("gpu",)


def failures_until(stream, horizon):
    """How many times one node's `stream` fails before `horizon` (seconds)."""
    count = 0
    while True:
        t, _, kind, _ = stream.next()
        if t >= horizon:
            return count
        count += kind != UP


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.5])
def test_lognormal_lifetimes_are_mean_matched_with_their_spread(sigma):
    model = FailureModel((HW,), node_mtbf_s=36_000, distribution="lognormal", sigma=sigma, repair_s=600)
    life = lifetimes(model.stream(0, "vc", 0, 8, causes=CAUSES, rank=0), 40_000)
    assert abs(life.mean() / 36_000 - 1) < 0.03
    # the median is exp(mu) = mtbf x exp(-sigma^2 / 2): 31,770 s at sigma 0.5, 21,835 s at 1, 11,706 s at 1.5
    assert abs(np.median(life) / (36_000 * math.exp(-sigma ** 2 / 2)) - 1) < 0.03
    if sigma < 1.5:  # (the spread of a heavier tail converges too slowly for a test this size)
        assert abs(life.var() / life.mean() ** 2 / (math.exp(sigma ** 2) - 1) - 1) < 0.15


def test_bad_nodes_are_seeded_per_node_and_drawn_apart_from_failure_times():
    model = FailureModel((HW,), node_mtbf_s=1000, bad_fraction=0.15, bad_multiplier=6.0)
    bad = [model.is_bad(7, "vcA", node) for node in range(10_000)]
    # Binomial(10,000, 0.15): 1,500 +- 36 (one standard deviation); 4 of them either side
    assert 1500 - 143 < sum(bad) < 1500 + 143
    assert bad == [model.is_bad(7, "vcA", node) for node in range(10_000)]  # the same, whenever asked
    assert bad != [model.is_bad(8, "vcA", node) for node in range(10_000)]  # another seed, other nodes
    assert bad != [model.is_bad(7, "vcB", node) for node in range(10_000)]
    assert not any(FailureModel((HW,), node_mtbf_s=1000).is_bad(7, "vcA", node) for node in range(1000))
    # a good node fails exactly as it does with no bad nodes at all: its health is not drawn from its stream
    plain = FailureModel((HW,), node_mtbf_s=1000, repair_s=60)
    good = next(node for node in range(100) if not bad[node])
    with_bad = FailureModel((HW,), node_mtbf_s=1000, repair_s=60, bad_fraction=0.15, bad_multiplier=6.0)
    a, b = (m.stream(7, "vcA", good, 8, causes=CAUSES, rank=0) for m in (plain, with_bad))
    assert [a.next() for _ in range(200)] == [b.next() for _ in range(200)]
    assert not b.bad


@pytest.mark.parametrize("distribution,extra", [("exponential", {}), ("weibull", {"shape": 0.7}),
                                                ("lognormal", {"sigma": 1.0})])
def test_a_bad_node_lives_its_mtbf_over_the_multiplier(distribution, extra):
    model = FailureModel((HW,), node_mtbf_s=60_000, distribution=distribution, repair_s=600, bad_fraction=0.5,
                         bad_multiplier=6.0, **extra)
    node = next(n for n in range(100) if model.is_bad(3, "vc", n))
    stream = model.stream(3, "vc", node, 8, causes=CAUSES, rank=0)
    assert stream.bad
    assert abs(lifetimes(stream, 30_000).mean() / 10_000 - 1) < 0.04


def test_bad_nodes_share_of_a_clusters_failures():
    """1,000 nodes, 15 % bad at 6 times the rate, no repair time: over 50,000 s a good node fails
    about 50 times, a bad one 300, so the b bad nodes' share of failures is 6b / (6b + 1,000 - b):
    0.514 at b = 150."""
    model = FailureModel((HW,), node_mtbf_s=1000, bad_fraction=0.15, bad_multiplier=6.0)
    streams = [model.stream(11, "vc", node, 8, causes=CAUSES, rank=node) for node in range(1000)]
    counts = np.array([failures_until(s, 50_000) for s in streams])
    bad = np.array([s.bad for s in streams])
    b = bad.sum()
    assert abs(counts[~bad].mean() / 50 - 1) < 0.02 and abs(counts[bad].mean() / 300 - 1) < 0.02
    assert abs(counts[bad].sum() / counts.sum() - 6 * b / (6 * b + 1000 - b)) < 0.01


def test_a_bad_nodes_failures_beyond_a_good_ones_rate_are_counted_under_bad_node():
    """A bad node at 6 times the rate: 5 of every 6 of its failures are the bad node's own (AIReSim's
    systematic ones), counted under BAD_NODE; the rest under their category. The split is drawn apart
    from the failure times, which stay those of a run that does not split (causes without BAD_NODE),
    and a good node names no BAD_NODE."""
    causes = (*CAUSES, BAD_NODE)
    model = FailureModel((HW,), node_mtbf_s=1000, repair_s=60, bad_fraction=0.5, bad_multiplier=6.0)
    node = next(n for n in range(100) if model.is_bad(3, "vc", n))
    split, plain = (model.stream(3, "vc", node, 8, causes=c, rank=0) for c in (causes, CAUSES))
    events, unsplit = [split.next() for _ in range(12_000)], [plain.next() for _ in range(12_000)]
    assert [e[:3] for e in events] == [e[:3] for e in unsplit]
    failed = [e for e in events if e[2] != UP]
    share = sum(e[3] == 1 for e in failed) / len(failed)
    assert len(failed) == 6000 and abs(share - 5 / 6) < 0.015  # (sd of the share: 0.005)
    good = next(n for n in range(100) if not model.is_bad(3, "vc", n))
    stream = model.stream(3, "vc", good, 8, causes=causes, rank=0)
    assert all(stream.next()[3] == 0 for _ in range(1000))


def test_a_run_with_bad_nodes_splits_its_interruptions_and_lost_work_by_cause(tmp_path):
    from test_failures_busy import compose

    from raysim.report.capacity import lost_by_cause
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    cfg = compose("policy=fifo", "failures=exponential", "failures.node_mtbf_h=200", "failures.repair_h=1",
                  "failures.bad_fraction=0.3", "failures.bad_multiplier=5", "checkpoint.interval_s=1800")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert spec.capacity.causes == ("failure", BAD_NODE)
    jobs, _ = simulate(trace, spec, None, job_extra=extra)
    stops = {c: jobs.column(f"interruptions_{c}").to_numpy().sum() for c in spec.capacity.causes}
    assert stops["failure"] > 0 and stops[BAD_NODE] > 0
    assert stops["failure"] + stops[BAD_NODE] == jobs.column("interruptions").to_numpy().sum()
    rows = lost_by_cause(jobs).query("vc == 'all'").set_index("cause")
    assert rows.at[BAD_NODE, "interruptions"] == stops[BAD_NODE] and rows.at[BAD_NODE, "lost_gpu_h"] > 0


def test_under_busy_clocks_a_bad_nodes_failures_are_split_as_they_are_armed():
    """Busy clocks arm a failure before it happens (raysim.sim.busy): its cause is drawn then, and
    the event the engine applies names it."""
    from raysim.sim.busy import BusyFailures

    model = FailureModel((HW,), node_mtbf_s=1000, repair_s=60, bad_fraction=0.5, bad_multiplier=6.0, clock="busy")
    node = next(n for n in range(100) if model.is_bad(3, "vc", n))
    stream = model.stream(3, "vc", node, 8, causes=(*CAUSES, BAD_NODE), rank=0)
    assert isinstance(stream, BusyFailures)
    named, now = [], 0
    for _ in range(3000):
        stream.carry(0, now, now)
        t, _, _, cause = stream.armed
        named.append(cause)
        up = stream.next()  # (the failure happens; its repair's end follows)
        now = up[0]
    assert abs(sum(c == 1 for c in named) / len(named) - 5 / 6) < 0.025 and set(named) == {0, 1}


def test_a_good_node_turns_bad_at_the_regeneration_its_own_draw_says():
    """Bad-node regeneration (failures.bad_regen_h): at every regeneration a good node turns bad with
    probability bad_fraction x bad_regen_share, drawn as a geometric count of regenerations from its
    own generator ([seed, VC, node, REGENERATION]); its lifetimes are a bad node's from the first one
    that begins at or after it, and it is counted once."""
    from raysim.sim.failures import REGENERATION, stable_hash

    day = 86_400
    model = FailureModel((HW,), node_mtbf_s=10 * day, repair_s=60, bad_fraction=0.5, bad_multiplier=4.0,
                         regen_s=day, regen_share=0.2)
    node = next(n for n in range(100) if not model.is_bad(7, "vc", n))
    f = model.stream(7, "vc", node, 8, causes=(*CAUSES, BAD_NODE), rank=0)
    count = np.random.default_rng([7, stable_hash("vc"), node, REGENERATION]).geometric(0.5 * 0.2)
    assert f.bad_at == count * day and not f.bad and f.bad_cause == 1
    f.refresh(f.bad_at - 1)
    assert not f.bad and f.scale == 10 * day
    f.refresh(f.bad_at + 5)
    assert f.bad and f.scale == 10 * day / 4 and f.turned_bad == 1 and f.bad_at == math.inf
    f.refresh(100 * day)
    assert f.turned_bad == 1  # (counted once)


def test_without_regeneration_nothing_turns_bad_and_bad_nodes_draw_as_before():
    model = FailureModel((HW,), node_mtbf_s=1000, repair_s=60, bad_fraction=0.5, bad_multiplier=4.0)
    for node in range(20):
        f = model.stream(7, "vc", node, 8, causes=(*CAUSES, BAD_NODE), rank=0)
        assert f.bad_at == math.inf and (f.bad_cause is None) == (not f.bad)


def test_a_run_with_bad_node_regeneration_counts_the_nodes_turned_bad(tmp_path):
    """Under busy clocks, with bad nodes regenerated every day, jobs on whole nodes too (their own
    clocks turn a node bad as a run begins): the summary counts the nodes turned bad, more bad-node
    failures than without, and every job finishes."""
    from test_failures_busy import compose

    from raysim.report.summary import summarize
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate_to

    def run(*extra):
        out = tmp_path / str(len(extra))
        cfg = compose("policy=fifo", "failures=exponential", "failures.node_mtbf_h=300", "failures.clock=busy",
                      "failures.bad_fraction=0.2", "failures.bad_multiplier=5", "repair=pipeline",
                      "checkpoint.interval_s=1800", *extra)
        trace = load_from_config(cfg)
        spec, job_extra = spec_from_config(cfg, trace)
        simulate_to(out, trace, spec, None, runtime="local", job_extra=job_extra)
        import pyarrow.parquet as pq

        jobs = pq.read_table(out / "jobs.parquet")
        assert jobs.column("finished").to_numpy().all()
        return jobs, summarize(jobs, out / "timeseries.parquet").set_index("vc")

    jobs, s = run("failures.bad_regen_h=24", "failures.bad_regen_share=0.5")
    assert s.loc["all", "nodes_turned_bad"] > 0
    before, _ = run()
    bad = jobs.column(f"interruptions_{BAD_NODE}").to_numpy().sum()
    assert bad > before.column(f"interruptions_{BAD_NODE}").to_numpy().sum()


@pytest.mark.parametrize("overrides,message", [
    (["failures.bad_regen_h=24"], r"^failures\.bad_regen_h: only with failures\.bad_fraction > 0"),
    (["failures.bad_fraction=0.1", "failures.bad_multiplier=3", "failures.bad_regen_share=0.3"],
     r"^failures\.bad_regen_share: only with failures\.bad_regen_h"),
    (["failures.bad_fraction=0.1", "failures.bad_multiplier=3", "failures.bad_regen_h=0"], r"^failures\.bad_regen_h: "),
    (["failures.bad_fraction=0.1", "failures.bad_multiplier=3", "failures.bad_regen_h=24",
      "failures.bad_regen_share=2"], r"^failures\.bad_regen_share: "),
])
def test_regeneration_settings_out_of_place_are_one_line_naming_them(overrides, message):
    from test_failures_busy import compose

    from raysim.errors import ConfigError
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError, match=message):
        check_cluster_config(compose("failures=exponential", *overrides))
