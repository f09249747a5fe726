"""Lucid: partner rules, pair speeds, the partner-recovery defect, the packing switch and the profiler."""

import numpy as np
import pyarrow as pa
import pytest
from simutil import NO_PAGES, batch, pools

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.models.forecast import packing_switch
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.models.forecast import PackingSwitch
from raysim.profiler.lgf import ForecastMean, LucidProfiler
from raysim.runtime.codec import jobs_batch
from raysim.sim import SimParams, VCSimulator


def lucid_vc(jobs, *, compat="lucid", nodes=1, pairs=None, switch=None, workload=None, score=None, gmem=None):
    """jobs: (submit, duration, gpu, estimate); returns (sim, results)."""
    params = SimParams.for_mode(compat)
    policy = make_policy("lucid", params=params, pairs=pairs or {}, switch=switch or PackingSwitch())
    sim = VCSimulator("vc", pools(nodes), policy, make_placer("consolidate", params=params), params)
    b = batch(jobs)
    if workload is not None:
        b["workload"] = np.array(workload, dtype=np.int64)
    if score is not None:
        b["share_score"] = np.array(score, dtype=np.int64)
    if gmem is not None:
        b["gmem"] = np.array(gmem, dtype=float)
    sim.add_jobs(b)
    sim.run()
    res = sim.jobs.results()
    return sim, {k: v.tolist() for k, v in res.items()}


def test_packing_pairs_a_job_with_a_running_one_even_with_free_gpus():
    # A (4 GPUs) runs; B (4 GPUs) arrives; packing is on: B shares A's GPUs at their pair speeds
    pairs = {(0, 1): (0.5, 0.5, 90.0, 8000.0)}
    sim, res = lucid_vc([(0, 100, 4, 100.0), (10, 50, 4, 60.0)], pairs=pairs, workload=[0, 1])
    assert res["shared"] == [1, 1]
    assert res["first_node"] == [0, 0]
    # B at speed 0.5 needs 100 steps from t=11: ends at 111. A has 90 left at t=10 and loses 0.5 at
    # each of t=11..111 (it comes before B in the run list, so its step at 111 is still at 0.5):
    # 39.5 left; then speed 1 from 112 -> 40 more steps -> ends at 152.
    assert res["end_time"] == [152, 111]


@pytest.mark.parametrize("compat", ["lucid", "clean"])
def test_partner_recovery_when_the_host_ends_first(compat):
    # A (host, 4 GPUs, 50 s) and B (guest, 200 s) share at speed 0.5 each from t=10. Lucid's lookup
    # of "the partner" finds the ending host itself, so B keeps speed 0.5; clean: B recovers.
    pairs = {(0, 1): (0.5, 0.5, 90.0, 8000.0)}
    _, res = lucid_vc([(0, 50, 4, 100.0), (10, 200, 4, 60.0)], compat=compat, pairs=pairs, workload=[0, 1])
    if compat == "lucid":
        # A: 40 left at t=10 (countdown from t=1), 0.5/s -> 80 more steps -> ends at 10 + 80 + 1 = 91.
        # B: 0.5/s from t=11 for 400 steps -> ends at 411; it never recovers.
        assert res["end_time"] == [91, 411]
    else:
        # A: 40 left at t=10, 0.5/s -> ends at 90. B: 40 done by t=90, 160 left at speed 1 -> 250.
        assert res["end_time"] == [90, 250]


@pytest.mark.parametrize("field,values", [
    ("gpu", None),  # different GPU counts never pair
    ("gmem", [20000.0, 6000.0]),  # together beyond 24,576 MB
    ("score", [2, 1]),  # share scores sum above 2
    ("estimate", None),  # the job's priority more than twice the partner's
])
def test_partner_rules(field, values):
    jobs = [(0, 100, 4, 100.0), (10, 50, 4, 60.0)]
    kw = {}
    if field == "gpu":
        jobs[1] = (10, 50, 2, 60.0)
    elif field == "estimate":
        jobs[1] = (10, 50, 4, 201.0)
    elif field == "gmem":
        kw["gmem"] = values
    else:
        kw["score"] = values
    _, res = lucid_vc(jobs, **kw)
    assert res["shared"] == [0, 0]
    assert res["start_time"][1] == 10  # placed exclusively on the 4 free GPUs instead


def test_packing_off_blocks_in_priority_order():
    # switch off: exclusive placement, blocking. C (2 GPUs) waits behind B (8 GPUs, better priority)
    # although it would fit; B starts when A ends (101), C when B ends (101 + 10 + 1)
    off = PackingSwitch(times=[0], values=[False])
    _, res = lucid_vc([(0, 100, 4, 1.0), (5, 10, 8, 0.5), (6, 10, 2, 50.0)], switch=off)
    assert res["shared"] == [0, 0, 0]
    assert res["start_time"] == [0, 101, 112]


