"""Failure clocks that run only while work progresses (`failures.clock=busy`, raysim.sim.busy, issue 50):
an idle node never fails, nor one whose jobs only restore their checkpoint; each stretch of progress
draws a fresh lifetime from the node's own generator, dropped when the stretch ends first; a lone
job's mean JCT is AIReSim's W + lambda N W r, not W e^(lambda N r) as under clock=up
(docs/airesim.md); and what busy clocks cannot run with is one line naming failures.clock."""

from __future__ import annotations

import math

import numpy as np
import pytest

from raysim.sim.capacity import DOWN, UP, CapacityPlan
from raysim.sim.failures import Category, FailureModel, stable_hash
from raysim.trace.lone import write_lone_jobs
from test_ray_runtime import ray_local  # noqa: F401  (a fixture)

HW = Category("gpu", 1.0, "down")
H = 3600


def busy_stream(mtbf_s=5 * H, seed=0, node=0, **kw):
    model = FailureModel((HW,), node_mtbf_s=mtbf_s, clock="busy", **kw)
    return model.stream(seed, "vc", node, 8, causes=("gpu",), rank=node)


def draws(seed=0, node=0):
    """The node's own generator, as its stream draws from it."""
    return np.random.default_rng([seed, stable_hash("vc"), node])


def test_an_idle_node_never_fails_and_work_draws_its_lifetime_as_it_begins():
    stream, rng = busy_stream(), draws()
    assert stream.next() is None  # idle from the start: no failure pending
    life = rng.exponential(5 * H)
    rng.random()  # (its category)
    assert stream.carry(7, 100 * H, 100 * H)
    assert stream.armed == (int(100 * H + life), 0, DOWN, 0)
    assert stream.rest(7, 100 * H + 10) and stream.armed is None  # the job stopped first: dropped
    again = rng.exponential(5 * H)
    assert stream.carry(7, 200 * H, 200 * H) and stream.armed[0] == int(200 * H + again)  # a fresh draw


def test_a_restore_does_not_age_the_node_and_the_failure_then_repairs_it():
    stream, rng = busy_stream(repair_s=600), draws()
    life = rng.exponential(5 * H)
    assert stream.carry(1, 1000 + 300, 1000)  # restoring until 1300
    t = int(1300 + life)
    assert stream.armed == (t, 0, DOWN, 0)
    assert stream.next() == (t + 600, 0, UP, 0)  # the engine applies the failure: its repair follows
    assert stream.next() is None and stream.rest(1, t) is False  # (its jobs stop: nothing was pending)


def test_a_stretch_of_progress_lasts_while_some_job_progresses():
    stream = busy_stream()
    stream.carry(1, 0, 0)  # progressing from 0
    assert not stream.carry(2, 100, 10)  # (a second job restoring until 100: the stretch goes on)
    first = stream.armed
    assert not stream.rest(1, 150) and stream.armed == first  # job 2 progresses since 100: no gap
    stream.carry(1, 160, 160)
    stream2 = busy_stream()
    stream2.carry(1, 0, 0)
    stream2.carry(2, 100, 10)
    assert stream2.rest(1, 50) and stream2.since == 100  # a gap from 50 to 100: a fresh stretch at 100


