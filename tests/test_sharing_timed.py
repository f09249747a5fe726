"""raysim.sharing.timed: pods with arrival times and durations on the GPU-sharing cluster (queueing,
departures, FIFO vs backfill), ResourceState.remove, the duration model, and the Hydra switch."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from raysim.sharing import POLICIES, ResourceState, Nodes, OverAllocation, PodKinds, Pods
from raysim.placement.frag import FragModel, target_workload
from raysim.placement.scored import make_policy
from raysim.sharing.timed import TimedPods, run_timed, timed_pods

ALL = sorted(POLICIES)


def two_nodes(gpus=(1, 1), cpu=(64000, 64000)):
    return Nodes.from_lists(list(cpu), [262144] * len(gpus), list(gpus), ["A"] * len(gpus))


def timed(rows, submit, duration):
    """TimedPods from (cpu, mem, num_gpu, gpu_milli) rows."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return TimedPods(Pods(a[:, 0], a[:, 1], a[:, 2], a[:, 3]), submit, duration)


def arrays(state):
    return [a.copy() for a in (state.cpu_left, state.mem_left, state.gpu_left, state.n_pods, state.n_free,
                               state.max_left, state.left_total, state.whole)]


# ------------------------------------------------------------------------------- remove

def test_place_then_remove_restores_the_state_exactly():
    nodes = Nodes.from_lists([64000, 32000], [65536, 65536], [4, 2], ["A", "B"])
    st = ResourceState(nodes)
    st.place(0, 2000, 100, 1, 300, (1,), pod=0)
    st.place(1, 1000, 10, 0, 0, (), pod=1)
    before = arrays(st)
    st.place(0, 4000, 1000, 2, 1000, (0, 2), pod=2)  # whole GPUs
    st.place(0, 1000, 1000, 1, 500, (1,), pod=3)  # shares GPU 1 with pod 0
    st.place(1, 1000, 1000, 1, 1000, (0,), pod=4)
    st.check()
    for p in (3, 2, 4):
        st.remove(p)
        st.check()
    for a, b in zip(before, arrays(st)):
        assert np.array_equal(a, b)
    st.remove(0)
    st.remove(1)
    fresh = arrays(ResourceState(nodes))
    assert all(np.array_equal(a, b) for a, b in zip(fresh, arrays(st))) and st.placements == []
    with pytest.raises(OverAllocation):
        st.remove(0)


def test_removal_updates_policy_caches_as_a_fresh_state_would():
    nodes = Nodes.from_lists([64000, 32000], [65536, 65536], [4, 2], ["A", "B"])
    pods = Pods([2000, 4000, 1000], [10, 10, 10], [1, 2, 1], [300, 1000, 1000])
    kinds = PodKinds.of(pods)
    frag = FragModel(target_workload(pods), nodes.models)
    for name in ("fgd", "gpu_clustering"):
        st = ResourceState(nodes)
        pol = make_policy(name, st, frag, kinds, np.random.default_rng(0))
        ref = make_policy(name, ResourceState(nodes), frag, kinds, np.random.default_rng(0))
        for p, (node, gpus) in enumerate([(0, (1,)), (0, (2, 3)), (1, (0,))]):
            st.place(node, int(pods.cpu_milli[p]), 10, int(pods.num_gpu[p]), int(pods.gpu_milli[p]), gpus, pod=p)
            pol.refresh(node)
        for p, node in enumerate([0, 0, 1]):
            st.remove(p)
            pol.refresh(node)
        attr = "table" if name == "fgd" else "count"
        assert np.array_equal(getattr(pol, attr), getattr(ref, attr))


# ------------------------------------------------------------------------------- timing

@pytest.mark.parametrize("policy", ALL)
def test_a_pod_that_must_wait_starts_exactly_at_the_departure(policy):
    # two 1-GPU nodes: two whole-GPU pods fill them; the third waits for the first to leave at t=15
    tp = timed([(1000, 10, 1, 1000)] * 3, submit=[0, 5, 7], duration=[15, 100, 20])
    run = run_timed(two_nodes(), tp, policy, 1)
    assert run.start.tolist() == [0, 5, 15] and run.end.tolist() == [15, 105, 35]
    assert run.queue.tolist() == [0, 0, 8] and run.jct.tolist() == [15, 100, 28]
    assert run.node[2] == run.node[0]