def test_packing_switch_from_forecast():
    times = np.arange(0, 6000, 600)
    fc = {"times": times, "pred_gpu_job": np.array([5, 5, 1, 1, 1, 1, 1, 1, 9, 9.0]),
          "pred_gpu_num": np.zeros(10)}
    sw = packing_switch(fc, threshold=2.0, bins=5, period_s=100)
    # at t=0 the next five bins (600..3000) average (5+1+1+1+1)/5 = 1.8 <= 2 -> off
    assert sw.at(0) is False and sw.at(50) is False
    # at t=2400: bins 3000..5400 -> 1,1,1,9,9 -> 4.2 -> on
    assert sw.at(2400) is True
    # the forecast has run out: on
    assert sw.at(10_000) is True


def test_forecast_mean_follows_the_reference():
    fm = ForecastMean(times=[0, 600, 1200], values=[10, 20, 30])
    assert fm.at(0) == 25.0  # fewer than 6 bins left: the mean of those after t
    assert fm.at(1200) == -1.0


SCALING = {"borrow_above_jobs": 10, "borrow_period_s": 10, "return_below_jobs": 5, "return_period_s": 100,
           "return_forecast_factor": 5, "forecast_bins": 5}


def profiler_settings(compat=True, lender=None, forecast=None):
    return {"params": SimParams.for_mode("lucid" if compat else "clean"), "pool": pools(1)[0], "time_limit": 200,
            "factor": 4, "lender": lender, "forecast": forecast, "scaling": SCALING}


def trace_batch(rows):
    """rows: (vc, submit, duration, gpu) -> the job batch the coordinator sends to the profiler."""
    n = len(rows)
    t = pa.table({"job_id": np.arange(n), "vc": [r[0] for r in rows], "user": ["u"] * n,
                  "gpu_num": pa.array([r[3] for r in rows], pa.int32()), "cpu_num": pa.array([1] * n, pa.int32()),
                  "submit_time": [r[1] for r in rows], "duration": [r[2] for r in rows], "state": ["C"] * n,
                  "gpu_util": [50.0] * n, "gmem": [1000.0] * n})
    return jobs_batch(t, np.ones(n))


def test_profiler_least_gpu_first_time_limit_and_skips():
    rows = [("a", 0, 500, 4), ("a", 0, 100, 2), ("a", 0, 300, 8), ("a", 0, 50, 16)]
    stage = LucidProfiler(profiler_settings(compat=True), {"a": 0}, 1)
    out, status = stage.process(trace_batch(rows), 0, 10_000)
    rec = status["records"].to_pydict()
    order = np.argsort(rec["seq"])
    # 1 node (factor 4 -> jobs of <= 4 GPUs): job 1 (2 GPUs) and job 0 (4) start at 0; job 2 (8 GPUs)
    # and job 3 (16) skip profiling. Job 1 (100 s) finishes there; job 0 leaves after 200 s.
    assert [rec["seq"][i] for i in order] == [0, 1]
    assert [rec["finished"][i] for i in order] == [False, True]
    assert [rec["prof_end"][i] for i in order] == [200, 100]
    # compat: every job not finished in profiling goes to its VC at its submit time, full duration
    vc_jobs = out[0]["jobs"].to_pydict()
    assert vc_jobs["seq"] == [0, 2, 3] and vc_jobs["submit_time"] == [0, 0, 0]
    assert vc_jobs["duration"] == [500, 300, 50]


def test_profiler_clean_hand_off_after_profiling():
    rows = [("a", 0, 500, 4), ("a", 10, 300, 4)]
    stage = LucidProfiler(profiler_settings(compat=False), {"a": 0}, 1)
    out, status = stage.process(trace_batch(rows), 0, 10_000)
    vc_jobs = out[0]["jobs"].to_pydict()
    # job 0 profiled 0..200, job 1 waits (4 + 4 GPUs fit one node: both start at once) 10..210
    assert vc_jobs["seq"] == [0, 1]
    assert vc_jobs["submit_time"] == [200, 210]
    assert vc_jobs["duration"] == [300, 100]