def one_node_sim(*, clock, seed, restart_s, mtbf_s, jobs, until=math.inf, nodes=1, counts=(), **model):
    """A VC of one 8-GPU node (or `nodes`) under FIFO, failures of one down category repaired at once
    (or as `model`, more FailureModel fields, says; `counts`: the plan's) and a checkpoint every
    second: its results after running `jobs` (until None: the simulator, not run)."""
    from simutil import batch, pools

    from raysim.placement import make_placer
    from raysim.policy import make_policy
    from raysim.sim import SimParams, VCSimulator
    from raysim.sim.checkpoint import Checkpointing
    from raysim.sim.extensions import Capacity, Checkpoints
    from raysim.sim.failures import failing_vcs

    params = SimParams.for_mode("clean")
    model = FailureModel((HW,), node_mtbf_s=mtbf_s, clock=clock, **model)
    plan = CapacityPlan(("gpu",), failing_vcs(model, seed, {"vc": pools(nodes)}, (), ("gpu",), {}, {"vc": len(jobs)}),
                        busy=clock == "busy", counts=counts)
    sim = VCSimulator("vc", pools(nodes), make_policy("fifo", params=params), make_placer("consolidate", params=params),
                      params, extensions=[Capacity(plan), Checkpoints(Checkpointing(1, 0, restart_s))])
    sim.add_jobs(batch(jobs))
    if until is None:
        return sim
    sim.run(until)
    return sim.results()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_lone_job_fails_only_while_it_progresses_as_computed_by_hand(seed):
    """One node, one job of 10 h submitted at 100 h (idle before: a node MTBF of 5 h would have failed
    it about 20 times), checkpointing every second, restoring 30 min after each failure, repaired at
    once: its end, by the node's draws, is where each stretch of progress fails or the work ends."""
    submit, work, restore, mtbf = 100 * H, 10 * H, 1800, 5 * H
    rng, t, left, failures, since = draws(seed), submit, work, 0, submit
    while True:
        life = rng.exponential(mtbf)
        rng.random()  # (its category)
        fail = max(int(since + life), t + 1)
        if fail >= since + left:  # (a completion comes first in its second)
            end = since + left
            break
        left -= fail - since  # (every second of work is checkpointed)
        failures += 1
        t, since = fail, fail + restore  # back at once, restarted on its node, restoring first
    r = one_node_sim(clock="busy", seed=seed, restart_s=restore, mtbf_s=mtbf, jobs=[(submit, work, 8)])
    assert (r["end_time"][0], r["interruptions"][0]) == (end, failures) and failures > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_job_on_whole_nodes_draws_every_nodes_lifetime_from_its_own_generator(seed):
    """A job holding both 8-GPU nodes of its VC runs on a clock of its own (raysim.sim.busy.JobClocks):
    as each run begins both nodes draw a lifetime at once from the job's generator ([seed, 0, its trace
    sequence number, JOB_LIVES]), the first to end fails; a failure repaired at once restarts the job,
    which restores, then both draw again. Its end and failures, computed by hand from those draws."""
    from raysim.sim.busy import JOB_LIVES

    submit, work, restore, mtbf = 100 * H, 10 * H, 1800, 5 * H
    rng, t, left, failures, since = np.random.default_rng([seed, 0, 0, JOB_LIVES]), submit, work, 0, submit
    while True:
        life = float((rng.standard_exponential(2) * mtbf).min())
        fail = max(int(since + life), t + 1)
        if fail >= since + left:
            end = since + left
            break
        left -= fail - since
        failures += 1
        t, since = fail, fail + restore
    r = one_node_sim(clock="busy", seed=seed, restart_s=restore, mtbf_s=mtbf, jobs=[(submit, work, 16)], nodes=2)
    assert (r["end_time"][0], r["interruptions"][0]) == (end, failures) and failures > 0


def test_an_undiagnosed_failure_under_busy_clocks_restarts_the_job_and_leaves_its_node_up():
    """With diagnosis 0 no failure sends the node to repair: the lone job restarts on its node each
    time (its outcome is drawn as the failure is armed, so the event the engine holds is a restart)
    and finishes; every failure is counted undiagnosed. (The node once went down for good.)"""
    sim = one_node_sim(clock="busy", seed=0, restart_s=60, mtbf_s=H, jobs=[(0, 10 * H, 8)], until=None,
                       diagnosis=0.0, repair_s=600, counts=("undiagnosed",))
    sim.run()
    r = sim.results()
    assert r["end_time"][0] > 10 * H and r["interruptions"][0] > 3 and not sim.unfinished
    assert sim.vc.down == set() and counted(sim) == [r["interruptions"][0]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_failure_blamed_on_the_wrong_node_sends_that_one_to_repair_as_computed_by_hand(seed):
    """failures.wrong_node=1: every diagnosed failure of a node of the 16-GPU job on a VC of two nodes
    is blamed on the job's other node, which goes to repair (600 s) while the failed one stays up:
    the job waits for the repair, restores (60 s), and its clock draws again. Its end and failures,
    by hand from the job's draws; at the first failure the blamed node, not the failed one, is down."""
    from raysim.sim.busy import JOB_LIVES

    work, repair, restore, mtbf = 10 * H, 600, 60, 5 * H
    rng, t, left, failures, since, first = np.random.default_rng([seed, 0, 0, JOB_LIVES]), 0, work, 0, 0, None
    while True:
        lives = rng.standard_exponential(2) * mtbf
        fail = max(int(since + lives.min()), t + 1)
        if fail >= since + left:
            end = since + left
            break
        if first is None:
            first = (fail, int(np.argmin(lives)))  # (the job holds nodes 0 and 1 in this order)
        left -= fail - since
        failures += 1
        t, since = fail + repair, fail + repair + restore
    kw = dict(clock="busy", seed=seed, restart_s=restore, mtbf_s=mtbf, jobs=[(0, work, 16)], nodes=2,
              wrong_node=1.0, repair_s=repair, counts=("wrong_node",))
    r = one_node_sim(**kw)
    assert (r["end_time"][0], r["interruptions"][0]) == (end, failures) and failures > 0
    sim = one_node_sim(**kw, until=None)
    sim.run(first[0] + 1)
    assert sim.vc.down == {1 - first[1]}  # the other node is in repair; the failed one is up
    assert counted(sim) == [1]  # (wrong_node_blamed: the node blamed counts it)


def counted(sim):
    """The VC's counts of its capacity plan (`counts`), summed over its nodes as its time series has them."""
    return next(ext for ext in sim.extensions if ext.name == "capacity").totals


def mean_jct(trace, clock, node_mtbf_h, restart_s, seed=0):
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    cfg = compose(f"trace.path={trace}", "failures=exponential", f"failures.node_mtbf_h={node_mtbf_h}",
                  "failures.repair_h=0", f"failures.clock={clock}", "checkpoint.interval_s=1",
                  f"checkpoint.restart_s={restart_s}", f"seed={seed}", "trace.cache=false")
    trace_ = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace_)
    jobs, _ = simulate(trace_, spec, None, job_extra=extra)
    assert jobs.column("finished").to_numpy().all()
    return float(jobs.column("jct").to_numpy().mean())


