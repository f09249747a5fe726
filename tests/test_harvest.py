"""Harvest mode on small node logs and task sets built here (runs everywhere, no ../shared)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from raysim.harvest.allocators import choices, exact, heuristic
from raysim.harvest.engine import HarvestParams, simulate
from raysim.harvest.metrics import summarize
from raysim.harvest.milp import node_milp
from raysim.harvest.problem import Problem, compat_cap, objective
from raysim.harvest.replay import NS, NodeLog, load_node_log, slice_events
from raysim.harvest.run import run_harvest
from raysim.harvest.tasks import load_tasks, make_tasks
from raysim.paths import CONF_DIR

T0 = np.datetime64("2021-02-10T00:00:00", "ns").astype(np.int64)


# ---- builders ------------------------------------------------------------------------------------
def node_log(n_nodes: int, changes, snapshot=None) -> NodeLog:
    """A log: snapshot of every node at T0 (all busy unless given), then (seconds, node, idle) rows."""
    snap = np.zeros(n_nodes, bool) if snapshot is None else np.asarray(snapshot, bool)
    t = np.concatenate([np.full(n_nodes, T0), [T0 + int(s * NS) for s, _, _ in changes]]).astype(np.int64)
    node = np.concatenate([np.arange(n_nodes), [n for _, n, _ in changes]]).astype(np.int32)
    idle = np.concatenate([snap, [i for _, _, i in changes]]).astype(bool)
    return NodeLog(t, node, idle, np.array([f"n{i:03d}" for i in range(n_nodes)]))


def write_log(path, log: NodeLog) -> None:
    """Write `log` in the shared data's Parquet layout (dictionary-encoded node column)."""
    node = pa.DictionaryArray.from_arrays(pa.array(log.node, pa.int32()), pa.array(log.names))
    pq.write_table(pa.table({"time": pa.array(log.time_ns.astype("datetime64[ns]")), "node": node,
                             "idle": log.idle}), path)


def linear_tasks(specs, per_node=10.0):
    """Tasks from (Tsub seconds, Pmax, Jmin, Jmax, Tcup, Tcdw); rate = per_node x nodes."""
    k = len(specs)
    tsub, pmax, jmin, jmax, tcup, tcdw = (np.array(c, float) for c in zip(*specs))
    ns = [[0.0, float(m)] for m in jmax]
    ps = [[0.0, per_node * m] for m in jmax]
    return make_tasks([f"J{i}" for i in range(k)], tcup, tcdw, jmin, jmax, pmax,
                      (T0 + tsub * NS).astype(np.int64), ns, ps)


def random_log(rng, n_nodes=10, n_rows=300, horizon=5000):
    t = np.sort(rng.integers(1, horizon, n_rows))
    return node_log(n_nodes, [(int(s), int(rng.integers(n_nodes)), bool(rng.random() < 0.5)) for s in t],
                    snapshot=rng.random(n_nodes) < 0.5)


def random_tasks(rng, k=6, horizon=3000):
    specs = []
    for _ in range(k):
        jmin = int(rng.integers(1, 3))
        specs.append((float(rng.integers(0, horizon)), float(rng.integers(1e4, 8e4)), jmin,
                      jmin + int(rng.integers(0, 6)), float(rng.uniform(0, 20)), float(rng.uniform(0, 15))))
    ns = [[0, s[3] / 2, s[3]] for s in specs]
    ps = [[0, rng.uniform(5, 10) * s[3] / 2, rng.uniform(10, 15) * s[3]] for s in specs]
    tsub, pmax, jmin, jmax, tcup, tcdw = (np.array(c, float) for c in zip(*specs))
    return make_tasks([f"R{i}" for i in range(k)], tcup, tcdw, jmin, jmax, pmax,
                      (T0 + tsub * NS).astype(np.int64), ns, ps)


