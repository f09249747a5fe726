"""One elastic job (raysim.elastic.job.ElasticJob) on a synthetic linear profile (tests/elastic_util.py),
numbers worked by hand: restarts on re-allocation, progress at the profile's goodput, completion at
Sia's whole second; and Pollux's batch-size choice (raysim.elastic.goodput) never below the initial
batch size's goodput. No ../shared.

The application `lin`: step time 0.047 + 0.002 b + 0.02 (nodes - 1) + 0.005 GPUs seconds, sync time
0.01 (nodes - 1) + 0.004 (GPUs - 1), on GPU kind `a`; kind `b` is twice as fast (times halved).
Validated batch sizes 32 (initial), 64, 128; per-GPU batch sizes 8..64; 2 epochs (progress 10000 at
the end of the first, 20500 at the end of the second: the least over the batch sizes); restart 50 s;
calibration 1 / 1.2. A job's goodput (progress per second) is Sia's: gain / (step + (step - sync) x
accumulation steps) x calibration, gain = (var + sqr) / (var / scale + sqr) at scale = batch / 32
(Pollux's statistical efficiency x scale), sqr and var from the validation rows of the job's epoch,
linear in the batch size between validated ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from elastic_util import LIN_VALIDATION, lin_times, write_app

from raysim.elastic.goodput import GoodputModel, GradParams, PerfParams
from raysim.elastic.job import ElasticJob
from raysim.elastic.profiles import load_profile

RESTART = 50.0
CALIBRATION = 1 / 1.2
SPEED = {"a": 1.0, "b": 2.0}


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    folder = write_app(tmp_path_factory.mktemp("profiles"), "lin", SPEED)
    return {kind: load_profile(folder, "lin", kind, max_epochs=2, restart_s=RESTART) for kind in SPEED}


def new_job(apps, *, tune_bsz: bool = True, batch: int = 64) -> ElasticJob:
    return ElasticJob(0, "lin-0", apps, 0.0, target_replicas=2, target_batch=batch, calibration=CALIBRATION,
                      tune_bsz=tune_bsz)


def grad_by_hand(batch: float, epoch: int) -> tuple[float, float]:
    """(sqr, var) of `epoch` at `batch`: the validation rows, linear between validated batch sizes."""
    sizes = sorted(LIN_VALIDATION)
    lower = max(b for b in sizes if b <= batch)
    upper = min(b for b in sizes if b >= batch)
    low, high = LIN_VALIDATION[lower][epoch][3:], LIN_VALIDATION[upper][epoch][3:]
    if lower == upper:
        return low
    w = (batch - lower) / (upper - lower)
    return low[0] + w * (high[0] - low[0]), low[1] + w * (high[1] - low[1])


def goodput_by_hand(kind: str, placement: tuple, atomic: int, accum: int, epoch: int) -> float:
    nodes, gpus = len(placement), sum(placement)
    batch = gpus * atomic * (accum + 1)
    sqr, var = grad_by_hand(batch, epoch)
    scale = batch / 32
    gain = (var + sqr) / (var / scale + sqr)
    step, sync = lin_times(nodes, gpus, atomic, speed=SPEED[kind])
    return gain / (step + (step - sync) * accum) * CALIBRATION


def current_goodput(job: ElasticJob) -> float:
    """The goodput by hand of the job's allocation and batch size as they are now."""
    return goodput_by_hand(job.kind, job.placement, job.atomic_bsz, job.accum_steps, job.epoch)


def test_the_linear_profile_is_what_the_hand_numbers_assume(apps):
    a = apps["a"]
    assert (a.init_batch_size, a.max_batch_size, a.min_local_bsz, a.max_local_bsz) == (32, 128, 8, 64)
    assert [a.progress_at(e) for e in range(3)] == [0.0, 10000.0, 20500.0] and a.completion_epoch(64) == 1
    assert a.step_time((2,), 16) == pytest.approx((0.089, 0.004), rel=1e-12)
    assert apps["b"].step_time((4,), 8) == pytest.approx((0.0415, 0.006), rel=1e-12)
    assert a.grad_stats(96, 0) == pytest.approx((3.0, 5.5), rel=1e-12) == grad_by_hand(96, 0)


