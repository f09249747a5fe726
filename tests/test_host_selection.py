"""Host selection (`host_selection=`, raysim.sim.host_selection, docs/failures.md): hand-built VCs of
four 8-GPU nodes with a few failures, where each rule puts the idle nodes, the jobs and standbys
placed on them, the same results on Ray, and bad settings in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from simutil import batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)
from test_spares import run_cli, same_on_ray_with_busy_failures

from raysim.errors import ConfigError
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.capacity import DOWN, RESTART, UP, CapacityPlan, VCCapacity
from raysim.sim.extensions import Capacity
from raysim.sim.failures import stable_hash
from raysim.sim.host_selection import HOST_ORDER, HOST_SELECTIONS, FewestFailuresSettings, HostSelection
from raysim.sim.standbys import Standbys


def simulated(jobs, events, rule=None, *, nodes=4, until=None, standbys=0, seed=0, settings=None):
    """One VC "vc" of `nodes` 8-GPU nodes under FIFO and first fit, host selection `rule` (None: in
    place), `standbys` warm standbys per multi-node job; `events`: (time, node, kind) capacity events.
    Runs through time `until` (None: to the end) and returns the simulator."""
    params = SimParams.for_mode("clean")
    extensions = [Capacity(CapacityPlan(("fail",), {"vc": VCCapacity(
        tuple((t, node, kind, 0) for t, node, kind in events), (), len(jobs))}))]
    if rule is not None:
        extensions.append(HostSelection(rule, seed, settings).extension())
    if standbys:
        extensions.append(Standbys(standbys))
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer("first_fit", params=params),
                      params, extensions=extensions)
    sim.add_jobs(batch(jobs))
    sim.run() if until is None else sim.run(until + 1)
    return sim


def nodes_of(sim, j=0):
    return [node for node, _ in sim.vc.placement[j]]


#: Node 0 fails twice early (down 10-20, 30-40), node 1 once later (down 50-60): by 100, node 0 has two
#: failures, node 1 one, nodes 2 and 3 none.
TWO_THEN_ONE = [(10, 0, DOWN), (20, 0, UP), (30, 0, DOWN), (40, 0, UP), (50, 1, DOWN), (60, 1, UP)]


def test_each_rule_orders_the_idle_nodes_its_own_way():
    # a three-node job (24 GPUs) at 100 takes the first three nodes of the scan order:
    # in place 0, 1, 2; returning last 2, 3, then node 0 (back at 40) before node 1 (back at 60);
    # fewest failures 2, 3 (none), then node 1 (one) before node 0 (two)
    job = [(100, 1000, 24)]
    assert nodes_of(simulated(job, TWO_THEN_ONE, until=100)) == [0, 1, 2]
    assert nodes_of(simulated(job, TWO_THEN_ONE, "in_place", until=100)) == [0, 1, 2]
    assert nodes_of(simulated(job, TWO_THEN_ONE, "returns_last", until=100)) == [2, 3, 0]
    sim = simulated(job, TWO_THEN_ONE, "fewest_failures", until=100)
    assert nodes_of(sim) == [2, 3, 1]
    assert sim.vc.order == [2, 3, 1, 0] and sim.vc.host_order.failures == {0: 2, 1: 1}


def test_a_failure_that_leaves_its_node_up_moves_it_behind_the_nodes_with_fewer():
    # node 0 restarts at 10 (its jobs would restart; it stays up): one failure, so a one-node job at 20
    # goes on node 1 under fewest_failures, on node 0 in place
    events, job = [(10, 0, RESTART)], [(20, 1000, 8)]
    assert nodes_of(simulated(job, events, until=20)) == [0]
    sim = simulated(job, events, "fewest_failures", until=20)
    assert nodes_of(sim) == [1] and sim.vc.order == [1, 2, 3, 0]


def test_the_failed_job_is_placed_anew_on_the_nodes_with_fewest_failures():
    # a two-node job at 0 on nodes 0-1. Node 0 fails at 10 (back at 15): the job restarts on 1-2, and node 0
    # rejoins behind 3 (one failure). Node 1 fails at 30 (back at 35): the job restarts on 2-3, order 2, 3, 0, 1
    # (ties in node order). Node 0, idle, fails again at 40 (back at 45): order 2, 3, 1, 0. Node 2 fails at 50:
    # the job restarts on 3 and node 1 (one failure), not node 0 (two); in place it would take 0 and 1
    events = [(10, 0, DOWN), (15, 0, UP), (30, 1, DOWN), (35, 1, UP), (40, 0, DOWN), (45, 0, UP), (50, 2, DOWN)]
    sim = simulated([(0, 1000, 16)], events, "fewest_failures", until=50)
    assert sorted(nodes_of(sim)) == [1, 3]
    sim = simulated([(0, 1000, 16)], events, until=50)  # (in place: node 0 first again)
    assert sorted(nodes_of(sim)) == [0, 1]


def test_standbys_are_chosen_by_fewest_failures():
    # TWO_THEN_ONE, then a two-node job at 100 with one warm standby: it runs on 2 and 3; its standby is
    # node 1 (one failure), not node 0 (two); returning last it is node 0 (back first)
    job = [(100, 1000, 16)]
    sim = simulated(job, TWO_THEN_ONE, "fewest_failures", until=100, standbys=1)
    assert nodes_of(sim) == [2, 3] and sim.standbys.held[0] == [1]
    sim = simulated(job, TWO_THEN_ONE, "returns_last", until=100, standbys=1)
    assert nodes_of(sim) == [2, 3] and sim.standbys.held[0] == [0]


def test_fewest_failures_with_random_ties_draws_them_afresh_at_every_failure():
    # ties=random: at the start every node draws a tie (in node order, from the VC's generator) and the
    # order is by (failures, tie); node order[0] fails at 10 (down) under a one-node job: the nodes in the
    # order draw anew (the failed one leaves it after); back at 20 it draws its own tie and goes behind the
    # three without failures
    seed, random_ties = 5, FewestFailuresSettings(ties="random")
    rng = np.random.default_rng([seed, stable_hash("vc"), HOST_ORDER])
    start = sorted(range(4), key=dict(zip(range(4), rng.random(4).tolist())).__getitem__)
    first = start[0]
    def through(t):
        return simulated([(0, 10**6, 8)], [(10, first, DOWN), (20, first, UP)], "fewest_failures", seed=seed,
                         settings=random_ties, until=t).vc.order

    assert through(5) == start
    ties = dict(zip(start, rng.random(4).tolist()))  # (drawn while the failed node was still in the order)
    rest = sorted(start[1:], key=ties.__getitem__)
    assert through(15) == rest
    rng.random()  # (the failed node's draw when it is back: it goes last all the same, with one failure)
    assert through(20) == rest + [first]


def expected_random(seed: int, nodes: int = 4):
    """The documented draws of host_selection=random for VC "vc": the start order and its generator."""
    rng = np.random.default_rng([seed, stable_hash("vc"), HOST_ORDER])
    return [int(n) for n in rng.permutation(nodes)], rng


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_random_shuffles_the_nodes_and_puts_a_node_back_at_a_drawn_place(seed):
    # a one-node job at 0 takes the first node of the shuffled order; that node fails at 10 (the job moves
    # to the next node) and is back at 20, at the place drawn among the four
    order, rng = expected_random(seed)
    first = order[0]
    events = [(10, first, DOWN), (20, first, UP)]
    sim = simulated([(0, 1000, 8)], events, "random", seed=seed, until=5)
    assert sim.vc.order == order and nodes_of(sim) == [first]
    sim = simulated([(0, 1000, 8)], events, "random", seed=seed, until=20)
    rest = order[1:]
    rest.insert(int(rng.integers(4)), first)
    assert sim.vc.order == rest and nodes_of(sim) == [order[1]]


def test_random_depends_on_the_seed_and_the_vc_only():
    assert simulated([], [], "random", seed=3).vc.order == simulated([], [], "random", seed=3).vc.order
    orders = {tuple(simulated([], [], "random", seed=s, nodes=8).vc.order) for s in range(5)}
    assert len(orders) > 1


def test_the_registry_names_every_preset():
    from raysim.paths import CONF_DIR

    assert sorted(HOST_SELECTIONS) == sorted(p.stem for p in (CONF_DIR / "host_selection").glob("*.yaml"))


# --------------------------------------------------------------------------------------- command line
def test_fewest_failures_runs_from_the_command_line(tmp_path):
    run = run_cli(tmp_path, "host_selection=fewest_failures", "failures=exponential", "failures.node_mtbf_h=20",
                  "failures.clock=busy")
    jobs = pd.read_parquet(run / "jobs.parquet")
    assert jobs["finished"].all() and jobs["interruptions"].sum() > 0


@pytest.mark.parametrize("overrides, key", [
    (["host_selection=fewest_failures"], "host_selection"),  # (no failures to count)
    (["host_selection=fewest_failures", "failures=exponential", "quota=borrow"], "host_selection"),
    (["host_selection.name=nearest"], "host_selection.name"),
    (["host_selection=fewest_failures", "failures=exponential", "host_selection.ties=sometimes"],
     "host_selection.ties"),
    (["host_selection=returns_last", "+host_selection.ties=random"], "host_selection.ties"),
    (["+host_selection.seed=3"], "host_selection.seed"),
    (["+spares.returns=last"], "spares.returns"),  # (moved here: host_selection=returns_last)
])
def test_bad_host_selection_settings_are_one_line_naming_the_key(tmp_path, overrides, key):
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, *overrides)
    assert err.value.key == key and "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("rule", [["host_selection=fewest_failures"],
                                  ["host_selection=fewest_failures", "host_selection.ties=random"],
                                  ["host_selection=random"]], ids=["fewest_failures", "ties_random", "random"])
def test_ray_gives_the_local_results(ray_local, tmp_path, rule):  # noqa: F811
    local = same_on_ray_with_busy_failures(tmp_path, 4, *rule, "spares.nodes=1",
                                           "spares.wait_s=1200", "spares.standbys=1", "spares.host_selection_s=180",
                                           "checkpoint.interval_s=600", "checkpoint.restart_s=300")
    series = pd.read_parquet(local / "timeseries.parquet")
    assert series["host_selections"].max() > 0