# ---- node-log replay -----------------------------------------------------------------------------
def wide_events(log: NodeLog, n: int, start_row: int):
    """The reference's way: a wide state table per distinct time, cut, then consecutive duplicates dropped."""
    state, rows = np.zeros(log.num_nodes, bool), {}
    for t, nd, idle in zip(log.time_ns, log.node, log.idle):
        state[nd] = idle
        rows[int(t)] = state.copy()
    times = sorted(rows)[start_row:]
    out = [(times[0], rows[times[0]][:n])]
    for t in times[1:]:
        if np.any(rows[t][:n] != out[-1][1]):
            out.append((t, rows[t][:n]))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_slice_events_equals_wide_table_dedup(seed):
    rng = np.random.default_rng(seed)
    log = random_log(rng, n_nodes=12, n_rows=400, horizon=600)  # many same-time and redundant rows
    n, start = int(rng.integers(1, 13)), int(rng.integers(0, 50))
    ev = slice_events(log, n, start_row=start)
    ref = wide_events(log, n, start)
    assert ev.t0_ns == ref[0][0]
    assert np.array_equal(ev.initial_idle, ref[0][1])
    assert len(ev.times) == len(ref)
    state = ev.initial_idle.copy()
    for e in range(1, ev.num_events):
        sl = slice(ev.ptr[e], ev.ptr[e + 1])
        assert np.all(state[ev.node[sl]] != ev.idle[sl])  # every listed change is real
        state[ev.node[sl]] = ev.idle[sl]
        assert ev.times[e] == (ref[e][0] - ev.t0_ns) / NS
        assert np.array_equal(state, ref[e][1])


def test_start_row_is_a_distinct_time_and_parquet_roundtrip(tmp_path):
    log = node_log(3, [(10, 0, True), (10, 1, True), (20, 1, False), (30, 2, True)])
    write_log(tmp_path / "log.parquet", log)
    back = load_node_log(tmp_path / "log.parquet")
    assert np.array_equal(back.node, log.node) and np.array_equal(back.time_ns, log.time_ns)
    ev = slice_events(back, None, start_row=1)  # row 1 = t=10 s (row 0 is the snapshot)
    assert ev.t0_ns == T0 + 10 * NS
    assert ev.initial_idle.tolist() == [True, True, False]
    assert ev.times.tolist() == [0.0, 10.0, 20.0]
    ev2 = slice_events(back, 2, start_row=1)  # node 2 outside the slice: its change is no event
    assert ev2.times.tolist() == [0.0, 10.0]
    with pytest.raises(ValueError, match="start_row"):
        slice_events(back, None, start_row=4)
    with pytest.raises(ValueError, match="harvest.nodes"):
        slice_events(back, 4)


