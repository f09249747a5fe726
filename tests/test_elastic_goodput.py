"""Elastic jobs' profiles (raysim.elastic.profiles) and Pollux's goodput model (raysim.elastic.goodput):
a tiny synthetic profile, values worked by hand from Sia's profiles in ../shared, and the model's
fit and batch-size optimisation."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from elastic_util import toy_times, write_toy

from raysim.elastic.goodput import (GoodputModel, GradParams, PerfParams, _objective, _observations,
                                    fit_perf_params, speedup)
from raysim.elastic.profiles import load_profile, normal_placement
from raysim.errors import UserError


# -- a tiny synthetic profile (written by tests/elastic_util.py) -----------------------------------
@pytest.fixture
def toy(tmp_path):
    return load_profile(write_toy(tmp_path), "toy", "k", max_epochs=None, restart_s=30.0)


def test_toy_profile_attributes(toy):
    assert (toy.app, toy.kind, toy.restart_s) == ("toy", "k", 30.0)
    assert toy.batch_sizes == (4, 12) and (toy.init_batch_size, toy.max_batch_size) == (4, 12)
    assert (toy.min_local_bsz, toy.max_local_bsz, toy.max_epochs) == (8, 16, 3)
    assert toy.completion_epoch(8) == 2


def test_toy_step_time_of_a_profiled_placement_interpolates_in_the_batch_size(toy):
    assert toy.step_time((2,), 12) == pytest.approx(toy_times(1, 2, 12))
    assert toy.step_time((0, 1, 1), 8) == pytest.approx(toy_times(2, 2, 8))  # normal form: 11
    assert toy.step_time((2,), 4) is None and toy.step_time((2,), 17) is None  # outside 8..16


def test_toy_step_time_elsewhere_interpolates_over_nodes_gpus_and_batch_size(toy):
    assert normal_placement((2, 0, 1, 1)) == (1, 1, 2)
    assert toy.step_time((2, 1, 1), 12) == pytest.approx(toy_times(3, 4, 12))
    assert toy.step_time((2, 1, 1), 100) is None  # outside the measured points
    assert toy.step_time((1, 1, 1, 1, 1), 12) is None  # 5 nodes, 5 GPUs: outside too


def test_toy_batch_size_limits_and_one_gpu_throughput(toy):
    assert toy.max_local_bsz_for((2,)) == 16
    assert toy.max_local_bsz_for((1, 1, 2)) == 16  # scalability rows with >= 3 nodes and >= 4 GPUs
    with pytest.raises(ValueError, match="no profile row"):
        toy.max_local_bsz_for((1,) * 5)
    assert toy.max_local_bsz_at_replicas(2) == 16 and toy.max_local_bsz_at_replicas(3) is None
    assert toy.one_gpu_throughput() == pytest.approx(16 / toy_times(1, 1, 16)[0])


def test_toy_training_curves(toy):
    assert toy.grad_stats(8, 0) == pytest.approx((3.0, 8.0))  # half-way between 4 and 12
    assert toy.grad_stats(12, 2) == (1.0, 5.0)
    assert [toy.progress_at(e) for e in range(4)] == [0.0, 9.0, 20.0, 30.0]
    with pytest.raises(ValueError):
        toy.grad_stats(13, 0)


def test_toy_pickles_and_rebuilds_its_caches(toy):
    expected = toy.step_time((2, 1, 1), 12)
    copy = pickle.loads(pickle.dumps(toy))
    assert copy.step_time((2, 1, 1), 12) == expected


def test_kind_without_its_own_files_reads_the_plain_ones(tmp_path):
    write_toy(tmp_path, kind_suffix="")
    profile = load_profile(tmp_path, "toy", "other", max_epochs=2, restart_s=5.0)
    assert profile.max_epochs == 2 and profile.step_time((1,), 8) == pytest.approx(toy_times(1, 1, 8))


def test_missing_file_is_a_user_error_naming_it(tmp_path):
    write_toy(tmp_path)
    (tmp_path / "toy" / "scalability-k.csv").unlink()
    with pytest.raises(UserError, match=r"scalability-k\.csv: profile file not found"):
        load_profile(tmp_path, "toy", "k", max_epochs=None, restart_s=30.0)


def test_a_folder_of_per_kind_files_missing_this_kinds_is_an_error_not_the_plain_file(tmp_path):
    """Sia's layout (placements-<kind>.csv for each kind, and a kind-less placements.csv beside them):
    a kind whose file is missing would read the kind-less one's other measurements without a word."""
    write_toy(tmp_path)  # placements-k.csv, scalability-k.csv
    for stem in ("placements", "scalability"):
        (tmp_path / "toy" / f"{stem}.csv").write_bytes((tmp_path / "toy" / f"{stem}-k.csv").read_bytes())
    with pytest.raises(UserError, match=rf"^{tmp_path / 'toy'}: no placements-other\.csv \(GPU kind 'other'\); "
                                        r"the folder profiles the kinds k "):
        load_profile(tmp_path, "toy", "other", max_epochs=2, restart_s=5.0)


