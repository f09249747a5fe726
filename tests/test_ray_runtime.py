"""runtime=ray: identical results to runtime=local, recovery from a killed VC actor, resume."""

import tempfile

import pyarrow.parquet as pq
import pytest
import ray
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.report.results import jobs_table
from raysim.run.simulate import simulate, vc_groups
from raysim.runtime.coordinator import Coordinator
from raysim.runtime.codec import jobs_batch
from raysim.runtime.local import LocalExecutor
from raysim.runtime.ray_backend import RayExecutor
from raysim.runtime.sink import ResultSink, read_records
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams

POLICIES = ["fifo", "sjf", "srtf", "qssf", "tiresias"]


@pytest.fixture(scope="module")
def ray_local(ray_session):
    """Ray, started once for the session (tests/conftest.py)."""


def spec_for(trace, policy, compat="clean", placer="consolidate"):
    return RunSpec(policy, placer, SimParams.for_mode(compat, seed=2), layout_from_vc_nodes(trace.vc_nodes, 8))


def parquet_bytes(table, tmp_path, name):
    path = tmp_path / name
    pq.write_table(table, path, compression="zstd")
    return path.read_bytes()


@pytest.mark.parametrize("policy", [pytest.param(p, marks=pytest.mark.slow) if p in ("sjf", "srtf", "qssf") else p
                                    for p in POLICIES])  # (FIFO and Tiresias keep the check in the main suite)
def test_ray_writes_the_same_files_as_local_byte_for_byte(policy, ray_local, tmp_path):
    from simutil import assert_same_on_ray

    trace, est = synthetic_trace(seed=11)
    spec = spec_for(trace, policy, compat="lucid" if policy in ("srtf", "qssf") else "clean")
    assert_same_on_ray(tmp_path, trace, spec, est=est, runs=[{"window_s": w, "vcs_per_actor": k}
                                                             for w, k in [(3_600, 1), (86_400, 2), (7 * 86_400, 3)]])


@pytest.mark.parametrize("window_s", [600, 86_400, 10**9])
def test_local_results_do_not_depend_on_window_size(window_s):
    trace, est = synthetic_trace(seed=5)
    spec = spec_for(trace, "tiresias")
    base, base_ts = simulate(trace, spec, est, runtime="local", window_s=86_400)
    jobs, ts = simulate(trace, spec, est, runtime="local", window_s=window_s, vcs_per_actor=2)
    assert jobs.equals(base) and ts.equals(base_ts)


class KillOnce(RayExecutor):
    """A Ray executor that kills VC actor `victim` while it runs window `at`."""

    def __init__(self, *args, victim=1, at=3, **kw):
        super().__init__(*args, **kw)
        self.victim, self.at, self.calls, self.killed = victim, at, 0, False

    def run_window(self, g, batch_ref, t_end, snapshot=True, orders=None):
        handle = super().run_window(g, batch_ref, t_end, snapshot, orders)
        if g == self.victim:
            self.calls += 1
            if self.calls == self.at and not self.killed:
                self.killed = True
                ray.kill(self.actors[g], no_restart=True)
        return handle


def test_killed_vc_actor_is_rebuilt_and_results_do_not_change(ray_local, tmp_path):
    trace, est = synthetic_trace(seed=3)
    spec = spec_for(trace, "srtf")
    undisturbed, _ = simulate(trace, spec, est, runtime="local")
    groups = vc_groups(trace.vc_nodes, 1)
    executor = KillOnce(spec, groups, victim=1, at=6)
    jobs, _ = simulate(trace, spec, est, executor=executor, window_s=86_400)
    assert executor.killed
    assert parquet_bytes(jobs, tmp_path, "a.parquet") == parquet_bytes(undisturbed, tmp_path, "b.parquet")


class Interrupt(Exception):
    pass