def test_profiler_borrows_and_returns_a_node():
    # 14 jobs of 4 GPUs on a 1-node pool: 2 run, 12 wait
    rows = [("a", 0, 1000, 4)] * 14
    stage = LucidProfiler(profiler_settings(compat=True, lender="b"), {"a": 0, "b": 0}, 1)
    out, _ = stage.process(trace_batch(rows), 0, 100_000)
    loans = out[0]["loans"]
    assert loans[0] == ("b", 0, -1)  # more than 10 wait at t=0: the lender gives a node
    assert loans[1][2] == +1 and loans[1][1] % 100 == 0  # returned later, at a multiple of 100 s
    assert len(loans) == 2


def lucid_on_shipped_trace(compat):
    from raysim.paths import TRACES_DIR
    from raysim.policy import policy_settings
    from raysim.policy.lucid_inputs import lucid_inputs
    from raysim.runtime.spec import RunSpec
    from raysim.trace.load import load_trace

    trace = load_trace(TRACES_DIR / "venus_synth")
    settings = policy_settings("lucid", {"profiler": {"take_from": ["vc8Gr", "vcefl"], "lender": "vcYVn"}})
    spec, extra = lucid_inputs(settings, trace, RunSpec("lucid", "consolidate", SimParams.for_mode(compat),
                                                   layout_from_vc_nodes(trace.vc_nodes, 8)))
    est = trace.table.column("duration").to_numpy().astype(float)
    return trace, spec, est, extra


@pytest.mark.parametrize("compat", ["lucid", "clean"])
def test_lucid_invariants_on_the_shipped_trace(compat):
    from raysim.run.simulate import simulate

    trace, spec, est, extra = lucid_on_shipped_trace(compat)
    jobs, series = simulate(trace, spec, est, job_extra=extra)
    assert jobs.column("job_id").to_pylist() == trace.table.column("job_id").to_pylist()
    submit, start, end = (jobs.column(c).to_numpy() for c in ("submit_time", "start_time", "end_time"))
    assert (start >= submit).all() and (end > start).all()
    assert (jobs.column("queue").to_numpy() >= 0).all()
    assert np.array_equal(jobs.column("jct").to_numpy(), end - submit)
    assert jobs.column("shared").to_numpy().sum() > 0 and jobs.column("profiled").to_numpy().sum() > 0
    idle, total = series.column("idle_gpu_num").to_numpy(), series.column("total_gpu_num").to_numpy()
    assert (idle >= 0).all() and (idle <= total).all()
    if compat == "clean":  # profiling time is part of the job's life: it can't end before submit + duration
        assert (end - submit >= jobs.column("duration").to_numpy()).all()


@pytest.mark.slow
def test_lucid_ray_equals_local():
    import ray

    from raysim.run.simulate import simulate
    from raysim.runtime.ray_backend import ensure_ray

    trace, spec, est, extra = lucid_on_shipped_trace("lucid")
    local, _ = simulate(trace, spec, est, job_extra=extra)
    ensure_ray(num_cpus=2)
    try:
        on_ray, _ = simulate(trace, spec, est, job_extra=extra, runtime="ray", vcs_per_actor=5, window_s=3 * 86400)
    finally:
        ray.shutdown()
    assert on_ray.equals(local)


def _lucid_run(tmp_path, *overrides):
    """A Lucid run on the shipped Venus-like trace (oracle estimates, in-process): its jobs.parquet."""
    import pyarrow.parquet as pq
    from hydra import compose, initialize_config_dir

    import raysim.cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run import run

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "policy=lucid", "estimator.source=oracle",
                                                       "runtime=local", "trace.cache=false", *NO_PAGES, *overrides])
    summary = run(cfg, tmp_path)
    return pq.read_table(tmp_path / "jobs.parquet").to_pandas(), summary


def test_lucid_ablations_packing_off_and_profiler_off(tmp_path):
    """docs/lucid_ablations.md: policy.packing=false shares no GPUs, policy.profiler.nodes=0 profiles no job
    (and is no traceback); both runs finish every job and differ from Lucid itself."""
    full, full_summary = _lucid_run(tmp_path / "full")
    assert full.shared.sum() > 0 and full.profiled.sum() > 0
    no_packing, summary = _lucid_run(tmp_path / "packing_off", "policy.packing=false")
    assert no_packing.shared.sum() == 0 and no_packing.profiled.sum() == full.profiled.sum()
    assert no_packing.finished.all() and summary["avg_jct"] != full_summary["avg_jct"]
    no_profiler, summary = _lucid_run(tmp_path / "profiler_off", "policy.profiler.nodes=0")
    assert no_profiler.profiled.sum() == 0 and no_profiler.shared.sum() > 0 and no_profiler.finished.all()
    assert (no_profiler.start_time >= no_profiler.submit_time).all()
    assert summary["avg_jct"] != full_summary["avg_jct"]
