"""Quota lending, the VC side (raysim.quota.ledger): two hand-built VCs, the test plays the coordinator."""

import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from simutil import batch, pools, random_jobs

from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.models.forecast import PackingSwitch
from raysim.quota.ledger import PoolShape, QuotaLending, check_conservation
from raysim.report.results import jobs_table
from raysim.runtime.codec import LOAN_RESULT_SCHEMA, RESULT_SCHEMA, results_table
from raysim.sim import SimParams, VCSimulator

A_POOL = PoolShape(0, "gpu", 8)  # VC A's only pool, as its borrowers see it


def make_vc(name, nodes, policy="tiresias", *, lending=True, **constants):
    """A VC of `nodes` 8-GPU nodes (clean semantics, consolidated placement)."""
    params = SimParams.for_mode("clean")
    if policy == "tiresias":
        constants.setdefault("threshold_gpu_s", 10**9)  # one queue: submit order (no demotion)
    return VCSimulator(name, pools(nodes), make_policy(policy, params=params, **constants),
                       make_placer("consolidate", params=params), params,
                       extensions=[QuotaLending()] if lending else [])


def test_simulation_core_imports_no_feature_and_no_ray():
    # raysim.sim is pure: quota lending reaches its engine as an extension (raysim.sim.extensions),
    # so importing it brings in neither Ray nor anything of raysim.quota (issue 49)
    code = ("import sys, raysim.sim; print(sorted(m for m in sys.modules if m == 'ray' or "
            "m.startswith(('ray.', 'raysim.runtime', 'raysim.quota'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def add(sim, jobs):
    sim.add_jobs(batch(jobs))


def to(sims, t):
    """Every VC processes the events before t; then loans are conserved (nothing in transit)."""
    for sim in sims.values():
        sim.run(until=t)
    check_conservation(sims)


def results(sim):
    return {k: v.tolist() for k, v in sim.results().items()}


def job(sim, j):
    """(start, end, queue, preemptions, reclaims, ran_on_vc) of job j."""
    r = results(sim)
    return tuple(r[c][j] for c in ("start_time", "end_time", "queue", "preemptions", "reclaims", "ran_on_vc"))


def two_vcs(j2=(10, 2000, 8)):
    """A: 2 idle nodes; B: 1 node busy with j0 (0-3000), j1 (8 GPUs, 2000 s) and j2 queued from t=10."""
    a, b = make_vc("A", 2), make_vc("B", 1)
    add(b, [(0, 3000, 8), (10, 2000, 8), j2])
    return {"A": a, "B": b}


def lend_two(sims, t=300):
    sims["A"].loans.lend(t, 0, 2, "B")
    sims["B"].loans.borrow(t, A_POOL, 2, "A")
    check_conservation(sims)


def test_the_report_shows_idle_nodes_and_demand():
    sims = two_vcs()
    to(sims, 300)
    a, b = sims["A"].loans.quota_report(300), sims["B"].loans.quota_report(300)
    assert a == {"vc": "A", "time": 300,
                 "pools": [{"pool": 0, "gpu_type": "gpu", "gpus_per_node": 8, "nodes": 2, "idle": 2}], "lent": [],
                 "loans": {}, "held": [], "returned": [], "pending_jobs": 0, "pending_gpus": 0, "pending_by_types": [],
                 "free_gpus": 16, "held_gpus": 0, "lent_gpus": 0, "draining_gpus": 0, "held_idle": 0, "idle_own": 2,
                 "loan_state": 0, "borrowed_gpu_s": 0, "lent_gpu_s": 0, "idle_ids": None, "held_nodes": None}
    assert b["pools"] == [{"pool": 0, "gpu_type": "gpu", "gpus_per_node": 8, "nodes": 1, "idle": 0}]
    assert (b["pending_jobs"], b["pending_gpus"]) == (2, 16)
    assert b["pending_by_types"] == [{"gpu_types": None, "jobs": 2, "gpus": 16}]
    lend_two(sims)
    a, b = sims["A"].loans.quota_report(300), sims["B"].loans.quota_report(300)
    assert a["pools"][0]["idle"] == 0
    assert a["lent"] == [{"pool": 0, "gpu_type": "gpu", "gpus_per_node": 8, "vc": "B", "nodes": 2}]
    assert b["held"] == [{"lender": "A", "pool": 0, "gpu_type": "gpu", "gpus_per_node": 8,
                          "nodes": 2, "idle": 2, "draining": 0}]
    assert a["loans"] == {("A", "B", 0): -2} and b["loans"] == {("A", "B", 0): 2}
    to(sims, 600)
    a, b = sims["A"].loans.quota_report(600), sims["B"].loans.quota_report(600)
    assert b["held"][0]["idle"] == 0 and b["pending_jobs"] == 0
    assert a["lent_gpu_s"] == b["borrowed_gpu_s"] == 16 * 300


def test_borrowed_nodes_take_queued_jobs_at_the_epoch():
    sims = two_vcs()
    to(sims, 300)
    lend_two(sims)
    to(sims, 301)
    b = sims["B"]
    assert b.vc.num_nodes == 3 and sims["A"].vc.num_nodes == 0
    assert job(b, 0)[-1] == "B"
    assert [job(b, j)[0] for j in (1, 2)] == [300, 300]
    assert [job(b, j)[-1] for j in (1, 2)] == ["A", "A"]


def test_a_preempting_reclaim_charges_the_overhead_and_returns_the_node_at_once():
    sims = two_vcs()
    a, b = sims["A"], sims["B"]
    add(a, [(400, 100, 8)])
    to(sims, 300)
    lend_two(sims)
    to(sims, 600)
    assert a.loans.quota_report(600)["pending_gpus"] == 8
    # both held nodes are busy: the last borrowed (j2's) goes; j2 stops, A takes the node back
    assert b.loans.reclaim(600, "A", A_POOL, 1, "preempt") == 1
    a.loans.take_back(600, 0, 1, "B")
    check_conservation(sims)
    assert job(b, 2)[4] == 1 and b.jobs.remain[2] == 2000 - 300 + 40  # Tiresias' overhead_s
    to(sims, 10_000)
    assert job(a, 0) == (600, 700, 200, 0, 0, "A")  # A's job starts at the epoch on its node
    # j1 ends at 2300 on the held node; j2 continues there at the next 60-s boundary, 2340
    assert job(b, 1) == (300, 2300, 290, 0, 0, "A")
    assert job(b, 2) == (300, 2340 + 1740, 290 + 1740, 0, 1, "A")
    assert job(b, 0) == (0, 3000, 0, 0, 0, "B")


def test_a_job_that_ends_at_the_reclaim_finishes_rather_than_stops():
    sims = two_vcs(j2=(10, 300, 8))  # j2 runs 300-600 on the node borrowed last
    to(sims, 300)
    lend_two(sims)
    to(sims, 600)
    b = sims["B"]
    assert b.loans.reclaim(600, "A", A_POOL, 1, "preempt") == 1
    sims["A"].loans.take_back(600, 0, 1, "B")
    check_conservation(sims)
    assert job(b, 2) == (300, 600, 290, 0, 0, "A") and b.finished_log == [2]
    to(sims, 10_000)
    assert b.finished == 3 and job(b, 2)[1] == 600  # finished once


def test_a_draining_reclaim_returns_the_node_when_its_job_ends():
    sims = two_vcs(j2=(10, 500, 4))  # j2 ends at 800
    a, b = sims["A"], sims["B"]
    add(a, [(400, 100, 8)])
    add(b, [(650, 100, 4)])  # j3: must not use the 4 idle GPUs of the draining node
    to(sims, 300)
    lend_two(sims)
    to(sims, 600)
    assert b.loans.reclaim(600, "A", A_POOL, 1, "drain") == 0  # j2's node: 4 GPUs in use, the fewest
    check_conservation(sims)
    assert b.loans.quota_report(600)["held"] == [{"lender": "A", "pool": 0, "gpu_type": "gpu", "gpus_per_node": 8,
                                             "nodes": 1, "idle": 0, "draining": 1}]
    assert b.vc.num_nodes == 3 and b.free_gpus == 4
    to(sims, 900)  # j2 ended at 800: its node went back then
    assert job(b, 2) == (300, 800, 290, 0, 0, "A")
    assert b.vc.num_nodes == 2 and not b.vc.draining
    report = b.loans.quota_report(900)
    assert report["returned"] == [{"lender": "A", "pool": 0, "gpu_type": "gpu", "gpus_per_node": 8, "nodes": 1,
                                  "origins": None}]
    assert report["borrowed_gpu_s"] == 16 * (800 - 300) + 8 * (900 - 800)
    assert a.loans.quota_report(900)["lent_gpu_s"] == 16 * (900 - 300)  # lent until taken back
    assert b.loans.quota_report(900)["returned"] == []  # a report lists a return once
    check_conservation(sims, {("A", "B", 0): 1})  # reported, not yet taken back
    a.loans.take_back(900, 0, 1, "B")
    check_conservation(sims)
    to(sims, 10_000)
    assert job(a, 0) == (900, 1000, 500, 0, 0, "A")
    # j3 waited for j1's node (2300; Tiresias decides at 2340), never the draining one
    assert job(b, 3)[:2] == (2340, 2440) and b.jobs.first_node[3] == 1


def test_a_multi_node_job_on_a_reclaimed_node_stops_as_a_whole_and_restarts_without_checkpoint():
    # FIFO does not preempt: a job a reclaim stops has no checkpoint and starts over
    a, b = make_vc("A", 1, "fifo"), make_vc("B", 1, "fifo")
    sims = {"A": a, "B": b}
    add(b, [(0, 1000, 16)])
    to(sims, 300)
    a.loans.lend(300, 0, 1, "B")
    b.loans.borrow(300, A_POOL, 1, "A")
    to(sims, 600)
    assert job(b, 0)[:2] == (300, -1) and b.jobs.num_nodes[0] == 2
    assert job(b, 0)[-1] == "A"  # one of its nodes is A's
    assert b.loans.reclaim(600, "A", A_POOL, 1, "preempt") == 1
    a.loans.take_back(600, 0, 1, "B")
    check_conservation(sims)
    assert b.free_gpus == b.total_gpus == 8  # its GPUs on B's own node are free too
    assert b.jobs.remain[0] == 1000 and job(b, 0)[3:5] == (0, 1)
    to(sims, 900)
    a.loans.lend(900, 0, 1, "B")
    b.loans.borrow(900, A_POOL, 1, "A")
    to(sims, 10_000)
    assert job(b, 0) == (300, 1900, 300 + 300, 0, 1, "A")
    assert a.loans.quota_report(10_000)["lent_gpu_s"] == 8 * (300 + 9100)


def test_held_nodes_are_refused_beyond_what_was_lent_and_errors_are_clear():
    sims = two_vcs()
    a, b = sims["A"], sims["B"]
    to(sims, 300)
    with pytest.raises(ValueError, match="cannot lend 3 nodes of pool 0 at t=300: 2 are idle"):
        a.loans.lend(300, 0, 3, "B")
    lend_two(sims)
    with pytest.raises(ValueError, match="cannot reclaim 3 nodes"):
        b.loans.reclaim(300, "A", A_POOL, 3, "preempt")
    with pytest.raises(ValueError, match="mode must be one of preempt, drain"):
        b.loans.reclaim(300, "A", A_POOL, 1, "kill")
    with pytest.raises(ValueError, match="cannot take back 1 nodes of pool 0 from C at t=300: 0 are lent to it"):
        a.loans.take_back(300, 0, 1, "C")
    to(sims, 301)
    with pytest.raises(ValueError, match="needs every event before t processed"):
        b.loans.borrow(300, A_POOL, 1, "A")
    with pytest.raises(ValueError, match="do not mix"):
        b.add_node_events([(400, 1)])
    assert make_vc("C", 1, lending=False).loans is None  # (a VC without quota lending has no loans to report)


def settle(sims, t, reports, rng=None):
    """The coordinator's returns at epoch t: drained nodes reported go back to their lenders; then
    each borrower reclaims a random number of held nodes in a random mode (with no `rng`: all of
    them, preempting), and the lenders take back those returned at once."""
    for name, report in reports.items():
        for row in report["returned"]:
            sims[row["lender"]].loans.take_back(t, row["pool"], row["nodes"], name)
    for name, report in reports.items():
        for row in report["held"]:
            k = row["nodes"] if rng is None else int(rng.integers(0, row["nodes"] + 1))
            mode = "preempt" if rng is None else str(rng.choice(["preempt", "drain"]))
            back = sims[name].loans.reclaim(t, row["lender"], PoolShape(0, "gpu", 8), k, mode) if k else 0
            if back:
                sims[row["lender"]].loans.take_back(t, 0, back, name)
    check_conservation(sims)


def test_counts_are_conserved_through_random_loans():
    """Random traces on three VCs, random loans and reclaims at every epoch: node, GPU and loan
    counts hold throughout, and every job finishes exactly once."""
    rng = np.random.default_rng(7)
    sims = {name: make_vc(name, n) for name, n in (("A", 2), ("B", 1), ("C", 3))}
    for sim in sims.values():
        add(sim, random_jobs(rng, 60, 20_000, max_gpu=8, long_tail=True))
    for t in range(300, 40_000, 300):
        to(sims, t)
        settle(sims, t, {name: sim.loans.quota_report(t) for name, sim in sims.items()}, rng)
        for name, sim in sims.items():
            idle = sim.loans.quota_report(t)["pools"][0]["idle"]
            other = str(rng.choice([n for n in sims if n != name]))
            k = int(rng.integers(0, idle + 1))
            if k and sims[other].pending:
                sim.loans.lend(t, 0, k, other)
                sims[other].loans.borrow(t, PoolShape(0, "gpu", 8), k, name)
        check_conservation(sims)
    t = 40_200
    to(sims, t)
    settle(sims, t, {name: sim.loans.quota_report(t) for name, sim in sims.items()})  # every loan ends
    reclaims = 0
    for sim in sims.values():
        sim.run()
        assert sim.done and sim.finished == 60 and not sim.vc.held and not sim.vc.lent
        r = sim.results()
        assert (r["end_time"] >= r["start_time"] + 1).all()
        reclaims += int(r["reclaims"].sum())
    assert reclaims > 0


def test_pickling_a_vc_mid_loan_continues_identically():
    sims = two_vcs(j2=(10, 500, 4))
    add(sims["A"], [(400, 100, 8)])
    to(sims, 300)
    lend_two(sims)
    to(sims, 600)
    sims["B"].loans.reclaim(600, "A", A_POOL, 1, "drain")
    to(sims, 700)  # mid-loan: one held node open, one draining, A's nodes away
    copy = pickle.loads(pickle.dumps(sims, protocol=pickle.HIGHEST_PROTOCOL))

    def finish(s):
        to(s, 900)
        reports = {n: sim.loans.quota_report(900) for n, sim in s.items()}
        s["A"].loans.take_back(900, 0, 1, "B")
        s["B"].loans.reclaim(900, "A", A_POOL, 1, "preempt")
        s["A"].loans.take_back(900, 0, 1, "B")
        to(s, 100_000)
        final = {n: sim.loans.quota_report(100_000) for n, sim in s.items()}
        return reports, {n: results(sim) for n, sim in s.items()}, final

    assert finish(sims) == finish(copy)


def test_quota_lending_without_loans_changes_no_result():
    rng = np.random.default_rng(3)
    jobs = random_jobs(rng, 200, 20_000, max_gpu=16)
    out = []
    for on in (False, True):
        sim = make_vc("A", 2, "srtf", lending=on)
        add(sim, jobs)
        sim.run()
        out.append(sim.results())
    assert set(out[1]) - set(out[0]) == {"ran_on_vc", "reclaims"}
    assert all(np.array_equal(out[0][k], out[1][k]) for k in out[0])
    assert set(out[1]["ran_on_vc"]) == {"A"} and not out[1]["reclaims"].any()


def test_records_carry_the_loan_columns_only_with_quota_lending():
    sims = two_vcs()
    to(sims, 300)
    lend_two(sims)
    to(sims, 301)
    b = sims["B"]
    table = results_table([b.results()])
    assert table.schema == LOAN_RESULT_SCHEMA
    assert table.column("ran_on_vc").to_pylist() == ["B", "A", "A"]
    plain = make_vc("C", 1, lending=False)
    add(plain, [(0, 10, 1)])
    plain.run()
    assert results_table([plain.results()]).schema == RESULT_SCHEMA
    n = 3
    trace = pa.table({"job_id": np.arange(n), "vc": ["B"] * n, "user": ["u"] * n, "gpu_num": [8] * n,
                      "submit_time": [0, 10, 10], "duration": [3000, 2000, 2000]})
    jobs = jobs_table(trace, table)
    assert jobs.column("ran_on_vc").to_pylist() == ["B", "A", "A"]
    assert jobs.column("reclaims").to_pylist() == [0, 0, 0]
    assert "ran_on_vc" not in jobs_table(trace.slice(0, 1), results_table([plain.results()])).column_names


def lucid_vc(name, nodes):
    params = SimParams.for_mode("clean")
    policy = make_policy("lucid", params=params, pairs={}, switch=PackingSwitch())
    return VCSimulator(name, pools(nodes), policy, make_placer("consolidate", params=params), params,
                       extensions=[QuotaLending()])


@pytest.mark.parametrize("mode", ["drain", "preempt"])
def test_gpu_sharing_never_joins_a_draining_node_and_partners_stop_together(mode):
    # Lucid packs: L2 would share L1's GPUs on the held node. Drained, it may not; preempted, both
    # partners stop (Lucid does not preempt: they start over) and Lucid's partner state is cleared.
    a, b = lucid_vc("A", 1), lucid_vc("B", 1)
    sims = {"A": a, "B": b}
    add(b, [(0, 5000, 8, 5000.0), (10, 1000, 4, 100.0), (320, 1000, 4, 100.0)])
    to(sims, 300)
    a.loans.lend(300, 0, 1, "B")
    b.loans.borrow(300, A_POOL, 1, "A")
    to(sims, 310)
    assert job(b, 1)[0] == 300 and job(b, 1)[-1] == "A"
    if mode == "drain":
        b.loans.reclaim(310, "A", A_POOL, 1, "drain")
        to(sims, 10_000)
        assert not results(b)["shared"][1] and job(b, 2)[0] == 5000  # waited for B's own node
        return
    to(sims, 600)
    assert results(b)["shared"][1:] == [1, 1]
    assert b.loans.reclaim(600, "A", A_POOL, 1, "preempt") == 1
    a.loans.take_back(600, 0, 1, "B")
    check_conservation(sims)
    assert not b.policy.partner and not any(b.policy.solo.get(4, []))
    assert [b.jobs.remain[j] for j in (1, 2)] == [1000, 1000]
    to(sims, 10_000)
    assert [job(b, j)[:2] for j in (1, 2)] == [(300, 6000), (320, 6000)]  # partners again on B's node
    assert [job(b, j)[4] for j in (1, 2)] == [1, 1]
