"""Priority classes with GPU shares (docs/spot.md, "GPU shares"): high-priority jobs evict spot jobs
that hold shares of a GPU, on hand-built cases with hand-computed starts, evictions and lost work,
through the command line, and on Ray as locally."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)
from test_spot import configured, run_cli

from raysim.errors import ConfigError
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.extensions import Checkpoints, Resources
from raysim.sim.spot import Spot

HP, SPOT = 0, 1


def simulated(jobs, classes, *, victims="youngest", guarantee=0, checkpoint=None, quota=None, gpus=2, evict="blocked"):
    """Results per job of one VC of one node of `gpus` GPUs, counting GPU shares: `jobs` (submit,
    duration, GPUs, milli of each GPU), `classes` per job."""
    params = SimParams.for_mode("clean")
    extensions = [Resources()] + ([Checkpoints(checkpoint)] if checkpoint else []) + [
        Spot(victims, guarantee, evict=evict, quota=quota)]
    sim = VCSimulator("vc", pools(1, gpus), make_policy("fifo", params=params),
                      make_placer("consolidate", params=params), params, extensions=extensions)
    cols = batch([(s, d, g) for s, d, g, _ in jobs])
    cols["gpu_milli"] = np.array([m for *_, m in jobs], dtype=np.int64)
    cols["spot"] = np.array(classes, dtype=np.int64)
    sim.add_jobs(cols)
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


#: One node of 2 GPUs: spot jobs A (0) and B (10) of half a GPU share GPU 0, spot job C (20) holds GPU 1,
#: 1000 s each; an HP job of 1 GPU arrives at 100 for 300 s.
SHARED_GPU = [(0, 1000, 1, 500), (10, 1000, 1, 500), (20, 1000, 1, 1000), (100, 300, 1, 1000)]
CLASSES = [SPOT, SPOT, SPOT, HP]


def test_youngest_evicts_the_spot_job_of_the_whole_gpu():
    r = simulated(SHARED_GPU, CLASSES, checkpoint=Checkpointing(40, 0, 10))
    # C is the youngest: evicting it frees GPU 1 (ran 80 s: checkpoints at 40 and 80, nothing lost); it
    # restores for 10 s from 400, when the HP job ends, and runs its 920 s left
    assert r["start_time"] == [0, 10, 20, 100] and r["end_time"] == [1000, 1010, 1330, 400]
    assert r["evictions"] == [0, 0, 1, 0] and r["queue"] == [0, 0, 300, 0]
    assert r["lost_evictions"] == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("evict", ["blocked", "always"])
def test_gfs_evicts_every_share_of_the_first_gpu_free_of_hp_jobs(evict):
    r = simulated(SHARED_GPU, CLASSES, victims="gfs", checkpoint=Checkpointing(40, 0, 10), evict=evict)
    # GFS takes GPU 0 (the first not held by an HP job): A (ran 100 s, checkpoints at 40 and 80: 20 s lost)
    # and B (ran 90 s: 10 s lost) go; both restore for 10 s at 400 and run their 920 s left
    assert r["start_time"] == [0, 10, 20, 100] and r["end_time"] == [1330, 1330, 1020, 400]
    assert r["evictions"] == [1, 1, 0, 0] and r["queue"] == [300, 300, 0, 0]
    assert r["lost_evictions"] == [20.0, 10.0, 0.0, 0.0] and r["lost_gpu_s"] == [20.0, 10.0, 0.0, 0.0]


def test_a_guarantee_protects_the_youngest_and_its_elders_go():
    # a guarantee of 90 s: at 100 C (from 20) is protected, A and B (from 0 and 10) are not; youngest
    # evicts B, then A (GPU 0 is free only without both); they start again at 400 with all their work
    r = simulated(SHARED_GPU, CLASSES, guarantee=90)
    assert r["evictions"] == [1, 1, 0, 0] and r["end_time"] == [1300, 1310, 1020, 400]
    # a guarantee of 100 s: at 100 only A's has ended, and evicting A alone frees no GPU (B holds half of
    # GPU 0): the HP job waits for B's to end at 110 and evicts B and A (C's lasts to 120); they start
    # again at 410 with all their work (890 and 900 s left)
    r = simulated(SHARED_GPU, CLASSES, guarantee=100)
    assert r["start_time"] == [0, 10, 20, 110] and r["end_time"] == [1300, 1310, 1020, 410]
    assert r["evictions"] == [1, 1, 0, 0] and r["queue"] == [300, 300, 0, 10]


#: One GPU: an HP job of a quarter GPU (0, 2000 s) and spot jobs of a quarter at 10, 20 and 30 (1000 s)
#: fill it; an HP job of half a GPU arrives at 100 for 300 s.
QUARTERS = [(0, 2000, 1, 250), (10, 1000, 1, 250), (20, 1000, 1, 250), (30, 1000, 1, 250), (100, 300, 1, 500)]


@pytest.mark.parametrize("victims, evicted, ends", [
    # GFS: the GPU holds an HP share (250 milli, 750 of room): its spot shares go in start order, 1 then
    # 2, until 500 milli are free; 3 keeps running. 1 and 2 run their 910 and 920 s left from 400
    ("gfs", [0, 1, 1, 0, 0], [2000, 1310, 1320, 1030, 400]),
    # youngest: 3, then 2 (920 and 920 s left from 400)
    ("youngest", [0, 0, 1, 1, 0], [2000, 1010, 1320, 1330, 400]),
])
def test_an_hp_share_evicts_part_of_a_gpu(victims, evicted, ends):
    r = simulated(QUARTERS, [HP, SPOT, SPOT, SPOT, HP], victims=victims, gpus=1)
    assert r["evictions"] == evicted and r["end_time"] == ends and r["start_time"][4] == 100


def test_gfs_frees_a_whole_gpu_for_an_hp_share_on_a_gpu_free_of_hp_shares():
    # an HP job of half a GPU at 100: no GPU holds an HP share, so GFS frees GPU 0 whole (A and B go)
    # where youngest evicts C alone. The HP job takes half of GPU 0: A starts again at once on the other
    # half (its 900 s left), B when the HP job ends (its 910 s left from 400)
    jobs = SHARED_GPU[:3] + [(100, 300, 1, 500)]
    r = simulated(jobs, CLASSES, victims="gfs")
    assert r["evictions"] == [1, 1, 0, 0] and r["end_time"] == [1000, 1310, 1020, 400]
    r = simulated(jobs, CLASSES)
    assert r["evictions"] == [0, 0, 1, 0] and r["end_time"] == [1000, 1010, 1320, 400]


def test_under_evict_always_an_hp_share_takes_the_gpu_with_hp_shares_beside_a_free_gpu():
    # QUARTERS on GPU 0 of two GPUs (each share goes to the GPU with the least room that fits it)
    jobs = [(s, d, g, m) for s, d, g, m in QUARTERS]
    r = simulated(jobs, [HP, SPOT, SPOT, SPOT, HP], victims="gfs")
    assert r["evictions"] == [0] * 5 and r["end_time"] == [2000, 1010, 1020, 1030, 400]  # (GPU 1 is free)
    # GFS places the HP share by its rule: GPU 0 (an HP share, the least room), evicting 1 and 2, which start
    # again at once on GPU 1 with their 910 and 920 s left
    r = simulated(jobs, [HP, SPOT, SPOT, SPOT, HP], victims="gfs", evict="always")
    assert r["evictions"] == [0, 1, 1, 0, 0] and r["end_time"] == [2000, 1010, 1020, 1030, 400]
    assert r["queue"] == [0] * 5 and r["start_time"] == [0, 10, 20, 30, 100]


@pytest.mark.parametrize("victims, evict", [("youngest", "blocked"), ("gfs", "blocked"), ("gfs", "always")])
def test_random_shares_evict_without_over_allocating(victims, evict):
    # HP and spot jobs of quarter, half, one, two and four GPUs on two 8-GPU nodes, the GPUs checked after
    # every event, and every job done
    rng = np.random.default_rng(11)
    sizes = [(1, 250), (1, 500), (1, 1000), (2, 1000), (4, 1000)]
    jobs = [(int(s), int(rng.integers(100, 5000)), *sizes[rng.integers(len(sizes))])
            for s in np.sort(rng.integers(0, 20_000, 200))]
    classes = rng.integers(0, 2, len(jobs)).tolist()
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools(2), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=[Resources(), Spot(victims, 300, evict=evict)])
    cols = batch([(s, d, g) for s, d, g, _ in jobs])
    cols["gpu_milli"] = np.array([m for *_, m in jobs], dtype=np.int64)
    cols["spot"] = np.array(classes, dtype=np.int64)
    sim.add_jobs(cols)
    while (t := sim.next_event_time()) < math.inf:
        sim.run(until=t + 1)
        sim.vc.check()
    r = sim.results()
    assert (r["end_time"] >= 0).all() and r["evictions"].sum() > 0


def test_the_spot_quota_counts_a_share_as_its_fraction():
    # a quota of 1 GPU: A and B (half each) start, C (a whole GPU) waits until both have ended
    r = simulated(SHARED_GPU[:3], CLASSES[:3], quota=1)
    assert r["start_time"] == [0, 10, 1010] and r["end_time"] == [1000, 1010, 2010]


# ----------------------------------------------------------------------------------- the command line
def trace_with_shares(tmp_path, jobs, classes, nodes=1, cpu=False) -> str:
    """A raysim-schema trace in one VC of `nodes` 8-GPU nodes with gpu_milli and priority_class columns
    (with `cpu`, a cpu_milli column too): `jobs` (submit, duration, GPUs, milli)."""
    (tmp_path / "vc_config.csv").write_text(f",num\na,{nodes}\n")
    path = tmp_path / "jobs.csv"
    extra = ",cpu_milli" if cpu else ""
    header = f"job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,gpu_milli,priority_class{extra}\n"
    path.write_text(header + "".join(
        f"{i},a,u,{g},1,{s},{d},COMPLETED,{m},{c}{',1000' if cpu else ''}\n"
        for i, ((s, d, g, m), c) in enumerate(zip(jobs, classes))))
    return str(path)


#: SHARED_GPU on the last two GPUs of an 8-GPU node whose first six an HP job holds (0-2000 s).
EIGHT = [(0, 2000, 6, 1000), (1, 1000, 1, 500), (2, 1000, 1, 500), (3, 1000, 1, 1000), (100, 300, 1, 1000)]


def test_the_command_line_runs_shares_with_classes(tmp_path):
    trace = trace_with_shares(tmp_path, EIGHT, ["hp", "spot", "spot", "spot", "hp"])
    out = run_cli(tmp_path, trace, "spot.victims=gfs", "checkpoint.interval_s=40", "checkpoint.write_s=0",
                  "checkpoint.restart_s=10")
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    # GFS takes GPU 6: A (ran 99 s, checkpoints at 40 and 80: 19 s lost) and B (ran 98 s: 18 s lost) go,
    # and restore for 10 s at 400 to run their 920 s left
    assert jobs.evictions.tolist() == [0, 1, 1, 0, 0] and jobs.end_time.tolist() == [2000, 1330, 1330, 1003, 400]
    assert jobs.lost_gpu_s_evictions.tolist() == [0.0, 19.0, 18.0, 0.0, 0.0]
    # the spot share of GPU time counts a share as its fraction: A and B held half a GPU 1029 and 1028 s
    # (JCT - queueing), C one GPU 1000 s; the HP jobs 6 x 2000 and 1 x 300
    summary = pd.read_csv(out / "summary.csv").set_index("vc").loc["all"]
    assert summary.spot_gpu_share == pytest.approx(2028.5 / (2028.5 + 12_300))


def test_jobs_asking_cpu_with_classes_are_one_line(tmp_path):
    trace = trace_with_shares(tmp_path, EIGHT, ["hp", "spot", "spot", "spot", "hp"], cpu=True)
    with pytest.raises(ConfigError, match="ask for CPU or memory") as err:
        run_cli(tmp_path, trace)
    assert err.value.key == "trace.path" and "\n" not in str(err.value)


def test_the_spot_gpu_trace_with_fractional_requests_runs(tmp_path):
    from test_spot_trace import HEADER, folder, run

    # SHARED_GPU in the spot trace's format, on one node of 2 GPUs: GFS's rule evicts A and B
    jobs = HEADER + "".join(f"{i},a,A10,1,{m / 1000},1,{s},{d},{c}\n" for i, ((s, d, _, m), c) in
                            enumerate(zip(SHARED_GPU, ["Spot", "Spot", "Spot", "HP"])))
    nodes = "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,2,128,0\n"
    out = run(folder(tmp_path, jobs, nodes), tmp_path / "out", "spot.victims=gfs")
    done = pq.read_table(out / "jobs.parquet").to_pandas()
    assert done.gpu_milli.tolist() == [500, 500, 1000, 1000] and done.evictions.tolist() == [1, 1, 0, 0]
    assert done.end_time.tolist() == [1300, 1310, 1020, 400]


@pytest.mark.slow  # (starts Ray)
@pytest.mark.parametrize("victims, evict", [("youngest", "blocked"), ("gfs", "blocked"), ("gfs", "always")])
def test_ray_gives_the_local_results_with_shares(ray_local, tmp_path, victims, evict):  # noqa: F811
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    rng = np.random.default_rng(7)
    sizes = [(1, 250), (1, 500), (1, 1000), (2, 1000), (4, 1000)]
    jobs = [(int(s), int(rng.integers(100, 5000)), *sizes[rng.integers(len(sizes))])
            for s in np.sort(rng.integers(0, 20_000, 150))]
    trace = trace_with_shares(tmp_path, jobs, [rng.choice(["hp", "spot"]) for _ in jobs], nodes=2)
    cfg = configured(trace, f"spot.victims={victims}", f"spot.evict={evict}", "spot.guarantee_s=300",
                     "runtime.window_s=3600", "checkpoint.interval_s=600", "checkpoint.restart_s=30")
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    assert_same_on_ray(tmp_path, loaded, spec, extra, files=("jobs.parquet",))
    assert pq.read_table(tmp_path / "local" / "jobs.parquet").column("evictions").to_numpy().sum() > 0