class StopAfter(LocalExecutor):
    """A local executor that dies (like a killed driver) after `windows` windows."""

    def __init__(self, *args, windows=5, **kw):
        super().__init__(*args, **kw)
        self.left = windows * len(self.groups)

    def run_window(self, g, batch, t_end, snapshot=False, orders=None):
        self.left -= 1
        if self.left < 0:
            raise Interrupt()
        return super().run_window(g, batch, t_end, snapshot, orders)


@pytest.mark.parametrize("runtime", ["local", "ray"])
def test_interrupted_run_resumes_from_checkpoint(runtime, tmp_path, request):
    if runtime == "ray":
        request.getfixturevalue("ray_local")
    trace, est = synthetic_trace(seed=4)
    spec = spec_for(trace, "tiresias")
    full, full_ts = simulate(trace, spec, est, runtime="local")
    ckpt = tmp_path / "ckpt"
    groups = vc_groups(trace.vc_nodes, 1)
    with pytest.raises(Interrupt):
        simulate(trace, spec, est, executor=StopAfter(spec, groups, windows=6), checkpoint_dir=ckpt, window_s=86_400)
    assert (ckpt / "checkpoint.pkl").exists()
    resumed, resumed_ts = simulate(trace, spec, est, runtime=runtime, checkpoint_dir=ckpt, resume=True,
                                   window_s=86_400)
    assert resumed.equals(full) and resumed_ts.equals(full_ts)


def test_windows_skip_idle_stretches(tmp_path):
    trace, est = synthetic_trace(seed=1)
    spec = spec_for(trace, "fifo")
    groups = vc_groups(trace.vc_nodes, 3)
    sink = ResultSink(tmp_path, list(trace.vc_nodes))
    coordinator = Coordinator(LocalExecutor(spec, groups), jobs_batch(trace.table, est), groups, sink, t0=0,
                              window_s=60, progress=False)
    end, _ = coordinator.run()
    assert read_records(sink.close(end)["records"]).num_rows == trace.table.num_rows
    # one-minute windows over the whole span would be end/60; only windows with events run
    events = sum(1 for _ in range(trace.table.num_rows)) * 2
    assert coordinator.windows_run <= events < end // 60


def test_the_progress_line_writes_any_simulated_time():
    from raysim.runtime.coordinator import _clock

    assert _clock("2020-09-01", 86_400) == "2020-09-02 00:00" and _clock("0", 5) == "t=5"
    # past the year 9999 (a run whose clock ran away): seconds and years since the trace's start
    assert _clock("2020-09-01", 8_000 * 31_557_600) == "t=252,460,800,000 s (8,000 years after 2020-09-01 00:00)"
    assert _clock("2020-09-01", 10**18) == "t=1,000,000,000,000,000,000 s (31,688,087,814 years after 2020-09-01 00:00)"


class KeepFirstOnly(Coordinator):
    """Keeps each group's state only after its first window, so a rebuild must replay the rest."""

    def _snapshot_due(self, state, g):
        return state.windows == 0


def test_rebuild_replays_the_windows_since_the_last_kept_state(ray_local, tmp_path):
    trace, est = synthetic_trace(seed=6)
    spec = spec_for(trace, "tiresias")
    undisturbed, _ = simulate(trace, spec, est, runtime="local")
    groups = vc_groups(trace.vc_nodes, 1)
    executor = KillOnce(spec, groups, victim=0, at=8)
    sink = ResultSink(tmp_path / "results", list(trace.vc_nodes))
    coordinator = KeepFirstOnly(executor, jobs_batch(trace.table, est), groups, sink, t0=0, window_s=86_400,
                                progress=False)
    end, _ = coordinator.run()
    jobs = jobs_table(trace.table, read_records(sink.close(end)["records"]))
    assert executor.killed and coordinator.recoveries == 1
    assert jobs.equals(undisturbed)


