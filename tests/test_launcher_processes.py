"""raysim's default launcher (hydra/launcher=raysim_local): a multirun's in-process runs several at a
time in forked processes, with the files, printed tables and errors of one run after another."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from test_cli import raysim

from hydra_plugins.raysim_launcher.processes import LocalProcessesLauncher, runs_in_process
from raysim.forking import usable_cpus

REPO = Path(__file__).resolve().parent.parent
JOBS = """job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state
1,vcA,u1,1,4,0,100,COMPLETED
2,vcA,u2,2,4,10,200,COMPLETED
3,vcB,u1,8,4,20,50,FAILED
4,vcB,u3,2,4,25,400,COMPLETED
5,vcA,u2,1,4,30,80,COMPLETED
"""
RESULT_FILES = ("jobs.parquet", "timeseries.parquet", "summary.csv")


@pytest.fixture
def small_trace(tmp_path) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,2\n")
    return tmp_path / "jobs.csv"


def test_a_local_sweep_in_processes_writes_and_prints_what_one_after_another_does(small_trace, tmp_path):
    sweeps = {n: tmp_path / f"sweep{n}" for n in (1, 2)}
    out = {}
    for n, sweep in sweeps.items():
        res = raysim("-m", "runtime=local", f"trace.path={small_trace}", "trace.cache=false",
                     "policy=fifo,srtf,tiresias", f"hydra.launcher.processes={n}", f"hydra.sweep.dir={sweep}",
                     cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        out[n] = res
    assert "Launching 3 jobs locally, 2 at a time" in out[2].stdout + out[2].stderr
    assert "Launching 3 jobs locally, one after another" in out[1].stdout + out[1].stderr
    for job in ("0", "1", "2"):
        for name in RESULT_FILES:
            assert (sweeps[2] / job / name).read_bytes() == (sweeps[1] / job / name).read_bytes(), (job, name)
    assert (sweeps[2] / "sweep_summary.csv").read_bytes() == (sweeps[1] / "sweep_summary.csv").read_bytes()
    printed = out[2].stdout.splitlines()
    for job, policy in enumerate(("fifo", "srtf", "tiresias")):  # each table once, whole, under its job's label
        title = f"## raysim: {policy}, clean semantics"
        assert printed.count(title) == 1
        at = printed.index(title)
        assert printed[at - 1].startswith(f"#{job} : ") and f"policy={policy}" in printed[at - 1]
        assert printed[at + 2].startswith("| vc |")
        assert f"results: {sweeps[2] / str(job)}" in printed
    assert out[2].stdout.count("results: ") == 3


def test_a_user_error_in_one_job_is_its_line_and_exit_status_2_the_others_finish(small_trace, tmp_path):
    sweep = tmp_path / "sweep"
    res = raysim("-m", "runtime=local", f"trace.path={small_trace}", "trace.cache=false", "policy=fifo,srtf",
                 "seed=0,abc", "hydra.launcher.processes=2", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert res.returncode == 2, res.stderr[-3000:]
    errors = sorted(ln for ln in res.stderr.splitlines() if ln.startswith("raysim: error:"))
    assert errors == [f"raysim: error: run #{n} (policy={p} seed=abc): seed: must be an integer (value 'abc')"
                      for n, p in ((1, "fifo"), (3, "srtf"))]
    assert "Traceback" not in res.stderr
    assert all((sweep / job / "jobs.parquet").exists() for job in ("0", "2"))
    assert res.stdout.count("results: ") == 2


def test_a_crash_in_a_job_ends_the_sweep_with_its_traceback(small_trace, tmp_path):
    """A job that raises anything but a user error: the sweep stops with that job's traceback, as
    one after another (the error is not a user's, so it is shown whole)."""
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "sitecustomize.py").write_text(
        "import raysim.run.cluster as c\n"
        "def boom(cfg, run_dir, checked=None):\n"
        "    if cfg.policy.name == 'srtf':\n"
        "        raise RuntimeError('boom in srtf')\n"
        "    return original(cfg, run_dir, checked)\n"
        "original, c.run_cluster = c.run_cluster, boom\n")
    res = raysim("-m", "runtime=local", f"trace.path={small_trace}", "trace.cache=false", "policy=fifo,srtf",
                 "hydra.launcher.processes=2", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                 env={"PYTHONPATH": os.pathsep.join([str(crash), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode != 0
    assert "JobFailed" in res.stderr and "RuntimeError: boom in srtf" in res.stderr, res.stderr[-3000:]
    assert "in boom" in res.stderr  # the job's own frames, from its process
    assert (tmp_path / "sweep" / "0" / "jobs.parquet").exists()


def test_a_sweep_larger_than_the_configs_kept_runs_in_parts(small_trace, tmp_path):
    """At most the sweeper's KEPT job configs are composed at a time: a larger sweep runs in parts,
    every job numbered as one part would number it (KEPT set to 2 here, for three jobs)."""
    part = tmp_path / "part"
    part.mkdir()
    (part / "sitecustomize.py").write_text("import hydra_plugins.raysim_launcher.processes as p\np.KEPT = 2\n")
    sweep = tmp_path / "sweep"
    res = raysim("-m", "runtime=local", f"trace.path={small_trace}", "trace.cache=false", "policy=fifo,srtf,tiresias",
                 "hydra.launcher.processes=2", f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                 env={"PYTHONPATH": os.pathsep.join([str(part), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0, res.stderr[-3000:]
    launched = res.stdout + res.stderr
    assert "Launching 2 jobs locally, 2 at a time" in launched and "Launching 1 jobs locally, one after another" in launched
    for job, policy in enumerate(("fifo", "srtf", "tiresias")):
        assert (sweep / str(job) / "jobs.parquet").exists()
        assert f"policy={policy}" in (sweep / str(job) / ".hydra" / "overrides.yaml").read_text()


@pytest.mark.parametrize("value", [0, -1, 1.5, "abc", True, "nan", "inf", 1e12, 10**12, usable_cpus() + 1])
def test_a_bad_number_of_processes_is_one_line(small_trace, tmp_path, value):
    res = raysim("-m", "runtime=local", f"trace.path={small_trace}", "trace.cache=false", "policy=fifo,srtf",
                 f"hydra.launcher.processes={value}", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith(
        "raysim: error: hydra.launcher.processes: must be a whole number from 1 to the ")
    assert not (tmp_path / "sweep" / "0").exists()


@pytest.mark.parametrize("override", ["hydra.launcher.processes=2", "hydra/launcher=raysim_ray"])
def test_a_single_run_refuses_launcher_settings(small_trace, tmp_path, override):
    """A single run launches no jobs: a launcher setting on its command line is one line, not ignored."""
    res = raysim("runtime=local", f"trace.path={small_trace}", "trace.cache=false", override,
                 f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert res.returncode == 2
    key, value = override.replace("/", ".").split("=")
    assert res.stderr.strip().splitlines()[-1] == (
        f"raysim: error: {key}: only a multirun (-m) launches its jobs: a single run reads no launcher setting "
        f"(value '{value}')")


def config(**values):
    return OmegaConf.create(values)


def test_only_runs_in_process_run_in_parallel(monkeypatch):
    """Runs on Ray share the Ray this process starts: they run one after another here; so do all
    runs where the system is not Linux."""
    monkeypatch.setattr(sys, "platform", "linux")
    local, ray = config(mode="cluster", runtime={"name": "local"}), config(mode="cluster", runtime={"name": "ray"})
    assert runs_in_process(local) and not runs_in_process(ray)
    assert runs_in_process(config(mode="fgd"))
    launcher = LocalProcessesLauncher(processes=4)
    assert launcher._processes([local] * 3) == 3  # at most one per job
    assert launcher._processes([local, ray]) == 1
    assert launcher._processes([local]) == 1
    assert LocalProcessesLauncher(processes=1)._processes([local] * 3) == 1
    assert LocalProcessesLauncher(processes=2)._processes([local] * 3) == 2
    monkeypatch.setattr(sys, "platform", "darwin")
    assert launcher._processes([local] * 3) == 1


def test_ctrl_c_stops_a_parallel_sweep_in_one_line(tmp_path):
    """Ctrl-C reaches the whole process group: the forked processes leave it to the driver, which
    stops them and says it was interrupted, in one line (no traceback of a pool process)."""
    import signal
    import time

    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.Popen([sys.executable, "-m", "raysim", "-m", "+experiment=venus", "runtime=local",
                             "policy=fifo,srtf,tiresias,sjf,qssf", "hydra.launcher.processes=2",
                             f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            # (Ctrl-C as a terminal sends it: a pytest-xdist worker may ignore SIGINT, and an
                            # ignored signal stays ignored in the programs it starts)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:  # Hydra's log line, once the processes are about to start
        if "Launching 5 jobs locally, 2 at a time" in line:
            break
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("raysim: interrupted")
    assert "Traceback" not in err and "ForkPoolWorker" not in err
