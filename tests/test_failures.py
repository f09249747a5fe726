"""Node failures as capacity producers (raysim.sim.failures): seeded per node, lazy, picklable streams
whose lifetimes, category shares and repairs follow their settings."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from raysim.sim.capacity import DOWN, RESTART, UP
from raysim.sim.extensions import Capacity, Checkpoints
from raysim.sim.failures import Category, FailureModel
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

HW, SW = Category("gpu", 0.7, "down"), Category("software", 0.3, "restart")
CAUSES = ("maintenance", "gpu", "software")


def events(stream, n):
    return [stream.next() for _ in range(n)]


def lifetimes(model, n=20000, gpus=8):
    """Times from each node-up to the next failure, over `n` failures of one node."""
    return stream_lifetimes(model.stream(0, "vc", 0, gpus, causes=CAUSES, rank=0), n)


def stream_lifetimes(stream, n):
    """Times from each node-up to the next failure, over `n` failures of one node's `stream`."""
    out, up = [], 0
    while len(out) < n:
        t, _, kind, _ = stream.next()
        if kind == UP:
            up = t
        else:
            out.append(t - up)
            up = t if kind == RESTART else up
    return np.array(out, dtype=float)


@pytest.mark.parametrize("distribution,shape", [("exponential", 1.0), ("weibull", 0.7), ("weibull", 2.0)])
def test_lifetimes_have_the_node_mtbf_as_their_mean(distribution, shape):
    model = FailureModel((HW, SW), node_mtbf_s=36_000, distribution=distribution, shape=shape, repair_s=600)
    life = lifetimes(model)
    assert abs(life.mean() / 36_000 - 1) < 0.03
    if distribution == "weibull":  # its spread follows the shape: cv^2 = G(1+2/k)/G(1+1/k)^2 - 1
        cv2 = math.gamma(1 + 2 / shape) / math.gamma(1 + 1 / shape) ** 2 - 1
        assert abs(life.var() / life.mean() ** 2 / cv2 - 1) < 0.1


def test_a_per_gpu_rate_scales_with_the_nodes_gpus():
    model = FailureModel((HW,), gpu_mtbf_s=80_000)
    assert abs(lifetimes(model, gpus=8).mean() / 10_000 - 1) < 0.03
    assert abs(lifetimes(model, n=5000, gpus=2).mean() / 40_000 - 1) < 0.05


def test_categories_by_share_a_down_one_is_repaired_a_restart_one_keeps_the_node_up():
    model = FailureModel((HW, SW), node_mtbf_s=1000, repair_s=300)
    evs = events(model.stream(1, "vc", 3, 8, causes=CAUSES, rank=7), 30000)
    kinds = [e[2] for e in evs]
    down = [i for i, k in enumerate(kinds) if k == DOWN]
    assert all(kinds[i + 1] == UP and evs[i + 1][3] == evs[i][3] == 1 for i in down[:-1])
    assert all(evs[i + 1][0] - evs[i][0] in (299, 300, 301) for i in down[:-1])  # (whole seconds)
    restarts = [e for e in evs if e[2] == RESTART]
    assert {e[3] for e in restarts} == {2} and abs(len(restarts) / (len(restarts) + len(down)) - 0.3) < 0.02
    times = [e[0] for e in evs]
    assert times == sorted(times) and {e[1] for e in evs} == {7}


def test_repair_zero_brings_the_node_back_in_the_same_second():
    evs = events(FailureModel((HW,), node_mtbf_s=1000).stream(0, "vc", 0, 8, causes=CAUSES, rank=0), 200)
    assert all(evs[i][0] == evs[i + 1][0] and (evs[i][2], evs[i + 1][2]) == (DOWN, UP) for i in range(0, 200, 2))