def test_a_lone_jobs_mean_jct_is_airesims_under_busy_clocks_and_dalys_under_up(tmp_path):
    """Jobs of W = 8 h on N = 4 nodes each (each on nodes of its own), node failure rate lambda = 1/8 h,
    restore r = 1 h, a checkpoint every second: busy clocks give W + lambda N W r = 12 h (AIReSim's:
    failures only during the work, each costing a restore); up clocks, which fail restores too, give
    Daly's W e^(lambda N r) = 13.2 h (raysim.sim.checkpoint.daly_time)."""
    from raysim.sim.checkpoint import Checkpointing, daly_time

    work, nodes, mtbf_h, restore = 8 * H, 4, 8, H
    trace = write_lone_jobs(tmp_path, 200, work, nodes)
    busy = mean_jct(trace, "busy", mtbf_h, restore)
    assert busy / (work + work * nodes / (mtbf_h * H) * restore) == pytest.approx(1, abs=0.03)  # (0.988)
    up = mean_jct(trace, "up", mtbf_h, restore)
    assert up / daly_time(work, Checkpointing(1, 0, restore), mtbf_h * H / nodes) == pytest.approx(1, abs=0.04)  # (0.978)
    assert up > 1.05 * busy
    assert math.exp(nodes / mtbf_h) * work == pytest.approx(daly_time(work, Checkpointing(1, 0, restore),
                                                                       mtbf_h * H / nodes), rel=1e-3)


# ------------------------------------------------------------------------------------------ settings
def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=["+experiment=venus", "runtime=local", *overrides])


@pytest.mark.parametrize("overrides,message", [
    (["failures=trace", "failures.path=x.csv", "+failures.clock=busy"], r"^failures\.clock: "),
    (["failures=exponential", "failures.clock=busy", "cluster.capacity=log.csv"],
     r"^failures\.clock: busy failure clocks are not merged with a node log"),
    (["failures=exponential", "failures.clock=busy", "quota=borrow"], r"^failures\.clock: a node lent"),
    (["failures=exponential", "failures.clock=busy", "sim.network=on"], r"^failures\.clock: under NIC contention"),
    (["failures=exponential", "failures.clock=busy", "policy=gavel_fifo"], r"^failures\.clock: gavel_fifo times"),
    (["failures=weibull", "failures.clock=later"], r"^failures\.clock: "),
])
def test_what_busy_clocks_cannot_run_with_is_one_line_naming_failures_clock(overrides, message):
    from raysim.errors import ConfigError
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError, match=message):
        check_cluster_config(compose(*overrides))


