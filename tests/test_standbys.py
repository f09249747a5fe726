"""Warm standbys per job and the host-selection time (`spares.standbys`, `spares.host_selection_s`,
raysim.sim.standbys, docs/failures.md): hand-built cases with hand-computed ends, the counts in the
results, bad settings, and Ray against local."""

from __future__ import annotations

import pandas as pd
import pytest
from simutil import batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)
from test_spares import run_cli

from raysim.errors import ConfigError
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.capacity import DOWN, RESTART, UP, CapacityPlan, VCCapacity
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.extensions import Capacity, Checkpoints
from raysim.sim.spares import Spares
from raysim.sim.standbys import Standbys

#: a failure's restore (AIReSim's recovery) and the host selection, in seconds
RECOVERY, SELECTION = 100, 30


def simulated(jobs, events, *, nodes=4, standbys=1, spares=0):
    """One VC of `nodes` 8-GPU nodes (the last `spares` of them spares, up 200 s after a pull), FIFO, jobs
    checkpointing every second with a restore of RECOVERY, `standbys` per multi-node job and a host selection
    of SELECTION; `events`: (time, node, kind) capacity events. Returns (per job: start, end, interruptions;
    the simulator)."""
    params = SimParams.for_mode("clean")
    extensions = [Capacity(CapacityPlan(("fail",), {"vc": VCCapacity(
        tuple((t, node, kind, 0) for t, node, kind in events), (), len(jobs))})),
        Checkpoints(Checkpointing(1, 0, RECOVERY))]
    if spares:
        extensions.append(Spares(spares, 200))
    extensions.append(Standbys(standbys, SELECTION))
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=extensions)
    sim.add_jobs(batch(jobs))
    sim.run()
    sim.vc.check()  # (the VC's books hold after the swaps)
    r = sim.results()
    return [(int(s), int(e), int(i)) for s, e, i in zip(r["start_time"], r["end_time"], r["interruptions"])], sim


#: A job of two nodes (16 GPUs) with 1,000 s of work, submitted at 0.
TWO_NODE_JOB = [(0, 1000, 16)]


def counts(sim) -> tuple[int, int, int]:
    """(standby swaps, host selections, stalls) of the run."""
    s = sim.standbys
    return s.swaps, s.selections, s.stalls


def test_a_failed_node_is_swapped_for_the_standby_at_the_restore_only():
    # nodes 0-1 run the job from 0, node 2 is its standby; node 0 goes down at 50: the job keeps its 50 s
    # of work and restarts at once on nodes 2 and 1: a restore of 100 s, then 950 s of work -> 1,100
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, DOWN), (100_000, 0, UP)])
    assert ends == [(0, 1100, 1)] and counts(sim) == (1, 1, 0)
    assert sorted(n for n, _ in sim.vc.placement.get(0, [])) == []  # (done: every node given back)
    assert sim.vc.state[2] == UP and sim.vc.free_gpus == 8 * 3  # (node 0 is still down)


def test_with_no_standby_left_the_job_pays_its_host_selection_then_the_restore():
    # the swap at 50 as above; node 1 goes down at 200: no standby is left, so the job (100 s of work kept)
    # is away for its host selection until 230, placed then on nodes 2-3, restores 100 s and works 900 s
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, DOWN), (200, 1, DOWN), (100_000, 0, UP), (100_000, 1, UP)])
    assert ends == [(0, 230 + RECOVERY + 900, 2)] and counts(sim) == (1, 2, 0)


def test_a_job_that_finds_no_standby_and_no_node_stalls_until_a_repair():
    # three nodes: the swap at 50 takes the last; at 200 node 1 goes down, and after its host selection (230)
    # the job finds one free node: it stalls until node 0 is back at 5,000, then restores and works 900 s
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, DOWN), (200, 1, DOWN), (5000, 0, UP), (100_000, 1, UP)], nodes=3)
    assert ends == [(0, 5000 + RECOVERY + 900, 2)] and counts(sim) == (1, 2, 1)


def test_a_spare_left_to_pull_is_a_wait_not_a_stall():
    # the same with a fourth node as a spare: after its host selection (230) the job does not fit, the spare
    # is pulled and up at 430: the job runs there on nodes 2-3, no stall
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, DOWN), (200, 1, DOWN), (5000, 0, UP), (100_000, 1, UP)], spares=1)
    assert ends == [(0, 430 + RECOVERY + 900, 2)] and counts(sim) == (1, 2, 0) and sim.spares.pulled == 1