def test_exponential_repairs_have_their_mean():
    model = FailureModel((Category("gpu", 1.0, "down", repair_s=5000),), node_mtbf_s=1000, repair="exponential")
    evs = events(model.stream(0, "vc", 0, 8, causes=CAUSES, rank=0), 20000)
    repairs = np.array([evs[i + 1][0] - evs[i][0] for i in range(0, len(evs), 2)], dtype=float)
    assert abs(repairs.mean() / 5000 - 1) < 0.04


def test_streams_are_seeded_per_node_and_continue_identically_after_pickling():
    model = FailureModel((HW, SW), node_mtbf_s=5000, repair_s=60)

    def stream(seed=0, vc="vcA", node=0):
        return model.stream(seed, vc, node, 8, causes=CAUSES, rank=node)

    a = stream()
    head = events(a, 10)
    copy = pickle.loads(pickle.dumps(a))
    assert events(copy, 50) == events(a, 50)
    assert events(stream(), 10) == head  # the same node, whenever it is asked
    for other in (stream(seed=1), stream(vc="vcB"), stream(node=1)):
        assert [e[0] for e in events(other, 10)] != [e[0] for e in head]


# ------------------------------------------------------------------------------------------ settings
def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=["+experiment=venus", "runtime=local", *overrides])


@pytest.mark.parametrize("preset", ["none", "exponential", "weibull", "lognormal", "llama3"])
def test_the_presets_pass_the_checks(preset):
    from raysim.run.config import check_cluster_config
    from raysim.run.failures import failure_model

    cfg = compose(f"failures={preset}")
    check_cluster_config(cfg)
    if preset == "llama3":
        model = failure_model(cfg)
        assert sum(c.share for c in model.categories) == 419 and len(model.categories) == 18
        # one interruption per 3.1 hours on 2,048 nodes of 8 GPUs
        assert model.mtbf_s(8) / 3600 / 2048 == pytest.approx(3.09, abs=0.01)


def test_lognormal_and_bad_node_settings_reach_the_model():
    from raysim.run.failures import failure_model

    model = failure_model(compose("failures=lognormal", "failures.bad_fraction=0.15", "failures.bad_multiplier=6"))
    assert (model.distribution, model.sigma, model.bad_fraction, model.bad_multiplier) == ("lognormal", 1.0, 0.15, 6.0)
    plain = failure_model(compose("failures=exponential"))
    assert (plain.sigma, plain.bad_fraction, plain.bad_multiplier) == (1.0, 0.0, 1.0)