def test_bad_inputs_name_file_row_and_column(tmp_path):
    pq.write_table(pa.table({"time": [1], "node": ["a"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet.*idle"):
        load_node_log(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"task row 1 \(J1\), column 'Jmax'"):
        linear_tasks([(0, 1e3, 1, 4, 1, 1), (0, 1e3, 3, 2, 1, 1)])
    with pytest.raises(ValueError, match="column 'Ns': must cover"):
        make_tasks(["a"], [1], [1], [1], [8], [10], [T0], [[0, 4]], [[0, 1]])
    tasks = linear_tasks([(0, 1e3, 1, 4, 1, 1)])
    tab = pa.table({"job": ["a"], "Tcup": [1.0], "Tcdw": [1.0], "Jmin": [1.0], "Jmax": [4.0], "Pmax": [1e3],
                    "Tsub": pa.array([T0]).cast(pa.timestamp("ns")), "Ns": [[0.0, 4.0]], "Ps": [[0.0, 40.0]],
                    "Os": [[0.0, 4.0]]})
    pq.write_table(tab, tmp_path / "tasks.parquet")
    loaded = load_tasks(tmp_path / "tasks.parquet")
    assert np.allclose(loaded.rate_tab, tasks.rate_tab) and np.allclose(loaded.obj_tab[0], [0, 1, 2, 3, 4])


# ---- allocators ----------------------------------------------------------------------------------
def random_problem(rng, jobs, pool, width=12, cap=False) -> Problem:
    jmin = rng.integers(1, 4, jobs)
    jmax = np.minimum(jmin + rng.integers(0, width, jobs), width)
    obj = np.zeros((jobs, width + 1))
    for j in range(jobs):  # concave, convex or jagged curves
        v = np.sort(rng.uniform(0, 100, width + 1)) if rng.random() < 0.5 else np.cumsum(rng.uniform(0, 10, width + 1))
        obj[j, jmin[j]:jmax[j] + 1] = v[jmin[j]:jmax[j] + 1]
    cur, left = np.zeros(jobs, np.int64), pool
    for j in range(jobs):
        c = int(rng.integers(0, jmax[j] + 1))  # below Jmin too: a preempted job
        cur[j] = min(c, left)
        left -= cur[j]
    return Problem(pool, cur, jmin, jmax, obj, rng.uniform(0, 20, jobs), rng.uniform(0, 20, jobs),
                   float(rng.uniform(0.5, 5)), compat_cap(pool) if cap else None)


def brute_force(p: Problem) -> float:
    best = -np.inf
    for combo in itertools.product(*(choices(p, j)[0] for j in range(len(p.current)))):
        if sum(combo) <= p.pool:
            best = max(best, objective(p, combo))
    return best


def test_exact_equals_brute_force_on_small_snapshots():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(300):
        p = random_problem(rng, int(rng.integers(1, 5)), int(rng.integers(0, 20)), cap=rng.random() < 0.5)
        counts = exact(p)
        best = brute_force(p)
        if not np.isfinite(best):  # only possible under the cap: the reference keeps its map
            assert np.array_equal(counts, p.current)
            continue
        checked += 1
        assert counts.sum() <= p.pool
        assert all(c in choices(p, j)[0] for j, c in enumerate(counts))
        assert objective(p, counts) == pytest.approx(best, rel=1e-12, abs=1e-9)
    assert checked > 250


def test_exact_equals_node_level_milp_on_moderate_snapshots():
    rng = np.random.default_rng(11)
    for _ in range(8):
        p = random_problem(rng, int(rng.integers(2, 7)), int(rng.integers(16, 48)), width=16,
                           cap=rng.random() < 0.5)
        assert objective(p, node_milp(p)) == pytest.approx(objective(p, exact(p)), rel=1e-9, abs=1e-6)


def test_exact_prefers_earlier_jobs_and_fewer_nodes_on_ties():
    obj = np.tile(np.arange(5.0), (2, 1))
    p = Problem(3, np.zeros(2, np.int64), np.ones(2, np.int64), np.full(2, 4), obj, np.zeros(2), np.zeros(2), 1.0)
    assert exact(p).tolist() == [3, 0]
    flat = Problem(3, np.zeros(1, np.int64), np.ones(1, np.int64), np.full(1, 4),
                   np.array([[0.0, 5, 5, 5, 5]]), np.zeros(1), np.zeros(1), 1.0)
    assert exact(flat).tolist() == [1]


def test_compat_cap_limits_change_per_event():
    obj = np.array([np.arange(65.0)])
    p = Problem(40, np.array([4]), np.array([1]), np.array([64]), obj, np.zeros(1), np.zeros(1), 1.0, compat_cap(40))
    assert compat_cap(40) == 20 and compat_cap(41) == 21
    assert exact(p).tolist() == [24]
    assert exact(Problem(**{**p.__dict__, "cap": None})).tolist() == [40]


@pytest.mark.parametrize("pool, jmin, jmax, expected", [
    (10, [1, 1, 1], [64, 64, 64], [4, 3, 3]),  # q = 3, leftover 1 first-come first-served
    (6, [2, 2, 2], [4, 4, 4], [4, 2, 0]),  # q = Jmin -> 0; leftovers: 4 (Jmax), then 2 (= Jmin)
    (7, [2, 2, 3], [4, 4, 4], [4, 3, 0]),  # q = 2 is no more than any Jmin -> 0; leftovers FCFS
    (5, [4, 4], [8, 8], [5, 0]),  # q = 2 < Jmin -> 0; the leftover goes to the first job
    (3, [4, 1], [8, 8], [0, 3]),  # a leftover that leaves a job below Jmin is skipped
])
def test_heuristic_is_the_reference_equal_share(pool, jmin, jmax, expected):
    k = len(jmin)
    p = Problem(pool, np.zeros(k, np.int64), np.array(jmin), np.array(jmax), np.zeros((k, 9)), np.zeros(k),
                np.zeros(k), 10.0)
    assert heuristic(p).tolist() == expected


# ---- the event loop ------------------------------------------------------------------------------
def test_event_semantics_by_hand():
    # nodes 0,1 idle at t0; node 2 joins at 100; node 0 (held by the task) leaves at 200; node 3 joins at 1000
    log = node_log(4, [(0, 0, True), (0, 1, True), (100, 2, True), (200, 0, False), (1000, 3, True)])
    ev = slice_events(log, None, start_row=0)
    tasks = linear_tasks([(0, 1e9, 1, 4, 5.0, 3.0)])  # 10 samples/s per node, Tcup 5 s, Tcdw 3 s
    res = simulate(ev, tasks, HarvestParams(tfwd=1000, max_jobs=1, compat_cap=False))
    st = res.steps
    assert st["nNrun"].tolist() == [2, 3, 2, 3]
    assert st["Rate"].tolist() == [20, 30, 20, 30]
    # t=100: 100 s x 20; t=200: 100 s x 30 - growth cost 5 x 20 - preemption 3 x 30; t=1000: 800 s x 20
    assert st["Thr"].tolist() == [0, 2000, 2910 - 100, 16000]
    assert st["PreCost"].tolist() == [0, 0, 90, 0] and st["Npre"].tolist() == [0, 0, 1, 0]
    assert st["ReScost"].tolist() == [0, 100, 0, 100]  # planned, charged in the next interval
    s = summarize(res)
    assert s["total_samples"] == 20810 and s["precost"] == 90 and s["rescost"] == 100
    assert s["gross_samples"] == 21000 and s["jobs_finished"] == 0 and s["makespan_h"] is None
    assert s["harvested_fraction"] == 1.0


def test_precise_mode_adds_completion_and_arrival_events():
    log = node_log(4, [(0, 0, True), (0, 1, True), (1000, 2, True), (2000, 3, True)])
    ev = slice_events(log, None, start_row=0)
    tasks = linear_tasks([(0, 5000, 1, 4, 0, 0), (300, 5000, 1, 4, 0, 0)])
    coarse = simulate(ev, tasks, HarvestParams(compat_cap=False))
    assert coarse.finished.tolist() == [1000, 2000] and coarse.admitted.tolist() == [0, 1000]
    assert coarse.overshoot.tolist() == [15000, 25000]
    fine = simulate(ev, tasks, HarvestParams(compat_cap=False, precise=True))
    assert fine.admitted.tolist() == [0, 300]
    assert fine.finished == pytest.approx([250, 550])
    s = summarize(fine)
    assert s["makespan_h"] == pytest.approx(550 / 3600) and s["efficiency"] == pytest.approx(1.0)
    assert summarize(coarse)["efficiency"] == pytest.approx(10000 / 50000)


@pytest.mark.parametrize("allocator, precise, cap", [("exact", False, True), ("exact", True, False),
                                                     ("heuristic", False, True), ("milp", False, True)])
@pytest.mark.parametrize("seed", range(3))
def test_replay_invariants(allocator, precise, cap, seed):
    rng = np.random.default_rng(seed)
    ev = slice_events(random_log(rng, n_nodes=10, n_rows=400, horizon=20000), None, start_row=0)
    tasks = random_tasks(rng)
    res = simulate(ev, tasks, HarvestParams(tfwd=30, max_jobs=3, allocator=allocator, compat_cap=cap,
                                            precise=precise))
    st, s = res.steps, summarize(res)
    assert np.all(st["nNrun"] <= st["nNd"]) and np.all(st["nJob"] <= 3) and np.all(st["nJrun"] <= st["nJob"])
    assert np.all(np.diff(st["evtTime"]) > 0)
    assert s["total_samples"] == pytest.approx(st["Thr"].sum())
    assert s["gross_samples"] == pytest.approx(s["total_samples"] + s["precost"] + s["rescost"] + s["overshoot"])
    assert st["PreCost"].sum() == pytest.approx(s["precost"])
    done = ~np.isnan(res.finished)
    assert np.allclose(res.samples[done], tasks.pmax[done]) and np.all(res.samples[~done] < tasks.pmax[~done])
    assert np.all(res.admitted[~np.isnan(res.admitted)] >= res.tsub[~np.isnan(res.admitted)])
    assert np.all(res.finished[done] >= res.admitted[done])
    if precise:
        assert np.allclose(res.overshoot, 0, atol=1e-3)


def test_exact_beats_heuristic_on_a_random_log():
    rng = np.random.default_rng(5)
    ev = slice_events(random_log(rng, n_nodes=16, n_rows=500, horizon=30000), None, start_row=0)
    tasks = random_tasks(rng, k=8)
    eff = {a: summarize(simulate(ev, tasks, HarvestParams(tfwd=60, max_jobs=4, allocator=a)))["efficiency"]
           for a in ("exact", "heuristic")}
    assert eff["exact"] > eff["heuristic"]


# ---- run folder and config -----------------------------------------------------------------------
@pytest.fixture()
def synth_data(tmp_path):
    rng = np.random.default_rng(3)
    data = tmp_path / "data" / "harvest"
    data.mkdir(parents=True)
    write_log(data / "summit_node_events.parquet", random_log(rng, n_nodes=10, n_rows=300, horizon=20000))
    tasks = random_tasks(rng, k=4)
    pq.write_table(pa.table({"job": tasks.names, "Tcup": tasks.tcup, "Tcdw": tasks.tcdw,
                             "Jmin": tasks.jmin.astype(float), "Jmax": tasks.jmax.astype(float),
                             "Pmax": tasks.pmax, "Tsub": pa.array(tasks.tsub_ns.astype("datetime64[ns]")),
                             "Ns": [list(range(int(m) + 1)) for m in tasks.jmax],
                             "Ps": [list(r[: int(m) + 1]) for r, m in zip(tasks.rate_tab, tasks.jmax)],
                             "Os": [list(r[: int(m) + 1]) for r, m in zip(tasks.rate_tab, tasks.jmax)]}),
                   data / "tasks_synth.parquet")
    return data


def compose_harvest(overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=["+experiment=harvest_summit", *overrides])


def test_experiment_configs_compose():
    cfg = compose_harvest(["harvest.nodes=all", "harvest.task_set=ImageNet-imgps-1001J"])
    assert cfg.mode == "harvest" and cfg.harvest.nodes == "all"
    assert cfg.harvest.tasks == "data:summit_nodes/tasks_ImageNet-imgps-1001J.parquet"
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        full = compose(config_name="config", overrides=["+experiment=harvest_summit_full"])
    assert full.harvest.nodes == "all" and full.harvest.tfwd == 10 and "ImageNet" in full.harvest.tasks


def test_run_harvest_writes_the_run_folder_with_relative_paths(synth_data, tmp_path, monkeypatch):
    monkeypatch.chdir(synth_data.parent)  # data paths are resolved against the launch directory
    cfg = compose_harvest(["harvest.data_dir=harvest", "harvest.task_set=synth", "harvest.nodes=8",
                           "harvest.start_row=0", "harvest.max_jobs=2"])
    summary = run_harvest(cfg, tmp_path / "run")
    run = tmp_path / "run"
    assert json.loads((run / "summary.json").read_text())["total_samples"] == summary["total_samples"]
    series = pq.read_table(run / "timeseries.parquet").to_pandas()
    assert (series.time.diff().dropna() == 60).all() and (series.idle_pool_nodes >= 0).all()
    for key in ("makespan_h", "efficiency", "total_samples", "jobs_finished", "precost", "rescost",
                "busy_node_hours", "harvested_fraction"):
        assert key in summary
    steps = pq.read_table(run / "steps.parquet")
    assert {"evtTime", "Thr", "Rate", "ReScost", "Nleft", "Npre", "Njoin", "nJob", "nNd", "nJrun", "nNrun",
            "PreCost"} <= set(steps.column_names)
    assert pq.read_table(run / "jobs.parquet").num_rows == 4
    assert (run / "steps.csv").exists() and (run / "plots" / "nodes.png").stat().st_size > 0
    assert summary["nodes"] == 8


def test_missing_data_says_where_to_get_it(tmp_path):
    cfg = OmegaConf.create({"mode": "harvest", "harvest": {"node_log": str(tmp_path / "nope.parquet"),
                                                            "tasks": str(tmp_path / "t.parquet")}})
    with pytest.raises(FileNotFoundError, match=r"(?s)nope\.parquet.*BFTrainer.*raysim data fetch summit_nodes"):
        run_harvest(cfg, tmp_path / "run")
    with pytest.raises(ValueError, match="experiment=harvest_summit"):
        run_harvest(OmegaConf.create({"mode": "harvest", "harvest": None}), tmp_path / "run")


@pytest.mark.slow
def test_run_harvest_inside_a_ray_task(synth_data, tmp_path):
    ray = pytest.importorskip("ray")
    cfg = compose_harvest([f"harvest.data_dir={synth_data}", "harvest.task_set=synth", "harvest.start_row=0",
                           "harvest.nodes=all"])
    local = run_harvest(cfg, tmp_path / "local")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.get(ray.remote(run_harvest).remote(cfg, tmp_path / "remote"))
    finally:
        ray.shutdown()
    drop = ("wall_seconds", "allocator_seconds")
    assert {k: v for k, v in remote.items() if k not in drop} == {k: v for k, v in local.items() if k not in drop}


def test_raysim_report_summarises_a_harvest_sweep(synth_data, tmp_path, monkeypatch):
    """`raysim report <multirun>` on a harvest sweep: one row per run, sweep_summary.csv/.md, plots."""
    from raysim.report.cli import main as report

    monkeypatch.chdir(synth_data.parent)
    sweep = tmp_path / "sweep"
    for i, nodes in enumerate((4, 8)):
        cfg = compose_harvest(["harvest.data_dir=harvest", "harvest.task_set=synth", f"harvest.nodes={nodes}",
                               "harvest.start_row=0", "harvest.max_jobs=2"])
        run_harvest(cfg, sweep / str(i))
    assert report([str(sweep)]) == 0
    import pandas as pd

    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert len(table) == 2 and "harvested_fraction" in table.columns
    assert (sweep / "sweep_summary.md").exists() and (sweep / "plots" / "sweep_metrics.png").exists()
