"""Quotas between VCs (quota=borrow|global): the lending policy, the epoch exchange through
the coordinator, and results that do not depend on how the run is executed."""

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_invariants import synthetic_trace

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.errors import ConfigError, SkipReport
from raysim.quota import GLOBAL_VC, merged_layout
from raysim.quota.exchange import EpochExchange, LoanBook, LoanError
from raysim.quota.ledger import PoolShape, check_conservation
from raysim.quota.lending import decide
from raysim.quota.settings import QuotaSettings, VCQuota, quota_settings
from raysim.run.simulate import simulate
from raysim.runtime.local import LocalExecutor
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import Trace
from raysim.trace.schema import conform, with_metadata

GPU8 = PoolShape(0, "gpu", 8)


# ---------------------------------------------------------------------- hand-built traces
def hand_trace(rows, vcs):
    """A trace from (vc, submit, duration, gpus) rows, job ids in row order."""
    n = len(rows)
    table = pa.table({
        "job_id": np.arange(n, dtype=np.int64), "vc": [r[0] for r in rows], "user": ["u"] * n,
        "gpu_num": np.array([r[3] for r in rows], np.int32), "cpu_num": np.ones(n, np.int32),
        "submit_time": np.array([r[1] for r in rows], np.int64),
        "duration": np.array([r[2] for r in rows], np.int64), "state": ["COMPLETED"] * n,
    })
    return Trace(with_metadata(conform(table), cluster="t", origin="0", source="hand"), dict(vcs), SkipReport(), "hand")


def spec_of(trace, policy="fifo", quota=None, **constants):
    layout = layout_from_vc_nodes(trace.vc_nodes, 8)
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean", seed=1), layout, policy_options=constants)
    if quota is None:
        return spec
    settings = quota_settings(quota, list(layout))
    if settings.mode == "global":
        merged, homes = merged_layout(layout)
        return dataclasses.replace(spec, layout=merged, pool_homes=homes, quota=settings)
    return dataclasses.replace(spec, quota=settings)


def borrow(period=300, reclaim="preempt", **more):
    return {"mode": "borrow", "period_s": period, "reclaim": reclaim, **more}


def rows_of(jobs):
    cols = ("start_time", "end_time", "queue", "reclaims", "ran_on_vc")
    return [tuple(jobs.column(c)[i].as_py() for c in cols) for i in range(jobs.num_rows)]


# A: 2 idle nodes until its own 16-GPU job arrives at t=1000; B: 1 node, busy 0-5000, and two
# 8-GPU jobs of 3000 s queued from t=10.
TWO_VCS = [("B", 0, 5000, 8), ("B", 10, 3000, 8), ("B", 10, 3000, 8), ("A", 1000, 600, 16)]


def test_b_borrows_exactly_the_idle_nodes_at_the_next_epoch_and_a_reclaims_them_by_preemption():
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    jobs, series = simulate(trace, spec_of(trace, quota=borrow()), None)
    b0, b1, b2, a = rows_of(jobs)
    assert b0 == (0, 5000, 0, 0, "B")
    # t=300: B borrows A's two idle nodes; t=1200 (the epoch after A's arrival): A reclaims both,
    # B's jobs on them stop. FIFO keeps no checkpoint: they start again from scratch on A's nodes,
    # lent again at 2100, the epoch after A's job ends (queue: 290 + 900 s, 900 s of work lost)
    assert a == (1200, 1800, 200, 0, "A")
    assert b1 == b2 == (300, 5100, 1190, 1, "A")
    assert jobs.column("jct")[1].as_py() == 1190 + 3000 + 900
    assert jobs.column("home_vc").to_pylist() == ["B", "B", "B", "A"]
    # the time series shows the loan: 16 GPUs borrowed by B (lent by A) from 300 until 1200
    rows = series.filter(pa.compute.equal(series.column("vc"), "B")).to_pandas().set_index("time")
    assert rows.loc[300, "borrowed_gpu_num"] == 16 and rows.loc[1140, "borrowed_gpu_num"] == 16
    assert rows.loc[1200, "borrowed_gpu_num"] == 0 and rows.loc[300, "total_gpu_num"] == 24
    lent = series.filter(pa.compute.equal(series.column("vc"), "A")).to_pandas().set_index("time")
    assert lent.loc[600, "lent_gpu_num"] == 16 and lent.loc[600, "total_gpu_num"] == 0


def test_tiresias_jobs_continue_after_a_reclaim_and_pay_the_preemption_overhead():
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    spec = spec_of(trace, "tiresias", quota=borrow(), threshold_gpu_s=10**9)
    jobs, _ = simulate(trace, spec, None)
    b1 = rows_of(jobs)[1]
    # 900 s done on A's node before the reclaim at 1200; from 2100 the rest (2100 s) and 40 s overhead
    assert b1 == (300, 4240, 1190, 1, "A")
    assert jobs.column("jct")[1].as_py() == 1190 + 3000 + 40
    assert jobs.column("preemptions")[1].as_py() == 0