@pytest.mark.parametrize("overrides,key", [
    (["failures=exponential", "failures.node_mtbf_h=0"], "failures.node_mtbf_h"),
    (["failures=exponential", "failures.node_mtbf_h=nan"], "failures.node_mtbf_h"),
    (["failures=exponential", "failures.gpu_mtbf_h=100"], "failures.node_mtbf_h"),
    (["failures=exponential", "failures.repair_h=-1"], "failures.repair_h"),
    (["failures=exponential", "failures.node_mtbf_h=1e300"], "failures.node_mtbf_h"),
    (["failures=llama3", "failures.repair_h=1e12"], "failures.repair_h"),
    (["failures=exponential", "failures.repair=weekly"], "failures.repair"),
    (["failures=exponential", "+failures.shape=2"], "failures.shape"),
    (["failures=weibull", "failures.shape=inf"], "failures.shape"),
    (["failures=weibull", "failures.shape=1e-300"], "failures.shape"),  # (gamma(1 + 1/k) overflowed)
    (["failures=exponential", "failures.categories=[{name: a, share: 0, kind: down}]"], "failures.categories[0].share"),
    # (two shares of 1e308 summed to inf: every failure fell in the last category)
    (["failures=exponential", "failures.categories=[{name: a, share: 1e308}, {name: b, share: 1e308}]"],
     "failures.categories[0].share"),
    (["failures=exponential", "failures.categories=[{name: a, share: inf}]"], "failures.categories[0].share"),
    (["failures=exponential", "failures.categories=[{name: a, share: nan}]"], "failures.categories[0].share"),
    (["failures=exponential", "failures.categories=[{name: a, share: 1, kind: x}]"], "failures.categories[0].kind"),
    (["failures=exponential", "failures.categories=[{name: a b, share: 1, kind: down}]"], "categories[0].name"),
    # (a category named as the stops no failure made would merge with their row of lost_by_cause.csv)
    (["failures=exponential", "failures.categories=[{name: preemptions, share: 1, kind: down}]"], "categories[0].name"),
    (["failures=trace", "failures.path=f.csv", "+failures.kinds.reclaims=down"], "failures.kinds"),
    (["failures=exponential", "failures.categories=[{name: a, share: 1, kind: down, x: 1}]"], "categories[0].x"),
    (["failures=exponential", "failures.categories=[]"], "failures.categories"),
    (["failures=trace"], "failures.path"),
    (["failures=trace", "failures.path=f.csv", "+failures.kinds.a=sideways"], "failures.kinds.a"),
    (["failures=exponential", "policy=lucid"], "failures"),
    (["failures=exponential", "+failures.sigma=1"], "failures.sigma"),
    (["failures=exponential", "failures.distribution=lognormal"], "failures.sigma"),
    (["failures=lognormal", "failures.sigma=0"], "failures.sigma"),
    (["failures=lognormal", "failures.sigma=4"], "failures.sigma"),
    (["failures=exponential", "failures.bad_fraction=0.15"], "failures.bad_multiplier"),
    (["failures=exponential", "failures.bad_multiplier=5"], "failures.bad_multiplier"),
    (["failures=exponential", "failures.bad_fraction=1.5", "failures.bad_multiplier=5"], "failures.bad_fraction"),
    (["failures=exponential", "failures.bad_fraction=-0.1", "failures.bad_multiplier=5"], "failures.bad_fraction"),
    (["failures=exponential", "failures.bad_fraction=0.1", "failures.bad_multiplier=0.5"], "failures.bad_multiplier"),
    (["failures=llama3", "failures.bad_fraction=0.1", "failures.bad_multiplier=inf"], "failures.bad_multiplier"),
])
def test_bad_failure_settings_are_one_line_naming_the_key(overrides, key):
    from raysim.errors import ConfigError, user_error_message
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as err:
        check_cluster_config(compose(*overrides))
    message = user_error_message(err.value)
    assert f"{key}:" in message or f"{key} " in message or message.startswith(f"raysim: error: {key}")
    assert "\n" not in message


# -------------------------------------------------------------------------------------------- traces
def trace_file(tmp_path, text):
    path = tmp_path / "failures.csv"
    path.write_text("time,vc,node,category,repair_s\n" + text)
    return path


def layout():
    from raysim.cluster.layout import Pool

    return {"vcA": (Pool("gpu", 8, 2),), "vcB": (Pool("gpu", 8, 1),)}


KINDS = {"failure": "down", "software": "restart"}


def test_a_failure_trace_replays_per_node_in_time_then_file_order(tmp_path):
    from raysim.sim.failure_trace import read_failure_trace

    path = trace_file(tmp_path, "500,vcA,1,software,\n100,vcA,1,failure,300\n100,vcB,0,failure,0\n")
    out = read_failure_trace(path, layout(), KINDS, ("failure", "software"))
    assert out[("vcA", 1)] == [(100, 1, DOWN, 0), (400, 1, UP, 0), (500, 0, RESTART, 1)]
    assert out[("vcB", 0)] == [(100, 2, DOWN, 0), (100, 2, UP, 0)]


