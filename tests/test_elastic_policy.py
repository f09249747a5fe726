"""The elastic kernel policy (raysim.policy.elastic) end to end on small synthetic inputs (no ../shared):
two linear applications (tests/elastic_util.py) profiled on two GPU kinds, a ten-job Sia-format
workload, and a 12-GPU cluster of one 4-GPU `fast` node and two 4-GPU `slow` nodes. Sia and Gavel's
rigid baseline finish every job, never start one before it is submitted, never give out more GPUs
of a kind (or of a node) than there are, and respect their job-size rules; Sia writes the same
jobs.parquet on Ray as in-process."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest
from elastic_util import write_app
from hydra import compose, initialize_config_dir
from simutil import NO_PAGES, assert_same_on_ray
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.elastic.gavel import GavelAllocator
from raysim.elastic.pollux import PolluxAllocator
from raysim.elastic.sia import SiaAllocator
from raysim.paths import CONF_DIR
from raysim.run import run
from raysim.run.config import load_from_config, spec_from_config

#: two epochs of progress 3000 and 6000 (the least over the batch sizes): a few hundred seconds a job
VALIDATION = {
    32: [(3000, 100, 0.1, 1.0, 3.0), (6000, 200, 0.2, 0.5, 2.5)],
    64: [(3300, 60, 0.1, 2.0, 5.0), (6900, 120, 0.2, 1.0, 3.0)],
    128: [(3600, 40, 0.1, 4.0, 6.0), (7800, 80, 0.2, 2.0, 5.0)],
}
#: (time, application, num_replicas, batch_size): a burst at 0 that over-fills the cluster, a
#: fractional time (rounded up to 62 s), a late job alone
WORKLOAD = [(0, "alpha", 1, 32), (0, "beta", 2, 64), (0, "alpha", 4, 128), (0, "beta", 4, 64),
            (0, "alpha", 4, 64), (30, "alpha", 4, 128), (61.5, "beta", 1, 64), (120, "alpha", 2, 64),
            (400, "beta", 4, 128), (2000, "beta", 2, 32)]
SUBMIT = [0, 0, 0, 0, 0, 30, 62, 120, 400, 2000]
KINDS = {"fast": (1, 4), "slow": (2, 4)}  # kind -> (nodes, GPUs per node)
LAYOUT = ("cluster.layout=[" + ",".join(f"{{vc:cluster,gpu_type:{k},gpus_per_node:{g},nodes:{n}}}"
                                        for k, (n, g) in KINDS.items()) + "]")
ROUND_S = {"sia": 60, "pollux": 60, "gavel_elastic": 360}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("elastic")
    write_app(root / "profiles", "alpha", {"fast": 2.0, "slow": 1.0}, validation=VALIDATION)
    write_app(root / "profiles", "beta", {"fast": 3.0, "slow": 1.0}, validation=VALIDATION)
    lines = ["name,time,application,num_replicas,batch_size"]
    lines += [f"{app}-{i},{t},{app},{r},{b}" for i, (t, app, r, b) in enumerate(WORKLOAD)]
    (root / "workload.csv").write_text("\n".join(lines) + "\n")
    return root


def config(inputs, policy: str, *overrides):
    """(The runs skip plots and report.html: simutil.NO_PAGES.)"""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[
            "+experiment=sia_saturn", f"policy={policy}", "runtime=local", LAYOUT, *NO_PAGES,
            f"trace.path={inputs / 'workload.csv'}", f"policies.elastic.profiles={inputs / 'profiles'}",
            "+policies.elastic.apps={alpha: {max_epochs: 2, restart_s: 30, slowdown: 1.2}, "
            "beta: {max_epochs: 2, restart_s: 60, slowdown: 1.5}}", *overrides])


def record(monkeypatch, allocator) -> list:
    """Every round's (time, [(job, its GPU cap before the round)], allocation) of `allocator`'s class."""
    rounds = []
    original = allocator.allocate

    def allocate(self, jobs, now, ratios):
        before = [(job, cap_before(job, self)) for job in jobs]
        placed = original(self, jobs, now, ratios)
        rounds.append((now, before, placed))
        return placed

    monkeypatch.setattr(allocator, "allocate", allocate)
    return rounds


def cap_before(job, allocator) -> int | None:
    """Sia's cap on a job's GPUs: twice the most GPUs it has run on (any kind), at least 1, at most
    policy.max_replicas_cap and the largest batch size over the smallest per-GPU one (128 / 8)."""
    if not isinstance(allocator, SiaAllocator):
        return None
    most = max((key[1] for kind in job.profiles for key in job.profiles[kind]), default=0)
    return min(max(2 * most, 1), allocator.cap, 128 // 8)


def check_capacity(rounds) -> None:
    for now, _, placed in rounds:
        per_kind, per_node = Counter(), Counter()
        for kind, ids in placed.values():
            per_kind[kind] += len(ids)
            per_node.update((kind, node) for node in ids)
        for kind, (nodes, per) in KINDS.items():
            assert per_kind[kind] <= nodes * per, (now, kind, placed)
        assert all(0 <= node < KINDS[kind][0] and used <= KINDS[kind][1] for (kind, node), used in per_node.items()), (
            now, placed)


def read_jobs(folder):
    return pq.read_table(folder / "jobs.parquet").to_pandas().sort_values("job_id").reset_index(drop=True)


def check_jobs(jobs, policy: str) -> None:
    assert len(jobs) == len(WORKLOAD) and jobs.finished.all() and jobs.end_time.notna().all()
    assert jobs.submit_time.tolist() == SUBMIT
    assert (jobs.start_time >= jobs.submit_time).all()
    assert (jobs.start_time % ROUND_S[policy] == 0).all()  # jobs start at round boundaries
    assert (jobs.end_time == jobs.end_time.round()).all() and (jobs.end_time > jobs.start_time).all()
    assert (jobs.jct == jobs.end_time - jobs.submit_time).all()
    assert jobs.gpu_num.tolist() == [w[2] for w in WORKLOAD]


@pytest.mark.parametrize("cap", [2, 64])
def test_sia_finishes_every_job_within_capacity_and_its_gpu_cap(inputs, tmp_path, monkeypatch, cap):
    rounds = record(monkeypatch, SiaAllocator)
    run(config(inputs, "sia", f"policy.max_replicas_cap={cap}"), tmp_path / "run")
    jobs = read_jobs(tmp_path / "run")
    check_jobs(jobs, "sia")
    assert rounds and all(now % 60 == 0 for now, _, _ in rounds)
    check_capacity(rounds)
    given = Counter()
    for now, before, placed in rounds:
        for job, limit in before:
            if job.seq in placed:
                gpus = len(placed[job.seq][1])
                assert 1 <= gpus <= limit <= cap, (now, job.name, gpus, limit)
                given[job.seq] = max(given[job.seq], gpus)
            assert now >= job.submit  # a job joins at the first round at or after its submission
    assert set(given) == set(range(len(WORKLOAD)))  # every job ran
    if cap == 2:
        assert max(given.values()) == 2
    else:  # the cap grows with what a job has run on: some job went beyond 2
        assert max(given.values()) > 2


def test_gavel_elastic_finishes_every_job_at_its_own_gpu_count(inputs, tmp_path, monkeypatch):
    rounds = record(monkeypatch, GavelAllocator)
    run(config(inputs, "gavel_elastic"), tmp_path / "run")
    jobs = read_jobs(tmp_path / "run")
    check_jobs(jobs, "gavel_elastic")
    assert rounds and all(now % 360 == 0 for now, _, _ in rounds)
    check_capacity(rounds)
    ran = set()
    suspended = 0
    for now, before, placed in rounds:
        for job, _ in before:
            if job.seq in placed:
                assert len(placed[job.seq][1]) == job.target_replicas == WORKLOAD[job.seq][2], (now, job.name)
                ran.add(job.seq)
            elif job.seq in ran:
                suspended += 1
    assert ran == set(range(len(WORKLOAD)))
    assert suspended > 0  # the burst over-fills the cluster: jobs wait for their turn (and resume)


@pytest.mark.slow
def test_sia_writes_the_same_files_on_ray_as_in_process(inputs, ray_local, tmp_path):  # noqa: F811
    cfg = config(inputs, "sia", "policy.max_replicas_cap=4")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert read_jobs(assert_same_on_ray(tmp_path, trace, spec, extra)).finished.all()


def test_a_duration_driven_policy_refuses_jobs_without_durations(inputs, tmp_path):
    from raysim.errors import ConfigError

    with pytest.raises(ConfigError, match="elastic jobs without durations.*not tiresias"):
        run(config(inputs, "tiresias"), tmp_path / "run")


def test_pollux_finishes_every_job_within_capacity(inputs, tmp_path):
    run(config(inputs, "pollux"), tmp_path / "run")
    check_jobs(read_jobs(tmp_path / "run"), "pollux")


def test_sia_gives_the_same_jobs_with_checkpoints_and_small_windows(inputs, tmp_path):
    run(config(inputs, "sia"), tmp_path / "plain")
    run(config(inputs, "sia", "runtime.window_s=300", f"runtime.checkpoint_dir={tmp_path / 'ckpt'}"),
        tmp_path / "windows")
    assert (tmp_path / "plain" / "jobs.parquet").read_bytes() == (tmp_path / "windows" / "jobs.parquet").read_bytes()


@pytest.mark.parametrize("policy, allocator", [("sia", SiaAllocator), ("pollux", PolluxAllocator)])
def test_a_job_at_its_own_maximum_replicas_never_gets_more(inputs, tmp_path, monkeypatch, policy, allocator):
    """The optional max_replicas column: job 2 (asks 4 GPUs) may use at most 1, job 4 at most 2."""
    lines = (inputs / "workload.csv").read_text().splitlines()
    limits = {2: "1", 4: "2"}
    rows = [lines[0] + ",max_replicas"] + [f"{row},{limits.get(i, '')}" for i, row in enumerate(lines[1:])]
    rows[3] = rows[3].replace(",4,128,", ",1,128,")  # a job's initial replicas are within its maximum
    rows[5] = rows[5].replace(",4,64,", ",2,64,")
    (tmp_path / "limited.csv").write_text("\n".join(rows) + "\n")
    rounds = record(monkeypatch, allocator)
    run(config(inputs, policy, f"trace.path={tmp_path / 'limited.csv'}"), tmp_path / "run")
    most = Counter()
    for _, _, placed in rounds:
        for seq, (_, ids) in placed.items():
            most[seq] = max(most[seq], len(ids))
    assert most[2] == 1 and most[4] == 2
    assert max(most.values()) > 2  # the others still grow beyond
    assert read_jobs(tmp_path / "run").finished.all()