def test_drain_lets_the_borrowers_jobs_finish_and_the_lender_waits_for_them():
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    jobs, _ = simulate(trace, spec_of(trace, quota=borrow(reclaim="drain")), None)
    b0, b1, b2, a = rows_of(jobs)
    assert (b1[0], b1[1], b1[3], b1[4]) == (300, 3300, 0, "A")  # never stopped
    assert (b2[0], b2[1], b2[3]) == (300, 3300, 0)
    # the drained nodes go back at 3300 and A takes them back at the next epoch, 3600
    assert a[:3] == (3600, 4200, 2600)


def test_borrow_and_lending_limits_are_never_exceeded():
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    jobs, series = simulate(trace, spec_of(trace, quota=borrow(vcs={"B": {"borrow_limit": 8}})), None)
    b = series.filter(pa.compute.equal(series.column("vc"), "B")).column("borrowed_gpu_num").to_numpy()
    assert b.max() == 8
    jobs, series = simulate(trace, spec_of(trace, quota=borrow(vcs={"A": {"lending_limit": 8}})), None)
    a = series.filter(pa.compute.equal(series.column("vc"), "A")).column("lent_gpu_num").to_numpy()
    assert a.max() == 8
    assert rows_of(jobs)[1][0] == 300 and rows_of(jobs)[2][0] > 300  # one job on the one lent node


def test_vcs_lend_only_within_their_cohort():
    trace = hand_trace(TWO_VCS, {"A": 2, "B": 1})
    jobs, series = simulate(trace, spec_of(trace, quota=borrow(vcs={"A": {"cohort": "x"}})), None)
    assert series.column("borrowed_gpu_num").to_numpy().max() == 0
    assert set(jobs.column("ran_on_vc").to_pylist()) == {"A", "B"}
    assert jobs.column("ran_on_vc").to_pylist() == jobs.column("vc").to_pylist()


# ---------------------------------------------------------------------- the lending policy alone
def report(vc, *, pools=((8, 2, 2, {}),), held=(), returned=(), pending=(0, 0), free=None, by_types=None):
    """A quota report: pools (gpus_per_node, nodes, idle, {borrower: nodes lent}), held rows
    (lender, pool, nodes, idle, draining), returned rows (lender, pool, nodes), pending (jobs, GPUs)."""
    pool_rows = [{"pool": i, "gpu_type": "gpu", "gpus_per_node": g, "nodes": n, "idle": idle}
                 for i, (g, n, idle, _) in enumerate(pools)]
    lent_rows = [{"pool": i, "gpu_type": "gpu", "gpus_per_node": g, "vc": b, "nodes": k}
                 for i, (g, _, _, lent) in enumerate(pools) for b, k in lent.items()]
    held_rows = [{"lender": lender, "pool": p, "gpu_type": "gpu", "gpus_per_node": 8, "nodes": n, "idle": i,
                  "draining": d} for lender, p, n, i, d in held]
    loans = {(vc, row["vc"], row["pool"]): -row["nodes"] for row in lent_rows}
    loans.update({(row["lender"], vc, row["pool"]): row["nodes"] + row["draining"] for row in held_rows})
    jobs, gpus = pending
    return {"vc": vc, "time": 0, "pools": pool_rows, "lent": lent_rows, "loans": loans, "held": held_rows,
            "returned": [{"lender": lender, "pool": p, "gpu_type": "gpu", "gpus_per_node": 8, "nodes": n,
                          "origins": None} for lender, p, n in returned],
            "idle_ids": None, "held_nodes": None,
            "pending_jobs": jobs, "pending_gpus": gpus,
            "pending_by_types": by_types if by_types is not None else ([{"gpu_types": None, "jobs": jobs, "gpus": gpus}]
                                                                       if jobs else []),
            "free_gpus": free if free is not None else sum(g * idle for g, _, idle, _ in pools),
            "held_gpus": sum(8 * (n + d) for _, _, n, _, d in held),
            "draining_gpus": sum(8 * d for _, _, _, _, d in held), "held_idle": sum(i for _, _, _, i, _ in held),
            "idle_own": sum(idle for _, _, idle, _ in pools),
            "loan_state": 0,
            "lent_gpus": sum(g * sum(lent.values()) for g, _, _, lent in pools),
            "borrowed_gpu_s": 0, "lent_gpu_s": 0}


SETTINGS = QuotaSettings(mode="borrow", period_s=300)