@pytest.mark.parametrize("runtime,compat", [("local", "clean"), pytest.param("ray", "lucid", marks=pytest.mark.slow)])
def test_interrupted_lucid_run_resumes_with_its_profiler_stage(runtime, compat, tmp_path, request):
    from test_lucid import lucid_on_shipped_trace

    if runtime == "ray":
        request.getfixturevalue("ray_local")
    trace, spec, est, extra = lucid_on_shipped_trace(compat)
    full, full_ts = simulate(trace, spec, est, job_extra=extra, window_s=86_400)
    ckpt = tmp_path / "ckpt"
    groups = vc_groups(trace.vc_nodes, 4)
    with pytest.raises(Interrupt):  # dies mid-trace, with jobs being profiled and nodes on loan
        simulate(trace, spec, est, job_extra=extra, executor=StopAfter(spec, groups, windows=4),
                 checkpoint_dir=ckpt, checkpoint_every=3, window_s=86_400, vcs_per_actor=4)
    resumed, resumed_ts = simulate(trace, spec, est, job_extra=extra, runtime=runtime, checkpoint_dir=ckpt,
                                   resume=True, checkpoint_every=3, window_s=86_400, vcs_per_actor=4)
    assert resumed.equals(full) and resumed_ts.equals(full_ts)


def test_auto_packing_gives_one_vc_group_per_cpu(ray_local):
    vcs = {f"vc{i}": 1 for i in range(5)}
    assert vc_groups(vcs, "auto") == [["vc0", "vc1", "vc2"], ["vc3", "vc4"]]  # 2 CPUs
    assert vc_groups(vcs, 2) == [["vc0", "vc1"], ["vc2", "vc3"], ["vc4"]]


def _venus_cfg(*overrides):
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=["+experiment=venus", *overrides])


@pytest.mark.parametrize("overrides, profiler, line", [
    (["ray.actor_cpus=2"], None, "ray.actor_cpus: 2 actors (2 VC groups of ray.vcs_per_actor=auto) x 2 CPU = 4 CPUs"),
    (["ray.actor_cpus=1"], {"nodes": 1}, "ray.actor_cpus: 3 actors (2 VC groups of ray.vcs_per_actor=auto, and the "
                                         "profiler stage) x 1 CPU = 3 CPUs"),
])
def test_actors_that_do_not_fit_the_local_ray_are_one_line(ray_local, overrides, profiler, line):
    """Ray would wait forever for actors its CPUs cannot hold: ray.actor_cpus=2 under the default
    packing (one group per CPU) used to hang the run. The check counts the groups the run will use,
    and the profiler stage's actor where there is one, against the 2 CPUs of the tests' Ray."""
    from types import SimpleNamespace

    from raysim.errors import ConfigError
    from raysim.run.cluster import check_local_ray_fits

    spec = SimpleNamespace(vcs=[f"vc{i}" for i in range(15)], quota=None, profiler=profiler)
    with pytest.raises(ConfigError) as err:
        check_local_ray_fits(_venus_cfg(*overrides), spec)
    assert str(err.value).startswith(line + ", more than the 2 of the local Ray (ray.num_cpus): Ray would wait")
    fits = SimpleNamespace(vcs=spec.vcs, quota=None, profiler=None)  # 2 groups of 8 VCs x 1 CPU: the 2 CPUs
    check_local_ray_fits(_venus_cfg("ray.actor_cpus=1", "ray.vcs_per_actor=8"), fits)


class KillProfilerOnce(RayExecutor):
    """A Ray executor that kills the profiler actor right after handing it window `at`."""

    def __init__(self, *args, at=5, **kw):
        super().__init__(*args, **kw)
        self.at, self.calls, self.killed = at, 0, False

    def profile(self, jobs, t_start, t_end):
        out = super().profile(jobs, t_start, t_end)
        self.calls += 1
        if self.calls == self.at and not self.killed:
            self.killed = True
            ray.kill(self.profiler, no_restart=True)
        return out