def test_a_copy_of_sias_profile_missing_a_validation_file_is_an_error(tmp_path):
    """Validation files that are some of Sia's published ones for the application (the registry's
    sia_profiles): the missing ones would change the training curves without a word. A profile of
    one's own (a batch size Sia's has not) is read as it is."""
    write_toy(tmp_path)
    app = tmp_path / "cifar10"
    (tmp_path / "toy").rename(app)
    (app / "validation-4.csv").rename(app / "validation-128.csv")
    (app / "validation-12.csv").rename(app / "validation-256.csv")
    with pytest.raises(UserError, match=rf"^{app}: no validation-512\.csv \(nor validation-1024\.csv, "
                                        r"validation-2048\.csv, validation-4096\.csv\): Sia's published cifar10"):
        load_profile(tmp_path, "cifar10", "k", max_epochs=2, restart_s=5.0)
    (app / "validation-128.csv").rename(app / "validation-100.csv")
    assert load_profile(tmp_path, "cifar10", "k", max_epochs=2, restart_s=5.0).batch_sizes == (100, 256)


def test_bad_value_is_a_user_error_naming_file_row_and_column(tmp_path):
    write_toy(tmp_path)
    path = tmp_path / "toy" / "placements-k.csv"
    lines = path.read_text().splitlines()
    lines[2] = "1,16,fast,0.0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"placements-k\.csv, row 2 \(line 3\), column 'step_time': not a positive"):
        load_profile(tmp_path, "toy", "k", max_epochs=None, restart_s=30.0)


def test_bad_placement_and_missing_column_are_user_errors(tmp_path):
    write_toy(tmp_path)
    path = tmp_path / "toy" / "validation-4.csv"
    path.write_text(path.read_text().replace("grad_var", "variance"))
    with pytest.raises(UserError, match=r"validation-4\.csv: missing column\(s\) grad_var"):
        load_profile(tmp_path, "toy", "k", max_epochs=None, restart_s=30.0)
    path.unlink()
    placements = tmp_path / "toy" / "placements-k.csv"
    placements.write_text(placements.read_text().replace("\n11,", "\n1x,", 1))
    with pytest.raises(UserError, match=r"placements-k\.csv, row 5 \(line 6\), column 'placement'"):
        load_profile(tmp_path, "toy", "k", max_epochs=None, restart_s=30.0)


# -- Sia's profiles, by hand ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sia_profiles(shared_dir) -> Path:
    return shared_dir / "references" / "sia" / "profiles"