def test_lending_is_max_min_fair_over_the_borrowers_shortfall():
    reports = {"L": report("L", pools=((8, 4, 4, {}),)),
               "B1": report("B1", pools=((8, 1, 0, {}),), pending=(3, 24)),
               "B2": report("B2", pools=((8, 1, 0, {}),), pending=(1, 8))}
    ops = decide(reports, SETTINGS)
    # B2 wants one node, B1 three: one each, then B1 (the one holding fewer) gets the rest
    assert ops["L"] == [("lend", 0, 1, "B1"), ("lend", 0, 3, "B2")] or ops["L"] == [("lend", 0, 3, "B1"), ("lend", 0, 1, "B2")]
    assert dict((o[3], o[2]) for o in ops["L"]) == {"B1": 3, "B2": 1}
    assert ops["B1"] == [("borrow", GPU8, 3, "L")] and ops["B2"] == [("borrow", GPU8, 1, "L")]


def test_scarce_nodes_go_to_the_borrower_holding_least():
    reports = {"L": report("L", pools=((8, 2, 2, {}),)),
               "B1": report("B1", pools=((8, 1, 0, {}),), held=[("X", 0, 2, 0, 0)], pending=(2, 16)),
               "B2": report("B2", pools=((8, 1, 0, {}),), pending=(2, 16)),
               "X": report("X", pools=((8, 2, 0, {"B1": 2}),), pending=(0, 0))}
    ops = decide(reports, SETTINGS)
    assert ops["B2"] == [("borrow", GPU8, 2, "L")] and "B1" not in ops


def test_a_lender_with_waiting_jobs_reclaims_from_the_biggest_holder_first_in_its_mode():
    settings = QuotaSettings(mode="borrow", period_s=300, quotas={"L": VCQuota(reclaim="drain")})
    reports = {"L": report("L", pools=((8, 4, 0, {"B1": 1, "B2": 3}),), pending=(1, 16), free=0),
               "B1": report("B1", held=[("L", 0, 1, 1, 0)], pending=(1, 8)),
               "B2": report("B2", held=[("L", 0, 3, 1, 0)], pending=(1, 8))}
    ops = decide(reports, settings)
    # 16 GPUs short: two nodes from B2 (it holds most), of which one is idle and comes back at once
    assert ops["B2"] == [("reclaim", "L", GPU8, 2, "drain", 1)]
    assert ops["L"] == [("take_back", 0, 1, "B2")]
    assert "B1" not in ops


def test_drained_returns_are_taken_back_and_idle_loans_go_home_when_the_borrower_is_done():
    reports = {"L": report("L", pools=((8, 3, 0, {"B": 3}),)),
               "B": report("B", pools=((8, 1, 1, {}),), held=[("L", 0, 2, 2, 0)], returned=[("L", 0, 1)])}
    ops = decide(reports, SETTINGS)
    assert ops["B"] == [("reclaim", "L", GPU8, 2, "drain", 2)]
    assert ops["L"] == [("take_back", 0, 1, "B"), ("take_back", 0, 2, "B")]


def test_epoch_reports_are_checked_for_conservation_and_limits():
    ok = {"L": report("L", pools=((8, 2, 0, {"B": 2}),)), "B": report("B", held=[("L", 0, 1, 0, 0)],
                                                                      returned=[("L", 0, 1)])}
    LoanBook().check(ok, SETTINGS)
    lost = {"L": ok["L"], "B": report("B", held=[("L", 0, 1, 0, 0)])}
    with pytest.raises(LoanError, match="not conserved"):
        LoanBook().check(lost, SETTINGS)
    limited = QuotaSettings(mode="borrow", period_s=300, quotas={"B": VCQuota(borrow_limit=8)})
    over = {"L": report("L", pools=((8, 2, 0, {"B": 2}),)), "B": report("B", held=[("L", 0, 2, 0, 0)])}
    with pytest.raises(LoanError, match="borrow_limit"):
        LoanBook().check(over, limited)


def test_reports_cross_to_the_coordinator_as_one_arrow_batch_and_come_back_whole():
    from raysim.quota.reports import REPORT_SCHEMA, reports_batch, reports_of

    reports = [report("L", pools=((8, 4, 1, {"B": 2}),)),
               report("B", held=[("L", 0, 1, 1, 1)], returned=[("L", 0, 1)], pending=(2, 24),
                      by_types=[{"gpu_types": None, "jobs": 1, "gpus": 8}, {"gpu_types": ["a", "b"], "jobs": 1, "gpus": 16}])]
    batch = reports_batch(reports)
    assert batch.schema == REPORT_SCHEMA and batch.num_rows == 2
    assert reports_of(batch) == {"L": reports[0], "B": reports[1]}
    assert reports_of(reports_batch([])) == {}


