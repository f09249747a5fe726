"""Duration estimator: floor, unseen categories, fallbacks, and weekly retraining without leakage."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from raysim.models import duration as dur
from raysim.errors import TraceError

ORIGIN = "2020-09-01T00:00:00"


def synthetic_jobs(n: int = 600, days: int = 21, seed: int = 0) -> pd.DataFrame:
    """Jobs whose log-duration depends on the user and gpu_util, with a heavy tail."""
    rng = np.random.default_rng(seed)
    users = np.array([f"u{i}" for i in range(8)])
    user = rng.integers(0, len(users), n)
    gpu_util = rng.uniform(5, 100, n)
    log_d = 4 + 0.5 * user + gpu_util / 25 + rng.normal(0, 1.5, n)
    return pd.DataFrame({
        "job_id": np.arange(n), "user": users[user], "vc": np.where(user < 4, "vcA", "vcB"),
        "gpu_num": rng.choice([1, 2, 8], n), "cpu_num": rng.choice([4, 8, 16], n),
        "submit_time": np.sort(rng.integers(0, days * 86400, n)),
        "duration": np.maximum(1, np.exp(log_d)).astype(np.int64), "state": "COMPLETED",
        "amp": rng.integers(0, 2, n), "gpu_util": gpu_util, "gmem_util": rng.uniform(0, 80, n),
        "gmem": rng.uniform(2000, 20000, n),
    })


@pytest.mark.parametrize("kind", ["ebm", "lightgbm"])
@pytest.mark.parametrize("target", ["log", "raw"])
def test_predictions_are_never_negative_and_handle_unseen_categories(kind, target):
    jobs = synthetic_jobs()
    model = dur.DurationModel(kind, seed=0, target=target).fit(jobs, ORIGIN)
    assert model.fallback == "model"
    new = jobs.head(5).copy()
    new["user"] = ["stranger", None, "u1", "u2", "u3"]
    new["vc"] = ["vcZ", "vcA", None, "vcB", "vcA"]
    new.loc[3, ["gpu_util", "gmem"]] = np.nan
    pred = model.predict(pa.Table.from_pandas(new))
    assert pred.shape == (5,) and np.isfinite(pred).all() and (pred >= dur.FLOOR_S).all()
    assert (model.predict(jobs) >= 0).all()


def test_raw_target_clips_negative_predictions_to_the_floor():
    jobs = synthetic_jobs()
    jobs["duration"] = np.where(jobs["gpu_util"] > 90, 10**6, 1)  # a few huge ones pull a linear-ish fit below 0
    pred = dur.DurationModel("lightgbm", target="raw").fit(jobs, ORIGIN).predict(jobs)
    assert pred.min() == dur.FLOOR_S == 0.0


def test_an_ebm_fit_leaves_interpret_info_lines_out_of_the_log(caplog):
    """interpret logs every step of its native library at INFO (19 lines a Lucid run); a run's log,
    at INFO, keeps raysim's lines and interpret's warnings only."""
    caplog.set_level(logging.INFO)
    dur.DurationModel("ebm", seed=0).fit(synthetic_jobs(n=300), ORIGIN)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("interpret")] == []
    assert logging.getLogger("interpret").getEffectiveLevel() == logging.WARNING


def test_deterministic_for_a_seed():
    jobs = synthetic_jobs(n=300)
    a = dur.DurationModel("ebm", seed=3).fit(jobs, ORIGIN).predict(jobs)
    b = dur.DurationModel("ebm", seed=3).fit(jobs, ORIGIN).predict(jobs)
    np.testing.assert_array_equal(a, b)


def test_empty_and_tiny_training_sets_fall_back():
    jobs = synthetic_jobs(n=100)
    empty = dur.DurationModel().fit(jobs.head(0), ORIGIN)
    assert empty.fallback == "constant"
    np.testing.assert_array_equal(empty.predict(jobs.head(3)), [dur.DEFAULT_ESTIMATE_S] * 3)
    tiny = dur.DurationModel().fit(jobs.head(7), ORIGIN)
    assert tiny.fallback == "median"
    np.testing.assert_array_equal(tiny.predict(jobs), np.median(jobs["duration"].head(7)))
    assert tiny.predict(jobs.head(0)).shape == (0,)


def test_errors_name_the_column():
    jobs = synthetic_jobs(n=60)
    with pytest.raises(TraceError, match="'duration'"):
        dur.DurationModel().fit(jobs.drop(columns="duration"), ORIGIN)
    with pytest.raises(TraceError, match="'gpu_num'"):
        dur.DurationModel().fit(jobs.assign(gpu_num="many"), ORIGIN)
    with pytest.raises(RuntimeError, match="not fitted"):
        dur.DurationModel().predict(jobs)
    with pytest.raises(ValueError, match="origin"):
        dur.DurationModel().fit(jobs, "not a date")


def leaky_trace() -> tuple[pd.DataFrame, np.ndarray]:
    """Identical-looking jobs over three weeks: short ones (100 s) throughout, and 60 submitted at
    t=0 that run 2 x 10^6 s (they complete after the third week). A model that saw the long jobs
    before they complete would predict far above 100 s for weeks 1 and 2."""
    n_short, n_long = 500, 60
    submit = np.r_[np.linspace(3600, 20 * 86400, n_short).astype(np.int64), np.zeros(n_long, np.int64)]
    duration = np.r_[np.full(n_short, 100), np.full(n_long, 2 * 10**6)]
    jobs = pd.DataFrame({"job_id": np.arange(len(submit)), "user": "u", "vc": "vc", "gpu_num": 1,
                         "cpu_num": 4, "submit_time": submit, "duration": duration,
                         "gpu_util": 50.0, "gmem_util": 20.0, "gmem": 4000.0, "amp": 0})
    return jobs, (submit + duration).astype(np.float64)


@pytest.mark.parametrize("kind", ["lightgbm", "ebm"])
def test_weekly_estimates_never_train_on_jobs_completing_later(kind, monkeypatch):
    jobs, ends = leaky_trace()
    seen = []
    original = dur.DurationModel.fit

    def spy(self, train, origin):
        seen.append(train["job_id"].to_numpy())
        return original(self, train, origin)

    monkeypatch.setattr(dur.DurationModel, "fit", spy)
    est = dur.weekly_estimates(jobs, ends, ORIGIN, kind=kind, target="raw")
    week = jobs["submit_time"].to_numpy() // dur.WEEK_S
    assert len(seen) == 3
    for k, ids in enumerate(seen):
        assert (ends[ids] < k * dur.WEEK_S).all()
    assert (est[week == 0] == dur.DEFAULT_ESTIMATE_S).all()  # nothing completed before day 0
    assert np.abs(est[(week >= 1) & (jobs["duration"] == 100)] - 100).max() < 1  # long jobs unseen


def test_weekly_estimates_with_a_mask_callable_still_excludes_future_submissions(monkeypatch):
    jobs, _ = leaky_trace()
    seen = []
    original = dur.DurationModel.fit
    def spy(self, train, origin):
        seen.append(train["submit_time"].max())
        return original(self, train, origin)

    monkeypatch.setattr(dur.DurationModel, "fit", spy)
    dur.weekly_estimates(jobs, lambda w: np.ones(len(jobs), dtype=bool), ORIGIN, kind="lightgbm")
    for k, latest in enumerate(seen[1:], start=1):
        assert latest < k * dur.WEEK_S
    with pytest.raises(ValueError, match="mask"):
        dur.weekly_estimates(jobs, lambda w: np.ones(3, dtype=bool), ORIGIN)
    with pytest.raises(ValueError, match="completion times"):
        dur.weekly_estimates(jobs, np.zeros(3), ORIGIN)


def test_weekly_estimates_align_with_rows_and_accept_arrow():
    jobs = synthetic_jobs(n=400, days=15)
    table = pa.Table.from_pandas(jobs, preserve_index=False)
    est = dur.weekly_estimates(table, (jobs["submit_time"] + jobs["duration"]).to_numpy(), ORIGIN,
                               kind="lightgbm", period_s=3 * 86400)
    assert est.shape == (len(jobs),) and np.isfinite(est).all() and (est >= 0).all()
    assert dur.weekly_estimates(table.slice(0, 0), np.zeros(0), ORIGIN).shape == (0,)
