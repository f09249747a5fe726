"""The `raysim` command line as a real process: help, one-line errors, Ctrl-C, printed results."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from simutil import NO_PAGES

REPO = Path(__file__).resolve().parent.parent
JOBS = """job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state
1,vcA,u1,1,4,0,100,COMPLETED
2,vcA,u2,2,4,10,200,COMPLETED
3,vcB,u1,8,4,20,50,FAILED
"""


@pytest.fixture
def tiny_trace(tmp_path) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,2\n")
    return tmp_path / "jobs.csv"


def raysim(*args, cwd=REPO, env=None, timeout=300):
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k != "HYDRA_FULL_ERROR" or (env or {}).get(k)}
    return subprocess.run([sys.executable, "-m", "raysim", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml")))
def test_shipped_experiments_pass_the_config_checks(experiment, tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path))  # data:NAME inputs are resolved by the run, not here
    from raysim import cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"+experiment={experiment}"])
    if cfg.mode == "cluster":
        check_cluster_config(cfg)


def test_a_dataset_not_cached_is_one_line_naming_what_to_run(tmp_path):
    env = {"RAYSIM_DATA": str(tmp_path / "none"), "RAYSIM_DATA_MIRROR": ""}
    out = raysim("+experiment=openb", "runtime=local", f"hydra.run.dir={tmp_path / 'run'}", env=env)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "raysim: error: trace.path: dataset 'openb' is not cached: run `raysim data fetch openb` (12.8 MB, licence: ")
    assert not (tmp_path / "none").exists()  # nothing created by looking


def test_every_policy_passes_the_config_checks():
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401
    from raysim.paths import CONF_DIR
    from raysim.policy import POLICIES
    from raysim.run.config import check_cluster_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        for policy in POLICIES:  # (harvesting needs its harvest: section: its own experiment)
            experiment = "harvest_summit" if policy == "bftrainer" else "venus"
            check_cluster_config(compose(config_name="config", overrides=[f"+experiment={experiment}",
                                                                          f"policy={policy}"]))


def test_help_lists_the_tools_and_hydras_help():
    res = raysim("--help")
    assert res.returncode == 0, res.stderr
    for tool in ("raysim trace", "raysim models", "raysim report", "--verbose"):
        assert tool in res.stdout
    assert "== Configuration groups ==" in res.stdout and "policy: bftrainer, fifo" in res.stdout
    # the plug-ins with their one-line docs and declared settings (raysim.plugins)
    assert "plug-ins (" in res.stdout and "policy.overhead_s (int, >= 0; default 40)" in res.stdout


def test_a_bad_value_is_one_line_and_exit_status_2(tiny_trace, tmp_path):
    res = raysim("runtime=local", f"trace.path={tiny_trace}", "seed=abc", f"hydra.run.dir={tmp_path / 'run'}")
    assert res.returncode == 2
    assert res.stderr == "raysim: error: seed: must be an integer (value 'abc')\n"


def test_a_run_whose_jobs_cannot_finish_ends_in_one_line_and_exit_status_2(tiny_trace, tmp_path):
    # (the issue's `+experiment=venus failures=exponential failures.node_mtbf_h=0.01`, small: a node fails
    # every 36 s and takes 4 hours to repair, so no job of an hour runs to its end)
    (tmp_path / "jobs.csv").write_text(JOBS.replace(",100,", ",3600,").replace(",200,", ",3600,"))
    res = raysim("runtime=local", f"trace.path={tmp_path / 'jobs.csv'}", "failures=exponential",
                 "failures.node_mtbf_h=0.01", "sim.stall_s=86400", f"hydra.run.dir={tmp_path / 'run'}")
    errors = [line for line in res.stderr.splitlines() if line.startswith("raysim: error:")]
    assert res.returncode == 2 and len(errors) == 1 and "Traceback" not in res.stderr
    assert errors[0].startswith("raysim: error: the run stopped at t=86401: VC vcA has 2 unfinished job(s) (0 running)"
                                " and none of its jobs finished or kept more work for 1.0 days of simulated time, "
                                "since t=0; jobs.parquet and timeseries.parquet hold the run up to there")
    assert errors[0].endswith("raise sim.stall_s (now 86,400 s) or set it to off")
    assert pq.read_table(tmp_path / "run" / "jobs.parquet").column("finished").to_pylist() == [False, False, True]


def test_hydra_full_error_shows_the_traceback(tiny_trace, tmp_path):
    res = raysim("runtime=local", f"trace.path={tiny_trace}", "seed=abc", f"hydra.run.dir={tmp_path / 'run'}",
                 env={"HYDRA_FULL_ERROR": "1"})
    assert res.returncode == 2
    assert "Traceback" in res.stderr and res.stderr.endswith("(value 'abc')\n")


def test_ctrl_c_is_one_line_saying_where_the_checkpoint_is(tmp_path):
    """SIGINT to the process group, as a terminal's Ctrl-C, in the middle of a run."""
    ckpt = tmp_path / "ckpt"
    proc = subprocess.Popen([sys.executable, "-m", "raysim", "+experiment=venus", "runtime=local",
                             "runtime.window_s=3600", f"runtime.checkpoint_dir={ckpt}",
                             f"hydra.run.dir={tmp_path / 'run'}"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not any(int(m.group(1)) >= 1 for ln in lines if (m := re.search(r"\| windows (\d+) \|", ln))) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, err
    assert err.strip().splitlines() == [
        f"raysim: interrupted; checkpoint in {ckpt} (continue with runtime.resume=true)"]
    assert (ckpt / "checkpoint.pkl").exists()


def test_a_reader_that_leaves_ends_only_the_console_output(tiny_trace, tmp_path):
    """`raysim ... | head`: stdout's reader is gone before the first line; the run still writes every
    result (the page last), with no logging traceback, and ends as the run did."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout fails with EPIPE from the first on
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.run([sys.executable, "-m", "raysim", "runtime=local", f"trace.path={tiny_trace}",
                           f"hydra.run.dir={run_dir}"], cwd=REPO, env=env, stdout=write_end, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    os.close(write_end)
    assert proc.returncode == 0 and proc.stderr == ""
    for name in ("jobs.parquet", "summary.csv", "summary.md", "report.html"):
        assert (run_dir / name).exists(), name
    assert "policy=fifo placer=consolidate" in (run_dir / "raysim.log").read_text()  # the log file has every line


def test_harvest_prints_its_table_and_results_path(shared_dir, tmp_path, capsys):
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run import run

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=harvest_summit", "runtime=local",
                                                       f"harvest.data_dir={shared_dir / 'harvest'}"])
    summary = run(cfg, tmp_path / "run")
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| vc |"))
    # the cluster run's table, with the harvest figures (raysim.harvest.metrics) as columns
    for column in ("finished", "makespan_h", "efficiency", "harvested_fraction", "busy_node_hours", "idle_node_hours"):
        assert f"| {column} |" in header
    assert summary["finished"] == 10 and f"{summary['efficiency']:.3f}" in out
    assert out.rstrip().endswith(f"results: {tmp_path / 'run'}")


@pytest.mark.slow
def test_ray_task_sweep_prints_each_table_once_and_reports_the_failed_job(tiny_trace, tmp_path):
    sweep = tmp_path / "sweep"
    res = raysim("-m", "runtime=local", f"trace.path={tiny_trace}", "trace.cache=false", "policy=fifo,srtf",
                 "seed=0,abc", "hydra/launcher=raysim_ray", f"hydra.sweep.dir={sweep}", cwd=tmp_path, timeout=600)
    assert res.returncode == 2, res.stderr[-3000:]
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("raysim: error:")]
    assert sorted(errors) == [f"raysim: error: run #{n} (policy={p} seed=abc): seed: must be an integer "
                              "(value 'abc')" for n, p in ((1, "fifo"), (3, "srtf"))]
    assert "Traceback" not in res.stderr and "Token authentication" not in res.stderr
    out = res.stdout.splitlines()
    for policy in ("fifo", "srtf"):  # the table, whole, right under its job's label, once
        title = out.index(f"## raysim: {policy}, clean semantics")
        assert out.count(f"## raysim: {policy}, clean semantics") == 1
        assert out[title - 1].startswith("#") and f"policy={policy}" in out[title - 1]
        table = out[title + 2:title + 7]
        assert table[0].startswith("| vc |")
        assert [row.split(" | ")[0] for row in table[2:]] == ["| vcA", "| vcB", "| all"]
    assert res.stdout.count("results: ") == 2


@pytest.mark.slow  # 11 s; test_rounds_kernel keeps round-based runs in the main suite
def test_round_based_policies_place_with_the_runs_placer(tmp_path, hetero_head):
    """Round-based policies are VC-engine policies: the run's placer places their jobs (here FGD's
    scored one); Gavel's mechanism counts GPUs per type, so JCTs do not depend on it. (The demo's
    first 300 jobs: tests/conftest.py's hetero_head.)"""
    demo = ["+experiment=gavel_hetero_demo", f"trace.path={hetero_head}", "runtime=local", *NO_PAGES]
    out = raysim(*demo, "placer=fgd", f"hydra.run.dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr
    first = raysim(*demo, f"hydra.run.dir={tmp_path / 'run2'}")
    jct = [pq.read_table(tmp_path / d / "jobs.parquet").column("jct").to_pylist() for d in ("run", "run2")]
    assert first.returncode == 0 and jct[0] == jct[1]


def test_time_axes_follow_the_activity():
    """A two-minute burst 145 days into the trace is drawn on minutes from its start, not on days."""
    from raysim.report.describe import time_axis

    origin, per, label = time_axis([145 * 86400.0, 145 * 86400.0 + 120])
    assert (origin, per) == (145 * 86400.0, 60.0) and label == "simulated time (minutes since day 145.0 of the trace)"
    assert time_axis([0.0, 10 * 86400.0])[1:] == (86400.0, "simulated time (days)")