# ---------------------------------------------------------------------- exact and distributed
def test_conservation_holds_per_vc_and_per_node_at_every_epoch(monkeypatch):
    """A random three-VC run on the in-process executor: at every epoch, before the decisions,
    every lent node is held by its borrower or given back and not yet taken back."""
    trace, est = synthetic_trace(seed=5, n=100)
    spec = spec_of(trace, "tiresias", quota=borrow(vcs={"b": {"reclaim": "drain"}}))
    executors, epochs = [], []

    class Watched(LocalExecutor):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            executors.append(self)

    original = EpochExchange.after_window

    def checked(self, loans, t_end, status, changed):
        if self.is_epoch(t_end):
            sims = {vc: sim for group in executors[0].vcgroups for vc, sim in group.sims.items()}
            in_transit = {}
            for vc, s in status.items():
                for row in s["quota"]["returned"]:
                    key = (row["lender"], vc, row["pool"])
                    in_transit[key] = in_transit.get(key, 0) + row["nodes"]
            check_conservation(sims, in_transit)
            epochs.append(t_end)
        return original(self, loans, t_end, status, changed)

    monkeypatch.setattr(EpochExchange, "after_window", checked)
    from raysim.run.simulate import vc_groups

    executor = Watched(spec, vc_groups(spec.vcs, 1))
    jobs, _ = simulate(trace, spec, est, executor=executor, window_s=300)
    assert len(epochs) > 20
    assert jobs.column("reclaims").to_numpy().sum() > 0
    assert (jobs.column("ran_on_vc").to_numpy(zero_copy_only=False) != jobs.column("vc").to_numpy(zero_copy_only=False)).any()


@pytest.mark.parametrize("mode", ["borrow", "global"])
def test_results_do_not_depend_on_window_size_or_packing(mode, tmp_path):
    trace, est = synthetic_trace(seed=6, n=200)  # (200 jobs: loans, reclaims and jobs run elsewhere, as with 600)
    spec = spec_of(trace, "tiresias", quota=borrow() if mode == "borrow" else {"mode": "global"})
    base, base_ts = simulate(trace, spec, est, runtime="local", window_s=300)
    for window_s, per_actor in ((100, 1), (300, 8), (604_800, 2), (604_800, 8), (7_000, 8)):
        jobs, ts = simulate(trace, spec, est, runtime="local", window_s=window_s, vcs_per_actor=per_actor)
        assert jobs.equals(base) and ts.equals(base_ts), (window_s, per_actor)


def five_vcs(seed, n=250):
    """Five VCs in two cohorts, x = {v0, v1} and y = {v2, v3, v4}, busy enough to lend and reclaim."""
    from simutil import random_jobs

    rng = np.random.default_rng(seed)
    nodes = {"v0": 2, "v1": 1, "v2": 3, "v3": 1, "v4": 2}
    rows = random_jobs(rng, n, 60_000, max_gpu=16, long_tail=True)
    vcs = rng.choice(list(nodes), n, p=[0.1, 0.3, 0.1, 0.35, 0.15])
    trace = hand_trace([(vc, s, d, g) for vc, (s, d, g, _) in zip(vcs, rows)], nodes)
    cohorts = {"v0": {"cohort": "x"}, "v1": {"cohort": "x", "reclaim": "drain"}, "v2": {"cohort": "y"},
               "v3": {"cohort": "y", "borrow_limit": 16}, "v4": {"cohort": "y", "lending_limit": 8}}
    return trace, cohorts


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_a_cohort_is_decided_alike_in_its_group_and_by_the_coordinator(policy):
    """Where a cohort is decided (inside the VC group holding all of it, or by the coordinator
    when it is split) changes no result, with windows of any length, aligned to epochs or not."""
    from raysim.quota.cohorts import decided_by_coordinator
    from raysim.run.simulate import vc_groups

    trace, cohorts = five_vcs(seed=3)
    spec = spec_of(trace, policy, quota=borrow(vcs=cohorts))
    # one VC per group: both cohorts are split, the coordinator decides at 300-s windows
    assert decided_by_coordinator(spec.quota, spec.vcs, vc_groups(spec.vcs, 1)) == spec.vcs
    base, base_ts = simulate(trace, spec, None, window_s=300)
    assert base.column("reclaims").to_numpy().sum() > 0
    assert set(base.column("ran_on_vc").to_pylist()) - set(base.column("vc").to_pylist()) == set()
    assert (base.column("ran_on_vc").to_numpy(zero_copy_only=False) != base.column("vc").to_numpy(zero_copy_only=False)).any()
    for per_actor, window_s, split in ((8, 604_800, []), (8, 7_000, []), (8, 100, []),
                                       (2, 600, ["v2", "v3", "v4"]), (3, 86_400, ["v2", "v3", "v4"])):
        assert decided_by_coordinator(spec.quota, spec.vcs, vc_groups(spec.vcs, per_actor)) == split
        jobs, ts = simulate(trace, spec, None, window_s=window_s, vcs_per_actor=per_actor)
        assert jobs.equals(base) and ts.equals(base_ts), (per_actor, window_s)