@pytest.mark.shared
def test_cifar10_step_time_by_hand(sia_profiles):
    cifar = load_profile(sia_profiles, "cifar10", "aws", max_epochs=100, restart_s=50.0)
    # placements-aws.csv rows "1,32,0.0427886962890625,0.0004995360016822816" and
    # "1,45,0.05048525333404541,0.000504022404551506": 40 is 8/13 of the way
    step = 0.0427886962890625 + 8 / 13 * (0.05048525333404541 - 0.0427886962890625)
    sync = 0.0004995360016822816 + 8 / 13 * (0.000504022404551506 - 0.0004995360016822816)
    assert cifar.step_time((1,), 40) == pytest.approx((step, sync), rel=1e-12)
    # row "11,45,0.1080667495727539,0.05788738288879395", placement given with an empty node
    assert cifar.step_time((1, 0, 1), 45) == pytest.approx((0.1080667495727539, 0.05788738288879395), rel=1e-12)
    assert cifar.step_time((1,), 31) is None  # below the smallest profiled 32
    assert (cifar.min_local_bsz, cifar.max_local_bsz, cifar.init_batch_size, cifar.max_batch_size) == (32, 1024, 128, 4096)


@pytest.mark.shared
def test_cifar10_training_curves_by_hand(sia_profiles):
    cifar = load_profile(sia_profiles, "cifar10", "aws", max_epochs=None, restart_s=50.0)
    assert cifar.max_epochs == 100
    # first rows of validation-128.csv (grad_sqr 8.947307535897329, grad_var 5.066593295150894,
    # iteration 390) and validation-256.csv (17.379458169870425, 13.937760473946334, 300): 192 is half-way
    sqr, var = cifar.grad_stats(192, 0)
    assert sqr == pytest.approx((8.947307535897329 + 17.379458169870425) / 2, rel=1e-12)
    assert var == pytest.approx((5.066593295150894 + 13.937760473946334) / 2, rel=1e-12)
    # the least first-epoch progress of the six files is validation-256.csv's
    assert cifar.progress_at(1) == 390.71438596642224 and cifar.progress_at(0) == 0.0


@pytest.mark.shared
def test_deepspeech2_on_rtx_has_siass_local_batch_cap(sia_profiles):
    assert load_profile(sia_profiles, "deepspeech2", "rtx", max_epochs=80, restart_s=25.0).max_local_bsz == 57


# -- the goodput model ----------------------------------------------------------------------------
TRUE_PERF = PerfParams(alpha_c=0.05, beta_c=0.005, alpha_n=0.2, beta_n=0.01, alpha_r=0.05, beta_r=0.005, gamma=1.2)
MODEL = GoodputModel(TRUE_PERF, GradParams(sqr=1.0, var=20.0), init_batch_size=128)
SPREAD = ((1, 1), (1, 2), (1, 4), (2, 4), (2, 8), (4, 8), (4, 16), (1, 8))  # (nodes, GPUs): all link kinds
ONE_NODE = ((1, 1), (1, 2), (1, 4), (1, 8))
ACROSS_NODES = ((1, 1), (2, 2), (4, 4), (4, 8), (2, 8))


def measured_steps(perf: PerfParams, configs=SPREAD):
    """Steps on `configs` x 4 batch sizes (at most 30), timed by `perf` exactly: (nodes, GPUs,
    atomic batch size, compute time, step time)."""
    rows = [(n, r, b) for n, r in configs for b in (16, 32, 64, 128)][:30]
    nodes, replicas, bsz = (np.array(c, dtype=float) for c in zip(*rows))
    model = GoodputModel(perf, GradParams(0.0, 0.0), 1)
    compute = perf.alpha_c + perf.beta_c * bsz
    step = replicas * bsz / model.throughput(nodes, replicas, bsz, 0)
    return nodes, replicas, bsz, compute, step


def test_efficiency_is_one_at_the_initial_batch_size():
    assert MODEL.efficiency(128) == pytest.approx(1.0)
    assert MODEL.efficiency(np.array([256, 1024])) == pytest.approx([(21 / 11) / 2, (21 / 3.5) / 8])
    assert GoodputModel(TRUE_PERF, GradParams(0.0, 0.0), 128).efficiency(256) == 0.5  # no statistics: gain 1


def test_objective_gradient_matches_finite_differences():
    obs = _observations(*measured_steps(TRUE_PERF))
    params = np.array([0.03, 0.0008, 0.04, 0.003, 0.02, 0.001, 1.7])
    _, gradient = _objective(params, obs)
    for i in range(params.size):
        step = 1e-6 * params[i]
        up, down = params.copy(), params.copy()
        up[i] += step
        down[i] -= step
        numeric = (_objective(up, obs)[0] - _objective(down, obs)[0]) / (2 * step)
        assert gradient[i] == pytest.approx(numeric, rel=1e-5, abs=1e-7), i


