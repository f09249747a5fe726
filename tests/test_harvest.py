"""Harvesting (policy=bftrainer on the VC engine) on small node logs and task sets built here (runs
everywhere, no ../shared)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from simutil import NO_PAGES

from raysim.errors import ConfigError
from raysim.harvest.allocators import choices, exact, heuristic
from raysim.harvest.milp import node_milp
from raysim.harvest.problem import Problem, compat_cap, objective
from raysim.harvest.replay import NS, NodeLog, load_node_log, slice_events
from raysim.harvest.tasks import load_tasks, make_tasks
from raysim.paths import CONF_DIR
from raysim.report.schema import read_jobs
from raysim.report.timeseries import read_timeseries
from raysim.run import run

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


@pytest.mark.parametrize("nodes, reason", [
    (1e300, None), (8.0, None), (" All ", None), (2.5, "must be an integer"), (0, "must be at least 1"),
    (float("inf"), "must be a finite integer"), ("some", "must be a positive node count or 'all'")])
def test_harvest_nodes_refused_with_its_reason(nodes, reason):
    """harvest.nodes: a whole positive count (its bound, the log's nodes, is checked when the log is
    read) or all; a bad value is refused with the rule it breaks, not "expected a positive count"."""
    from raysim.errors import ConfigError
    from raysim.harvest.inputs import HarvestSettings
    from raysim.settings import parse

    if reason is None:
        assert parse(HarvestSettings, {"nodes": nodes}, prefix="harvest", owner="bftrainer").nodes in (nodes, "all")
        return
    with pytest.raises(ConfigError) as err:
        parse(HarvestSettings, {"nodes": nodes}, prefix="harvest", owner="bftrainer")
    assert str(err.value) == f"harvest.nodes: {reason} (value {nodes!r})"


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


def task_table(**columns) -> pa.Table:
    """One task's row, with `columns` replaced."""
    return pa.table({"job": ["a"], "Tcup": [1.0], "Tcdw": [1.0], "Jmin": [1.0], "Jmax": [4.0], "Pmax": [1e3],
                     "Tsub": pa.array([T0]).cast(pa.timestamp("ns")), "Ns": [[0.0, 4.0]], "Ps": [[0.0, 40.0]],
                     "Os": [[0.0, 4.0]], **columns})


def log_table(**columns) -> pa.Table:
    """A two-node log's snapshot, with `columns` replaced."""
    return pa.table({"time": pa.array([T0, T0]).cast(pa.timestamp("ns")), "node": ["a", "b"],
                     "idle": [True, False], **columns})


@pytest.mark.parametrize("table,message", [
    (log_table(idle=["false", "true"]), "column 'idle' must hold booleans, found string"),  # (read as True)
    (log_table(time=[1, 2]), "column 'time' must hold timestamps"),
    (log_table(node=["a", None]), "row 1, column 'node': missing value"),
    (log_table(idle=pa.array([None, True], pa.bool_())), "row 0, column 'idle': missing value"),
    (log_table().slice(0, 0), "no rows"),
])
def test_a_bad_node_log_is_one_line(tmp_path, table, message):
    pq.write_table(table, tmp_path / "log.parquet")
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'log.parquet'}: {re.escape(message)}"):
        load_node_log(tmp_path / "log.parquet")


@pytest.mark.parametrize("table,message", [
    (task_table(Tcup=["abc"]), "column 'Tcup' must hold numbers, found string"),
    (task_table(Tcup=[True]), "column 'Tcup' must hold numbers, found bool"),  # (read as 1)
    (task_table(Ns=[1.0]), "column 'Ns' must hold lists of numbers, found double"),
    (task_table(Ns=[["0", "4"]]), "column 'Ns' must hold lists of numbers"),
    (task_table(Ns=[[0.0, None]]), "task row 0 (a), column 'Ns': missing value in the curve"),  # (read as nan)
    (task_table(Jmax=[1e12], Ns=[[0.0, 1e12]]), "task row 0 (a), column 'Jmax': must be an integer from 1 to 100,000"),
    (task_table(Ps=[[0.0, 1e308]]), "task row 0 (a), column 'Ps': must be from 0 to 1e+15"),  # (an inf in the summary)
])
def test_a_bad_task_set_is_one_line(tmp_path, table, message):
    pq.write_table(table, tmp_path / "tasks.parquet")
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'tasks.parquet'}: {re.escape(message)}"):
        load_tasks(tmp_path / "tasks.parquet")