def test_fractional_pods_share_a_gpu_and_the_third_waits():
    nodes = Nodes.from_lists([64000], [65536], [1], ["A"])
    tp = timed([(1000, 10, 1, 400), (1000, 10, 1, 500), (1000, 10, 1, 300)], submit=[0, 1, 2], duration=[10, 50, 5])
    run = run_timed(nodes, tp, "bestfit", 0)
    assert run.start.tolist() == [0, 1, 10]  # 400 + 500 share the GPU; 300 more would be 1200
    assert run.node.tolist() == [0, 0, 0]
    s = run.summary()
    assert s["finished"] == 3 and s["avg_queue"] == pytest.approx(8 / 3) and s["makespan"] == 51
    # allocated milli: 400 on [0,1), 900 on [1,10), 500 on [10,15), 800 on [15,51)... then 500 until 51
    area = 400 * 1 + 900 * 9 + 800 * 5 + 500 * 36
    assert s["gpu_utilization"] == pytest.approx(area / (51 * 1000))


def test_fifo_head_of_line_blocking_versus_backfill():
    # node 0: 2 GPUs, node 1: 1 GPU. t=0: a 2-GPU pod on node 0 and a 1-GPU pod on node 1 (both busy);
    # t=1: a 2-GPU pod (waits for node 0 at t=10) then a CPU-only pod and a 1-GPU pod (node 1 frees at 5)
    nodes = two_nodes(gpus=(2, 1))
    tp = timed([(1000, 10, 2, 1000), (1000, 10, 1, 1000), (1000, 10, 2, 1000), (1000, 10, 1, 1000),
                (1000, 10, 0, 0)], submit=[0, 0, 1, 1, 1], duration=[10, 5, 10, 10, 3])
    fifo = run_timed(nodes, tp, "bestfit", 0)
    assert fifo.start.tolist() == [0, 0, 10, 10, 10]  # all behind the 2-GPU head until t=10
    back = run_timed(nodes, tp, "bestfit", 0, backfill=True)
    assert back.start.tolist() == [0, 0, 10, 5, 1]  # the CPU pod starts at once, the 1-GPU pod at 5
    assert back.summary()["avg_queue"] < fifo.summary()["avg_queue"]


def test_same_second_departures_free_before_arrivals_are_served():
    tp = timed([(1000, 10, 1, 1000)] * 3, submit=[0, 0, 10], duration=[10, 10, 1])
    run = run_timed(two_nodes(), tp, "fgd", 0)
    assert run.start.tolist() == [0, 0, 10] and run.queue[2] == 0


def test_zero_duration_pods_and_unfit_pods_are_reported_not_hung():
    # pod 1 asks 4 GPUs (nodes have 1): rejected up front; pod 2 asks a gpu_spec no node has
    pods = Pods([1000, 1000, 1000, 1000], [10, 10, 10, 10], [1, 4, 1, 1], [1000, 1000, 1000, 1000],
                [None, None, "Z", None])
    tp = TimedPods(pods, [0, 0, 0, 0], [0, 5, 5, 7])
    run = run_timed(two_nodes(), tp, "random", 3)
    assert run.rejected.tolist() == [False, True, True, False]
    assert run.start.tolist() == [0, -1, -1, 0] and run.end.tolist() == [0, -1, -1, 7]
    s = run.summary()
    assert (s["jobs"], s["finished"], s["rejected"]) == (4, 2, 2)
    t = run.jobs_table()
    assert t.column("start").null_count == 2 and t.column("rejected").to_pylist() == [False, True, True, False]


