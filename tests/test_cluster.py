"""A real two-node Ray cluster on 127.0.0.1: `ray start` head + worker, `ray job submit`, a sweep
spread over both nodes and a run whose VC groups are, each checked against the same in one process.

Token authentication is on (RAY_AUTH_MODE=token with a generated RAY_AUTH_TOKEN shared by the nodes,
the submitter and the job). Nodes run as `ray start --block` children of this test, so stopping
them stops exactly the processes this test started and nothing else on the machine. Each node
counts 2 CPUs whatever the machine has (Ray only counts them), so that a sweep's one-CPU tasks
need both nodes.
"""

import json
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
import yaml

REPO = Path(__file__).resolve().parent.parent
RAY = str(Path(sys.executable).with_name("ray"))

pytestmark = pytest.mark.cluster

#: The sweep run on the cluster and in one process: 8 runs of the small Venus-like trace.
SWEEP = ["+experiment=venus", "runtime=local", "policy=fifo,srtf,tiresias,fifo_backfill",
         "placer=consolidate,first_fit", "report.html=false"]
#: A run's files that must be the same wherever it ran (trace_report.json holds wall times)
SAME = ["jobs.parquet", "timeseries.parquet", "summary.csv", "summary.md", "out_jobs.csv"]


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
                             "--dashboard-host=127.0.0.1", "--include-dashboard=true", "--num-cpus=2",
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
        worker = subprocess.Popen([RAY, "start", f"--address=127.0.0.1:{gcs}", "--num-cpus=2",
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
        yield {"address": address, "gcs": f"127.0.0.1:{gcs}", "env": env, "tmp": tmp}
    finally:
        # The worker first, then the head, each by its `ray start`, which drains its node through the
        # head's GCS and stops its processes in seconds (signalling a node's whole process group
        # stops the GCS too, and each node then waits 30 s for it); what is left of a group is killed.
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for f in logs:
            f.close()
        for folder in (ray_tmp, worker_tmp):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    """SWEEP in one process (raysim's local launcher): its folder."""
    sweep = tmp_path_factory.mktemp("local") / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", *SWEEP, f"hydra.sweep.dir={sweep}"], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return sweep


def run_of(sweep: Path, *overrides: str) -> Path:
    """The run folder of `sweep` whose overrides include `overrides`."""
    found = [run for run in sweep.iterdir()
             if (run / ".hydra" / "overrides.yaml").exists()
             and set(overrides) <= set(yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text()))]
    assert len(found) == 1, (overrides, found)
    return found[0]


def assert_same_files(run: Path, reference: Path) -> None:
    for name in SAME:
        assert (run / name).read_bytes() == (reference / name).read_bytes(), f"{run / name} differs"


def test_job_submit_runs_an_experiment_on_the_cluster(cluster, local_sweep, tmp_path):
    out = tmp_path / "cluster_run"
    res = subprocess.run(
        [RAY, "job", "submit", "--address", cluster["address"], "--working-dir", str(REPO), "--",
         sys.executable, "-m", "raysim", "+experiment=venus", "ray.address=auto", "ray.vcs_per_actor=8",
         "policy=srtf", "report.html=false", f"hydra.run.dir={out}"],
        env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "succeeded" in (res.stdout + res.stderr).lower()
    jobs = pq.read_table(out / "jobs.parquet")
    assert_same_files(out, run_of(local_sweep, "policy=srtf", "placer=consolidate"))
    assert jobs.num_rows > 1000


def test_a_sweep_uses_both_nodes_and_the_driver_gathers_its_files(cluster, local_sweep, tmp_path):
    """Eight one-CPU runs on two nodes of 2 CPUs each: both nodes run some (each run's trace_report.json
    says where), each ran in a scratch folder of its node, and the driver's sweep folder holds the
    same files as the sweep run in one process."""
    sweep = tmp_path / "sweep"
    res = subprocess.run([sys.executable, "-m", "raysim", "-m", *SWEEP, "hydra/launcher=raysim_ray",
                          f"hydra.launcher.address={cluster['gcs']}", f"hydra.sweep.dir={sweep}"],
                         cwd=tmp_path, env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    ran_on = [json.loads((sweep / str(i) / "trace_report.json").read_text())["ran_on"] for i in range(8)]
    assert len({r["ray_node"] for r in ran_on}) == 2, ran_on
    assert all(not r["folder"].startswith(str(sweep)) for r in ran_on)  # (gathered, not written there)
    assert "gathered into" in res.stdout + res.stderr
    for i in range(8):
        assert_same_files(sweep / str(i), local_sweep / str(i))
    assert (sweep / "sweep_summary.csv").read_bytes() == (local_sweep / "sweep_summary.csv").read_bytes()


def test_a_run_whose_vc_groups_are_spread_over_both_nodes(cluster, local_sweep, tmp_path):
    """A driver connected to the cluster (ray.address): its 4 VC groups (one per CPU of the cluster,
    ray.vcs_per_actor=auto) run on both nodes (trace_report.json's ray_nodes says which), and its
    files are those of runtime=local."""
    out = tmp_path / "spread"
    res = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus", "policy=fifo", "runtime=ray",
                          f"ray.address={cluster['gcs']}", "ray.vcs_per_actor=auto", "report.html=false",
                          f"hydra.run.dir={out}"],
                         cwd=REPO, env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    nodes = json.loads((out / "trace_report.json").read_text())["ray_nodes"]
    assert len(nodes["groups"]) == 4 and len(set(nodes["groups"])) == 2, nodes
    assert set(nodes["nodes"]) == {nodes["driver"], *nodes["groups"]}
    assert_same_files(out, run_of(local_sweep, "policy=fifo", "placer=consolidate"))


def test_job_submit_without_the_token_is_refused(cluster):
    env = {k: v for k, v in cluster["env"].items() if k != "RAY_AUTH_TOKEN"}
    env["RAY_AUTH_TOKEN_PATH"] = str(cluster["tmp"] / "no-such-token")
    res = subprocess.run([RAY, "job", "list", "--address", cluster["address"]], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
