"""Priority classes (docs/spot.md): high-priority jobs evict spot jobs, on hand-built cases with
hand-computed starts, ends, evictions and lost work, and through the command line's results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import assert_same_on_ray, batch, pools
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.errors import ConfigError, TraceError
from raysim.paths import CONF_DIR
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.extensions import Checkpoints
from raysim.sim.spot import Spot

HP, SPOT = 0, 1


def simulated(jobs, classes, *, victims="youngest", guarantee=0, overhead=0, checkpoint=None, policy="fifo", nodes=1,
              evict="blocked", quota=None):
    """Results per job of one VC of `nodes` 8-GPU nodes: `jobs` (submit, duration, GPUs), `classes` per job."""
    params = SimParams.for_mode("clean")
    extensions = ([Checkpoints(checkpoint)] if checkpoint else []) + [Spot(victims, guarantee, overhead, evict=evict,
                                                                          quota=quota)]
    sim = VCSimulator("vc", pools(nodes), make_policy(policy, params=params), make_placer("consolidate", params=params),
                      params, extensions=extensions)
    cols = batch(jobs)
    cols["spot"] = np.array(classes, dtype=np.int64)
    sim.add_jobs(cols)
    sim.run()
    return {k: v.tolist() for k, v in sim.results().items()}


#: Two spot jobs of 4 GPUs fill the node (at 0 and 100, 1000 s each); an HP job of 4 GPUs arrives at 500.
OVER_SPOT = [(0, 1000, 4), (100, 1000, 4), (500, 300, 4)]


def test_an_hp_job_evicts_the_youngest_spot_job():
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP])
    # the spot job of 100 ran 400 s: it keeps them, waits while the HP job runs (500-800), runs its 600 s left
    assert r["start_time"] == [0, 100, 500] and r["end_time"] == [1000, 1400, 800]
    assert r["evictions"] == [0, 1, 0] and r["queue"] == [0, 300, 0] and r["preemptions"] == [0, 0, 0]


def test_gfs_evicts_the_spot_jobs_on_the_first_gpus_it_can_take():
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP], victims="gfs")
    # GPUs 0-3 are the first job's: it ran 500 s, waits 500-800, then runs its 500 s left
    assert r["end_time"] == [1300, 1100, 800] and r["evictions"] == [1, 0, 0] and r["queue"] == [300, 0, 0]


#: Two nodes: an HP job (0) and a spot job (1) of 4 GPUs on node 0, spot jobs on node 1 (2 at 0, 3 at
#: 10); an HP job of 4 GPUs arrives at 100.
TWO_NODES = [(0, 1000, 4), (0, 1000, 4), (0, 1000, 4), (10, 1000, 4), (100, 100, 4)]


@pytest.mark.parametrize("victims, evicted, ends", [
    # GFS: node 0 has the fewest GPUs not held by HP jobs (4, job 1's): job 1 goes, and runs its 900 s from 200
    ("gfs", 1, [1000, 1100, 1000, 1010, 200]),
    # youngest: job 1 ran 4 x 100 GPU-s on node 0, job 3 4 x 90 on node 1: job 3 goes, its 910 s from 200
    ("youngest", 3, [1000, 1000, 1000, 1110, 200]),
])
def test_the_choosers_pick_their_node(victims, evicted, ends):
    r = simulated(TWO_NODES, [HP, SPOT, SPOT, SPOT, HP], victims=victims, nodes=2)
    assert r["first_node"][:4] == [0, 0, 1, 1]
    assert r["evictions"] == [int(k == evicted) for k in range(5)] and r["end_time"] == ends


def test_under_evict_always_an_hp_job_evicts_where_gfs_places_it_even_beside_free_gpus():
    # spot job 0 (2 GPUs) on node 0 from 0; HP job 1 (2 GPUs) at 100; node 1 is free
    jobs = [(0, 1000, 2), (100, 300, 2)]
    r = simulated(jobs, [SPOT, HP], victims="gfs", nodes=2)
    assert r["evictions"] == [0, 0] and r["end_time"] == [1000, 400]  # (the placer found GPUs: nobody evicted)
    # GFS counts free GPUs and a spot job's alike: both nodes have 8, node 0 comes first, and its first two GPUs
    # are the spot job's: it is evicted at 100 (ran 100 s) and starts again at once on free GPUs, 900 s + 40 left
    r = simulated(jobs, [SPOT, HP], victims="gfs", nodes=2, evict="always", overhead=40)
    assert r["evictions"] == [1, 0] and r["first_node"] == [0, 0] and r["start_time"] == [0, 100]
    assert r["end_time"] == [1040, 400] and r["queue"] == [0, 0]


def test_under_evict_always_the_node_with_the_fewest_gpus_not_held_by_hp_jobs_is_taken():
    # node 0: HP job 0 (6 GPUs) and spot job 1 (2); node 1: HP job 2 (4 GPUs), 4 free; HP job 3 (2 GPUs) at 50
    jobs = [(0, 1000, 6), (0, 1000, 2), (0, 1000, 4), (50, 100, 2)]
    r = simulated(jobs, [HP, SPOT, HP, HP], victims="gfs", nodes=2, evict="always")
    # node 0 has 2 GPUs not held by HP jobs, node 1 has 4: GFS takes node 0's, evicting job 1 (ran 50 s), which
    # starts again on node 1's free GPUs at 50 with 950 s left (first_node: the node of its latest run)
    assert r["first_node"] == [0, 1, 1, 0] and r["evictions"] == [0, 1, 0, 0]
    assert r["end_time"] == [1000, 1000, 1000, 150]


def test_an_evicted_job_redoes_the_overhead():
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP], overhead=40)
    assert r["end_time"] == [1000, 1440, 800]


def test_a_guarantee_protects_spot_jobs_until_it_ends():
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP], guarantee=3600)
    # both spot jobs are protected to their ends: the HP job starts when the first one ends
    assert r["start_time"] == [0, 100, 1000] and r["end_time"] == [1000, 1100, 1300] and r["evictions"] == [0, 0, 0]
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP], guarantee=600)
    # at 500 both are protected; at 600 the first one's guarantee ends (the second's at 700): it is evicted
    assert r["start_time"] == [0, 100, 600] and r["end_time"] == [1300, 1100, 900]
    assert r["evictions"] == [1, 0, 0] and r["queue"] == [300, 0, 100]


def test_an_evicted_job_loses_its_work_since_its_last_checkpoint():
    r = simulated(OVER_SPOT, [SPOT, SPOT, HP], checkpoint=Checkpointing(120, 0, 30))
    # the job of 100 ran 400 s: checkpoints at 120, 240 and 360 of its work, 40 s x 4 GPUs lost; it
    # restores for 30 s from 800 and runs its 640 s left
    assert r["end_time"] == [1000, 1470, 800] and r["evictions"] == [0, 1, 0]
    assert r["lost_gpu_s"] == [0.0, 160.0, 0.0] and r["lost_evictions"] == [0.0, 160.0, 0.0]
    assert r["overhead_gpu_s"] == [0.0, 120.0, 0.0]


def test_spot_and_hp_jobs_evict_no_hp_job_and_spot_jobs_never_evict():
    r = simulated(OVER_SPOT, [SPOT, SPOT, SPOT])
    assert r["start_time"] == [0, 100, 1000] and r["evictions"] == [0, 0, 0]
    r = simulated(OVER_SPOT, [HP, HP, HP])
    assert r["start_time"] == [0, 100, 1000] and r["evictions"] == [0, 0, 0]


def test_spot_jobs_start_behind_an_hp_job_that_waits():
    # an HP job of 6 GPUs runs; an HP job of 4 waits (2 free, no spot job to evict); a spot job of 2
    # starts behind it at 20, and is not evicted since evicting it would not fit the HP job
    r = simulated([(0, 1000, 6), (10, 100, 4), (20, 50, 2)], [HP, HP, SPOT])
    assert r["start_time"] == [0, 1000, 20] and r["end_time"] == [1000, 1100, 70] and r["evictions"] == [0, 0, 0]


def test_hp_jobs_rank_before_spot_jobs_that_came_first():
    # the node is full until 1000; a spot job (at 10) and an HP job (at 20) wait: the HP job starts first
    r = simulated([(0, 1000, 8), (10, 100, 8), (20, 100, 8)], [HP, SPOT, HP])
    assert r["start_time"] == [0, 1100, 1000]


#: Spot jobs of 4 GPUs at 0 (10,000 s) and 100 (5,000 s); an HP job of 4 GPUs arrives at 3700, when
#: the second spot job has run exactly an hour.
HOURS = [(0, 10_000, 4), (100, 5000, 4), (3700, 300, 4)]


def test_guarantee_hours_are_counted_as_gfs_counts_them():
    r = simulated(HOURS, [SPOT, SPOT, HP])
    # job 0 runs 0-10,000: hours end at 3600 and 7200, and it finishes: 3 kept. Job 1 runs 100-3700:
    # one hour kept (it ends as the eviction comes, and is counted first, as GFS does), one broken by
    # the eviction; it runs its 1400 s left from 4000 and finishes: one more kept. The HP job keeps none.
    assert r["evictions"] == [0, 1, 0] and r["end_time"] == [10_000, 5400, 4000]
    assert r["hours_kept"] == [3, 2, 0]


#: Spot jobs of 2 GPUs at 0 (1000 s), 4 GPUs at 10 (1000 s) and 2 GPUs at 20 (500 s); an HP job of 6
#: GPUs arrives at 100 (300 s).
UNDER_QUOTA = [(0, 1000, 2), (10, 1000, 4), (20, 500, 2), (100, 300, 6)]


def test_a_spot_quota_holds_spot_jobs_back_and_never_hp_jobs():
    r = simulated(UNDER_QUOTA, [SPOT, SPOT, SPOT, HP], quota=4)
    # under a quota of 4 GPUs: job 0 takes 2; job 1 (4 more) waits, passed over as GFS does; job 2
    # takes the other 2 at 20. The HP job (6 GPUs, above the quota: not bounded) finds 4 free at 100
    # and evicts job 2 (the youngest) after 80 s; job 2 is the first spot job the quota admits again
    # (2 + 2) and runs its 420 s left when the HP job ends at 400; job 1 starts when job 0 ends
    assert r["start_time"] == [0, 1000, 20, 100] and r["end_time"] == [1000, 2000, 820, 400]
    assert r["evictions"] == [0, 0, 1, 0] and r["queue"] == [0, 990, 300, 0]
    # without the quota job 1 starts at 10 with the others; the HP job evicts jobs 2 and 1 (youngest first)
    r = simulated(UNDER_QUOTA, [SPOT, SPOT, SPOT, HP])
    assert r["start_time"] == [0, 10, 20, 100] and r["evictions"] == [0, 1, 1, 0]


# -------------------------------------------------------------- the other policies that rank the classes
def test_fifo_backfill_lets_spot_jobs_and_later_hp_jobs_past_a_waiting_hp_job():
    # HP job 0 (6 GPUs) runs from 0; HP job 1 (4) waits at 10 (2 free, no spot job to evict); spot job 2
    # (4) waits at 20; spot job 3 (2) backfills at 30 past both (FIFO would keep it behind job 2). HP job 4
    # (2) at 40 finds no GPU and evicts job 3 (ran 10 s), which runs its 490 s left when job 4 ends at 140;
    # jobs 1 and 2 start when job 0 ends
    jobs = [(0, 1000, 6), (10, 100, 4), (20, 50, 4), (30, 500, 2), (40, 100, 2)]
    r = simulated(jobs, [HP, HP, SPOT, SPOT, HP], policy="fifo_backfill")
    assert r["start_time"] == [0, 1000, 1000, 30, 40] and r["end_time"] == [1000, 1100, 1050, 630, 140]
    assert r["evictions"] == [0, 0, 0, 1, 0] and r["queue"] == [0, 990, 980, 100, 0]
    # FIFO keeps HP job 4 behind HP job 1 and spot job 3 behind spot job 2: nobody is evicted
    r = simulated(jobs, [HP, HP, SPOT, SPOT, HP], policy="fifo")
    assert r["start_time"] == [0, 1000, 1100, 1100, 1000] and r["evictions"] == [0, 0, 0, 0, 0]


def test_fifo_backfill_tries_every_waiting_job_after_an_eviction():
    # HP job 0 and spot job 1 (4 GPUs each) fill the node at 0; spot job 2 (2) waits at 10; HP job 3 (2) at
    # 100 evicts job 1 (4 GPUs) and takes 2 of them: job 2 starts at once on the other 2, job 1 (900 s
    # left) when job 2 ends at 400
    jobs = [(0, 1000, 4), (0, 1000, 4), (10, 300, 2), (100, 200, 2)]
    r = simulated(jobs, [HP, SPOT, SPOT, HP], policy="fifo_backfill")
    assert r["start_time"] == [0, 0, 100, 100] and r["end_time"] == [1000, 1300, 400, 300]
    assert r["evictions"] == [0, 1, 0, 0] and r["queue"] == [0, 300, 90, 0]


def test_srtf_evicts_across_classes_and_preempts_within_one():
    # spot jobs 0 (1000 s) and 1 (2000 s) of 4 GPUs start at 0; HP job 2 (4 GPUs, 5000 s: longer than
    # both, so SRTF alone would not preempt) evicts the youngest, job 1 (ran 100 s, 1900 left), at 100.
    # Spot job 3 (4 GPUs, 300 s) at 200 is shorter than job 0's 800 s left: the spot walk preempts job 0
    # (SRTF's preemption, 40 s of overhead; not an eviction); job 0 runs its 840 s from 500, job 1 after it
    jobs = [(0, 1000, 4), (0, 2000, 4), (100, 5000, 4), (200, 300, 4)]
    r = simulated(jobs, [SPOT, SPOT, HP, SPOT], policy="srtf")
    assert r["start_time"] == [0, 0, 100, 200] and r["end_time"] == [1340, 3240, 5100, 500]
    assert r["evictions"] == [0, 1, 0, 0] and r["preemptions"] == [1, 0, 0, 0]
    assert r["queue"] == [300, 1240, 0, 0]


def test_srtf_hp_jobs_rank_before_shorter_spot_jobs():
    # the node is held by HP job 0 until 1000; spot job 1 (100 s) and HP job 2 (2000 s, longer than job 0's
    # 980 s left: no preemption) wait: the HP job goes first though SRTF alone would start the spot job
    jobs = [(0, 1000, 8), (10, 100, 8), (20, 2000, 8)]
    r = simulated(jobs, [HP, SPOT, HP], policy="srtf")
    assert r["start_time"] == [0, 3000, 1000] and r["evictions"] == [0, 0, 0] and r["preemptions"] == [0, 0, 0]
    # an HP job shorter than a running HP job's 980 s left preempts it (SRTF within the class; 40 s overhead)
    r = simulated([(0, 1000, 8), (10, 100, 8), (20, 500, 8)], [HP, SPOT, HP], policy="srtf")
    assert r["start_time"] == [0, 1540, 20] and r["end_time"] == [1540, 1640, 520] and r["preemptions"] == [1, 0, 0]


def test_srtf_walks_the_spot_quota_in_its_own_order():
    # two nodes; spot job 0 (4 GPUs, 1000 s) runs from 0; spot job 1 (4 GPUs, 100 s) arrives at 10. Without a
    # quota both run; under a quota of 4 GPUs the shorter job 1 takes them: job 0 is preempted (40 s of
    # overhead) and runs its 1030 s from 110
    jobs = [(0, 1000, 4), (10, 100, 4)]
    r = simulated(jobs, [SPOT, SPOT], policy="srtf", nodes=2)
    assert r["end_time"] == [1000, 110] and r["preemptions"] == [0, 0]
    r = simulated(jobs, [SPOT, SPOT], policy="srtf", nodes=2, quota=4)
    assert r["start_time"] == [0, 10] and r["end_time"] == [1140, 110] and r["preemptions"] == [1, 0]
    # a longer spot job behind the quota is passed over and preempts no one
    r = simulated([(0, 1000, 4), (10, 5000, 4)], [SPOT, SPOT], policy="srtf", nodes=2, quota=4)
    assert r["start_time"] == [0, 1000] and r["end_time"] == [1000, 6000] and r["preemptions"] == [0, 0]


def test_tiresias_evicts_at_its_decisions_and_a_guarantee_end_waits_for_the_next_one():
    # spot job 0 (8 GPUs) starts at 0; HP job 1 (8 GPUs, 500 s) arrives at 30 and is decided at 60 (Tiresias
    # decides every 60 s): it evicts job 0 (ran 60 s); job 1 ends at 560, job 0 runs its 940 s left from 600
    jobs = [(0, 1000, 8), (30, 500, 8)]
    r = simulated(jobs, [SPOT, HP], policy="tiresias")
    assert r["start_time"] == [0, 60] and r["end_time"] == [1540, 560] and r["evictions"] == [1, 0]
    # a guarantee of 100 s protects job 0 at 60; its end (100) is decided at the next 60 s, 120: job 0 ran
    # 120 s, runs its 880 s left from 660 (job 1 ends at 620)
    r = simulated(jobs, [SPOT, HP], policy="tiresias", guarantee=100)
    assert r["start_time"] == [0, 120] and r["end_time"] == [1540, 620] and r["evictions"] == [1, 0]
    assert r["preemptions"] == [0, 0]


# ----------------------------------------------------------------------------------- the command line
def trace_with_classes(tmp_path: Path, classes: list[str], jobs=None) -> str:
    """A raysim-schema trace in one VC of one 8-GPU node with a priority_class column."""
    jobs = jobs or OVER_SPOT
    (tmp_path / "vc_config.csv").write_text(",num\na,1\n")
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,priority_class\n" + "".join(
        f"{i},a,u,{g},1,{s},{d},COMPLETED,{c}\n" for i, ((s, d, g), c) in enumerate(zip(jobs, classes))))
    return str(path)


def configured(trace: str, *overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"trace.path={trace}", "runtime=local", "trace.cache=false",
                                                        "report.plots=none", *overrides])


def run_cli(tmp_path: Path, trace: str, *overrides) -> Path:
    from raysim.run import run

    out = tmp_path / "out"
    run(configured(trace, *overrides), out)
    return out


def test_results_have_the_classes_and_evictions_as_a_cause(tmp_path):
    trace = trace_with_classes(tmp_path, ["spot", "Spot", "HP"])
    out = run_cli(tmp_path, trace, "checkpoint.interval_s=120", "checkpoint.restart_s=30")
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    assert jobs.priority_class.astype(str).tolist() == ["spot", "spot", "hp"]
    assert jobs.evictions.tolist() == [0, 1, 0] and jobs.lost_gpu_s_evictions.tolist() == [0.0, 160.0, 0.0]
    assert jobs.end_time.tolist() == [1000, 1470, 800]
    causes = pd.read_csv(out / "lost_by_cause.csv").query("vc == 'all'").set_index("cause")
    assert causes.interruptions["evictions"] == 1 and causes.lost_gpu_h["evictions"] * 3600 == pytest.approx(160)
    assert "preemptions" not in causes.index  # (the evicted work is not counted twice)
    assert "evictions of spot jobs" in (out / "report.html").read_text()
    summary = pd.read_csv(out / "summary.csv").set_index("vc").loc["all"]
    assert summary.evictions == 1 and summary.jobs_hp == 1 and summary.jobs_spot == 2
    assert summary.avg_queue_spot == 150 and summary.avg_jct_spot == (1000 + 1370) / 2 and summary.avg_jct_hp == 300


def test_results_per_class_and_the_page_side_by_side(tmp_path):
    out = run_cli(tmp_path, trace_with_classes(tmp_path, ["spot", "spot", "hp"], HOURS))
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    assert jobs.hours_kept.tolist() == [3, 2, 0] and jobs.evictions.tolist() == [0, 1, 0]
    summary = pd.read_csv(out / "summary.csv").set_index("vc").loc["all"]
    assert summary.hours_kept == 5 and summary.hours_broken == 1
    # GPU time held: spot 4 x 10,000 + 4 x (5300 - 300 queueing); HP 4 x 300
    assert summary.spot_gpu_share == pytest.approx(60_000 / 61_200)
    assert summary.avg_queue_spot == 150 and summary.avg_jct_spot == (10_000 + 5300) / 2 and summary.avg_jct_hp == 300
    page = (out / "report.html").read_text()
    assert "Priority classes" in page and "Average queueing delay and JCT per class" in page


def test_evictions_lose_gpu_hours_in_the_summary(tmp_path):
    out = run_cli(tmp_path, trace_with_classes(tmp_path, ["spot", "spot", "hp"]), "checkpoint.interval_s=120",
                  "checkpoint.restart_s=30")
    summary = pd.read_csv(out / "summary.csv").set_index("vc").loc["all"]
    assert summary.lost_gpu_h_evictions * 3600 == pytest.approx(160) and summary.hours_broken == 1


def test_an_unknown_class_is_one_line_naming_file_row_and_column(tmp_path):
    trace = trace_with_classes(tmp_path, ["spot", "best-effort", "hp"])
    with pytest.raises(TraceError, match=r"jobs.csv, row 2 \(line 3\), column 'priority_class': unknown priority "
                                         r"class .*'best-effort'"):
        run_cli(tmp_path, trace)


@pytest.mark.parametrize("override, key", [
    ("spot.guarantee_s=-1", "spot.guarantee_s"),
    ("spot.victims=oldest", "spot.victims"),
    ("policy=lucid estimator.source=oracle", "policy.name"),
    ("policy=gavel_fifo", "policy.name"),
    ("spot.overhead_s=40 checkpoint.interval_s=600", "checkpoint.interval_s"),
    ("sim.compat=lucid", "sim.compat"),
    ("quota=borrow", "quota"),
    ("spot.evict=always", "spot.evict"),
    ("spot.evict=sometimes", "spot.evict"),
])
def test_what_cannot_apply_is_one_line_naming_its_setting(tmp_path, override, key):
    trace = trace_with_classes(tmp_path, ["spot", "spot", "hp"])
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, trace, *override.split())
    assert err.value.key == key and "\n" not in str(err.value)


@pytest.mark.parametrize("quota", ["spot.quota_gpus=4", "spot.quota_share=0.5"])
def test_a_spot_quota_from_the_command_line(tmp_path, quota):
    out = run_cli(tmp_path, trace_with_classes(tmp_path, ["spot", "spot", "hp"]), quota)
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    # the second spot job waits for the first (4 + 4 GPUs above the quota); the HP job takes the free half
    assert jobs.start_time.tolist() == [0, 1000, 500] and jobs.end_time.tolist() == [1000, 2000, 800]
    assert jobs.evictions.tolist() == [0, 0, 0]


@pytest.mark.parametrize("override, key, says", [
    ("spot.quota_gpus=9", "spot.quota_gpus", "above the cluster's 8 GPUs"),
    ("spot.quota_gpus=-1", "spot.quota_gpus", ""),
    ("spot.quota_gpus=nan", "spot.quota_gpus", ""),
    ("spot.quota_gpus=four", "spot.quota_gpus", ""),
    ("spot.quota_share=1.5", "spot.quota_share", ""),
    ("spot.quota_share=nan", "spot.quota_share", ""),
    ("spot.quota_share=-0.1", "spot.quota_share", ""),
    ("spot.quota_gpus=4 spot.quota_share=0.5", "spot.quota_share", "not both"),
    ("spot.quota_gpus=3", "spot.quota_gpus", "below its largest spot job's 4: that job would never start"),
    ("spot.quota_share=0.25", "spot.quota_share", "spot quota is 2 GPUs"),
])
def test_a_bad_spot_quota_is_one_line_naming_it(tmp_path, override, key, says):
    with pytest.raises(ConfigError) as err:
        run_cli(tmp_path, trace_with_classes(tmp_path, ["spot", "spot", "hp"]), *override.split())
    assert err.value.key == key and "\n" not in str(err.value) and says in str(err.value)


def test_spot_settings_without_classes_are_refused(tmp_path):
    (tmp_path / "vc_config.csv").write_text(",num\na,1\n")
    (tmp_path / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n1,a,u,1,1,0,10,"
                                       "COMPLETED\n")
    with pytest.raises(ConfigError, match="spot.guarantee_s: .* has no priority_class column"):
        run_cli(tmp_path, str(tmp_path / "jobs.csv"), "spot.guarantee_s=3600")


@pytest.mark.parametrize("sizes, overrides", [([1, 2, 4, 8], []), ([1, 2, 4], ["spot.quota_gpus=4"]),
                                          pytest.param([1, 2, 4, 8], ["policy=tiresias"], marks=pytest.mark.slow),
                                          pytest.param([1, 2, 4], ["policy=fifo_backfill", "spot.quota_gpus=4"],
                                                       marks=pytest.mark.slow)])
def test_ray_gives_the_local_results(ray_local, tmp_path, sizes, overrides):  # noqa: F811
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    rng = np.random.default_rng(5)
    jobs = [(int(s), int(rng.integers(100, 5000)), int(rng.choice(sizes))) for s in np.sort(rng.integers(0, 20_000, 120))]
    trace = trace_with_classes(tmp_path, [rng.choice(["hp", "spot"]) for _ in jobs], jobs)
    cfg = configured(trace, "spot.guarantee_s=600", "runtime.window_s=3600", *overrides)
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    local = assert_same_on_ray(tmp_path, loaded, spec, extra, files=("jobs.parquet",))
    assert pq.read_table(local / "jobs.parquet").column("evictions").to_numpy().sum() > 0


@pytest.mark.parametrize("policy", ["fifo", "fifo_backfill", "srtf", "tiresias"])
def test_a_trace_of_hp_jobs_only_runs_as_one_without_classes(tmp_path, policy):
    from simutil import random_jobs

    jobs = [(s, d, g) for s, d, g, _ in random_jobs(np.random.default_rng(3), 200, 50_000, max_gpu=8, long_tail=True)]
    tables = []
    for name, classes in (("plain", None), ("classed", ["HP"] * len(jobs))):
        folder = tmp_path / name
        folder.mkdir()
        trace = trace_with_classes(folder, classes or [""] * len(jobs), jobs)
        if classes is None:  # (the same trace without the column)
            Path(trace).write_text("\n".join(line.rsplit(",", 1)[0] for line in Path(trace).read_text().splitlines()) + "\n")
        tables.append(pq.read_table(run_cli(folder, trace, f"policy={policy}") / "jobs.parquet").to_pandas())
    assert tables[1].evictions.sum() == 0 and tables[0].queue.mean() > 1000
    pd.testing.assert_frame_equal(tables[0], tables[1].drop(columns=["priority_class", "evictions", "hours_kept"]))


@pytest.mark.parametrize("requeue", ["in_place", "back"])
def test_an_evicted_job_waits_again_in_its_place_or_behind_every_job_waiting(tmp_path, requeue):
    """One 8-GPU node under FIFO: spot A (0, 1,000 s) runs; spot B (10, 1,000 s) waits; HP H (100,
    100 s) evicts A and ends at 200; an evicted job keeps its work (no checkpoint model, no
    overhead). in_place: A (submitted first) runs again at 200 and ends at 1,100 (900 s left); B
    runs from 1,100 to 2,100. back: A re-entered at 100 behind B, so B runs from 200 to 1,200 and A
    from 1,200 to 2,100."""
    jobs = [(0, 1000, 8), (10, 1000, 8), (100, 100, 8)]
    out = run_cli(tmp_path, trace_with_classes(tmp_path, ["spot", "spot", "hp"], jobs), "policy=fifo",
                  f"spot.requeue={requeue}")
    got = pq.read_table(out / "jobs.parquet").to_pandas().set_index("job_id")
    a_end, b = (1100, 1100) if requeue == "in_place" else (2100, 200)
    assert (got.at[1, "start_time"], got.at[2, "start_time"], got.at[2, "end_time"]) == (b, 100, 200)
    assert got.at[0, "evictions"] == 1 and got.at[0, "end_time"] == a_end and got.at[1, "end_time"] == b + 1000


def test_requeue_back_runs_under_fifo_only(tmp_path):
    from raysim.errors import ConfigError
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config

    trace = trace_with_classes(tmp_path, ["spot", "hp"], [(0, 100, 8), (10, 100, 8)])
    cfg = configured(trace, "policy=sjf", "spot.requeue=back")
    with pytest.raises(ConfigError, match=r"^spot\.requeue: .*only policy=fifo keeps"):
        spec_from_config(cfg, load_from_config(cfg), check_cluster_config(cfg))