@pytest.mark.parametrize("text,where", [
    ("10,vcC,0,failure,5\n", "row 1 (line 2), column 'vc'"),
    ("10,vcA,2,failure,5\n", "row 1 (line 2), column 'node'"),
    ("10,vcA,0,meteor,5\n", "row 1 (line 2), column 'category'"),
    ("10,vcA,0,software,5\n", "row 1 (line 2), column 'repair_s'"),
    ("-1,vcA,0,failure,5\n", "row 1 (line 2), column 'time'"),
    ("10,vcA,0,failure,1.5\n", "row 1 (line 2), column 'repair_s'"),
    ("10,vcA,0,failure,100\n50,vcA,0,software,\n", "row 2 (line 3), column 'time'"),
    ("true,vcA,0,failure,5\n", "row 1 (line 2), column 'time'"),  # a boolean is not a time
    ("", "no failures"),
])
def test_a_bad_failure_trace_is_one_line_naming_the_file_row_and_column(tmp_path, text, where):
    from raysim.sim.failure_trace import read_failure_trace
    from raysim.errors import TraceError

    path = trace_file(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_failure_trace(path, layout(), KINDS, ("failure", "software"))
    assert str(path) in str(err.value) and where in str(err.value) and "\n" not in str(err.value)


def test_a_failure_trace_whose_repair_s_is_empty_throughout_repairs_at_once(tmp_path):
    from raysim.sim.failure_trace import read_failure_trace

    path = trace_file(tmp_path, "100,vcA,1,failure,\n500,vcA,1,software,\n")  # (Arrow reads a column of nulls)
    out = read_failure_trace(path, layout(), KINDS, ("failure", "software"))
    assert out[("vcA", 1)] == [(100, 0, DOWN, 0), (100, 0, UP, 0), (500, 1, RESTART, 1)]


# ------------------------------------------------------------------------------ merged with a node log
def merged(failures, log, absent=False):
    from raysim.sim.capacity import LogStream
    from raysim.sim.failures import Merged

    stream = Merged(LogStream(tuple(failures)), LogStream(tuple(log)), absent)
    return [e for e in iter(stream.next, None)]


def test_a_failure_while_the_log_has_the_node_down_does_not_happen():
    log = [(100, 0, DOWN, 0), (500, 0, UP, 0)]
    fails = [(200, 5, DOWN, 1), (300, 5, UP, 1), (400, 5, RESTART, 2), (600, 5, RESTART, 2)]
    assert merged(fails, log) == log[:1] + log[1:] + [(600, 5, RESTART, 2)]


def test_the_node_comes_back_when_neither_source_holds_it_down():
    log = [(200, 0, DOWN, 0), (300, 0, UP, 0)]
    fails = [(100, 5, DOWN, 1), (400, 5, UP, 1), (500, 5, DOWN, 1), (500, 5, UP, 1)]
    # down by a failure at 100, the maintenance inside its repair changes nothing, up at the repair's end
    assert merged(fails, log) == [(100, 5, DOWN, 1), (400, 5, UP, 1), (500, 5, DOWN, 1), (500, 5, UP, 1)]
    log = [(200, 0, DOWN, 0), (600, 0, UP, 0)]  # maintenance outlasts the repair: up when it ends
    assert merged(fails[:2], log) == [(100, 5, DOWN, 1), (600, 0, UP, 0)]


def test_after_a_node_leaves_no_failure_follows_and_an_absent_node_fails_only_once_it_joined():
    fails = [(50, 5, RESTART, 2), (150, 5, RESTART, 2), (250, 5, RESTART, 2)]
    assert merged(fails, [(100, 0, DOWN, 0)]) == [(50, 5, RESTART, 2), (100, 0, DOWN, 0)]
    assert merged(fails, [(100, 0, UP, 0)], absent=True) == [(100, 0, UP, 0), (150, 5, RESTART, 2),
                                                             (250, 5, RESTART, 2)]


# ------------------------------------------------------------------------------------------ the engine
def failing_vc(categories, *, nodes=2, mtbf_s=1000.0, repair_s=0.0, jobs=1, seed=0, checkpoint=None):
    from simutil import pools

    from raysim.placement import make_placer
    from raysim.policy import make_policy
    from raysim.sim import SimParams, VCSimulator
    from raysim.sim.capacity import CapacityPlan
    from raysim.sim.failures import failing_vcs

    params = SimParams.for_mode("clean")
    model = FailureModel(tuple(categories), node_mtbf_s=mtbf_s, repair_s=repair_s)
    causes = tuple(c.name for c in categories)
    plan = CapacityPlan(causes, failing_vcs(model, seed, {"vc": pools(nodes)}, (), causes, {}, {"vc": jobs}))
    return VCSimulator("vc", pools(nodes), make_policy("fifo", params=params),
                       make_placer("consolidate", params=params), params,
                       extensions=[Capacity(plan)] + ([Checkpoints(checkpoint)] if checkpoint else []))


@pytest.mark.parametrize("interval_s", [None, 60])
def test_progress_is_a_job_keeping_more_work_than_ever_never_a_run_that_is_lost(interval_s):
    from simutil import batch

    from raysim.sim.checkpoint import Checkpointing

    sim = failing_vc([SW], nodes=1, mtbf_s=300, checkpoint=interval_s and Checkpointing(interval_s))
    sim.add_jobs(batch([(10, 100_000, 8)]))
    sim.run(until=20_000)
    assert sim.results()["interruptions"][0] > 20 and sim.unfinished == 1
    if interval_s is None:  # every restart starts over: nothing since its arrival into the empty VC
        assert sim.progress_at == 10
    else:  # the latest stop that left it less work than any before
        assert sim.progress_at > 10_000 and sim.jobs.least_remain[0] < 100_000 - 10_000


def test_a_software_failure_restarts_the_job_and_leaves_the_node_up():
    from simutil import batch

    sim = failing_vc([SW], nodes=1, mtbf_s=300)
    sim.add_jobs(batch([(0, 1000, 8)]))
    sim.run(until=2000)
    r = sim.results()
    assert r["intr_0"][0] == r["interruptions"][0] > 0  # (its one cause: software)
    assert sim.nodes_down == 0 and sim.vc.total_gpus == 8  # the node never went down


def test_a_repaired_node_takes_new_work():
    from simutil import batch, pools

    from raysim.placement import make_placer
    from raysim.policy import make_policy
    from raysim.sim import SimParams, VCSimulator
    from raysim.sim.capacity import CapacityPlan
    from raysim.sim.failure_trace import TracedVC

    params = SimParams.for_mode("clean")
    failures = {0: ((5, 0, DOWN, 0), (300, 0, UP, 0))}  # node 0 fails at 5, repaired at 300
    sim = VCSimulator("vc", pools(1), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=[Capacity(CapacityPlan(("gpu",), {"vc": TracedVC(failures, ("gpu",), None, 2)}))])
    sim.add_jobs(batch([(0, 100, 8), (10, 50, 8)]))
    sim.run()
    r = {k: v.tolist() for k, v in sim.results().items()}
    assert r["interruptions"] == [1, 0] and r["end_time"] == [300 + 100, 400 + 50]  # both on the repaired node


def test_a_vc_with_failures_pickled_midway_continues_identically():
    from simutil import batch, pickled_midway_and_whole, random_jobs

    jobs = random_jobs(np.random.default_rng(3), 200, 20_000)

    def fresh():
        sim = failing_vc([HW, SW], nodes=4, mtbf_s=3000, repair_s=200, jobs=len(jobs))
        sim.add_jobs(batch(jobs))
        return sim

    half, whole = pickled_midway_and_whole(fresh, 10_000)
    assert half == whole and sum(whole["interruptions"]) > 0


def test_venus_with_failures_and_checkpoints_is_the_same_in_any_window(tmp_path):
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    cfg = compose("policy=srtf", "failures=llama3", "failures.gpu_mtbf_h=2000", "failures.repair_h=1",
                  "checkpoint.interval_s=1800", "checkpoint.write_s=30", "checkpoint.restart_s=60")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    jobs, _ = simulate(trace, spec, None, job_extra=extra)
    df = jobs.to_pandas()
    assert jobs.column("finished").to_numpy().all() and df.interruptions.sum() > 0
    assert df.interruptions_faulty_gpu.sum() > 0 and df.interruptions_software_bug.sum() > 0
    assert df.lost_gpu_s.sum() > 0 and (df.start_time >= df.submit_time).all()
    small, _ = simulate(trace, spec, None, job_extra=extra, window_s=3600)
    assert small.equals(jobs)


def test_venus_with_a_failure_trace_and_a_node_log_under_one_cluster_wide_queue(tmp_path):
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    log = tmp_path / "log.csv"
    log.write_text("time,vc,node,event,cause\n86400,vcEwI,0,down,maintenance\n100000,vcEwI,0,up,maintenance\n")
    path = trace_file(tmp_path, "90000,vcEwI,0,failure,3600\n90000,vcEwI,1,failure,7200\n"
                                "120000,vcEwI,2,software,\n200000,vcWoR,3,failure,0\n")
    cfg = compose("policy=tiresias", "quota=global", f"cluster.capacity={log}", "failures=trace",
                  f"failures.path={path}", "checkpoint.interval_s=600")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert spec.capacity.causes == ("maintenance", "failure", "software")
    jobs, series = simulate(trace, spec, None, job_extra=extra)
    df = jobs.to_pandas()
    assert jobs.column("finished").to_numpy().all() and df.interruptions_maintenance.sum() > 0
    assert df.interruptions_failure.sum() > 0 and df.lost_gpu_s.sum() > 0


def venus_failures_spec():
    from raysim.run.config import load_from_config, spec_from_config

    cfg = compose("policy=srtf", "failures=llama3", "failures.gpu_mtbf_h=2000", "checkpoint.interval_s=1800",
                  "checkpoint.write_s=30", "checkpoint.restart_s=60")
    trace = load_from_config(cfg)
    return (trace, *spec_from_config(cfg, trace))


def test_a_run_with_failures_and_checkpoints_resumes_from_its_checkpoint_identically(tmp_path):
    import pyarrow.parquet as pq
    from test_ray_runtime import StopAfter

    from raysim.run.simulate import simulate, simulate_to, vc_groups

    trace, spec, extra = venus_failures_spec()
    whole, whole_ts = simulate(trace, spec, None, job_extra=extra, window_s=86_400)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Exception):
        simulate_to(tmp_path / "a", trace, spec, None, window_s=86_400, checkpoint_dir=ckpt, checkpoint_every=2,
                    job_extra=extra, executor=StopAfter(spec, vc_groups(spec.vcs, 1), windows=5))
    simulate_to(tmp_path / "b", trace, spec, None, window_s=86_400, checkpoint_dir=ckpt, resume=True,
                job_extra=extra)
    assert pq.read_table(tmp_path / "b" / "jobs.parquet").equals(whole)
    assert pq.read_table(tmp_path / "b" / "timeseries.parquet").equals(whole_ts)


