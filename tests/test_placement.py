"""Placer rules: consolidate (both multi-node variants), first fit and the seeded random placer."""

import pytest

from raysim.placement import make_placer
from raysim.sim import SimParams
from raysim.sim.demand import Demand
from raysim.sim.vc import VCState
from simutil import pools


def vc_with_free(free):
    vc = VCState(pools(len(free)))
    for node, f in enumerate(free):
        if f < 8:
            vc.allocate(1000 + node, [(node, 8 - f)], 0, 0.0)
    return vc


def select(name, free, g, compat="clean", seed=0):
    placer = make_placer(name, params=SimParams.for_mode(compat, seed=seed))
    return placer.select(vc_with_free(free), Demand(g))


@pytest.mark.parametrize("compat", ["clean", "lucid"])
@pytest.mark.parametrize("g,expected", [(2, [(3, 2)]), (3, [(1, 3)]), (4, [(2, 4)]), (8, [(0, 8)]), (6, [(0, 6)])])
def test_consolidate_small_job_best_fit(compat, g, expected):
    assert select("consolidate", [8, 3, 5, 2], g, compat) == expected


def test_consolidate_small_job_ties_go_to_first_node():
    assert select("consolidate", [4, 8, 4], 3) == [(0, 3)]


def test_consolidate_small_job_never_splits():
    assert select("consolidate", [3, 3, 3], 4) is None


@pytest.mark.parametrize("compat", ["clean", "lucid"])
def test_consolidate_multiple_of_node_size_takes_whole_nodes(compat):
    assert select("consolidate", [8, 4, 8, 8], 16, compat) == [(0, 8), (2, 8)]
    assert select("consolidate", [8, 7, 7, 7], 16, compat) is None


def test_consolidate_remainder_reference_vs_search_all():
    # reference: remainder on the next node by free GPUs descending (a whole free node);
    # clean: best fit among partly used nodes, keeping the free node whole
    assert select("consolidate", [8, 6, 8, 2], 12, "lucid") == [(0, 8), (2, 4)]
    assert select("consolidate", [8, 6, 8, 2], 12, "clean") == [(0, 8), (1, 4)]


def test_consolidate_remainder_fails_without_room():
    assert select("consolidate", [8, 3, 2, 2], 12, "lucid") is None
    assert select("consolidate", [8, 3, 2, 2], 12, "clean") is None


def test_first_fit_splits_in_node_order():
    assert select("first_fit", [3, 8, 2], 10) == [(0, 3), (1, 7)]
    assert select("first_fit", [3, 0, 2], 6) is None


def test_random_placer_is_seeded_and_valid():
    picks = {tuple(select("random", [8, 8, 8, 8], 2, seed=s)) for s in range(20)}
    assert len(picks) > 1  # genuinely random across seeds
    assert select("random", [8, 8, 8, 8], 2, seed=3) == select("random", [8, 8, 8, 8], 2, seed=3)
    alloc = select("random", [1, 2, 3, 4], 9, seed=1)
    assert sum(c for _, c in alloc) == 9
    assert all(c <= [1, 2, 3, 4][n] for n, c in alloc)