def test_fit_recovers_the_step_times_it_was_given():
    """Pollux's stopping rule (tol 1e-5 on an objective below 1: an absolute decrease of 1e-5) can
    stop before the network terms are found (as Pollux's own fit does on the same data): compute
    times are always recovered; whole steps here on data where the rule gets there."""
    nodes, replicas, bsz, compute, step = measured_steps(TRUE_PERF)
    fitted = fit_perf_params(nodes, replicas, bsz, compute, step)
    assert fitted.alpha_c + fitted.beta_c * bsz == pytest.approx(compute, rel=0.01)
    for configs in (ONE_NODE, ACROSS_NODES):
        nodes, replicas, bsz, compute, step = measured_steps(TRUE_PERF, configs)
        fitted = GoodputModel(fit_perf_params(nodes, replicas, bsz, compute, step), MODEL.grad, 128)
        for accum in (0, 2):
            assert fitted.throughput(nodes, replicas, bsz, accum) == pytest.approx(
                MODEL.throughput(nodes, replicas, bsz, accum), rel=0.01)


def test_fit_holds_what_the_data_cannot_tell_and_keeps_nodes_slower():
    nodes, replicas, bsz, compute, step = measured_steps(TRUE_PERF, ONE_NODE)
    fitted = fit_perf_params(nodes, replicas, bsz, compute, step)
    assert fitted.alpha_n >= 1.1 * fitted.alpha_r and fitted.beta_n >= 1.1 * fitted.beta_r
    one = fit_perf_params([1], [1], [32], [0.05], [0.06])  # one atomic size: alpha_c fixed at half the compute
    assert one.alpha_c == 0.025 and one.beta_r == 1e-8


def test_optimize_never_does_worse_than_the_initial_batch_size():
    nodes, replicas = np.array([1, 1, 1, 2, 2, 4]), np.array([1, 2, 8, 2, 8, 8])
    best, atomic, accum = MODEL.optimize(nodes, replicas, max_batch_size=4096, atomic_bsz_range=(16, 256),
                                         accumulation=True)
    initial, _, _ = MODEL.optimize(nodes, replicas, max_batch_size=128, atomic_bsz_range=(16, 256),
                                   accumulation=True, tune_bsz=False)
    assert best.shape == (6,) and np.all(best >= initial) and np.any(best > initial)
    assert np.all((16 <= atomic) & (atomic <= 256)) and np.all(accum >= 0)
    assert accum[0] >= 1 or replicas[0] * atomic[0] <= 128  # one GPU past the initial size accumulates


def test_optimize_scalars_and_invalid_sizes():
    goodput, atomic, accum = MODEL.optimize(2, 4, max_batch_size=1024, atomic_bsz_range=(16, 512))
    assert isinstance(goodput, float) and isinstance(atomic, int) and accum == 0
    assert MODEL.evaluate(2, 4, atomic, 0) == pytest.approx(goodput)
    # 1 GPU, no accumulation: every candidate's atomic size (128..150) is above 100
    assert MODEL.optimize(1, 1, max_batch_size=150, atomic_bsz_range=(16, 100)) == (0.0, 128, 0)


def test_speedup_is_the_optimised_goodput_and_zero_without_gpus():
    options = {"max_batch_size": 4096, "atomic_bsz_range": (16, 256)}
    goodputs = speedup(MODEL, np.array([0, 1, 1, 2]), np.array([0, 1, 4, 8]), **options)
    assert goodputs[0] == 0.0
    assert goodputs[1] == pytest.approx(MODEL.optimize(1, 1, 4096, (16, 256), True)[0])
    assert goodputs[2:] == pytest.approx(MODEL.optimize(np.array([1, 2]), np.array([4, 8]), 4096, (16, 256), True)[0])
    with pytest.raises(ValueError):
        speedup(MODEL, np.array([0]), np.array([2]), **options)
