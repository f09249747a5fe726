"""Interference models: the analytic overlap model, the learned colocation speed, the pair builder."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from raysim.models import cli
from raysim.models import interference as itf
from raysim.models import pairspeed as ps
from raysim.models.colocation import pair_table
from raysim.models.resources import Burst, JobProfile, key_profiles

CAPACITY = 120.0  # the synthetic pairs' true capacity


def synthetic_files(tmp_path, n_models: int = 8, seed: int = 0):
    """single_data.csv and colocate_info.csv (Lucid formats): speeds follow the interleaved model
    with capacity CAPACITY on gpu_util, plus noise."""
    rng = np.random.default_rng(seed)
    single = []
    for m in range(n_models):
        for batch in (32, 128):
            util = 10 + 85 * m / (n_models - 1) + batch / 32
            single.append(dict(model=f"M{m}", dataset=f"D{m}", batchsize=batch, amp=m % 2, speed=10.0 * batch,
                               gpu_util=util, gmem_util=util / 3, gmem=2000.0 + 10 * util, label=int(util > 60)))
    single = pd.DataFrame(single)
    rows = []
    for i, a in single.iterrows():
        for j, b in single.iterrows():
            if i <= j and rng.random() < 0.6:
                s = min(1.0, CAPACITY / (a.gpu_util + b.gpu_util))
                row = {f"{k}1": a[k] for k in ("model", "dataset", "batchsize", "amp")}
                row |= {f"{k}2": b[k] for k in ("model", "dataset", "batchsize", "amp")}
                row |= dict(gpu_num1=1, gpu_num2=1, speed1=s + rng.normal(0, 0.01), speed2=s + rng.normal(0, 0.01),
                            gpu_util=min(100.0, a.gpu_util + b.gpu_util), gmem_util=50.0, gmem=a.gmem + b.gmem)
                rows.append(row)
    single_csv, colo_csv = tmp_path / "single_data.csv", tmp_path / "colocate_info.csv"
    single.to_csv(single_csv, index=False)
    pd.DataFrame(rows).to_csv(colo_csv)
    keys = [tuple(r) for r in single[["model", "dataset", "batchsize", "amp"]].itertuples(index=False)]
    return single_csv, colo_csv, keys


# --- analytic overlap model ---------------------------------------------------------------------

def test_complementary_phase_aligned_bursts_do_not_slow_down():
    jobs = [Burst(1.0, 1.0, 100.0), Burst(1.0, 1.0, 100.0)]
    np.testing.assert_allclose(itf.simulate_overlap(jobs, [0.0, 1.0]), [1.0, 1.0])
    np.testing.assert_allclose(itf.overlap_speeds(jobs), [1.0, 1.0])
    # the same bursts in phase: each burst takes twice as long, 3 s per 2 s cycle
    np.testing.assert_allclose(itf.simulate_overlap(jobs, [0.0, 0.0]), [2 / 3, 2 / 3])
    # independent phases meet half the time
    assert (itf.overlap_speeds(jobs, phases="random") < 0.9).all()


def test_levels_below_capacity_never_slow_down():
    jobs = [Burst(1.0, 1.0, 40.0), Burst(0.5, 0.2, 60.0)]
    np.testing.assert_allclose(itf.simulate_overlap(jobs, [0.0, 0.0]), [1.0, 1.0])
    np.testing.assert_allclose(itf.overlap_speeds(jobs, phases="random"), [1.0, 1.0])


def test_two_always_busy_jobs_run_at_half_speed():
    jobs = [Burst(1.0, 0.0, 100.0), Burst(0.3, 0.0, 100.0)]
    for speeds in (itf.simulate_overlap(jobs, [0.0, 0.1]), itf.overlap_speeds(jobs),
                   itf.overlap_speeds(jobs, phases="random")):
        np.testing.assert_allclose(speeds, [0.5, 0.5])


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_k_identical_jobs_on_one_link_get_the_fair_share(k):
    busy = [Burst(1.0, 0.0, 100.0)] * k
    offsets = np.linspace(0, 1, k, endpoint=False)
    for speeds in (itf.simulate_overlap(busy, offsets), itf.overlap_speeds(busy),
                   itf.overlap_speeds(busy, phases="random")):
        np.testing.assert_allclose(speeds, np.full(k, 1 / k))
    half = [Burst(1.0, 0.0, 50.0)] * k  # each needs half the link
    np.testing.assert_allclose(itf.simulate_overlap(half, offsets), np.full(k, min(1.0, 2 / k)))
    np.testing.assert_allclose(itf.overlap_speeds(half), np.full(k, min(1.0, 2 / k)))


def test_interleaved_closed_form_is_the_best_phase_arrangement():
    jobs = [Burst(0.3, 0.7, 100.0), Burst(0.9, 0.1, 100.0)]  # summed duty 1.2: saturated
    sims = [itf.simulate_overlap(jobs, [0.0, o], cycles=60) for o in np.linspace(0, 1, 21)]
    best = max(sims, key=lambda s: s.sum())
    np.testing.assert_allclose(best, itf.overlap_speeds(jobs), atol=1e-6)
    np.testing.assert_allclose(best, [1 / 1.2, 1 / 1.2], atol=1e-6)
    assert min(s.sum() for s in sims) < best.sum() - 0.05  # a bad arrangement costs more


def test_profile_speed_is_the_slowest_resource():
    a = JobProfile({"gpu": Burst.from_mean(30.0), "membw": Burst.from_mean(90.0)}, 1000.0)
    b = JobProfile({"gpu": Burst.from_mean(30.0), "membw": Burst.from_mean(60.0)}, 1000.0)
    np.testing.assert_allclose(itf.profile_speeds([a, b]), [100 / 150, 100 / 150])
    only_gpu = JobProfile({"gpu": Burst.from_mean(80.0)}, 1000.0)
    np.testing.assert_allclose(itf.profile_speeds([a, only_gpu]), [100 / 110, 100 / 110])
    with pytest.raises(ValueError, match="phases"):
        itf.overlap_speeds([Burst.from_mean(50.0)], phases="sometimes")


# --- learned model, cross-validation --------------------------------------------------------------

def test_pairs_are_symmetric_and_grouped_by_unordered_model_pair(tmp_path):
    single_csv, colo_csv, _ = synthetic_files(tmp_path)
    pairs = ps.read_pairs(colo_csv, single_csv)
    data = ps.oriented(pairs)
    assert len(data) == 2 * len(pairs) and pairs.attrs["unprofiled"] == 0
    first, second = data.iloc[: len(pairs)], data.iloc[len(pairs):]
    assert (first["group"].to_numpy() == second["group"].to_numpy()).all()
    assert (first["own_gpu_util"].to_numpy() == second["partner_gpu_util"].to_numpy()).all()
    model = ps.SpeedModel("lightgbm").fit(data)
    own, partner = ps.sides(data)
    ab, ba = model.predict(own, partner), model.predict(partner, own)
    np.testing.assert_allclose(ab[: len(pairs)], ba[len(pairs):])
    assert ab.min() >= data["speed"].min() and ab.max() <= data["speed"].max()


def test_tier_accuracy_per_configuration():
    data = pd.DataFrame({"own_model": ["A", "A", "B", "C"], "own_dataset": "d", "own_batchsize": 32, "own_amp": 0,
                         "speed": [0.8, 0.88, 0.99, 0.9]})
    # measured means: A 0.84 -> 2, B 0.99 -> 0, C 0.9 -> 1
    assert itf.tier_accuracy(data, [0.84, 0.84, 0.9, 0.9]) == pytest.approx(2 / 3)
    assert itf.tier_accuracy(data, np.ones(4)) == pytest.approx(1 / 3)


def test_cross_validation_on_synthetic_pairs(tmp_path):
    single_csv, colo_csv, _ = synthetic_files(tmp_path)
    metrics, pred = itf.cross_validate(colo_csv, single_csv, folds=3)
    for key in ("mae_learned_lightgbm", "mae_learned_ebm", "mae_analytic", "mae_speed1", "tier_accuracy"):
        assert 0 <= metrics[key] <= 1
    assert metrics["mae_analytic"] < 0.02  # the data follow the analytic model
    assert metrics["mae_learned_lightgbm"] < metrics["mae_speed1"]
    assert all(abs(c - CAPACITY) <= 3 for c in metrics["analytic_capacity_per_fold"])
    assert metrics["folds"] == 3 and len(pred) == 2 * metrics["n_pairs"]


# --- pair dict for a run --------------------------------------------------------------------------

def test_interference_pairs_modes(tmp_path):
    single_csv, colo_csv, keys = synthetic_files(tmp_path)
    keys = keys + [("Unseen", "X", 64, 0)]
    measured = itf.interference_pairs(keys, "measured", colocation_csv=colo_csv, single_csv=single_csv)
    assert measured == pair_table(keys, colo_csv)
    n = len(keys)
    for mode in ("learned", "analytic"):
        pairs = itf.interference_pairs(keys, mode, colocation_csv=colo_csv, single_csv=single_csv)
        assert len(pairs) == n * (n + 1) // 2
        assert all(pairs[k] == v for k, v in measured.items())  # measured pairs win
        for (i, j), value in pairs.items():
            assert len(value) == 4 and all(isinstance(v, float) for v in value)
            assert 0 < value[0] <= 1.5 and 0 < value[1] <= 1.5 and 0 <= value[2] <= 100
        if mode == "analytic":
            prof = key_profiles(keys, single_csv=single_csv)
            i, j = n - 2, n - 1  # the unseen key is predicted from all references
            assert (i, j) not in measured
            expected = min(1.0, CAPACITY / (prof[keys[i]].mean("gpu") + prof[keys[j]].mean("gpu")))
            assert pairs[(i, j)][0] == pytest.approx(expected, abs=3 / 100)


def test_interference_pairs_bad_input(tmp_path):
    single_csv, colo_csv, keys = synthetic_files(tmp_path, n_models=3)
    with pytest.raises(ValueError, match="mode"):
        itf.interference_pairs(keys, "guess")
    with pytest.raises(ValueError, match="policy.profiles.single"):
        itf.interference_pairs(keys, "learned", colocation_csv=colo_csv)
    with pytest.raises(ValueError, match="lack"):
        itf.interference_pairs(keys, "analytic", profiles={})
    # without measurements the analytic model works from profiles alone, at capacity 100 %
    prof = {k: JobProfile({"gpu": Burst.from_mean(70.0)}, 1000.0) for k in keys}
    pairs = itf.interference_pairs(keys[:2], "analytic", profiles=prof)
    assert pairs[(0, 1)][:3] == pytest.approx((100 / 140, 100 / 140, 100.0))
    bad = tmp_path / "bad.csv"
    pd.read_csv(colo_csv, index_col=0).drop(columns="speed2").to_csv(bad)
    with pytest.raises(ValueError, match="bad.csv.*'speed2'"):
        ps.read_pairs(bad, single_csv)


@pytest.mark.slow  # 7 s; the cross-validation test keeps the trainer in the main suite
def test_train_colocation_command(tmp_path, capsys):
    single_csv, colo_csv, _ = synthetic_files(tmp_path)
    out = tmp_path / "cv" / "colocation_cv.json"
    assert cli.main(["train", "colocation", "--single", str(single_csv), "--colocation", str(colo_csv),
                     "--out", str(out), "--folds", "3"]) == 0
    metrics = json.loads(out.read_text())
    assert {"mae_learned_lightgbm", "mae_learned_ebm", "mae_analytic", "mae_speed1", "tier_accuracy"} <= set(metrics)
    assert "MAE" in capsys.readouterr().out


# --- the real profiles (../shared) ------------------------------------------------------------------

@pytest.mark.shared
@pytest.mark.slow
def test_colocation_cv_bounds_on_lucid_profiles(shared_dir):
    """Both learned models (EBM's five fits take over a minute: slow; the test below is the main
    suite's check of the rest)."""
    prof = shared_dir / "profiles"
    m, _ = itf.cross_validate(prof / "colocate_info.csv", prof / "single_data.csv")
    assert m["n_pairs"] == 1388 and m["folds"] == 5
    assert m["mae_speed1"] == pytest.approx(0.0973, abs=5e-4)
    assert m["mae_learned_lightgbm"] <= 0.055 and m["mae_learned_ebm"] <= 0.055
    assert m["tier_accuracy"] >= 0.75
    assert m["mae_analytic"] <= 0.075
    assert m["mae_analytic"] < m["mae_speed1"] and m["mae_learned_lightgbm"] < m["mae_analytic"]


@pytest.mark.shared
def test_colocation_cv_bounds_on_lucid_profiles_without_ebm(shared_dir, monkeypatch):
    """The same cross-validation and bounds with LightGBM as the only learned model (seconds)."""
    monkeypatch.setattr(itf, "KINDS", ("lightgbm",))
    prof = shared_dir / "profiles"
    m, _ = itf.cross_validate(prof / "colocate_info.csv", prof / "single_data.csv")
    assert "mae_learned_ebm" not in m
    assert m["n_pairs"] == 1388 and m["folds"] == 5
    assert m["mae_speed1"] == pytest.approx(0.0973, abs=5e-4)
    assert m["mae_learned_lightgbm"] <= 0.055
    assert m["tier_accuracy"] >= 0.75
    assert m["mae_analytic"] <= 0.075
    assert m["mae_analytic"] < m["mae_speed1"] and m["mae_learned_lightgbm"] < m["mae_analytic"]


@pytest.mark.shared
def test_half_table_still_covers_every_pair(shared_dir, tmp_path):
    prof = shared_dir / "profiles"
    colo = pd.read_csv(prof / "colocate_info.csv", index_col=0)
    single = pd.read_csv(prof / "single_data.csv")
    keys = [tuple(r) for r in single[["model", "dataset", "batchsize", "amp"]].itertuples(index=False)]
    models = sorted(set(colo["model1"]) | set(colo["model2"]))
    dropped = models[::2]
    half = tmp_path / "half.csv"
    colo[~colo["model1"].isin(dropped) & ~colo["model2"].isin(dropped)].to_csv(half)
    measured = itf.interference_pairs(keys, "measured", colocation_csv=half)
    assert not any(keys[i][0] in dropped or keys[j][0] in dropped for i, j in measured)
    learned = itf.interference_pairs(keys, "learned", colocation_csv=half, single_csv=prof / "single_data.csv")
    assert len(learned) == len(keys) * (len(keys) + 1) // 2 > len(measured)
    slowed = [v[0] for (i, j), v in learned.items() if keys[i][0] in dropped and keys[j][0] in dropped]
    assert slowed and min(slowed) < 0.9  # pairs of removed models are predicted, not left at speed 1
