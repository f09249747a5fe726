"""Config composition, the `python -m raysim` entry point, and running from an installed wheel."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR

REPO = Path(__file__).resolve().parent.parent


def composed(*overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def test_venus_experiment_defaults_to_the_shipped_trace():
    cfg = composed("+experiment=venus")
    assert Path(cfg.trace.path) == REPO / "traces" / "venus_synth"
    assert (cfg.policy.name, cfg.placer.name, cfg.runtime.name, cfg.sim.compat) == (
        "fifo", "consolidate", "ray", "clean")


@pytest.mark.parametrize("override,key,value", [
    ("policy=tiresias", "policy.name", "tiresias"),
    ("placer=first_fit", "placer.name", "first_fit"),
    ("placer=random", "placer.name", "random"),
    ("sim.compat=lucid", "sim.compat", "lucid"),
    ("trace.path=/data/venus", "trace.path", "/data/venus"),
])
def test_overrides(override, key, value):
    cfg = composed("+experiment=venus", override)
    node = cfg
    for part in key.split("."):
        node = node[part]
    assert node == value


def test_typo_in_override_is_an_error():
    with pytest.raises(ConfigCompositionException):
        composed("+experiment=venus", "sim.compatt=lucid")


def run_module(args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "raysim", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_python_m_raysim_writes_results(tmp_path):
    """(The main suite runs `python -m raysim +experiment=venus` on the whole week in test_readme's
    quick start, with its summary of 15 VCs and its page; test_results_schema checks the columns of
    its jobs.parquet, and test_bad_input the console and exit status of raysim.cli.main.)"""
    out = tmp_path / "run"
    res = run_module(["+experiment=venus", "policy=srtf", "runtime=local", f"hydra.run.dir={out}"], cwd=REPO)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "avg JCT" in res.stdout
    jobs = pq.read_table(out / "jobs.parquet")
    assert jobs.num_rows == pq.read_table(REPO / "traces" / "venus_synth" / "jobs.parquet").num_rows
    for col in ("job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time", "queue", "jct", "preemptions"):
        assert col in jobs.column_names
    summary = pd.read_csv(out / "summary.csv")
    assert summary.vc.iloc[-1] == "all" and len(summary) == 16
    assert (out / "summary.md").exists() and (out / "timeseries.parquet").exists()
    assert json.loads((out / "trace_report.json").read_text())["jobs"] == jobs.num_rows


@pytest.mark.slow
def test_bad_trace_path_gives_a_clear_error(tmp_path):
    """(The main suite checks this error, and the line, in tests/test_bad_input.py's trace_path_missing.)"""
    res = run_module(["+experiment=venus", "runtime=local", f"trace.path={tmp_path}/nope",
                      f"hydra.run.dir={tmp_path}/r"], cwd=REPO)
    assert res.returncode != 0
    assert "trace file not found" in res.stderr


@pytest.mark.slow
def test_qssf_without_estimates_explains_what_to_set(tmp_path):
    """(The main suite checks this error, and the line, in tests/test_bad_input.py's config_policy=qssf.)"""
    res = run_module(["+experiment=venus", "runtime=local", "policy=qssf", f"hydra.run.dir={tmp_path}/r"], cwd=REPO)
    assert res.returncode != 0
    assert "estimator.source=file" in res.stderr


@pytest.mark.slow
def test_runs_from_an_installed_wheel(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheel_dir), str(REPO)], check=True, timeout=300)
    site = tmp_path / "site"
    wheel = next(wheel_dir.glob("raysim-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, timeout=300)
    assert (site / "raysim" / "conf" / "config.yaml").exists()
    env = {**os.environ, "PYTHONPATH": str(site)}
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    res = run_module(["+experiment=venus", "runtime=local", f"hydra.run.dir={tmp_path}/run"], cwd=elsewhere, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert str(site) in res.stdout or (tmp_path / "run" / "jobs.parquet").exists()