@pytest.mark.parametrize("content", [b"", b"PAR1" + bytes(range(256)) * 20, b"time,node,idle\n2021-02-10,a,true\n"],
                         ids=["empty", "random", "csv"])
def test_a_harvest_file_that_is_not_parquet_is_one_line(tmp_path, content):
    """Empty, random or truncated bytes, or a CSV renamed .parquet: a user error naming the file."""
    from raysim.errors import user_error_message
    from raysim.harvest.inputs import _input

    path = tmp_path / "data.parquet"
    path.write_bytes(content)
    for read in (load_node_log, load_tasks):
        with pytest.raises(ValueError) as err:
            _input(lambda: read(path), str(path))
        message = user_error_message(err.value)
        assert message.startswith(f"{path}: not a readable Parquet file: ") and "\n" not in message


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


# ---- the engine under policy=bftrainer -----------------------------------------------------------
def write_tasks(path, tasks) -> None:
    """Write `tasks` in the shared data's Parquet layout (curves tabulated at 0..Jmax)."""
    pq.write_table(pa.table({"job": tasks.names, "Tcup": tasks.tcup, "Tcdw": tasks.tcdw,
                             "Jmin": tasks.jmin.astype(float), "Jmax": tasks.jmax.astype(float),
                             "Pmax": tasks.pmax, "Tsub": pa.array(tasks.tsub_ns.astype("datetime64[ns]")),
                             "Ns": [list(range(int(m) + 1)) for m in tasks.jmax],
                             "Ps": [list(r[: int(m) + 1]) for r, m in zip(tasks.rate_tab, tasks.jmax)],
                             "Os": [list(r[: int(m) + 1]) for r, m in zip(tasks.obj_tab, tasks.jmax)]}), path)


def write_data(folder: Path, log: NodeLog, tasks) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_log(folder / "summit_node_events.parquet", log)
    write_tasks(folder / "tasks_synth.parquet", tasks)
    return folder


def compose_harvest(overrides, experiment="harvest_summit"):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"+experiment={experiment}", *overrides])


def replay(tmp_path, log, tasks, *overrides, name="run"):
    """Run `tasks` on `log` (all nodes, from its first row) as a cluster run under policy=bftrainer:
    (jobs.parquet by task row, the summary's "all" row, the cluster-wide time series)."""
    data = write_data(tmp_path / f"{name}-data", log, tasks)
    cfg = compose_harvest([f"harvest.data_dir={data}", "harvest.task_set=synth", "harvest.nodes=all",
                           "harvest.start_row=0", "runtime=local", *NO_PAGES, *overrides])
    out = tmp_path / name
    run(cfg, out)
    jobs = read_jobs(out).to_pandas().sort_values("job_id").reset_index(drop=True)
    summary = pd.read_csv(out / "summary.csv")
    series = read_timeseries(out / "timeseries.parquet", vcs=["all"]).to_pandas()
    return jobs, summary[summary.vc == "all"].iloc[0], series


def test_event_semantics_by_hand(tmp_path):
    # nodes 0,1 idle at t0; node 2 joins at 100; node 0 (held by the task) leaves at 200; node 3 joins at 1000
    log = node_log(4, [(0, 0, True), (0, 1, True), (100, 2, True), (200, 0, False), (1000, 3, True)])
    tasks = linear_tasks([(0, 1e9, 1, 4, 5.0, 3.0)])  # 10 samples/s per node, Tcup 5 s, Tcdw 3 s
    jobs, s, series = replay(tmp_path, log, tasks, "harvest.tfwd=1000", "harvest.max_jobs=1",
                             "harvest.compat_cap=false", "sim.sample_interval=100")
    task = jobs.iloc[0]
    # nodes 2, 3, 2, 3 at t = 0, 100, 200, 1000 (20, 30, 20, 30 samples/s); t=100: 100 s x 20; t=200:
    # 100 s x 30 - growth cost 5 x 20 - preemption 3 x 30; t=1000: 800 s x 20; the growth at 1000
    # would be charged after it, but the node log ends there
    assert task.samples == 2000 + 2910 - 100 + 16000 and task.precost == 90 and task.rescost == 100
    assert task.rescales == 3 and task.interruptions == 1 and task.interruptions_busy == 1
    assert not task.finished and pd.isna(task.end_time) and task.start_time == 0 and task.max_nodes == 4
    assert s.total_samples == 20810 and s.gross_samples == 21000 and s.rescost == 100 and s.precost == 90
    assert s.finished == 0 and pd.isna(s.makespan_h) and s.harvested_fraction == 1.0
    at = series.set_index("time")
    assert at.total_gpu_num[[0, 100, 200, 900, 1000]].tolist() == [2, 3, 2, 2, 3]
    assert (at.idle_gpu_num == 0).all() and (at.gpu_utilization == 1.0).all()