def test_resizing_from_2_to_4_gpus_pays_one_restart_then_runs_at_the_4_gpu_goodput(apps):
    job = new_job(apps)
    assert job.restarts is None and job.allocate("a", (2,)) is True
    # no model yet: the initial batch 32 = max(32, 8 per GPU x 2) -> 16 per GPU, no accumulation
    assert (job.restarts, job.rescale_left, job.atomic_bsz, job.accum_steps) == (0, RESTART, 16, 0)
    job.advance(0, 30)
    assert (job.progress, job.rescale_left, job.attained) == (0.0, 20.0, 60.0)
    job.advance(30, 20)
    assert (job.progress, job.rescale_left) == (0.0, 0.0)
    job.advance(50, 100)
    # batch 32 = the initial one: gain 1; step(1 node, 2 GPUs, 16) = 0.047 + 0.032 + 0.01 = 0.089 s
    on_two = 100 / 0.089 * CALIBRATION
    assert job.progress == pytest.approx(936.3295880149813, rel=1e-12) == pytest.approx(on_two, rel=1e-12)
    assert job.epoch == 0 and job.attained == 2 * 150

    assert job.allocate("a", (4,)) is True
    assert (job.restarts, job.rescale_left, job.placement) == (1, RESTART, (4,))
    # batch size: Pollux's choice on the model fitted to the 2-GPU steps seen so far
    model = job.model("a")
    best, atomic, accum = model.optimize(1, 4, 128, (8, 64), accumulation=True)
    assert (job.atomic_bsz, job.accum_steps) == (atomic, accum)
    assert 8 <= atomic <= 64 and 32 <= 4 * atomic * (accum + 1) <= 128
    assert best >= model.evaluate(1, 4, 8, 0) * (1 - 1e-12)  # no worse than the initial 32 (8 per GPU)
    job.advance(150, 30)
    job.advance(180, 20)  # the restart, in two parts: no progress, GPUs held
    assert (job.progress, job.rescale_left, job.restarts, job.attained) == (pytest.approx(on_two, rel=1e-12), 0.0, 1,
                                                                          300 + 4 * 50)
    job.advance(200, 60)
    on_four = 60 * goodput_by_hand("a", (4,), atomic, accum, 0)
    assert job.progress == pytest.approx(on_two + on_four, rel=1e-12)
    assert job.restarts == 1 and job.epoch == 0 and job.gpu_s == {"a": 300 + 4 * 110, "b": 0.0}


def test_reallocating_the_same_kind_and_shape_costs_nothing(apps):
    job = new_job(apps)
    job.allocate("a", (2,))
    job.advance(0, 110)  # 50 s restart, 60 s training
    assert job.allocate("a", (2,)) is False
    assert (job.restarts, job.rescale_left) == (0, 0.0)
    before, rate = job.progress, current_goodput(job)
    job.advance(110, 60)
    assert job.progress == pytest.approx(before + 60 * rate, rel=1e-12)
    # ... also while a restart is being paid: its remaining seconds are not paid again
    assert job.allocate("a", (1, 1)) is True and (job.restarts, job.rescale_left) == (1, RESTART)
    job.advance(170, 20)
    assert job.allocate("a", (1, 1)) is False and (job.restarts, job.rescale_left) == (1, 30.0)


def test_a_change_of_gpu_kind_costs_a_restart(apps):
    job = new_job(apps)
    job.allocate("a", (4,))
    job.advance(0, 110)
    before = job.progress
    assert job.allocate("b", (4,)) is True
    assert (job.kind, job.restarts, job.rescale_left) == ("b", 1, RESTART)
    # nothing known on b yet: the initial batch 32 -> 8 per GPU
    assert (job.atomic_bsz, job.accum_steps) == (8, 0)
    job.advance(110, 50)
    assert job.progress == before
    job.advance(160, 60)
    # gain 1; step on b = (0.047 + 0.016 + 0.02) / 2 = 0.0415 s
    assert job.progress == pytest.approx(before + 60 / 0.0415 * CALIBRATION, rel=1e-12)
    assert job.gpu_s == {"a": 4 * 110, "b": 4 * 110}


def test_suspension_then_a_start_costs_a_restart(apps):
    job = new_job(apps)
    job.allocate("b", (2,))
    job.advance(0, 110)
    assert job.allocate(None, ()) is False and (job.kind, job.placement) == (None, ())
    before, held = job.progress, job.attained
    job.advance(110, 60)  # suspended: no progress, no GPUs
    assert (job.progress, job.attained, job.restarts) == (before, held, 0)
    # back on the same kind and the same shape as before the suspension: a restart all the same
    assert job.allocate("b", (2,)) is True and (job.restarts, job.rescale_left) == (1, RESTART)
    assert job.atomic_bsz >= 8 and 2 * job.atomic_bsz * (job.accum_steps + 1) >= 32
    job.advance(170, 50)
    assert job.progress == before
    rate = current_goodput(job)
    job.advance(220, 60)
    assert job.progress == pytest.approx(before + 60 * rate, rel=1e-12)


