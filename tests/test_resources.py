"""Driple-style resource profiles: the burst/idle/level rule and the prediction of missing numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from raysim.models import resources as rs


def single_profiles() -> pd.DataFrame:
    """A miniature single_data.csv: two models, two batch sizes, amp 0/1."""
    rows = []
    for m, base in (("Net", 40.0), ("Big", 80.0)):
        for batch in (32, 64):
            for amp in (0, 1):
                util = base + batch / 8 - 10 * amp
                rows.append(dict(model=m, dataset="D", batchsize=batch, amp=amp, speed=batch * 10.0,
                                 gpu_util=util, gmem_util=util / 2, gmem=1000.0 + batch, label=int(util > 60)))
    return pd.DataFrame(rows)


def jobs_table(rows) -> pa.Table:
    cols = ("model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem")
    return pa.Table.from_pandas(pd.DataFrame(rows, columns=cols), preserve_index=False)


def test_burst_properties_and_split_rule():
    b = rs.Burst(0.3, 0.7, 80.0)
    assert b.period == pytest.approx(1.0) and b.duty == pytest.approx(0.3) and b.mean == pytest.approx(24.0)
    split = rs.Burst.from_mean(62.0, period_s=0.5)
    assert split.level == rs.BURST_LEVEL == 100.0
    assert split.duty == pytest.approx(0.62) and split.burst_s == pytest.approx(0.31)
    assert split.mean == pytest.approx(62.0)
    assert rs.Burst.from_mean(130.0).duty == 1.0 and rs.Burst.from_mean(-5.0).mean == 0.0
    with pytest.raises(ValueError, match="burst level"):
        rs.Burst(1.0, 1.0, 120.0)
    with pytest.raises(ValueError, match="positive sum"):
        rs.Burst(0.0, 0.0, 50.0)


def test_job_profiles_from_trace_columns_and_period():
    table = jobs_table([("Net", "D", 64, 0, 320.0, 48.0, 20.0, 3000.0)])
    prof = rs.job_profiles(table).iloc[0]
    assert prof["source"] == "trace"
    assert prof["gpu_level"] == 100.0 and prof["gpu_duty"] == pytest.approx(0.48)
    assert prof["gpu_mean"] == pytest.approx(48.0) and prof["membw_mean"] == pytest.approx(20.0)
    assert prof["period_s"] == pytest.approx(64 / 320.0)
    assert prof["gpu_burst_s"] + prof["gpu_idle_s"] == pytest.approx(prof["period_s"])
    assert prof["memory_mb"] == 3000.0


def test_missing_numbers_are_predicted_from_the_finest_known_level(tmp_path):
    single = tmp_path / "single.csv"
    single_profiles().to_csv(single, index=False)
    table = jobs_table([
        ("Net", "D", 64, 0, 640.0, 99.0, 50.0, 5000.0),   # complete: kept as is
        ("Net", "D", 64, 0, None, None, None, None),      # same configuration in the trace
        ("Big", "D", 32, 1, None, None, None, None),      # configuration in single_data
        ("Big", "E", 32, 0, None, None, None, None),      # model + batch size
        ("Big", "E", 128, 0, None, None, None, None),     # model only
        ("New", "X", 16, 0, None, None, None, None),      # nothing known: all references
        (None, None, None, None, None, None, None, None),  # no workload columns at all
    ])
    prof = rs.job_profiles(table, single)
    assert prof["source"].tolist() == ["trace", "configuration", "configuration", "model+batchsize", "model",
                                       "global", "global"]
    assert prof["gpu_mean"].iloc[1] == pytest.approx(99.0)        # the trace's own row wins
    assert prof["gpu_mean"].iloc[2] == pytest.approx(80 + 4 - 10)  # single_data's Big/32/amp1
    assert prof["gpu_mean"].iloc[3] == pytest.approx(np.median([84.0, 74.0]))
    assert prof["period_s"].iloc[6] > 0 and prof["gpu_duty"].between(0, 1).all()


def test_no_reference_is_a_clear_error():
    table = jobs_table([("Net", "D", 64, 0, None, None, None, None)])
    with pytest.raises(ValueError, match="policy.profiles.single"):
        rs.job_profiles(table)


def test_key_profiles_take_the_trace_median_then_single_data(tmp_path):
    single = tmp_path / "single.csv"
    single_profiles().to_csv(single, index=False)
    table = jobs_table([("Net", "D", 32, 0, 320.0, 30.0, 10.0, 2000.0), ("Net", "D", 32, 0, 320.0, 50.0, 10.0, 2000.0)])
    keys = [("Net", "D", 32, 0), ("Big", "D", 64, 1)]
    prof = rs.key_profiles(keys, table, single)
    assert set(prof) == set(keys)
    assert prof[keys[0]].mean("gpu") == pytest.approx(40.0) and prof[keys[0]].source == "trace"
    assert prof[keys[1]].mean("gpu") == pytest.approx(80 + 8 - 10) and prof[keys[1]].source == "configuration"
    assert prof[keys[1]].bursts["gpu"].period == pytest.approx(64 / 640.0)
    assert prof[keys[1]].memory_mb == pytest.approx(1064.0) and prof[keys[1]].mean("network_tx") == 0.0


@pytest.mark.shared
def test_venus_profiles_come_from_the_trace(venus_dir, shared_dir):
    table = pd.read_csv(venus_dir / "cluster_full_log.csv", nrows=2000)
    prof = rs.job_profiles(table, shared_dir / "profiles" / "single_data.csv")
    assert (prof["source"] == "trace").all()
    np.testing.assert_allclose(prof["gpu_mean"], table["gpu_util"].clip(0, 100))
    assert (prof["period_s"] > 0).all()