def test_precise_mode_adds_completion_and_arrival_events(tmp_path):
    log = node_log(4, [(0, 0, True), (0, 1, True), (1000, 2, True), (2000, 3, True)])
    tasks = linear_tasks([(0, 5000, 1, 4, 0, 0), (300, 5000, 1, 4, 0, 0)])
    coarse, cs, _ = replay(tmp_path, log, tasks, "harvest.compat_cap=false", name="coarse")
    assert coarse.end_time.tolist() == [1000, 2000] and coarse.start_time.tolist() == [0, 1000]
    assert coarse.overshoot.tolist() == [15000, 25000]
    assert cs.efficiency == pytest.approx(10000 / 50000)
    fine, fs, _ = replay(tmp_path, log, tasks, "harvest.compat_cap=false", "harvest.precise=true", name="fine")
    assert fine.start_time.tolist() == [0, 300]
    assert fine.end_time.tolist() == pytest.approx([250, 550], abs=1e-3)  # a clock of milliseconds
    assert fs.makespan_h == pytest.approx(550 / 3600) and fs.efficiency == pytest.approx(1.0)


#: Per task (file order): end times, samples, preemption and rescale costs, preemptions and
#: rescales that the harvest mode's own engine (raysim/harvest/engine.py, removed at this branch)
#: gave for random_log/random_tasks of `seed`, tfwd 30, max_jobs 3, compat_cap: the engine gives the same.
OLD_ENGINE = {
    (1, "exact"): ([5863, 7838, 2195, 5138, 4065, 7160], [55568, 55667, 15505, 17352, 52277, 51579],
                   [42.00468662771097, 750.9274767501499, 829.7789394552433, 61.855674788103066,
                    2769.1802249960165, 3810.151955047665],
                   [1372.2577453178721, 1192.1986031992515, 0.0, 61.61530959885958, 30.01386077673072,
                    1408.9201682172388], [6, 4, 3, 1, 8, 4], [8, 19, 3, 5, 10, 4]),
    (2, "heuristic"): ([4886, 3064, 3871, 5375, 6368, 2014], [66298, 29937, 79227, 15717, 76172, 58904],
                       [557.5343941091694, 49.404652765562275, 1015.9084594216197, 591.6292220402835,
                        12.152836095009212, 503.3464280070391],
                       [3410.981098085555, 747.2991440396079, 1547.505560237645, 512.0145400999764,
                        172.0851103253553, 1908.6993360857869], [5, 3, 3, 1, 9, 5], [13, 11, 8, 2, 17, 11]),
}


@pytest.mark.parametrize("seed, allocator", sorted(OLD_ENGINE))
def test_per_task_results_equal_the_old_harvest_engine(tmp_path, seed, allocator):
    rng = np.random.default_rng(seed)
    log = random_log(rng, n_nodes=10, n_rows=400, horizon=20000)
    jobs, _, _ = replay(tmp_path, log, random_tasks(rng), "harvest.tfwd=30", "harvest.max_jobs=3",
                        f"harvest.allocator={allocator}")
    end, samples, precost, rescost, preemptions, rescales = OLD_ENGINE[seed, allocator]
    assert jobs.end_time.tolist() == end and jobs.samples.tolist() == samples
    assert jobs.precost.tolist() == pytest.approx(precost, rel=1e-12, abs=1e-9)
    assert jobs.rescost.tolist() == pytest.approx(rescost, rel=1e-12, abs=1e-9)
    assert jobs.interruptions.tolist() == preemptions and jobs.rescales.tolist() == rescales


@pytest.mark.parametrize("allocator, precise, cap", [("exact", False, True), ("exact", True, False),
                                                     ("heuristic", False, True), ("milp", False, True)])
