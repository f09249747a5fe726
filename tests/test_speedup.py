"""Where a run's time goes and its speedup bound for k CPUs: the arithmetic on hand-computed cases,
the per-window records, and trace_report.json's `timing` of small in-process and Ray runs."""

from __future__ import annotations

import numpy as np
import pytest
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.run.simulate import simulate_to
from raysim.runtime.speedup import bound, critical_path, group_costs, spread
from raysim.runtime.spec import RunSpec
from raysim.runtime.timing import BOUND_CPUS, GroupCost, RunTiming, bound_line
from raysim.sim import SimParams


def test_critical_path_packs_longest_first_onto_the_least_loaded_cpu():
    # LPT on 2 CPUs: 5 | 4, then 3 -> (5 | 7), 3 -> (8 | 7), 3 -> (8 | 10): 10 (the optimum, 9, is not LPT's)
    assert critical_path([3, 5, 3, 4, 3], 2) == 10.0
    assert critical_path([3, 5, 3, 4, 3], 1) == 18.0  # one CPU: everything
    assert critical_path([3, 5, 4], 3) == critical_path([3, 5, 4], 64) == 5.0  # a CPU each: the costliest
    assert critical_path([], 2) == 0.0
    with pytest.raises(ValueError):
        critical_path([1.0], 0)


def test_a_groups_own_time_is_spread_over_its_vcs_in_proportion():
    assert spread(4.0, np.array([1.0, 2.0, 0.0])).tolist() == pytest.approx([4 / 3, 8 / 3, 0.0])
    assert spread(3.0, np.zeros(3)).tolist() == [1.0, 1.0, 1.0]  # nothing measured: evenly
    assert spread(2.0, np.array([3.0])).tolist() == [3.0]  # the group's clock read less: nothing added
    assert group_costs(np.array([1.0, 2.0, 4.0]), np.array([0, 1, 0]), 2).tolist() == [5.0, 2.0]


def test_bound_is_serial_work_over_critical_path_plus_serial_time():
    assert bound(work_s=10.0, critical_s=7.0, serial_s=4.0) == 14 / 11
    assert bound(0.0, 0.0, 0.0) == 1.0


def test_run_timing_by_hand():
    """Groups [a, b] and [c]; the bound for k=2 packs them as they are, k=3 one VC per CPU."""
    timing = RunTiming([["a", "b"], ["c"]], {1: [["a", "b", "c"]], 2: [["a", "b"], ["c"]], 3: [["a"], ["b"], ["c"]]})
    # window 1: group [a, b] 3 s of CPU (a 1 s, b 1 s measured: its own 1 s spread as 0.5 + 0.5), [c] 2 s;
    # the coordinator: 6 s of wall, 5 s of them in the groups' calls, no transfer: 1 s its own
    timing.window(6.0, 5.0, 0.0, [GroupCost(4.0, 3.0, vc_cpu={"a": 1.0, "b": 1.0}), GroupCost(2.5, 2.0, vc_cpu={"c": 2.0})])
    # window 2: [a, b] 1 s (no VC measured: 0.5 each), [c] 4 s; 5.5 s in the calls, 0.5 of them transfer
    timing.window(6.0, 5.5, 0.5, [GroupCost(1.0, 1.0), GroupCost(4.0, 4.0, 0.5, {"c": 4.0})])
    report = timing.report(total_s=14.0)  # 2 s outside the windows
    assert report["windows"] == 2 and report["outside_s"] == 2.0
    assert report["window"] == {"wall_s": [6.0, 6.0], "own_s": [1.0, 0.5], "transfer_s": [0.0, 0.5],
                                "critical_s": [3.0, 4.0], "waiting_s": [2.0, 1.0], "work_s": [5.0, 5.0]}
    # idle: the coordinator's time in the calls less the group's own wall: 5 - 4 + 5.5 - 1, 5 - 2.5 + 5.5 - 4.5
    assert report["groups"] == {"vcs": [["a", "b"], ["c"]], "cpu_s": [4.0, 6.0], "wall_s": [5.0, 7.0],
                                "idle_s": [5.5, 3.5]}
    assert report["vc_cpu_s"] == {"a": 2.0, "b": 2.0, "c": 6.0}
    # serial work: 10 s of groups + 1.5 s own + 0.5 s transfer + 2 s outside = 14 s
    assert report["serial_work_s"] == 14.0
    # k=1: 10 + 4 = 14 s; k=2: max(3, 2) + max(1, 4) = 7, + 4; k=3: max(1.5, 1.5, 2) + max(.5, .5, 4) = 6, + 4
    assert report["speedup_bound"] == {"1": 1.0, "2": round(14 / 11, 3), "3": 1.4}
    assert bound_line(report).startswith("speedup bound (critical path per window, VCs packed as for k CPUs): "
                                          "1.00x on 1 CPUs, 1.27x on 2 CPUs, 1.40x on 3 CPUs")


def test_many_windows_are_summed_into_at_most_max_rows(monkeypatch):
    monkeypatch.setattr("raysim.runtime.timing.MAX_ROWS", 3)
    timing = RunTiming([["a"]], {2: [["a"]]})
    for i in range(7):
        timing.window(2.0 + i, 1.0 + i, 0.0, [GroupCost(1.0 + i, 1.0 + i)])
    report = timing.report(total_s=100.0)
    assert report["windows"] == 7 and report["windows_per_row"] == 3
    assert report["window"]["wall_s"] == [9.0, 18.0, 8.0] and report["totals"]["wall_s"] == 35.0


@pytest.mark.parametrize("runtime", ["local", "ray"])
def test_a_run_records_where_its_time_went(runtime, tmp_path, request):
    if runtime == "ray":
        request.getfixturevalue("ray_session")
    trace, est = synthetic_trace(seed=3, n=300)
    spec = RunSpec("fifo", "consolidate", SimParams.for_mode("clean"), layout_from_vc_nodes(trace.vc_nodes, 8))
    counts = simulate_to(tmp_path, trace, spec, est, runtime=runtime, window_s=86_400, vcs_per_actor=2)
    timing = counts["timing"]
    assert timing["windows"] == counts["windows"] > 1 and timing["windows_per_row"] == 1
    assert timing["groups"]["vcs"] == [["a", "b"], ["c"]] and set(timing["vc_cpu_s"]) == {"a", "b", "c"}
    assert all(len(v) == timing["windows"] for v in timing["window"].values())
    totals = timing["totals"]
    assert totals["work_s"] > 0 and totals["critical_s"] <= totals["work_s"]
    assert sum(timing["groups"]["cpu_s"]) == pytest.approx(totals["work_s"], abs=1e-3)
    assert sum(timing["vc_cpu_s"].values()) == pytest.approx(totals["work_s"], abs=1e-3)
    assert (totals["transfer_s"] > 0) == (runtime == "ray")  # Ray's put and get; nothing moves in-process
    assert list(timing["speedup_bound"]) == [str(k) for k in BOUND_CPUS]
    assert all(1.0 <= b <= 3.0 for b in timing["speedup_bound"].values())  # three VCs: at most 3 groups