def test_a_split_cohort_is_said_in_the_log(caplog):
    """Packing that splits a cohort is allowed (the coordinator decides it) but slower: the log says so."""
    trace, cohorts = five_vcs(seed=3)
    spec = spec_of(trace, "fifo", quota=borrow(vcs=cohorts))
    with caplog.at_level("INFO", logger="raysim"):
        simulate(trace, spec, None, window_s=86_400, vcs_per_actor=8)
    assert "spread over VC groups" not in caplog.text
    with caplog.at_level("INFO", logger="raysim"):
        simulate(trace, spec, None, window_s=86_400, vcs_per_actor=2)
    assert "3 VC(s) of cohort(s) y are spread over VC groups (vcs_per_actor=2)" in caplog.text


def test_conservation_holds_at_every_epoch_decided_inside_a_group(monkeypatch):
    """The in-group decisions: before each, every lent node is held by its borrower or was given
    back (and not yet taken back), and the node state of every VC is consistent."""
    from raysim.quota.exchange import CohortEpochs

    trace, cohorts = five_vcs(seed=4)
    spec = spec_of(trace, "fifo", quota=borrow(vcs=cohorts))
    original, epochs = CohortEpochs.decide, []

    def checked(self, sims, t):
        check_conservation({vc: sims[vc] for vc in self.vcs})
        epochs.append(t)
        return original(self, sims, t)

    monkeypatch.setattr(CohortEpochs, "decide", checked)
    jobs, _ = simulate(trace, spec, None, window_s=604_800, vcs_per_actor=8)
    assert len(epochs) > 50 and all(t % 300 == 0 for t in epochs)
    assert jobs.column("reclaims").to_numpy().sum() > 0


def test_auto_packing_keeps_every_cohort_in_one_group():
    from raysim.quota.cohorts import cohort_groups, cohorts, decided_in_group

    settings = quota_settings(borrow(vcs={"a": {"cohort": "x"}, "c": {"cohort": "x"}, "d": {"cohort": "y"},
                                            "e": {"cohort": "y"}, "f": {"cohort": "y"}}), list("abcdef"))
    assert cohorts(settings, list("abcdef")) == {"x": ["a", "c"], "y": ["d", "e", "f"]}  # b is alone in "all"
    assert cohort_groups(settings, list("abcdef"), 2) == [["a", "b", "c"], ["d", "e", "f"]]
    assert cohort_groups(settings, list("abcdef"), 8) == [["a", "c"], ["b"], ["d", "e", "f"]]
    assert cohort_groups(settings, list("abcdef"), 1) == [list("abcdef")]
    # by cost: b (9) alone, then y (3) and x (2) onto the other group; by count b would join x
    costs = dict(zip("abcdef", [1.0, 9.0, 1.0, 1.0, 1.0, 1.0]))
    assert cohort_groups(settings, list("abcdef"), 2, costs) == [["a", "c", "d", "e", "f"], ["b"]]
    assert decided_in_group(settings, list("abcdef"), ["a", "b", "c"]) == ["a", "c"]
    assert decided_in_group(settings, list("abcdef"), ["b", "d", "e"]) == []


def test_quota_none_is_the_run_without_quotas():
    trace, est = synthetic_trace(seed=7)
    plain = spec_of(trace, "srtf")
    jobs, ts = simulate(trace, plain, est)
    again, ts2 = simulate(trace, spec_of(trace, "srtf", quota={"mode": "none"}), est)
    assert jobs.equals(again) and ts.equals(ts2)
    assert "ran_on_vc" not in jobs.column_names


def test_the_global_queue_runs_every_job_on_any_vcs_nodes():
    trace, est = synthetic_trace(seed=8)
    jobs, series = simulate(trace, spec_of(trace, "fifo", quota={"mode": "global"}), est)
    assert set(series.column("vc").to_pylist()) == {GLOBAL_VC, "all"}
    assert jobs.column("vc").to_pylist() == trace.table.column("vc").to_pylist()
    ran = jobs.column("ran_on_vc").to_numpy(zero_copy_only=False)
    assert set(ran) <= set(trace.vc_nodes) and (ran != jobs.column("vc").to_numpy(zero_copy_only=False)).any()
    assert series.column("total_gpu_num").to_numpy().max() == 8 * sum(trace.vc_nodes.values())
    none, _ = simulate(trace, spec_of(trace, "fifo"), est)
    assert jobs.column("queue").to_numpy().mean() < none.column("queue").to_numpy().mean()