@pytest.mark.parametrize("seed", range(3))
def test_replay_invariants(tmp_path, allocator, precise, cap, seed):
    rng = np.random.default_rng(seed)
    tasks = random_tasks(rng)
    log = random_log(rng, n_nodes=10, n_rows=400, horizon=20000)
    jobs, s, series = replay(tmp_path, log, tasks, "harvest.tfwd=30", "harvest.max_jobs=3",
                             f"harvest.allocator={allocator}", f"harvest.compat_cap={cap}", f"harvest.precise={precise}")
    assert (series.idle_gpu_num >= 0).all() and (series.running_gpujob_num <= 3).all()
    assert (series.idle_gpu_num <= series.total_gpu_num).all() and (series.total_gpu_num <= 10).all()
    assert s.total_samples == pytest.approx(jobs.samples.sum())
    assert s.gross_samples == pytest.approx(s.total_samples + s.precost + s.rescost + s.overshoot)
    done = jobs.finished.to_numpy()
    assert np.allclose(jobs.samples[done], tasks.pmax[done]) and np.all(jobs.samples[~done] < tasks.pmax[~done])
    started = jobs.start_time.notna()
    assert (jobs.start_time[started] >= jobs.submit_time[started]).all()
    assert (jobs.end_time[done] >= jobs.start_time[done]).all()
    if precise:  # completions at the first millisecond at or after them
        assert np.all(jobs.overshoot <= tasks.rate_tab.max(axis=1) / 1000 + 1e-9)


def test_exact_beats_heuristic_on_a_random_log(tmp_path):
    rng = np.random.default_rng(5)
    log = random_log(rng, n_nodes=16, n_rows=500, horizon=30000)
    tasks = random_tasks(rng, k=8)
    eff = {a: replay(tmp_path, log, tasks, "harvest.tfwd=60", "harvest.max_jobs=4", f"harvest.allocator={a}",
                     name=a)[1].efficiency for a in ("exact", "heuristic")}
    assert eff["exact"] > eff["heuristic"]


# ---- run folder and config -----------------------------------------------------------------------
@pytest.fixture()
def synth_data(tmp_path):
    rng = np.random.default_rng(3)
    return write_data(tmp_path / "data" / "harvest", random_log(rng, n_nodes=10, n_rows=300, horizon=20000),
                      random_tasks(rng, k=4))


def test_experiment_configs_compose():
    cfg = compose_harvest(["harvest.nodes=all", "harvest.task_set=ImageNet-imgps-1001J"])
    assert cfg.mode == "cluster" and cfg.policy.name == "bftrainer" and cfg.harvest.nodes == "all"
    assert cfg.runtime.name == "ray"  # like every cluster run
    assert cfg.harvest.tasks == "data:summit_nodes/tasks_ImageNet-imgps-1001J.parquet"
    full = compose_harvest([], experiment="harvest_summit_full")
    assert full.harvest.nodes == "all" and full.harvest.tfwd == 10 and "ImageNet" in full.harvest.tasks


def test_a_harvest_run_writes_the_common_run_folder_with_relative_paths(synth_data, tmp_path, monkeypatch):
    monkeypatch.chdir(synth_data.parent)  # data paths are resolved against the launch directory
    cfg = compose_harvest(["harvest.data_dir=harvest", "harvest.task_set=synth", "harvest.nodes=8",
                           "harvest.start_row=0", "harvest.max_jobs=2", "runtime=local"])
    out = tmp_path / "run"
    overall = run(cfg, out)
    jobs = read_jobs(out)  # the one result schema, with its harvest and capacity groups
    assert jobs.num_rows == 4
    assert {"task", "samples", "max_nodes", "precost", "rescost", "overshoot", "rescales",
            "interruptions_busy"} <= set(jobs.column_names)
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.vc) == ["summit", "all"]
    for key in ("makespan_h", "efficiency", "harvested_fraction", "total_samples", "precost", "rescost",
                "busy_node_hours", "idle_node_hours", "gpu_utilization"):
        assert key in summary.columns and key in overall
    series = read_timeseries(out / "timeseries.parquet", vcs=["all"]).to_pandas()
    assert (series.time.diff().dropna() == 60).all() and (series.total_gpu_num <= 8).all()
    assert not (out / "summary.json").exists() and not (out / "steps.parquet").exists()


