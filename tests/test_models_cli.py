"""`raysim models` command line: train commands and the report, on synthetic files (and Venus, slow)."""

from __future__ import annotations

import pandas as pd
import pytest
from test_models_duration import synthetic_jobs
from test_models_packing import pair, synthetic_single
from test_models_throughput import synthetic_series, write_series

from raysim.models import cli


def write_shared(root):
    """A miniature ../shared: throughput series, a Lucid-format trace, profiles."""
    venus = root / "traces" / "venus_sept"
    venus.mkdir(parents=True)
    write_series(synthetic_series(days=11, start="2020-08-23"), venus / "cluster_throughput.csv")
    jobs = synthetic_jobs(n=500)
    submit = pd.Timestamp("2020-09-01") + pd.to_timedelta(jobs["submit_time"], unit="s")
    jobs["submit_time"] = submit.dt.strftime("%Y-%m-%d %H:%M:%S")
    single = synthetic_single(n_models=6)
    profile = single.sample(len(jobs), replace=True, random_state=0).reset_index(drop=True)
    for col in ("model", "dataset", "batchsize", "speed"):
        jobs[col] = profile[col]
    jobs["jobname"] = ""
    jobs.to_csv(venus / "cluster_full_log.csv", index=False)
    pd.DataFrame({"": ["vcA", "vcB"], "num": [2, 2]}).to_csv(venus / "vc_config.csv", index=False)
    profiles = root / "profiles"
    profiles.mkdir()
    single.to_csv(profiles / "single_data.csv", index=False)
    rows = [pair(a, b, 0.7 + 0.02 * i, 1.0) for i, (a, b) in
            enumerate(zip(single.to_dict("records")[:-1], single.to_dict("records")[1:]))]
    pd.DataFrame(rows).to_csv(profiles / "colocate_info.csv")
    return root


def test_train_throughput_writes_lucid_forecast_format(tmp_path, capsys):
    data = tmp_path / "tp.csv"
    write_series(synthetic_series(), data)
    out = tmp_path / "out" / "forecast.csv"
    assert cli.main(["train", "throughput", "--data", str(data), "--out", str(out), "--kind", "lightgbm"]) == 0
    forecast = pd.read_csv(out)
    assert list(forecast.columns) == ["time", "submit_gpu_job", "submit_gpu_num", "pred_gpu_job", "pred_gpu_num"]
    assert forecast["time"].iloc[0] == "2020-09-01 00:00:00"
    assert "MAE" in capsys.readouterr().out


def test_train_duration_and_packing(tmp_path):
    shared = write_shared(tmp_path / "shared")
    out = tmp_path / "estimates.csv"
    args = ["train", "duration", "--trace", str(shared / "traces" / "venus_sept"), "--out", str(out),
            "--kind", "lightgbm"]
    assert cli.main(args) == 0
    est = pd.read_csv(out)
    assert list(est.columns) == ["job_id", "priority"] and len(est) == 500 and (est["priority"] >= 0).all()
    labels = tmp_path / "labels.csv"
    assert cli.main(["train", "packing", "--single", str(shared / "profiles" / "single_data.csv"),
                     "--colocation", str(shared / "profiles" / "colocate_info.csv"), "--out", str(labels),
                     "--classifier", "lightgbm"]) == 0
    table = pd.read_csv(labels)
    assert {"label", "colocation_label", "mean_speed", "cv_prediction"} <= set(table.columns)


def test_bad_input_is_a_clean_error(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"time": ["2020-09-01 00:00:00"]}).to_csv(bad, index=False)
    assert cli.main(["train", "throughput", "--data", str(bad), "--out", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err
    assert "bad.csv" in err and "'submit_gpu_job'" in err


@pytest.mark.slow  # 26 s: trains on the shared trace; the other models CLI tests stay fast
def test_report_on_synthetic_shared(tmp_path, capsys):
    shared = write_shared(tmp_path / "shared")
    out = tmp_path / "report"
    assert cli.main(["report", "--shared", str(shared), "--out", str(out)]) == 0
    table = pd.read_csv(out / "models_report.csv")
    assert set(table["section"]) == {"throughput", "duration", "packing"}
    assert {"ebm", "lightgbm"} <= set(table["kind"])
    text = (out / "models_report.md").read_text()
    for name in ("throughput_njob_shapes.png", "duration_importance.png", "packing_shapes.png"):
        assert (out / name).stat().st_size > 0 and name in text
    assert "MAE" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.shared
def test_report_on_venus(shared_dir, tmp_path):
    out = tmp_path / "report"
    assert cli.main(["report", "--shared", str(shared_dir), "--out", str(out)]) == 0
    table = pd.read_csv(out / "models_report.csv")
    tput = table[table["section"] == "throughput"].set_index(["target", "kind"])["value"]
    for target in ("submit_gpu_job", "submit_gpu_num"):
        assert tput[(target, "ebm")] <= 1.10 * tput[(target, "lightgbm")]