def test_a_borrow_run_resumes_from_its_checkpoint_with_identical_results(tmp_path):
    trace, est = synthetic_trace(seed=9, n=200)  # (200 jobs: a reclaim and 20 jobs run elsewhere)
    assert_resumes_identically(trace, spec_of(trace, "tiresias", quota=borrow()), est, tmp_path)


def assert_resumes_identically(trace, spec, est, tmp_path):
    """A run killed after 40 windows of 300 s (checkpoints every 7) and resumed writes the files
    of an uninterrupted run."""
    from test_ray_runtime import StopAfter

    from raysim.run.simulate import simulate_to, vc_groups

    whole, whole_ts = simulate(trace, spec, est, window_s=300)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Exception):
        simulate_to(tmp_path / "a", trace, spec, est, window_s=300, checkpoint_dir=ckpt, checkpoint_every=7,
                    executor=StopAfter(spec, vc_groups(spec.vcs, 1), windows=40))
    simulate_to(tmp_path / "b", trace, spec, est, window_s=300, checkpoint_dir=ckpt, resume=True)
    assert pq.read_table(tmp_path / "b" / "jobs.parquet").equals(whole)
    assert pq.read_table(tmp_path / "b" / "timeseries.parquet").equals(whole_ts)


# ---------------------------------------------------------------------- configuration
def test_bad_quota_settings_are_one_line_errors_naming_the_key():
    with pytest.raises(ConfigError, match="quota.mode"):
        quota_settings({"mode": "lend"}, ["a"])
    with pytest.raises(ConfigError, match="quota.vcs: names VC"):
        quota_settings(borrow(vcs={"zz": {"cohort": "x"}}), ["a", "b"])
    with pytest.raises(ConfigError, match=r"quota.vcs.a.reclaim"):
        quota_settings(borrow(vcs={"a": {"reclaim": "kill"}}), ["a"])
    with pytest.raises(ConfigError, match=r"quota.vcs.a.limit: not a setting of quota=borrow"):
        quota_settings(borrow(vcs={"a": {"limit": 3}}), ["a"])
    with pytest.raises(ConfigError, match="quota.borrow_limit"):
        quota_settings(borrow(borrow_limit=-1), ["a"])
    settings = quota_settings(borrow(borrow_limit=16, vcs={"a": {"cohort": "x", "reclaim": "drain"}}), ["a", "b"])
    assert settings.of("a") == VCQuota(cohort="x", borrow_limit=16, reclaim="drain")
    assert settings.of("b") == VCQuota(borrow_limit=16)


# ---------------------------------------------------------------------- on Ray
@pytest.fixture(scope="module")
def ray_up(ray_session):
    """Ray, started once for the session (tests/conftest.py)."""


def parquet_bytes(table, path):
    pq.write_table(table, path, compression="zstd")
    return path.read_bytes()


@pytest.mark.slow  # 21 s with Ray start-up; test_ray_runtime keeps Ray byte-identity in the main suite
def test_ray_writes_the_same_files_as_local_whatever_the_packing(ray_up, tmp_path):
    trace, est = synthetic_trace(seed=10, n=200)
    spec = spec_of(trace, "tiresias", quota=borrow(vcs={"c": {"reclaim": "drain"}}))
    local, local_ts = simulate(trace, spec, est, runtime="local")
    assert local.column("ran_on_vc").to_pylist() != local.column("vc").to_pylist()
    for per_actor in (1, 8):
        jobs, ts = simulate(trace, spec, est, runtime="ray", window_s=86_400, vcs_per_actor=per_actor,
                            ray_options={"actor_cpus": 0.1})
        assert parquet_bytes(jobs, tmp_path / "a.parquet") == parquet_bytes(local, tmp_path / "b.parquet")
        assert ts.equals(local_ts)


@pytest.mark.slow  # 11 s; test_ray_runtime keeps a killed-actor rebuild in the main suite
def test_a_killed_vc_actor_in_a_borrow_run_is_rebuilt_with_identical_results(ray_up, tmp_path):
    from test_ray_runtime import KillOnce

    from raysim.run.simulate import vc_groups

    trace, est = synthetic_trace(seed=11, n=200)
    spec = spec_of(trace, "fifo", quota=borrow())
    undisturbed, undisturbed_ts = simulate(trace, spec, est, runtime="local")
    executor = KillOnce(spec, vc_groups(spec.vcs, 1), victim=1, at=40)
    jobs, ts = simulate(trace, spec, est, executor=executor, window_s=300)
    assert executor.killed
    assert parquet_bytes(jobs, tmp_path / "a.parquet") == parquet_bytes(undisturbed, tmp_path / "b.parquet")
    assert ts.equals(undisturbed_ts)