@pytest.mark.slow
def test_a_run_with_failures_and_checkpoints_is_the_same_on_ray(tmp_path, ray_local):  # noqa: F811
    from simutil import assert_same_on_ray

    trace, spec, extra = venus_failures_spec()
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"vcs_per_actor": 4, "window_s": 86_400}])


# ------------------------------------------------------------------------------------- the stall guard
def tiny_run(tmp_path, rows, vcs, *overrides):
    """(trace, spec, job inputs) of a raysim-schema trace of `rows` (vc, gpus, submit, duration) on
    VCs `vcs` ({vc: nodes of 8 GPUs}), with the Venus experiment's settings and `overrides`."""
    from raysim.run.config import load_from_config, spec_from_config

    lines = [f"{i},{vc},u,{g},4,{t},{d},COMPLETED" for i, (vc, g, t, d) in enumerate(rows, 1)]
    (tmp_path / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                       + "\n".join(lines) + "\n")
    (tmp_path / "vc_config.csv").write_text(",num\n" + "".join(f"{vc},{n}\n" for vc, n in vcs.items()))
    cfg = compose(f"trace.path={tmp_path / 'jobs.csv'}", *overrides)
    trace = load_from_config(cfg)
    return (trace, *spec_from_config(cfg, trace))


#: vcA's hour-long job cannot run 3,600 s between failures 36 s apart (repairs of 4 hours); vcB's jobs
#: are done within a minute
NEVER_ENDS = ([("vcA", 8, 0, 3600), ("vcA", 1, 60, 30), ("vcB", 8, 20, 50)], {"vcA": 1, "vcB": 2},
              "failures=exponential", "failures.node_mtbf_h=0.01")