def test_completion_is_the_whole_second_of_sias_rounding(apps):
    """Rigid (no batch-size tuning): batch 64 on 2 GPUs = 32 per GPU; step = 0.047 + 0.064 + 0.01 =
    0.121 s. Epoch 0 (sqr 2, var 5 at 64: gain 7 / 4.5) takes 10000 x 0.121 x 1.2 x 4.5 / 7 =
    933.43 s -> 933; epoch 1 (sqr 1, var 3: gain 1.6) 10500 x 0.121 x 1.2 / 1.6 = 952.875 s -> 953.
    Completion: 50 (restart) + 933 + 953 = 1936 s, in one advance or in 60-s rounds."""
    assert 10000 * 0.121 * 1.2 * 4.5 / 7 == pytest.approx(933.4285714, rel=1e-9)
    assert 10500 * 0.121 * 1.2 / 1.6 == pytest.approx(952.875, rel=1e-12)
    one = new_job(apps, tune_bsz=False)
    one.allocate("a", (2,))
    assert (one.atomic_bsz, one.accum_steps) == (32, 0)
    one.advance(0, 1935)
    assert one.completion is None and one.epoch == 1
    one = new_job(apps, tune_bsz=False)
    one.allocate("a", (2,))
    one.advance(0, 5000)
    assert one.completion == 1936 and one.epoch == 2 and one.gpu_s == {"a": 2 * 1936.0, "b": 0.0}

    rounds = new_job(apps, tune_bsz=False)
    rounds.allocate("a", (2,))
    now = 0
    while rounds.completion is None:
        rounds.advance(now, 60)
        now += 60
    assert rounds.completion == 1936 and now == 1980 and isinstance(rounds.completion, (int, float))
    assert rounds.completion == int(rounds.completion)
    # a completion set once is kept: further advances do nothing
    rounds.advance(now, 60)
    assert rounds.completion == 1936 and rounds.progress == 20500.0


def test_completion_with_batch_size_tuning_is_a_whole_second_too(apps):
    job = new_job(apps)
    job.allocate("a", (4,))
    now = 0
    while job.completion is None and now < 10_000:
        job.advance(now, 60)
        now += 60
    assert job.completion is not None and job.completion == math.floor(job.completion)
    assert now - 60 < job.completion <= now and job.restarts == 0


# -- the batch-size choice --------------------------------------------------------------------
MODELS = [
    GoodputModel(PerfParams(0.05, 0.005, 0.2, 0.01, 0.05, 0.005, 1.2), GradParams(1.0, 20.0), 128),
    GoodputModel(PerfParams(0.01, 0.0004, 0.3, 0.02, 0.02, 0.001, 3.0), GradParams(0.5, 500.0), 128),
    GoodputModel(PerfParams(0.2, 0.01, 0.05, 0.001, 0.01, 0.0005, 1.0), GradParams(10.0, 0.1), 128),
    GoodputModel(PerfParams(0.02, 0.001, 0.1, 0.01, 0.03, 0.002, 7.0), GradParams(0.0, 3.0), 128),
]
GRID = [(n, r) for r in range(1, 9) for n in range(1, r + 1)]


@pytest.mark.parametrize("max_atomic", [256, 32])
@pytest.mark.parametrize("accumulation", [False, True])
@pytest.mark.parametrize("m", range(len(MODELS)))
def test_the_chosen_batch_size_is_never_worse_than_the_initial_one(m, accumulation, max_atomic):
    """Over (nodes, GPUs) with 1 <= nodes <= GPUs <= 8 (the initial 128 fits 16..max_atomic per
    GPU): optimize's goodput >= evaluate at the initial batch size, split as optimize splits it (per
    GPU ceil(128 / GPUs), in ceil(that / max_atomic) accumulation passes when accumulating)."""
    model = MODELS[m]
    nodes, replicas = (np.array(c) for c in zip(*GRID))
    best, atomic, accum = model.optimize(nodes, replicas, 4096, (16, max_atomic), accumulation=accumulation)
    local = 128 / replicas
    if accumulation:
        init_accum = np.ceil(local / max_atomic - 1e-8).astype(int) - 1
    else:
        init_accum = np.zeros_like(replicas)
    init_atomic = np.ceil(local / (init_accum + 1) - 1e-8).astype(int)
    fits = init_atomic <= max_atomic
    initial = model.evaluate(nodes, replicas, init_atomic, init_accum)
    assert fits.sum() >= (len(GRID) if accumulation or max_atomic == 256 else 10)
    assert np.all(best[fits] >= initial[fits] * (1 - 1e-12)), (best, initial)
    used = best > 0  # (no candidate fits: goodput 0)
    assert np.all(used[fits]) and np.all((16 <= atomic[used]) & (atomic[used] <= max_atomic))
    assert np.all(replicas * atomic * (accum + 1) >= 128)
    for (n, r), g in zip(GRID, best):  # scalars in, scalars out: the same choice
        assert model.optimize(n, r, 4096, (16, max_atomic), accumulation=accumulation)[0] == pytest.approx(g, rel=1e-12)


def test_a_jobs_own_choice_is_never_worse_than_its_initial_batch_size(apps):
    """The model fitted to a job's own steps (as the scheduler sees it)."""
    job = new_job(apps)
    for placement in ((1,), (2,), (1, 1), (4,)):
        job.allocate("a", placement)
        job.advance(0, 120)
    model = job.model("a")
    assert model is not None and model.init_batch_size == 32
    for n, r in [(1, 1), (1, 2), (2, 2), (1, 4), (2, 4)]:
        best = model.optimize(n, r, 128, (8, 64), accumulation=True)[0]
        # the initial 32 fits 8..64 per GPU without accumulation (one GPU accumulates only beyond it)
        assert best >= model.evaluate(n, r, math.ceil(32 / r), 0) * (1 - 1e-12), (n, r)
