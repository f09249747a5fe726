"""The seeded synthetic trace generator (raysim.trace.synth) and the trace shipped with raysim."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raysim.paths import TRACES_DIR
from raysim.trace.schema import JOB_SCHEMA, REQUIRED, conform, metadata
from raysim.trace.presets import DAY, VENUS, expected_stats
from raysim.trace.synth import generate, main, offered_load, write_trace

POOL_SEEDS = (11, 12, 13, 14)  # statistics are pooled over these 28-day traces
POOL_DAYS = 28


def _frame(table: pa.Table) -> pd.DataFrame:
    df = table.to_pandas()
    for col in ("vc", "user", "state", "model"):
        df[col] = df[col].astype(str)
    return df


@pytest.fixture(scope="module")
def week():
    return generate(VENUS, days=7, seed=0)


@pytest.fixture(scope="module")
def pool():
    """Several 28-day traces: one DataFrame (column `seed` tells them apart) plus per-trace loads."""
    frames, loads = [], []
    for seed in POOL_SEEDS:
        table, nodes = generate(VENUS, days=POOL_DAYS, seed=seed)
        frames.append(_frame(table).assign(seed=seed))
        loads.append(offered_load(table, nodes, POOL_DAYS))
    return pd.concat(frames, ignore_index=True), loads


def _size_mix(df: pd.DataFrame) -> pd.Series:
    """Share of jobs per GPU-count class (gpu_num rounded to the nearest power of two)."""
    cls = 2 ** np.clip(np.rint(np.log2(df.gpu_num)), 0, 7).astype(int)
    return cls.value_counts(normalize=True).reindex(VENUS.size_classes, fill_value=0.0)


def _hourly(submit_seconds: pd.Series) -> np.ndarray:
    h = (submit_seconds // 3600 % 24).value_counts().reindex(range(24), fill_value=0).to_numpy()
    return h / h.mean()


def _peak_trough(profile) -> float:
    """Mean of the 4 busiest hours over mean of the 4 quietest."""
    p = np.sort(np.asarray(profile, dtype=float))
    return p[-4:].mean() / p[:4].mean()


# --- determinism -------------------------------------------------------------------------------


def test_same_seed_same_table_different_seed_different(week):
    table, nodes = week
    again, nodes_again = generate(VENUS, days=7, seed=0)
    assert table.equals(again) and table.schema.metadata == again.schema.metadata
    assert nodes == nodes_again
    other, _ = generate(VENUS, days=7, seed=1)
    assert not table.equals(other)


def test_written_files_are_byte_identical(tmp_path, week):
    table, nodes = week
    write_trace(tmp_path / "a", table, nodes)
    write_trace(tmp_path / "b", *generate(VENUS, days=7.0, seed=0))
    for name in ("jobs.parquet", "vc_config.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


# --- contract ----------------------------------------------------------------------------------


def test_table_follows_the_trace_contract(week):
    table, nodes = week
    assert table.schema.equals(JOB_SCHEMA) and conform(table).equals(table)
    assert all(table.column(c).null_count == 0 for c in JOB_SCHEMA.names)
    meta = metadata(table)
    assert meta["cluster"] == "venus_synth" and meta["origin"] == "2020-09-01T00:00:00"
    assert meta["seed"] == 0 and meta["days"] == 7.0

    df = _frame(table)
    assert 6000 <= len(df) <= 7000
    assert df.job_id.is_unique
    assert (np.diff(df.submit_time.to_numpy()) >= 0).all()
    assert df.submit_time.min() >= 0 and df.submit_time.max() < 7 * DAY
    assert (df.duration >= 1).all() and df.duration.max() <= VENUS.max_duration
    assert (df.gpu_num >= 1).all() and (df.cpu_num >= 1).all()
    caps = df.vc.map({vc: n * VENUS.gpus_per_node for vc, n in nodes.items()})
    assert caps.notna().all() and (df.gpu_num <= caps).all()
    multi = df.gpu_num > VENUS.gpus_per_node  # multi-node jobs take whole nodes
    assert (df.gpu_num[multi] % VENUS.gpus_per_node == 0).all()
    assert set(df.state) <= set(VENUS.states)


def test_vc_config_matches_lucid_format(tmp_path, week):
    table, nodes = week
    write_trace(tmp_path, table, nodes)
    lines = (tmp_path / "vc_config.csv").read_text().splitlines()
    assert lines[0] == ",num"
    assert lines[1:] == [f"{vc.name},{vc.nodes}" for vc in VENUS.vcs]
    assert sum(nodes.values()) == 135 and len(nodes) == 15
    back = pd.read_csv(tmp_path / "vc_config.csv", index_col=0)["num"].to_dict()
    assert back == nodes
    assert pq.read_table(tmp_path / "jobs.parquet").equals(table)


def test_shipped_trace_is_what_the_generator_makes():
    folder = TRACES_DIR / "venus_synth"
    shipped = pq.read_table(folder / "jobs.parquet")
    table, nodes = generate(VENUS, days=7, seed=0)
    assert shipped.equals(table), "traces/venus_synth is stale: regenerate it (traces/README.md)"
    assert metadata(shipped) == metadata(table)
    assert pd.read_csv(folder / "vc_config.csv", index_col=0)["num"].to_dict() == nodes
    assert (folder / "jobs.parquet").stat().st_size < 500_000


def test_cli_writes_a_trace(tmp_path, capsys):
    assert main(["--preset", "venus", "--days", "0.5", "--seed", "3", "--out", str(tmp_path)]) == 0
    assert "jobs" in capsys.readouterr().out
    table = pq.read_table(tmp_path / "jobs.parquet")
    assert table.equals(generate(VENUS, days=0.5, seed=3)[0])


def test_origin_sets_the_calendar():
    # the daily profile follows wall-clock time: shifting the origin by 12 h shifts the peak
    a, _ = generate(VENUS, days=14, seed=5)
    b, _ = generate(VENUS, days=14, seed=5, origin="2020-09-01T12:00:00")
    ha = _hourly(pd.Series(a.column("submit_time").to_numpy()))
    hb = _hourly(pd.Series(b.column("submit_time").to_numpy() + 12 * 3600))
    assert np.corrcoef(ha, np.asarray(VENUS.hourly))[0, 1] > 0.8
    assert np.corrcoef(hb, np.asarray(VENUS.hourly))[0, 1] > 0.8
    assert metadata(b)["origin"] == "2020-09-01T12:00:00"


def test_bad_preset_is_rejected():
    with pytest.raises(ValueError, match="hourly"):
        dataclasses.replace(VENUS, hourly=VENUS.hourly[:23])
    with pytest.raises(ValueError, match="days"):
        generate(VENUS, days=0, seed=0)


def test_generation_is_vectorised():
    start = time.perf_counter()
    table, _ = generate(VENUS, days=200, seed=2)  # ~180k jobs
    assert table.num_rows > 150_000
    assert time.perf_counter() - start < 10


# --- statistics against the preset -------------------------------------------------------------


def test_statistics_match_the_preset(pool):
    df, loads = pool
    exp = expected_stats(VENUS)
    n_traces = len(POOL_SEEDS)

    # arrivals: the target count (a few jobs of the last batches fall past the end)
    per_day = len(df) / (n_traces * POOL_DAYS)
    assert per_day == pytest.approx(VENUS.jobs_per_day, rel=0.02)

    # GPU-count mix and per-VC job share
    mix = _size_mix(df)
    for size, share in exp["size_mix"].items():
        assert abs(mix[size] - share) < 0.04, (size, mix[size], share)
    vc_share = df.vc.value_counts(normalize=True)
    for vc, share in exp["vc_share"].items():
        assert abs(vc_share.get(vc, 0.0) - share) < 0.02, (vc, vc_share.get(vc), share)

    # durations: median (calibration leaves the lower half alone), mean, per-VC medians
    assert df.duration.median() == pytest.approx(exp["duration_median"], rel=0.15)
    assert 6_000 < df.duration.mean() < 24_000
    counts = df.vc.value_counts()
    for vc, median in exp["vc_median_duration"].items():
        if counts.get(vc, 0) >= 1000:
            assert df.duration[df.vc == vc].median() == pytest.approx(median, rel=0.35), vc

    # offered load per VC is calibrated exactly wherever a VC has enough jobs
    for seed, load in zip(POOL_SEEDS, loads):
        n_vc = df[df.seed == seed].vc.value_counts()
        for vc, target in exp["vc_load"].items():
            if n_vc.get(vc, 0) >= 100:
                assert load[vc] == pytest.approx(target, abs=0.01), (seed, vc)

    # diurnal profile: shape and peak/trough ratio
    hourly = _hourly(df.submit_time)
    assert np.corrcoef(hourly, VENUS.hourly)[0, 1] > 0.9
    assert _peak_trough(hourly) == pytest.approx(_peak_trough(VENUS.hourly), rel=0.2)
    weekday = (pd.Timestamp("2020-09-01") + pd.to_timedelta(df.submit_time, unit="s")).dt.day_of_week
    wk = weekday.value_counts().reindex(range(7)).to_numpy()
    assert np.corrcoef(wk, VENUS.weekday)[0, 1] > 0.8

    # per-user repetition: users mostly resubmit the same size and the same model
    by_user = df.groupby(["seed", "user"])
    size_rep = by_user.gpu_num.agg(lambda s: s.value_counts().iloc[0]).sum() / len(df)
    model_rep = by_user.model.agg(lambda s: s.value_counts().iloc[0]).sum() / len(df)
    assert size_rep > 0.6 and model_rep > 0.6


# --- statistics against the real Venus trace ---------------------------------------------------


@pytest.mark.shared
def test_statistics_resemble_the_real_venus_trace(venus_dir, pool):
    real = pd.read_csv(venus_dir / "cluster_full_log.csv", parse_dates=["submit_time"])
    real["submit_time"] = (real.submit_time - pd.Timestamp("2020-09-01")).dt.total_seconds()
    real_days = 26
    nodes = pd.read_csv(venus_dir / "vc_config.csv", index_col=0)["num"].to_dict()
    assert nodes == VENUS.vc_nodes
    df, loads = pool
    n_traces = len(POOL_SEEDS)

    assert len(df) / (n_traces * POOL_DAYS) == pytest.approx(len(real) / real_days, rel=0.03)
    assert (_size_mix(df) - _size_mix(real)).abs().max() < 0.04
    share = df.vc.value_counts(normalize=True)
    real_share = real.vc.value_counts(normalize=True)
    assert (share - real_share).abs().max() < 0.02
    assert df.duration.median() == pytest.approx(real.duration.median(), rel=0.2)
    assert df.duration.mean() == pytest.approx(real.duration.mean(), rel=0.3)
    for q in (0.25, 0.75, 0.9):
        assert df.duration.quantile(q) == pytest.approx(real.duration.quantile(q), rel=0.35), q
    states = df.state.value_counts(normalize=True)
    real_states = real.state.value_counts(normalize=True)
    for state in VENUS.states:
        assert states[state] == pytest.approx(real_states[state], abs=0.03), state

    # per-VC load: the real load (capped at 0.95) times the preset's open-loop load factor
    work = (real.gpu_num * real.duration).groupby(real.vc).sum()
    real_load = {vc: work[vc] / (n * 8 * real_days * DAY) for vc, n in nodes.items()}
    for seed, load in zip(POOL_SEEDS, loads):
        n_vc = df[df.seed == seed].vc.value_counts()
        for vc, value in real_load.items():
            if n_vc.get(vc, 0) >= 100:
                assert load[vc] == pytest.approx(VENUS.load_factor * min(value, 0.95), abs=0.02), vc

    hourly, real_hourly = _hourly(df.submit_time), _hourly(real.submit_time)
    assert np.corrcoef(hourly, real_hourly)[0, 1] > 0.9
    assert _peak_trough(hourly) == pytest.approx(_peak_trough(real_hourly), rel=0.25)
    real_users = real.groupby("vc").user.nunique()
    for vc in VENUS.vcs:
        assert vc.users == real_users[vc.name]


def test_required_columns_are_all_generated(week):
    table, _ = week
    assert set(REQUIRED) <= set(table.column_names)
    assert table.column("model").null_count == 0 and table.column("gmem").null_count == 0