def test_missing_data_and_old_settings_are_one_line(tmp_path):
    cfg = compose_harvest([f"harvest.data_dir={tmp_path}", f"harvest.node_log={tmp_path / 'nope.parquet'}",
                           f"harvest.tasks={tmp_path / 't.parquet'}", "runtime=local"])
    with pytest.raises(FileNotFoundError, match=r"(?s)nope\.parquet.*BFTrainer.*raysim data fetch summit_nodes"):
        run(cfg, tmp_path / "run")
    with pytest.raises(ConfigError, match="drop mode=harvest"):
        run(_with(cfg, mode="harvest"), tmp_path / "run")
    with pytest.raises(ConfigError, match="harvest: used by policy=bftrainer only"):
        run(_with(cfg, **{"policy": {"name": "fifo"}}), tmp_path / "run")


def test_a_lookahead_beyond_any_trace_is_one_line(tmp_path):
    """harvest.tfwd multiplies every rate of the allocators' objective: 1e300 overflowed it to inf
    (the run went on, with other results than 1e30's); it stops at 1e9 s."""
    cfg = compose_harvest(["harvest.tfwd=1e300", "runtime=local"])
    with pytest.raises(ConfigError, match=r"^harvest\.tfwd: must be at most 1,000,000,000 \(value 1e\+300\)$"):
        run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_what_bftrainer_cannot_run_with_is_one_line():
    from raysim.run.config import check_cluster_config

    with pytest.raises(ConfigError) as refused:
        check_cluster_config(compose_harvest(["quota=borrow"]))
    assert str(refused.value) == ("quota: policy=bftrainer harvests one machine, one VC: run it with quota=none "
                                  "(value 'borrow')")
    with pytest.raises(ConfigError) as refused:
        check_cluster_config(compose_harvest(["cluster.capacity=log.csv"]))
    assert str(refused.value) == ("cluster.capacity: policy=bftrainer's nodes come and go as its node log says "
                                  "(harvest.node_log) (value 'log.csv')")


def _with(cfg, **values):
    from omegaconf import OmegaConf

    return OmegaConf.merge(cfg, values)


def test_ray_and_local_runs_are_byte_identical_and_resume_from_a_checkpoint(synth_data, tmp_path):
    base = [f"harvest.data_dir={synth_data}", "harvest.task_set=synth", "harvest.start_row=0", "harvest.nodes=all",
            "runtime.window_s=3600", *NO_PAGES]
    run(compose_harvest([*base, "runtime=local"]), tmp_path / "local")
    ckpt = tmp_path / "ckpt"
    run(compose_harvest([*base, "runtime=local", f"runtime.checkpoint_dir={ckpt}"]), tmp_path / "first")
    run(compose_harvest([*base, "runtime=local", f"runtime.checkpoint_dir={ckpt}", "runtime.resume=true"]),
        tmp_path / "resumed")
    for name in ("first", "resumed"):
        assert (tmp_path / name / "jobs.parquet").read_bytes() == (tmp_path / "local" / "jobs.parquet").read_bytes()


@pytest.mark.slow
def test_a_harvest_run_on_ray_equals_the_local_one(synth_data, tmp_path):
    base = [f"harvest.data_dir={synth_data}", "harvest.task_set=synth", "harvest.start_row=0", "harvest.nodes=all",
            "runtime.window_s=3600", *NO_PAGES]
    run(compose_harvest([*base, "runtime=local"]), tmp_path / "local")
    run(compose_harvest([*base, "runtime=ray", "ray.num_cpus=1"]), tmp_path / "ray")
    for name in ("jobs.parquet", "timeseries.parquet"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_raysim_report_summarises_a_harvest_sweep(synth_data, tmp_path, monkeypatch):
    """`raysim report <multirun>` on a harvest sweep: the common path, with the harvest figures."""
    from raysim.report.cli import main as report

    monkeypatch.chdir(synth_data.parent)
    sweep = tmp_path / "sweep"
    for i, nodes in enumerate((4, 8)):
        cfg = compose_harvest(["harvest.data_dir=harvest", "harvest.task_set=synth", f"harvest.nodes={nodes}",
                               "harvest.start_row=0", "harvest.max_jobs=2", "runtime=local"])
        run(cfg, sweep / str(i))
    assert report([str(sweep)]) == 0
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert len(table[table.vc == "all"]) == 2 and "harvested_fraction" in table.columns
    assert "efficiency" in (sweep / "sweep_summary.md").read_text()