def test_a_failure_that_leaves_its_node_up_restarts_the_job_in_place_keeping_its_standby():
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, RESTART)])
    assert ends == [(0, 1100, 1)] and counts(sim) == (0, 1, 0)


def test_a_node_back_from_repair_refills_the_standbys_of_a_running_job():
    # the swap at 50 uses node 2; node 0 is back at 300 and becomes the job's standby (node 3 stays idle); node
    # 1 goes down at 500: node 0 is swapped in, no host selection. The job works 0-50, restores 50-150, works
    # 150-500 (400 s kept), restores 500-600 and works the last 600 s -> 1,200
    ends, sim = simulated(TWO_NODE_JOB, [(50, 0, DOWN), (300, 0, UP), (500, 1, DOWN), (100_000, 1, UP)])
    assert ends == [(0, 1200, 2)] and counts(sim) == (2, 1, 0)


def test_one_node_jobs_hold_no_standbys_and_stop_as_before():
    ends, sim = simulated([(0, 1000, 8)], [(50, 0, DOWN), (100_000, 0, UP)])
    assert ends == [(0, 50 + RECOVERY + 950, 1)] and counts(sim) == (0, 0, 0)


def test_a_swap_moves_only_the_failed_nodes_gpus():
    # a job of two nodes plus a one-node job: at 50 node 0 fails, the two-node job moves to its standby (node 2);
    # at 60, mid-run, its placement is nodes 2 and 1 and the one-node job still runs on node 3
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools(4), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=[Capacity(CapacityPlan(("fail",), {"vc": VCCapacity(
                          ((50, 0, DOWN, 0), (100_000, 0, UP, 0)), (), 2)})), Standbys(1)])
    sim.add_jobs(batch([(0, 1000, 16), (0, 1000, 8)]))
    sim.run(until=60)
    sim.vc.check()
    assert [n for n, _ in sim.vc.placement[0]] == [2, 1] and [n for n, _ in sim.vc.placement[1]] == [3]
    assert sim.vc.free_gpus == 0 and sim.standbys.held == {0: []}


def test_a_standby_is_out_of_service_while_held():
    # two 2-node jobs on 4 nodes: the first runs on nodes 0-1 and holds node 2 as its standby, so the second
    # finds one free node and waits for the first to end
    ends, sim = simulated([(0, 1000, 16), (0, 1000, 16)], [], nodes=4)
    assert ends == [(0, 1000, 0), (1000, 2000, 0)]


def test_a_run_counts_swaps_host_selections_and_stalls(tmp_path):
    run = run_cli(tmp_path, "failures=exponential", "failures.node_mtbf_h=20", "failures.clock=busy",
                  "spares.standbys=1", "spares.host_selection_s=180", "checkpoint.interval_s=600",
                  "checkpoint.restart_s=300")
    summary = pd.read_csv(run / "summary.csv").set_index("vc")
    assert summary.loc["all", "host_selections"] >= 1 and summary.loc["all", "standby_swaps"] >= 1
    series = pd.read_parquet(run / "timeseries.parquet")
    assert all(series[c].is_monotonic_increasing for c in ("standby_swaps", "host_selections", "stalls"))


@pytest.mark.parametrize("overrides, key", [
    (["spares.standbys=-1"], "spares.standbys"),
    (["spares.standbys=4"], "spares.standbys"),  # (the VC has 4 nodes)
    (["spares.host_selection_s=60"], "spares.host_selection_s"),  # (without standbys)
    (["spares.standbys=1", "spares.host_selection_s=-1"], "spares.host_selection_s"),
    (["spares.standbys=1", "failures=exponential"], "spares.standbys"),  # (failures.clock=up would age a standby)
    (["spares.standbys=1", "policy=max_min_fairness"], "spares.standbys"),  # (times its jobs itself)
])
def test_bad_standby_settings_are_one_line_naming_the_key(tmp_path, overrides, key):
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, *overrides)
    assert err.value.key == key and "\n" not in str(err.value)


@pytest.mark.slow
def test_ray_gives_the_local_results(ray_local, tmp_path):  # noqa: F811
    from test_spares import same_on_ray_with_busy_failures

    local = same_on_ray_with_busy_failures(tmp_path, 5, "spares.nodes=1", "spares.wait_s=1200",
                                           "host_selection=returns_last", "spares.standbys=1",
                                           "spares.host_selection_s=180", "checkpoint.interval_s=600",
                                           "checkpoint.restart_s=300")
    series = pd.read_parquet(local / "timeseries.parquet")
    assert series["standby_swaps"].max() > 0 and series["host_selections"].max() > 1
