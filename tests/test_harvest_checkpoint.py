"""The one checkpoint model under harvesting (issue 49, item 3): with `checkpoint.*`, a task the node
log stops (one of its nodes goes busy, or all of them) loses its run's training since its last
completed checkpoint and its next run restores for `restart_s` instead of paying BFTrainer's rescale
cost; the allocator's rescales keep BFTrainer's Tcup/Tcdw cost (raysim.harvest.runs). The stops are
in the one stop ledger (cause `busy`), so jobs.parquet and lost_by_cause.csv price them. Without
checkpoint settings nothing changes (tests/test_harvest*.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from simutil import NO_PAGES
from test_harvest import compose_harvest, linear_tasks, node_log, random_log, random_tasks, replay
from test_harvest import synth_data  # noqa: F401  (a fixture)

from raysim.run import run

CHECKPOINTS = ("checkpoint.interval_s=30", "checkpoint.write_s=5", "checkpoint.restart_s=10")
ONE_TASK = ("harvest.tfwd=1000", "harvest.max_jobs=1", "harvest.compat_cap=false")


def test_a_task_the_node_log_stops_goes_back_to_its_checkpoint_and_restores(tmp_path):
    # nodes 0 and 1 idle at 0; at 100 node 0 goes busy and node 2 comes up; node 3 joins at 1000
    log = node_log(4, [(0, 0, True), (0, 1, True), (100, 0, False), (100, 2, True), (1000, 3, True)])
    tasks = linear_tasks([(0, 16000, 1, 4, 5.0, 3.0)])  # 10 samples/s per node, Tcup 5 s, Tcdw 3 s
    jobs, s, _ = replay(tmp_path, log, tasks, *ONE_TASK, *CHECKPOINTS)
    task = jobs.iloc[0]
    # run 1, nodes 0 and 1 from 0 (20 samples/s): trains 30, writes 5, trains 30, writes 5, trains 30;
    # at 100 node 0 goes busy: it keeps the 60 s of its second checkpoint, loses 30 s (x 2 nodes) and
    # has written for 10 s (x 2). Run 2, nodes 1 and 2 from 100 (a growth from 1 node, not charged:
    # the restore replaces it): restores 10, then in 890 s 25 periods of 35 and 15 s: 765 s of training,
    # 135 s of restore and writes (x 2). At 1000: 60 s x 20 + 765 s x 20 = 16,500 samples.
    assert task.lost_gpu_s == 30 * 2 and task.lost_gpu_s_busy == 30 * 2
    assert task.overhead_gpu_s == (10 + 135) * 2
    assert task.interruptions == 1 and task.interruptions_busy == 1 and task.rescales == 2
    assert task.end_time == 1000 and task.samples == 16000 and task.overshoot == 500
    # samples lost to the stop: the 30 s lost and every restore and write, at 20 samples/s
    assert task.precost == (30 + 10 + 135) * 20 and task.rescost == 0
    assert s.gross_samples == 20 * 1000  # the nodes' whole time at the task's rate
    causes = pd.read_csv(tmp_path / "run" / "lost_by_cause.csv")
    assert causes.to_dict("records") == [{"vc": "summit", "cause": "busy", "interruptions": 1,
                                          "lost_gpu_h": 60 / 3600},
                                         {"vc": "all", "cause": "busy", "interruptions": 1,
                                          "lost_gpu_h": 60 / 3600}]
    # a task's trace duration is a placeholder, not its work: the summary has no ETTR to give
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    assert summary.lost_gpu_h.iloc[-1] == 60 / 3600 and "ettr" not in summary
    # without checkpoints, BFTrainer's own costs: Tcdw x 20 at the stop, Tcup x 10 for the growth
    plain, _, _ = replay(tmp_path, log, tasks, *ONE_TASK, name="plain")
    assert plain.precost[0] == 3 * 20 and plain.rescost[0] == 5 * 10 and "lost_gpu_s" not in plain


def test_a_task_left_without_nodes_restores_when_nodes_come_back(tmp_path):
    # node 0 idle at 0, busy from 50 to 80; node 1 joins at 200
    log = node_log(2, [(0, 0, True), (50, 0, False), (80, 0, True), (200, 1, True)])
    tasks = linear_tasks([(0, 1400, 1, 4, 5.0, 3.0)])
    jobs, s, _ = replay(tmp_path, log, tasks, *ONE_TASK, "checkpoint.interval_s=20", "checkpoint.write_s=2",
                        "checkpoint.restart_s=4")
    task = jobs.iloc[0]
    # run 1 (0-50, 10 samples/s): trains 20, writes 2, trains 20, writes 2, trains 6, lost at 50;
    # run 2 (80-200): restores 4, then 5 periods of 22 and 6 s: 106 s of training, 14 s of overhead
    assert task.lost_gpu_s == 6 and task.overhead_gpu_s == 4 + 14
    assert task.samples == 1400 and task.overshoot == (40 + 106) * 10 - 1400 and task.end_time == 200
    assert task.precost == (6 + 4 + 14) * 10 and s.gross_samples == 10 * (50 + 120)


@pytest.mark.parametrize("precise", [False, True])
def test_checkpointed_harvesting_keeps_its_books(tmp_path, precise):
    """On a random log: the work lost is that of the node log's stops, finished tasks processed their
    samples and, in precise mode, finish when their training (their writes between) reaches them."""
    rng = np.random.default_rng(1)
    tasks = random_tasks(rng)
    log = random_log(rng, n_nodes=10, n_rows=400, horizon=20000)
    jobs, s, _ = replay(tmp_path, log, tasks, "harvest.tfwd=30", "harvest.max_jobs=3", f"harvest.precise={precise}",
                        "checkpoint.interval_s=300", "checkpoint.write_s=20", "checkpoint.restart_s=60")
    assert s.finished == len(jobs) and (jobs.overshoot.sum() < 1 if precise else jobs.overshoot.sum() > 1000)
    assert (jobs.lost_gpu_s == jobs.lost_gpu_s_busy).all() and (jobs.lost_gpu_s[jobs.interruptions == 0] == 0).all()
    assert jobs.lost_gpu_s.sum() > 0 and (jobs.overhead_gpu_s > 0).any()
    done = jobs.finished.to_numpy()
    assert np.allclose(jobs.samples[done], tasks.pmax[done])


def checkpointed(synth_data, out, *more):
    """jobs.parquet's bytes of a checkpointed harvesting run on the synthetic data (`more`: settings)."""
    run(compose_harvest([f"harvest.data_dir={synth_data}", "harvest.task_set=synth", "harvest.start_row=0",
                         "harvest.nodes=all", "runtime.window_s=3600", *NO_PAGES, "checkpoint.interval_s=300",
                         "checkpoint.write_s=20", "checkpoint.restart_s=60", *more]), out)
    assert "lost_gpu_s_busy" in pd.read_parquet(out / "jobs.parquet")
    return (out / "jobs.parquet").read_bytes()


def test_checkpointed_harvesting_resumes_as_it_ran(synth_data, tmp_path):  # noqa: F811
    local = checkpointed(synth_data, tmp_path / "local", "runtime=local")
    ckpt = f"runtime.checkpoint_dir={tmp_path / 'ckpt'}"
    assert checkpointed(synth_data, tmp_path / "first", "runtime=local", ckpt) == local
    assert checkpointed(synth_data, tmp_path / "resumed", "runtime=local", ckpt, "runtime.resume=true") == local


@pytest.mark.slow
def test_checkpointed_harvesting_on_ray_equals_the_local_run(synth_data, tmp_path):  # noqa: F811
    local = checkpointed(synth_data, tmp_path / "local", "runtime=local")
    assert checkpointed(synth_data, tmp_path / "ray", "runtime=ray", "ray.num_cpus=1") == local