def test_venus_with_busy_clocks_bad_nodes_and_a_repair_pipeline_is_the_same_in_any_window():
    """The presets run with busy clocks (Weibull lifetimes, bad nodes, repair=pipeline, Llama 3's restart
    and down categories), and are the same in any window."""
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    def run(*overrides, window_s=None):
        cfg = compose("policy=srtf", "checkpoint.interval_s=1800", "checkpoint.restart_s=600", *overrides)
        trace = load_from_config(cfg)
        spec, extra = spec_from_config(cfg, trace)
        return simulate(trace, spec, None, job_extra=extra, **({"window_s": window_s} if window_s else {}))[0]

    llama = ("failures=llama3", "failures.gpu_mtbf_h=2000", "failures.clock=busy")
    busy = run(*llama)
    assert busy.column("finished").to_numpy().all() and busy.column("interruptions").to_numpy().sum() > 0
    assert run(*llama, window_s=3600).equals(busy)
    jobs = run("failures=weibull", "failures.node_mtbf_h=300", "failures.bad_fraction=0.1",
               "failures.bad_multiplier=5", "repair=pipeline", "failures.clock=busy")
    assert jobs.column("finished").to_numpy().all() and jobs.column("interruptions").to_numpy().sum() > 0


def test_a_vc_with_busy_clocks_pickled_midway_continues_identically():
    from simutil import pickled_midway_and_whole, random_jobs

    jobs = [(s, d, g) for s, d, g, *_ in random_jobs(np.random.default_rng(3), 200, 20_000, max_gpu=8)]

    def fresh():
        return one_node_sim(clock="busy", seed=0, restart_s=60, mtbf_s=3000, jobs=jobs, until=None)

    half, whole = pickled_midway_and_whole(fresh, 10_000)
    assert half == whole and sum(whole["interruptions"]) > 0
    rare = one_node_sim(clock="busy", seed=0, restart_s=60, mtbf_s=10**7, jobs=jobs, until=None)
    most = 0
    while rare.run(until=rare.now + 100) < math.inf:  # (failures far off: dropped ones do not pile up)
        most = max(most, len(rare._cap_heap))
    assert most <= 2 + 64 + 1


@pytest.mark.slow
@pytest.mark.parametrize("model", [
    ("failures=llama3", "failures.gpu_mtbf_h=2000"),
    # (jobs' own clocks, a failure blamed on another node, bad nodes regenerated and AIReSim's repairs)
    ("failures=exponential", "failures.node_mtbf_h=500", "failures.wrong_node=0.3", "failures.bad_fraction=0.2",
     "failures.bad_multiplier=5", "failures.bad_regen_h=24", "repair=pipeline"),
])
def test_a_run_with_busy_clocks_is_the_same_on_ray(tmp_path, ray_local, model):  # noqa: F811
    from simutil import assert_same_on_ray

    from raysim.run.config import load_from_config, spec_from_config

    cfg = compose("policy=srtf", *model, "failures.clock=busy", "checkpoint.interval_s=1800",
                  "checkpoint.restart_s=600")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    assert_same_on_ray(tmp_path, trace, spec, extra, runs=[{"vcs_per_actor": 4, "window_s": 86_400}])


@pytest.mark.parametrize("overrides,message", [
    (["failures=exponential", "failures.wrong_node=0.2"], r"^failures\.wrong_node: only with failures\.clock=busy"),
    (["failures=weibull", "failures.clock=busy", "failures.wrong_node=1.5"], r"^failures\.wrong_node: "),
    (["failures=llama3", "failures.clock=busy", "failures.wrong_node=-0.1"], r"^failures\.wrong_node: "),
])
def test_a_wrong_node_setting_out_of_place_is_one_line_naming_it(overrides, message):
    from raysim.errors import ConfigError
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError, match=message):
        check_cluster_config(compose(*overrides))


def test_venus_with_wrong_node_diagnosis_counts_the_nodes_blamed_in_its_summary(tmp_path):
    """The preset with busy clocks and failures.wrong_node: jobs on several nodes send other nodes to
    repair, counted per VC (`wrong_node_blamed`, time series and summary); every job finishes."""
    from raysim.report.summary import summarize
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate_to

    cfg = compose("failures=exponential", "failures.node_mtbf_h=500", "failures.clock=busy", "failures.wrong_node=0.5",
                  "checkpoint.interval_s=1800", "checkpoint.restart_s=600")
    trace = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace)
    simulate_to(tmp_path, trace, spec, None, runtime="local", job_extra=extra)
    import pyarrow.parquet as pq

    jobs = pq.read_table(tmp_path / "jobs.parquet")
    assert jobs.column("finished").to_numpy().all()
    s = summarize(jobs, tmp_path / "timeseries.parquet").set_index("vc")
    assert s.loc["all", "wrong_node_blamed"] > 0
