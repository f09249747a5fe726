"""Packing analyzer: label thresholds, colocation averaging, ShareScores lookups and fallbacks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from raysim.models import packing as pk
from raysim.errors import TraceError


def synthetic_single(n_models: int = 15) -> pd.DataFrame:
    """Profiles whose label follows gpu_util (< 40 -> 0, < 70 -> 1, else 2), 6 configs per model."""
    rows = []
    for m in range(n_models):
        for batch in (32, 64, 128):
            for amp in (0, 1):
                util = 10 + 80 * m / max(n_models - 1, 1) + batch / 16 - 5 * amp
                rows.append(dict(model=f"M{m}", dataset=f"D{m}", batchsize=batch, amp=amp, speed=100.0 * (m + 1),
                                 gpu_util=util, gmem_util=util / 2, gmem=2000 + 30 * util,
                                 label=0 if util < 40 else 1 if util < 70 else 2))
    return pd.DataFrame(rows)


def pair(a: dict, b: dict, s1: float, s2: float) -> dict:
    row = {f"{k}1": a[k] for k in pk.KEY} | {f"{k}2": b[k] for k in pk.KEY}
    return row | {"gpu_num1": 1, "gpu_num2": 1, "speed1": s1, "speed2": s2}


def test_label_thresholds():
    speeds = [0.5, 0.8499, 0.85, 0.9, 0.9499, 0.95, 1.0, 1.2, np.nan]
    np.testing.assert_array_equal(pk.label_from_speed(speeds), [2, 2, 1, 1, 1, 0, 0, 0, -1])


def test_colocation_speed_is_the_mean_over_both_sides(tmp_path):
    single = synthetic_single(2)
    a, b = single.iloc[0].to_dict(), single.iloc[1].to_dict()
    path = tmp_path / "colo.csv"
    pd.DataFrame([pair(a, b, 0.8, 1.0), pair(b, a, 1.0, 0.9), pair(a, a, 0.9, 0.9)]).to_csv(path)
    speeds = pk.colocation_speeds(path).set_index(list(pk.KEY))
    key_a, key_b = tuple(a[k] for k in pk.KEY), tuple(b[k] for k in pk.KEY)
    assert speeds.loc[key_a, "mean_speed"] == pytest.approx((0.8 + 0.9 + 0.9 + 0.9) / 4)
    assert speeds.loc[key_a, "pairs"] == 4
    assert speeds.loc[key_b, "mean_speed"] == pytest.approx(1.0) and speeds.loc[key_b, "pairs"] == 2
    labels = pk.auto_labels(single, pk.colocation_speeds(path))
    assert labels["colocation_label"].tolist()[:2] == [1, 0]
    assert (labels["colocation_label"].iloc[2:] == -1).all()
    agree = pk.agreement(labels)
    assert agree["measured"] == 2 and agree["unmeasured"] == len(single) - 2
    assert agree["confusion"].to_numpy().sum() == 2


@pytest.fixture
def profile_files(tmp_path):
    single = synthetic_single()
    single_path = tmp_path / "single.csv"
    single.to_csv(single_path, index=False)
    extra = dict(model="Only", dataset="Colo", batchsize=32, amp=0)
    colo_path = tmp_path / "colo.csv"
    pd.DataFrame([pair(extra, single.iloc[0].to_dict(), 0.7, 1.0)]).to_csv(colo_path)
    return single, single_path, colo_path


@pytest.mark.parametrize("classifier", ["ebm", "lightgbm"])
def test_share_scores_lookup_then_classifier_then_fallback(profile_files, classifier):
    single, single_path, colo_path = profile_files
    scores = pk.ShareScores.from_files(single_path, colo_path, classifier=classifier)
    for row in single.itertuples():
        assert scores.score(row.model, row.dataset, row.batchsize, row.amp) == row.label
    assert scores.score("Only", "Colo", 32, 0) == 2  # measured in a pair only: speed 0.7
    low = scores.score("New", "X", 32, 0, gpu_util=12.0, gmem_util=6.0, gmem=2360.0)
    high = scores.score("New", "X", 128, 0, gpu_util=95.0, gmem_util=47.0, gmem=4850.0)
    assert low in pk.LABELS and high in pk.LABELS and low < high
    assert scores.score("New", "X", 32, 0) == pk.UNKNOWN_SCORE
    assert scores.score(None, "X", 32, 0, gpu_util=np.nan, gmem_util=1.0, gmem=1.0) == pk.UNKNOWN_SCORE


def test_vectorised_scores_match_score(profile_files):
    single, single_path, _ = profile_files
    scores = pk.ShareScores.from_files(single_path)
    jobs = pd.concat([single, pd.DataFrame([
        dict(model="New", dataset="X", batchsize=64, amp=1, gpu_util=80.0, gmem_util=40.0, gmem=4400.0),
        dict(model="New", dataset="X", batchsize=64, amp=1, gpu_util=None, gmem_util=None, gmem=None),
        dict(model=None, dataset=None, batchsize=None, amp=None, gpu_util=20.0, gmem_util=10.0, gmem=2600.0),
    ])], ignore_index=True)
    table = pa.Table.from_pandas(jobs, preserve_index=False)
    got = scores.scores(table)
    expected = [scores.score(r.model, r.dataset, r.batchsize, r.amp, r.gpu_util, r.gmem_util, r.gmem)
                for r in jobs.itertuples()]
    np.testing.assert_array_equal(got, expected)
    assert got[-2] == pk.UNKNOWN_SCORE


def test_bad_profile_files_name_file_and_column(tmp_path, profile_files):
    single, _, _ = profile_files
    path = tmp_path / "broken.csv"
    single.drop(columns="gmem").to_csv(path, index=False)
    with pytest.raises(TraceError, match=r"broken\.csv.*'gmem'"):
        pk.read_single(path)
    single.assign(label=single["label"].where(single.index != 4, 3)).to_csv(path, index=False)
    with pytest.raises(TraceError, match=r"row 5 .*'label'"):
        pk.read_single(path)
    pd.DataFrame({"model1": ["A"]}).to_csv(path, index=False)
    with pytest.raises(TraceError, match="'dataset1'"):
        pk.colocation_speeds(path)
    with pytest.raises(ValueError, match="model kind"):
        pk.ShareScores.from_files(tmp_path / "x.csv", classifier="tree")


def test_cross_validation_never_sees_the_held_out_model(monkeypatch):
    single = synthetic_single()
    trained_on = []
    original = pk.fit_classifier
    def spy(rows, kind, seed):
        trained_on.append(set(rows["model"]))
        return original(rows, kind, seed)

    monkeypatch.setattr(pk, "fit_classifier", spy)
    pred = pk.cross_validate(single, "lightgbm")
    assert len(trained_on) == single["model"].nunique()
    for held_out, models in zip(sorted(single["model"].unique()), trained_on):
        assert held_out not in models
    assert set(pred) <= set(pk.LABELS)


@pytest.mark.shared
def test_venus_profiles(shared_dir, venus_dir):
    profiles = shared_dir / "profiles"
    single = pk.read_single(profiles / "single_data.csv")
    labels = pk.auto_labels(single, pk.colocation_speeds(profiles / "colocate_info.csv"))
    agree = pk.agreement(labels)
    assert (agree["measured"], agree["agree"], agree["unmeasured"]) == (56, 42, 10)
    scores = pk.ShareScores.from_files(profiles / "single_data.csv", profiles / "colocate_info.csv")
    trace = pd.read_csv(venus_dir / "cluster_full_log.csv", nrows=2000)
    expected = trace.merge(single[[*pk.KEY, "label"]], on=list(pk.KEY), how="left")["label"]
    np.testing.assert_array_equal(scores.scores(trace), expected)
