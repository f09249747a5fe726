"""A spare pool per VC (`spares.*`, raysim.sim.spares, docs/failures.md): hand-built cases with
hand-computed starts and ends, the pool's count in the results, and its bad settings."""

from __future__ import annotations

import pandas as pd
import pytest
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim.errors import ConfigError
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.capacity import DOWN, UP, CapacityPlan, VCCapacity
from raysim.sim.extensions import Capacity
from raysim.sim.host_selection import ReturnsLast
from raysim.sim.spares import Spares


def simulated(jobs, events, *, nodes=3, spares=1, wait=100, returns_last=False):
    """One VC of `nodes` 8-GPU nodes, the last `spares` of them spares up `wait` s after a pull;
    `events`: (time, node, up) capacity events. Returns (results per job, spares pulled)."""
    params = SimParams.for_mode("clean")
    extensions = [Capacity(CapacityPlan(("fail",), {"vc": VCCapacity(
        tuple((t, node, UP if up else DOWN, 0) for t, node, up in events), (), len(jobs))}))]
    if spares:
        extensions.append(Spares(spares, wait))
    if returns_last:
        extensions.append(ReturnsLast())
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=extensions)
    sim.add_jobs(batch(jobs))
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}, (sim.spares.pulled if spares else 0)


#: A job of two nodes (16 GPUs, 1,000 s) at 0; node 0 goes down at 50 and is back at 10,000.
TWO_NODE_JOB, NODE_0_FAILS = [(0, 1000, 16)], [(50, 0, False), (10_000, 0, True)]


def test_a_spare_is_pulled_when_the_waiting_job_does_not_fit_and_is_up_after_its_wait():
    # nodes 0 and 1 work, node 2 is the spare; at 50 the job stops (FIFO restarts it from the beginning):
    # it asks 16 GPUs, 8 are free, so the spare is pulled, up at 150, and the job runs 150-1,150 on nodes 1-2
    r, pulled = simulated(TWO_NODE_JOB, NODE_0_FAILS)
    assert r["start_time"] == [0] and r["end_time"] == [1150] and pulled == 1
    r, pulled = simulated(TWO_NODE_JOB, NODE_0_FAILS, wait=0)  # (up at once)
    assert r["end_time"] == [1050] and pulled == 1
    r, pulled = simulated(TWO_NODE_JOB, NODE_0_FAILS, nodes=2, spares=0)  # no pool: it waits for the repair
    assert r["end_time"] == [11_000] and pulled == 0


def test_no_spare_is_pulled_while_the_waiting_jobs_fit():
    # a one-node job on node 0 stops at 50 and starts again at once on node 1: the spare stays in the pool
    r, pulled = simulated([(0, 1000, 8)], NODE_0_FAILS)
    assert r["end_time"] == [1050] and pulled == 0


def test_spares_are_out_of_service_until_pulled():
    # two one-node jobs at 0 on two working nodes and a spare: the second waits for no failure, so the
    # spare is pulled for it (16 GPUs asked, 8 free after the first starts) and it starts at 100
    r, pulled = simulated([(0, 1000, 8), (0, 1000, 8), (0, 1000, 8)], [])
    assert r["start_time"] == [0, 0, 100] and pulled == 1


def test_a_node_back_in_service_joins_the_end_of_the_scan_order_under_returns_last():
    # a one-node job on node 0 stops at 50 (node 0 down until 100) and restarts on node 1; a second one-node
    # job arrives at 200 with nodes 0 and 2 free: in place, node 0 comes first; returning last, node 2 does
    jobs, events = [(0, 1000, 8), (200, 100, 8)], NODE_0_FAILS[:1] + [(100, 0, True)]
    r, _ = simulated(jobs, events, spares=0)
    assert r["first_node"] == [1, 0]
    r, _ = simulated(jobs, events, spares=0, returns_last=True)
    assert r["first_node"] == [1, 2]


# --------------------------------------------------------------------------------------- command line
def run_cli(tmp_path, *overrides):
    """A run of four two-node jobs on one VC of four 8-GPU nodes (`raysim.run.run`, what the command runs)."""
    from hydra import compose, initialize_config_dir

    from raysim.paths import CONF_DIR
    from raysim.run import run

    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                     + "".join(f"{i},a,u,16,1,{i * 10},36000,COMPLETED\n" for i in range(1, 5)))
    (tmp_path / "vc_config.csv").write_text(",num\na,4\n")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["runtime=local", f"trace.path={trace}", "trace.cache=false",
                                                       "report.plots=none", *overrides])
    run(cfg, tmp_path / "run")
    return tmp_path / "run"


def test_a_run_with_busy_failures_counts_the_spares_it_pulled(tmp_path):
    run = run_cli(tmp_path, "failures=exponential", "failures.node_mtbf_h=20", "failures.clock=busy",
                  "spares.nodes=2", "spares.wait_s=1200")
    summary = pd.read_csv(run / "summary.csv").set_index("vc")
    assert summary.loc["all", "spares_pulled"] == summary.loc["a", "spares_pulled"] >= 1
    series = pd.read_parquet(run / "timeseries.parquet")
    assert series["spares_pulled"].is_monotonic_increasing


@pytest.mark.parametrize("overrides, key", [
    (["spares.nodes=-1"], "spares.nodes"),
    (["spares.nodes=nan"], "spares.nodes"),
    (["spares.nodes=4"], "spares.nodes"),  # (the VC has 4 nodes: none would work)
    (["spares.wait_s=60"], "spares.wait_s"),  # (without spares)
    (["spares.nodes=1", "spares.wait_s=-5"], "spares.wait_s"),
    (["spares.nodes=1", "failures=exponential"], "spares.nodes"),  # (failures.clock=up would age a spare)
    (["spares.nodes=1", "policy=max_min_fairness"], "spares.nodes"),
    (["+spares.returns=last"], "spares.returns"),  # (moved to host_selection=returns_last)
])
def test_bad_spare_settings_are_one_line_naming_the_key(tmp_path, overrides, key):
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, *overrides)
    assert err.value.key == key and "\n" not in str(err.value)


def same_on_ray_with_busy_failures(tmp_path, nodes: int, *overrides):
    """Eight 2-node jobs of 10 h in VCs a and b of `nodes` 8-GPU nodes each, nodes failing every 20 h
    of work (busy clocks), under `overrides`: run in process and on Ray, with the same files
    (simutil.assert_same_on_ray); returns the in-process run's folder."""
    from hydra import compose, initialize_config_dir

    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                     + "".join(f"{i},{'ab'[i % 2]},u,16,1,{i * 10},36000,COMPLETED\n" for i in range(1, 9)))
    (tmp_path / "vc_config.csv").write_text(f",num\na,{nodes}\nb,{nodes}\n")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[
            f"trace.path={trace}", "trace.cache=false", "runtime.window_s=3600", "failures=exponential",
            "failures.node_mtbf_h=20", "failures.clock=busy", *overrides])
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    return assert_same_on_ray(tmp_path, loaded, spec, extra)


@pytest.mark.slow
def test_ray_gives_the_local_results(ray_local, tmp_path):  # noqa: F811
    local = same_on_ray_with_busy_failures(tmp_path, 4, "spares.nodes=2", "spares.wait_s=1200",
                                           "host_selection=returns_last", "checkpoint.interval_s=600")
    assert pd.read_parquet(local / "timeseries.parquet")["spares_pulled"].max() > 0
