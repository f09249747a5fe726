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
from raysim.sim.failures import Category, FailureModel

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