# ---------------------------------------------------------------------- a whole run and a sweep
def test_a_borrow_run_reports_loans_in_its_summary_and_plots(tmp_path, venus_first_day):
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.cluster import run_cluster

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "runtime=local", "quota=borrow",
                                                       f"trace.path={venus_first_day}"])
    overall = run_cluster(cfg, tmp_path)
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("vc")
    vcs = summary.drop(index="all")
    assert overall["borrowed_gpu_h"] == pytest.approx(overall["lent_gpu_h"]) and overall["borrowed_gpu_h"] > 0
    assert vcs["borrowed_gpu_h"].sum() == pytest.approx(overall["borrowed_gpu_h"])
    assert summary.loc["all", "reclaims"] == vcs["reclaims"].sum() > 0
    assert (tmp_path / "plots" / "loans.png").stat().st_size > 10_000
    jobs = pq.read_table(tmp_path / "jobs.parquet", columns=["vc", "home_vc", "ran_on_vc", "reclaims"])
    assert jobs.column("home_vc").to_pylist() == jobs.column("vc").to_pylist()
    assert summary.loc["all", "ran_elsewhere"] == sum(
        r is not None and r != v for r, v in zip(jobs.column("ran_on_vc").to_pylist(), jobs.column("vc").to_pylist()))


def test_a_sweep_shows_the_queue_each_vc_gained_or_lost():
    from raysim.report.sweep import quota_change

    table = pd.DataFrame({"run": ["policy=fifo,quota=none"] * 2 + ["policy=fifo,quota=borrow"] * 2
                          + ["policy=sjf,quota=global"] * 2,
                          "vc": ["a", "all"] * 3, "avg_queue": [100.0, 50.0, 40.0, 30.0, 1.0, 1.0]})
    change = quota_change(table, "avg_queue")
    assert list(change.columns) == ["policy=fifo,quota=borrow"]  # sjf has no quota=none run to compare to
    assert change.loc["a"].tolist() == [-60.0] and change.loc["all"].tolist() == [-20.0]


# ---------------------------------------------------------------------- every mode, every output
def quota_modes_of_conf():
    """The quota modes conf/quota/ offers (`quota=<name>`), each file's `mode`."""
    import yaml

    from raysim.paths import CONF_DIR

    return {path.stem: yaml.safe_load(path.read_text())["mode"] for path in sorted((CONF_DIR / "quota").glob("*.yaml"))}


def interval_start_and_size(text):
    """(first id, number of ids) of an out_jobs.csv interval set ("8-15 0-3"), its first interval first."""
    parts = [tuple(map(int, part.split("-"))) if "-" in part else (int(part), int(part)) for part in text.split()]
    return parts[0][0], sum(hi - lo + 1 for lo, hi in parts)


@pytest.fixture(scope="module", params=[pytest.param(name, marks=[] if name == "global" else pytest.mark.slow)
                                        for name in sorted(quota_modes_of_conf())])