@pytest.mark.parametrize("policy", ALL)
@pytest.mark.parametrize("backfill", [False, True])
def test_random_case_conserves_pods_and_never_over_allocates(policy, backfill):
    r = np.random.default_rng(7)
    n = 120
    nodes = Nodes.from_lists([16000, 32000, 8000], [65536, 131072, 32768], [2, 4, 1], ["A", "B", "A"], max_pods=20)
    kind = r.choice(3, size=n)
    num = np.select([kind == 0, kind == 2], [0, r.choice([1, 2], size=n)], 1)
    milli = np.select([kind == 0, kind == 1], [0, r.choice([100, 250, 500, 700], size=n)], 1000)
    pods = Pods(r.choice([500, 1000, 4000], size=n), r.choice([1024, 8192], size=n), num, milli)
    submit = np.sort(r.integers(0, 200, size=n))
    tp = TimedPods(pods, r.permutation(submit), r.integers(0, 60, size=n))
    run = run_timed(nodes, tp, policy, 5, backfill=backfill, check_every_event=True)
    ok = ~run.rejected
    assert ok.all()
    assert (run.start >= run.submit).all() and (run.end - run.start == tp.duration).all()
    assert len(run.jobs_table()) == n and (run.node >= 0).all()
    assert run.series_queue[-1] == 0 and run.series_used[-1] == 0
    if not backfill:  # FIFO: pods start in arrival order
        order = np.lexsort((np.arange(n), run.submit))
        assert (np.diff(run.start[order]) >= 0).all()


# ------------------------------------------------------------------------------ durations

def pod_table(rows):
    cols = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "pod_phase", "creation_time",
            "deletion_time", "scheduled_time"]
    data = {c: [r[i] for r in rows] for i, c in enumerate(cols)}
    return pa.table({**data, "row": list(range(1, len(rows) + 1))})


def test_duration_model_observed_cutoff_and_pending_median():
    t = pod_table([
        ("a", 1000, 10, 1, 500, None, "Succeeded", 0, 100, 10),  # 90
        ("b", 1000, 10, 1, 300, None, "Failed", 5, 40, 10),  # 30 (share class)
        ("c", 1000, 10, 1, 200, None, "Running", 5, 1000, 6),  # cut off at 1000: 994, censored
        ("d", 1000, 10, 1, 1000, None, "Running", 5, 500, 5),  # 495, observed
        ("e", 1000, 10, 1, 700, None, "Pending", 20, 1000, None),  # share median of 90, 30 -> 60
        ("f", 1000, 10, 0, 0, None, "Pending", 20, 1000, None),  # no CPU class: median of all observed (60)
        ("g", 1000, 10, 2, 1000, None, "Succeeded", 7, 17, 7),  # 10
    ])
    tp = timed_pods(t)
    assert tp.duration.tolist() == [90, 30, 994, 495, 60, 60, 10]
    assert tp.censored.tolist() == [False, False, True, False, True, True, False]
    assert tp.source.tolist() == ["observed", "observed", "cutoff", "observed", "median", "median", "observed"]
    assert tp.submit.tolist() == [0, 5, 5, 5, 20, 20, 7]
    run = run_timed(Nodes.from_lists([64000] * 2, [65536] * 2, [2, 2], ["A", "A"]), t, "fgd", 0)
    jobs = run.jobs_table()
    assert jobs.column("censored").to_pylist() == tp.censored.tolist() and run.summary()["censored"] == 3


def test_speedup_compresses_arrivals_only():
    tp = timed([(1000, 10, 1, 1000)] * 2, submit=[0, 100], duration=[50, 50])
    assert run_timed(two_nodes(gpus=(1, 0)), tp, "bestfit", 0).queue.tolist() == [0, 0]
    run = run_timed(two_nodes(gpus=(1, 0)), tp, "bestfit", 0, speedup=4)  # second arrives at 25
    assert run.submit.tolist() == [0, 25] and run.start.tolist() == [0, 50]


# ---------------------------------------------------------------------------------- Hydra

def test_hydra_timed_switch_writes_jobs_summary_and_plot(tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    from raysim.run import run
    from test_fgd_experiment import composed

    out = tmp_path / "out"
    row = run(composed(tmp_path, "fgd.policy=fgd", "fgd.timed=true", "fgd.backfill=true"), out)
    summary = pd.read_csv(out / "summary.csv")
    assert summary.at[0, "vc"] == "all" and summary.at[0, "jobs"] == 7 and summary.at[0, "finished"] == 7
    for c in ("avg_jct", "avg_queue", "p50_queue", "p99_queue", "p99.9_queue", "p50_jct", "makespan",
              "gpu_utilization"):
        assert c in summary.columns
    assert pq.read_table(out / "jobs.parquet").num_rows == 7 and (out / "plots" / "timed.png").exists()
    assert not (out / "allo.csv").exists() and row["jobs"] == 7