def test_a_run_whose_jobs_cannot_finish_stops_after_its_stall_bound_and_writes_what_it_has(tmp_path):
    import pyarrow.parquet as pq

    from raysim.run.simulate import RunStalled, simulate_to

    trace, spec, extra = tiny_run(tmp_path, *NEVER_ENDS)
    said = []
    for window_s in (604_800, 86_400):  # the stop point does not depend on the windows
        with pytest.raises(RunStalled) as stop:
            simulate_to(tmp_path / str(window_s), trace, spec, None, job_extra=extra, stall_s="auto", window_s=window_s)
        said.append(str(stop.value))
    assert said[0] == said[1]
    assert said[0] == ("the run stopped at t=2592001: VC vcA has 2 unfinished job(s) (0 running) and none of its jobs "
                       "finished or kept more work for 30.0 days of simulated time, since t=0; jobs.parquet and "
                       "timeseries.parquet hold the run up to there (unfinished jobs have no end); to go on, raise "
                       "sim.stall_s (now auto: 10 x the VC's longest job, at least 30 days) or set it to off")
    for name in ("jobs.parquet", "timeseries.parquet"):
        assert (tmp_path / "604800" / name).read_bytes() == (tmp_path / "86400" / name).read_bytes()
    jobs = pq.read_table(tmp_path / "86400" / "jobs.parquet").to_pandas().set_index("job_id").sort_index()
    assert jobs.finished.tolist() == [False, False, True] and jobs.interruptions[1] > 100
    with pytest.raises(RunStalled, match=r"at t=3601: .* for 0\.0 days of simulated time, since t=0; .* "
                                         r"\(now 3,600 s\)"):
        simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra, stall_s=3600)


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_a_long_queue_is_not_a_stall(tmp_path, policy):
    from raysim.run.simulate import simulate_to

    # 40 days of day-long jobs on one node: 4 x the least bound, 40 x the longest job
    trace, spec, extra = tiny_run(tmp_path, [("vcA", 8, 0, 86_400)] * 40, {"vcA": 1}, f"policy={policy}")
    counts = simulate_to(tmp_path / "out", trace, spec, None, job_extra=extra, stall_s="auto", window_s=86_400)
    assert counts["windows"] >= 40


@pytest.mark.slow
def test_a_stalled_run_stops_at_the_same_point_on_ray(tmp_path, ray_local):  # noqa: F811
    from raysim.run.simulate import RunStalled, simulate_to

    trace, spec, extra = tiny_run(tmp_path, *NEVER_ENDS)
    said = []
    for runtime in ("local", "ray"):
        with pytest.raises(RunStalled) as stop:
            simulate_to(tmp_path / runtime, trace, spec, None, runtime=runtime, vcs_per_actor=1, job_extra=extra,
                        stall_s="auto")
        said.append(str(stop.value))
    assert said[0] == said[1]
    for name in ("jobs.parquet", "timeseries.parquet"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