def every_output(request, tmp_path_factory, venus_first_day):
    """(mode, run folder) of `python -m raysim` on the first day of the Venus-like week under Tiresias
    with node maintenance and failures, checkpoints and every output on (the page, plots,
    out_jobs.csv, timeline.json), for each `quota=` of conf/quota/. About 5 s of CPU a mode: `global`
    in the main suite (no other test runs it end to end), the others, which other tests run end to
    end, with the slow ones."""
    import subprocess
    import sys
    from pathlib import Path

    name = request.param
    run_dir = tmp_path_factory.mktemp(name) / "run"
    res = subprocess.run([sys.executable, "-m", "raysim", "+experiment=venus_maintenance", "runtime=local",
                          f"trace.path={venus_first_day}", f"quota={name}", "policy=tiresias", "failures=exponential",
                          "checkpoint.interval_s=3600", "report.html=true", "report.plots=run", "report.out_jobs=true",
                          "report.timeline=true", f"hydra.run.dir={run_dir}"],
                         cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return name, run_dir


def test_conf_offers_every_quota_mode():
    from raysim.quota.settings import MODES

    assert sorted(quota_modes_of_conf().values()) == sorted(MODES)
    assert all(name == mode for name, mode in quota_modes_of_conf().items())


def test_every_quota_mode_writes_every_output_and_they_agree(every_output):
    import json

    mode, run_dir = every_output
    plots = {"jct_cdf", "queue_per_vc", "gpu_utilization", "pending_jobs", "capacity", "lost_by_cause"}
    assert {p.stem for p in (run_dir / "plots").glob("*.png")} == plots | ({"loans"} if mode == "borrow" else set())
    jobs = pq.read_table(run_dir / "jobs.parquet").to_pandas()
    report = json.loads((run_dir / "trace_report.json").read_text())
    assert len(jobs) == report["jobs"] == 1_096 and jobs.finished.all()
    summary = pd.read_csv(run_dir / "summary.csv").set_index("vc")
    assert summary.loc["all", "jobs"] == len(jobs) and summary.drop(index="all").jobs.sum() == len(jobs)
    down = summary.drop(index="all").down_gpu_h
    if mode == "global":  # the series has the merged VC only: no VC's own share of it
        assert down.isna().all()
    else:
        assert down.sum() == pytest.approx(summary.loc["all", "down_gpu_h"])
    assert summary.loc["all", "down_gpu_h"] > 0 and summary.loc["all", "interruptions"] > 0

    # out_jobs.csv: every job, in trace order, on gpu_num of the cluster's GPUs, starting in those of
    # the VC whose node it started on: its own, or (borrow) the lender of a first node it held on loan,
    # or (global) the VC whose pool held it
    out = pd.read_csv(run_dir / "out_jobs.csv")
    assert out.job_id.tolist() == jobs.job_id.tolist()
    np.testing.assert_array_equal(out.waiting_time, jobs.start_time - jobs.submit_time)
    assert {pool["gpus_per_node"] for pools in report["layout"].values() for pool in pools} == {8}
    sizes = 8 * np.array(list(report["vcs"].values()))  # each VC's GPUs, numbered VC by VC (layout order)
    ranges = dict(zip(report["vcs"], zip(np.cumsum(sizes) - sizes, np.cumsum(sizes))))
    on = jobs.vc.astype(str)
    if mode == "global":
        on = jobs.ran_on_vc
    elif mode == "borrow":
        held = jobs.first_node >= on.map(report["vcs"])
        on = on.where(~held, jobs.ran_on_vc)
        assert held.any()
    for text, gpus, vc in zip(out.allocated_resources, jobs.gpu_num, on):
        first, size = interval_start_and_size(text)
        assert size == gpus and ranges[vc][0] <= first < ranges[vc][1], (text, vc)

    # timeline.json: a slice per job, the capacity events, a process per simulated VC
    timeline = json.loads((run_dir / "timeline.json").read_text())
    events = timeline["traceEvents"]
    assert sorted(e["args"]["job_id"] for e in events if e["ph"] == "X") == sorted(jobs.job_id)
    assert timeline["otherData"]["raysim"]["capacity_events"] == sum(e["ph"] == "i" for e in events) > 0
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} == {f"VC {vc}" for vc in report["layout"]}

    # lost_by_cause.csv: the cluster's rows add up to the summary's lost work, and those of capacity
    # events (not the policy's preemptions or quota reclaims) to its interruptions
    from raysim.report.capacity import OTHER_STOPS, PREEMPTIONS, RECLAIMS

    lost = pd.read_csv(run_dir / "lost_by_cause.csv")
    cluster = lost[lost.vc == "all"]
    assert cluster.lost_gpu_h.sum() == pytest.approx(summary.loc["all", "lost_gpu_h"])
    events = cluster[~cluster.cause.isin([PREEMPTIONS, RECLAIMS, OTHER_STOPS])]
    assert events.interruptions.sum() == summary.loc["all", "interruptions"]

    # timeseries.parquet: the simulated VCs and the cluster; the page: the summary's figures
    series = pq.read_table(run_dir / "timeseries.parquet", columns=["vc", "down_gpu_num"])
    assert set(series.column("vc").to_pylist()) == {*report["layout"], "all"}
    html = (run_dir / "report.html").read_text()
    assert f"{summary.loc['all', 'avg_jct']:,.1f}" in html and f"<dt>quota</dt><dd>{mode}</dd>" in html


def test_the_run_page_counts_the_layouts_vcs_and_draws_each_line_once(every_output):
    """The page's cluster line counts the VCs of the trace's layout, and says that quota=global puts
    them in one queue (its layout is one merged VC, which was "1 VC"); the over-time charts draw the
    cluster with its largest VCs, but under quota=global the cluster alone (the merged VC's line was
    the cluster's again)."""
    import json
    import re

    mode, run_dir = every_output
    report = json.loads((run_dir / "trace_report.json").read_text())
    html = (run_dir / "report.html").read_text()
    vcs = f"{len(report['vcs'])} VCs" + (" sharing one queue" if mode == "global" else "")
    assert f"<dt>cluster</dt><dd>{vcs}, 1,080 GPUs</dd>" in html
    charts = json.loads(re.search(r'<script id="raysim-charts" type="application/json">(.*?)</script>', html,
                                  re.S).group(1))
    pending = next(c for c in charts if c["id"] == "series_pending_gpujob_num")
    if mode == "global":
        assert pending["series"] == ["cluster"]
    else:
        assert pending["series"][0] == "cluster" and len(pending["series"]) > 2
