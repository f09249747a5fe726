"""A real two-node Ray cluster on 127.0.0.1: `ray start` head + worker, `ray job submit`, check results.

Token authentication is on (RAY_AUTH_MODE=token with a generated RAY_AUTH_TOKEN shared by the nodes,
the submitter and the job). Nodes run as `ray start --block` children of this test, so stopping
them stops exactly the processes this test started and nothing else on the machine.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parent.parent
RAY = str(Path(sys.executable).with_name("ray"))

pytestmark = pytest.mark.cluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(1)
    raise TimeoutError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raycluster")
    # Unix socket paths must stay < 108 bytes. Each node gets its own folder, as on two machines: a
    # worker node without one shares the head's, and the two nodes' runtime-env agents then unpack
    # and clean up the job's working_dir package in the same place (a job once lost a module file
    # while the driver imported it).
    ray_tmp, worker_tmp = (tempfile.mkdtemp(prefix="rs", dir="/tmp") for _ in range(2))
    gcs, dashboard = free_port(), free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    common = ["--node-ip-address=127.0.0.1", "--block", "--disable-usage-stats"]
    logs = [open(tmp / "head.log", "w"), open(tmp / "worker.log", "w")]
    head = subprocess.Popen([RAY, "start", "--head", f"--port={gcs}", f"--dashboard-port={dashboard}",
                             "--dashboard-host=127.0.0.1", "--include-dashboard=true", "--num-cpus=1",
                             f"--temp-dir={ray_tmp}", *common],
                            env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)
    procs = [head]
    try:
        address = f"http://127.0.0.1:{dashboard}"

        def dashboard_up():
            res = subprocess.run([RAY, "job", "list", "--address", address], env=env,
                                 capture_output=True, text=True, timeout=60)
            return res.returncode == 0

        wait_for(dashboard_up, 120, "the head node's dashboard")
        worker = subprocess.Popen([RAY, "start", f"--address=127.0.0.1:{gcs}", "--num-cpus=1",
                                   f"--temp-dir={worker_tmp}", *common],
                                  env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(worker)

        def two_nodes():
            code = ("import ray; ray.init(address='auto'); "
                    "print(sum(1 for n in ray.nodes() if n['Alive']))")
            res = subprocess.run([sys.executable, "-c", code], env={**env, "RAY_ADDRESS": f"127.0.0.1:{gcs}"},
                                 capture_output=True, text=True, timeout=120)
            return res.returncode == 0 and res.stdout.strip().endswith("2")

        wait_for(two_nodes, 120, "the worker node to join")
        yield {"address": address, "env": env, "tmp": tmp}
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        for f in logs:
            f.close()
        for folder in (ray_tmp, worker_tmp):
            shutil.rmtree(folder, ignore_errors=True)


def test_job_submit_runs_an_experiment_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "cluster_run"
    res = subprocess.run(
        [RAY, "job", "submit", "--address", cluster["address"], "--working-dir", str(REPO), "--",
         sys.executable, "-m", "raysim", "+experiment=venus", "ray.address=auto", "ray.vcs_per_actor=8",
         "policy=srtf", f"hydra.run.dir={out}"],
        env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "succeeded" in (res.stdout + res.stderr).lower()
    jobs = pq.read_table(out / "jobs.parquet")
    local = tmp_path / "local_run"
    ref = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus", "runtime=local", "policy=srtf",
                          f"hydra.run.dir={local}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-2000:]
    assert (out / "jobs.parquet").read_bytes() == (local / "jobs.parquet").read_bytes()
    assert jobs.num_rows > 1000


def test_job_submit_without_the_token_is_refused(cluster):
    env = {k: v for k, v in cluster["env"].items() if k != "RAY_AUTH_TOKEN"}
    env["RAY_AUTH_TOKEN_PATH"] = str(cluster["tmp"] / "no-such-token")
    res = subprocess.run([RAY, "job", "list", "--address", cluster["address"]], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