@pytest.mark.slow  # 5 s; the killed VC actor test stays in the main suite
def test_killed_profiler_actor_is_rebuilt_and_lucid_results_do_not_change(ray_local):
    from test_lucid import lucid_on_shipped_trace

    from raysim.run.simulate import simulate_to

    trace, spec, est, extra = lucid_on_shipped_trace("lucid")
    undisturbed, _ = simulate(trace, spec, est, job_extra=extra, window_s=86_400)
    groups = vc_groups(trace.vc_nodes, 8)
    executor = KillProfilerOnce(spec, groups, at=5)
    with tempfile.TemporaryDirectory() as out:
        stats = simulate_to(out, trace, spec, est, job_extra=extra, executor=executor, window_s=86_400,
                            vcs_per_actor=8)
        jobs = pq.read_table(f"{out}/jobs.parquet")
    assert executor.killed and stats["recoveries"] == 1
    assert jobs.equals(undisturbed)


@pytest.mark.parametrize("policy,type_order", [("tiresias", "fastest"), ("fifo", "any")])
def test_heterogeneous_demo_on_ray_writes_the_same_files_as_local(policy, type_order, ray_local, tmp_path):
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from simutil import assert_same_on_ray

    from raysim.run.config import estimates_from_config, load_from_config, spec_from_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=hetero_demo", f"policy={policy}",
                                                       f"placer.type_order={type_order}"])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert len(spec.catalog.gpu_types) == 3 and spec.catalog.speeds
    est, _ = estimates_from_config(cfg, trace)
    assert_same_on_ray(tmp_path, trace, spec, extra, est=est, runs=[{"window_s": 43_200}])
    series = pq.read_table(tmp_path / "local" / "timeseries.parquet")
    assert {"gpu_utilization_V100", "gpu_utilization_P100", "gpu_utilization_K80"} <= set(series.column_names)


def random_pod_list(folder, n=300, seed=3):
    """A pod list in the openb format (and its node list) with whole-GPU, share and CPU-only pods."""
    import numpy as np
    from test_readers_alibaba2023_engine import write

    rng = np.random.default_rng(seed)
    rows = []
    for i, t in enumerate(np.sort(rng.integers(0, 2000, n)).tolist()):
        kind = int(rng.integers(3))
        num, milli = [(0, 0), (1, int(rng.choice([200, 500, 700]))), (int(rng.choice([1, 2, 4])), 1000)][kind]
        spec = str(rng.choice(["", "T4", "G2"])) if 0 < num <= 2 else ""
        end = t + int(rng.integers(10, 600))
        rows.append(f"p{i},{int(rng.choice([1000, 4000, 16000]))},{int(rng.choice([1024, 8192]))},{num},{milli},"
                    f"{spec},LS,Succeeded,{t},{end},{t}")
    write(folder, pods=rows)


@pytest.mark.parametrize("policy,placer,more", [
    ("tiresias", "fgd", []), ("fifo_backfill", "gpu_clustering", []), ("srtf", "random", []),
    pytest.param("fifo_backfill", "fgd", ["+trace.reader_options.vcs=2", "quota=borrow", "quota.period_s=20"],
                 marks=pytest.mark.slow),  # (10 s: loans of pods on Ray, in the slow step)
])
def test_pods_with_gpu_shares_on_ray_write_the_same_files_as_local(policy, placer, more, ray_local, tmp_path):
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the config resolvers)
    from raysim.paths import CONF_DIR
    from simutil import assert_same_on_ray

    from raysim.run.config import load_from_config, spec_from_config

    random_pod_list(tmp_path / "data")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["trace.format=alibaba2023", f"trace.path={tmp_path / 'data'}",
                                                       "trace.cache=false", f"policy={policy}", f"placer={placer}",
                                                       *more])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert spec.resources and trace.table.num_rows == 300
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"window_s": 300}, {"window_s": 86_400}])
    jobs = pq.read_table(tmp_path / "local" / "jobs.parquet")
    assert all(jobs.column("finished").to_pylist()) and jobs.column("queue").to_numpy().max() > 0
    if "quota=borrow" in more:  # some pods ran on the other VC's nodes
        ran = jobs.column("ran_on_vc").to_pylist()
        assert any(r != v for r, v in zip(ran, jobs.column("vc").to_pylist()))
