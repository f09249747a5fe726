"""Round-based policies on the VC engine: per VC and cluster-wide, the same files on every runtime,
window size and actor packing, and a checkpointed run resumes to the same results. The runs replay
the heterogeneous demo's first 300 jobs (tests/conftest.py's hetero_head)."""

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import assert_same_on_ray
from test_ray_runtime import Interrupt, StopAfter, ray_local  # noqa: F401  (a fixture)

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.rounds.mechanism import RoundState
from raysim.run.config import load_from_config, spec_from_config
from raysim.run.simulate import simulate, simulate_to, vc_groups


def demo(jobs, policy: str, *overrides):
    """The heterogeneous demo (2 VCs over V100, P100 and K80) under round-based `policy`, replaying
    `jobs` (hetero_head)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=gavel_hetero_demo", f"policy={policy}",
                                                       "runtime=local", f"trace.path={jobs}", *overrides])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    return trace, spec, extra


@pytest.mark.parametrize("policy,quota", [("max_min_fairness_perf", "none"), ("gavel_fifo", "global")])
def test_round_policies_write_the_same_files_on_every_runtime_window_and_packing(policy, quota, ray_local,
                                                                                 tmp_path, hetero_head):
    trace, spec, extra = demo(hetero_head, policy, f"quota={quota}")
    assert spec.params.ticks_per_s == 1_000_000 and len(spec.layout) == (1 if quota == "global" else 2)
    runs = [("local", 3_600, 1), ("ray", 86_400, 1), ("ray", 7 * 86_400, 2)]
    local = assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"runtime": r, "window_s": w, "vcs_per_actor": k}
                                                                   for r, w, k in runs])
    jobs = pq.read_table(local / "jobs.parquet").to_pandas()
    assert jobs.finished.all() and (jobs.start_time >= jobs.submit_time).all()


@pytest.mark.parametrize("policy,quota", [("fifo_perf", "none"), ("gavel_fifo", "none"),
                                          ("max_sum_throughput_perf", "global")])
def test_rounds_that_repeat_run_in_one_step_and_write_the_same_files(policy, quota, hetero_head, tmp_path,
                                                                    monkeypatch):
    """Rounds that provably repeat the last one (RoundState.repeats) run in one engine step; the
    files are those of running each round on its own, whatever the window."""
    trace, spec, extra = demo(hetero_head, policy, f"quota={quota}")
    repeated = []
    repeat = RoundState.repeat
    monkeypatch.setattr(RoundState, "repeat", lambda state: repeated.append(1) or repeat(state))
    simulate_to(tmp_path / "steps", trace, spec, None, runtime="local", job_extra=extra)
    assert len(repeated) > 100
    monkeypatch.setattr(RoundState, "repeats", lambda state, tasks, now: False)
    for window_s in (3_600, 7 * 86_400):
        out = tmp_path / f"rounds{window_s}"
        simulate_to(out, trace, spec, None, runtime="local", window_s=window_s, job_extra=extra)
        for name in ("jobs.parquet", "timeseries.parquet"):
            assert (out / name).read_bytes() == (tmp_path / "steps" / name).read_bytes(), (name, window_s)


def test_round_policies_use_every_vcs_own_gpus(hetero_head):
    """Per VC, each VC runs its own rounds on its own GPUs: a job never runs on another VC's types."""
    trace, spec, extra = demo(hetero_head, "max_min_fairness_perf")
    jobs, series = simulate(trace, spec, None, job_extra=extra)
    assert jobs.column("finished").to_pandas().all()
    used = series.to_pandas().groupby("vc").used_gpus.max() if "used_gpus" in series.column_names else None
    totals = {vc: sum(p.gpus for p in pools) for vc, pools in spec.layout.items()}
    if used is not None:
        assert all(used[vc] <= totals[vc] for vc in totals)


def test_interrupted_round_based_run_resumes_from_checkpoint(tmp_path, hetero_head):
    trace, spec, extra = demo(hetero_head, "max_min_fairness")
    full, full_ts = simulate(trace, spec, None, job_extra=extra, window_s=3_600)
    ckpt = tmp_path / "ckpt"
    groups = vc_groups(spec.vcs, 1)
    with pytest.raises(Interrupt):
        simulate(trace, spec, None, executor=StopAfter(spec, groups, windows=10), checkpoint_dir=ckpt,
                 window_s=3_600, job_extra=extra)
    assert (ckpt / "checkpoint.pkl").exists()
    resumed, resumed_ts = simulate(trace, spec, None, checkpoint_dir=ckpt, resume=True, window_s=3_600,
                                   job_extra=extra)
    assert resumed.equals(full) and resumed_ts.equals(full_ts)


def test_every_venus_job_has_a_gavel_job_type(shared_dir):
    """+experiment=venus_gavel: every (model, batch size) of the Venus-like week maps to a job type of
    Gavel's table (the run's set-up refuses a job without one). The fast stand-in of the run below;
    tests/test_results_schema.py runs the experiment end to end on a generated quarter day."""
    table = shared_dir / "references" / "gavel" / "simulation_throughputs.json"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus_gavel", "policy=max_min_fairness_perf",
                                                       "runtime=local", f"cluster.throughput={table}"])
    trace = load_from_config(cfg)
    assert trace.table.num_rows == 6412
    spec_from_config(cfg, trace)


@pytest.mark.slow
def test_venus_jobs_run_as_gavel_job_types(shared_dir, tmp_path):
    """+experiment=venus_gavel: every (model, batch size) of the Venus-like trace maps to a job type
    of Gavel's table; Gavel's heterogeneity-aware LAS runs per VC (the whole week: slow)."""
    from raysim.run import run

    table = shared_dir / "references" / "gavel" / "simulation_throughputs.json"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus_gavel", "policy=max_min_fairness_perf",
                                                       "runtime=local", f"cluster.throughput={table}"])
    run(cfg, tmp_path / "run")
    jobs = pq.read_table(tmp_path / "run" / "jobs.parquet").to_pandas()
    assert (jobs.start_time >= jobs.submit_time).all()
    # Gavel drops a job whose last micro-task has fewer steps than GPUs (3 of 6,412 8-GPU jobs here)
    dropped = jobs[~jobs.finished]
    assert len(dropped) <= 5 and (dropped.gpu_num > 1).all() and dropped.end_time.isna().all()


@pytest.mark.slow
def test_gavel_las_on_venus_is_the_same_on_ray_and_in_process(ray_local, tmp_path):  # noqa: F811
    """The issue's check: `+experiment=venus policy=max_min_fairness` per VC, runtime=ray and
    runtime=local write byte-identical jobs.parquet (here with VCs packed 8 to an actor)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=max_min_fairness"])
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert len(spec.vcs) == 15
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"vcs_per_actor": 8}])
