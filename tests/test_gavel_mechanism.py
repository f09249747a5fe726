"""Hand-built cases for the round mechanism and the LP policies (two GPU types, three jobs), with
every number computed by hand in the comments."""

import numpy as np
import pyarrow as pa
import pytest

from raysim.cluster.layout import Pool
from raysim.cluster.throughput import ThroughputTable
from raysim.rounds import lp
from raysim.rounds.inputs import round_inputs
from raysim.rounds.mechanism import RoundState
from raysim.rounds.policies import AllocationInput, round_policy
from raysim.rounds.policies.min_total_duration_perf import gavel_bisection
from raysim.run.rounds import run_gavel_jobs
from raysim.trace.gavel import SCHEMA

# job type -> throughput (steps/s of the whole job) on v100 and k80, one GPU
RATES = {"A": (2.0, 1.0), "B": (1.0, 1.0), "C": (3.0, 0.5)}


def table(extra=None):
    rates = {(job, gpu, 1): r for job, (v, k) in RATES.items() for gpu, r in (("v100", v), ("k80", k))}
    rates.update(extra or {})
    return ThroughputTable(rates)


def one_each() -> dict:
    """One V100 and one K80 (types sorted by name: K80 = 0, V100 = 1)."""
    return {"cluster": [Pool("V100", 1, 1), Pool("K80", 1, 1)]}


def jobs(rows) -> pa.Table:
    """rows: (job_type, scale, steps, arrival)."""
    cols = {n: [] for n in SCHEMA.names}
    for i, (job_type, scale, steps, arrival) in enumerate(rows):
        for n, v in zip(SCHEMA.names, (i, job_type, scale, float(steps), 1.0, -1.0, float(arrival))):
            cols[n].append(v)
    return pa.table(cols, schema=SCHEMA)


class Result:
    """Per job (id order): completion (NaN: dropped), first start."""

    def __init__(self, out: pa.Table):
        df = out.to_pandas()
        self.completion = df.end_time.astype(float).to_numpy()
        self.first_start = df.start_time.astype(float).to_numpy()
        self.dropped = df.index[~df.finished].tolist()


def run(policy, rows, layout=None, extra=None, **kw):
    """`policy` on the VC engine (the kernel) over `rows` on `layout` (default one_each())."""
    kw.setdefault("type_order", ["V100", "K80"])
    out = run_gavel_jobs(jobs(rows), layout or one_each(), table(extra), policy, reference_type="V100", **kw)
    return Result(out)


def test_round_mechanics_by_hand():
    """fifo_perf, 360 s rounds, allocation recomputed at most every 1920 s:
    - A (720 steps, 2/s on V100) arrives at 0: V100, 720 steps in 360 s -> done at 360.
    - B (500 steps, 1/s on both) arrives at 100, mid-round: it joins at the boundary (360), the
      allocation is recomputed (the last recompute was at time 0) and B gets K80 (equal speeds: the
      first type by name); 360 steps by 720, 140 more by 860 -> JCT 760.
    - C (1000 steps, 3/s on V100) arrives at 400 but the allocation may not change before 360 + 1920:
      C waits while B finishes; with nothing running and nothing to arrive Gavel forces a recompute,
      C gets V100 at 860 and runs 1000 steps in 333.3 s -> done at 1193.33, JCT 793.33.
    """
    result = run("fifo_perf", [("A", 1, 720, 0), ("B", 1, 500, 100), ("C", 1, 1000, 400)])
    assert result.completion == pytest.approx([360.0, 860.0, 860 + 1000 / 3], abs=1e-6)
    assert result.first_start == pytest.approx([0.0, 360.0, 860.0], abs=1e-6)


def test_priorities_alternate_jobs_by_hand(monkeypatch):
    """isolated on one V100, two identical jobs (1 step/s) from time 0: x = 1/2 each. After the
    recompute both have run 180 s of 360 -> priority 0.5 / 0.5 = 1, a tie: the first job runs. Then
    A has 540 of 720 s (priority 0.5 / 0.75 = 0.67) and B 180 (0.5 / 0.25 = 2): B runs; and so on,
    one round each, so 1080 steps each finish at 1800 (A) and 2160 (B)."""
    starts = []
    original = RoundState.launch

    def spy(self, combo, k, now):
        starts.append((now, combo))
        return original(self, combo, k, now)

    monkeypatch.setattr(RoundState, "launch", spy)
    result = run("isolated", [("B", 1, 1080, 0), ("B", 1, 1080, 0)], layout={"cluster": [Pool("V100", 1, 1)]},
                 type_order=None)
    assert [c for _, c in starts] == [(0,), (1,)] * 3
    assert [t for t, _ in starts] == pytest.approx([0, 360, 720, 1080, 1440, 1800])
    assert result.completion == pytest.approx([1800.0, 2160.0], abs=1e-6)


def state(rows, layout=None) -> AllocationInput:
    js = jobs(rows)
    layout = layout or one_each()
    inputs = round_inputs(_as_trace(js), layout, table(), reference="V100", source="test")
    thr = inputs.rows[inputs.row_of]
    gpus = np.array([sum(p.gpus for p in layout["cluster"] if p.gpu_type == t) for t in inputs.types])
    return AllocationInput(jobs=np.arange(js.num_rows), throughputs=thr, reference=thr[:, 1],
                           scale_factors=js.column("scale_factor").to_numpy().astype(float),
                           priority_weights=js.column("priority_weight").to_numpy(),
                           times_since_start=np.zeros(js.num_rows), steps_remaining=js.column("total_steps").to_numpy(),
                           gpus=gpus.astype(float))


def _as_trace(js: pa.Table) -> pa.Table:
    from raysim.rounds.inputs import gavel_trace_table

    return gavel_trace_table(js, table(), reference="V100", vc="cluster", source="test")


THREE = [("A", 1, 1000, 0), ("B", 1, 1000, 0), ("C", 1, 1000, 0)]


def test_max_min_fairness_perf_lp_by_hand():
    """Normalised rates c_jk = T_jk / T^prop_j, T^prop_j = (T_jK80 + T_jV100) / 2:
    A (2/3, 4/3), B (1, 1), C (2/7, 12/7) on (K80, V100). The optimum puts B on K80 (x = t),
    C on V100 (12/7 a = t) and A on both: 4/3 (1 - a) + 2/3 (1 - t) = t  ->  t* = 9/11,
    a = 7/12 t* = 21/44, A gets 1 - a of V100 and 2/11 of K80."""
    x = round_policy("max_min_fairness_perf").allocate(state(THREE))
    t = 9 / 11
    assert x[(0,)] == pytest.approx([1 - t, 1 - 7 * t / 12], abs=1e-6)
    assert x[(1,)] == pytest.approx([t, 0.0], abs=1e-6)
    assert x[(2,)] == pytest.approx([0.0, 7 * t / 12], abs=1e-6)


def test_max_min_fairness_agnostic_equalises_time():
    """Throughputs ignored: every job gets the same share of GPU time, 2 GPUs / 3 jobs = 2/3."""
    x = round_policy("max_min_fairness").allocate(state(THREE))
    assert [v.sum() for v in x.values()] == pytest.approx([2 / 3] * 3, abs=1e-6)


def test_isolated_and_max_sum_throughput_by_hand():
    """Isolated: 1/3 of each type per job. Max-sum throughput: V100 to C (3/s), K80 to A or B
    (1/s either): total 4 steps/s."""
    iso = round_policy("isolated").allocate(state(THREE))
    assert all(v == pytest.approx([1 / 3, 1 / 3]) for v in iso.values())
    x = round_policy("max_sum_throughput_perf").allocate(state(THREE))
    rates = np.array([RATES[j][::-1] for j in "ABC"])
    assert (np.array([x[(j,)] for j in range(3)]) * rates).sum() == pytest.approx(4.0, abs=1e-6)
    assert x[(2,)][1] == pytest.approx(1.0, abs=1e-6)


def test_min_total_duration_by_hand():
    """Remaining 1000 steps each: the best makespan T* = 1000 / mu*, mu* = the max-min of y_j / R_j.
    With C on V100 (3/s) and A, B sharing K80 (0.5/s each) plus the rest: the LP's mu* gives
    T*; Gavel's bisection replay settles within 5 % above it, and the allocation meets T."""
    s = state(THREE)
    _, mu = lp.max_min(s.throughputs / s.steps_remaining[:, None], s.scale_factors, s.gpus)
    horizon = gavel_bisection(1 / mu, 100.0, 1e6, 1.05)
    assert 1 / mu <= horizon <= 1.05 / mu * 1.05
    x = round_policy("min_total_duration_perf").allocate(s)
    y = np.array([x[(j,)] @ s.throughputs[j] for j in range(3)])
    assert (y * horizon >= s.steps_remaining * (1 - 1e-6)).all()


def test_min_total_duration_takes_ecos_point():
    """The feasibility problem has no objective, so Gavel's allocation is wherever ECOS stops. T* =
    1000 s (A on K80, C on V100 and the rest shared), Gavel's T = 1015.44 s; ECOS 2.0.10 (Gavel's
    solver, called directly on G = [-I; A], h = [0; b]) returns the point below. HiGHS's interior
    point returns another one (x_A,K80 = 0.078, x_C,V100 = 0.378): the round mechanism turns such
    differences into different schedules."""
    x = round_policy("min_total_duration_perf").allocate(state(THREE))
    ecos = [[0.0834145, 0.47172094], [0.82879031, 0.16006544], [0.06532306, 0.33843824]]
    assert np.array([x[(j,)] for j in range(3)]) == pytest.approx(np.array(ecos), abs=1e-7)


def test_gavel_bisection_replays_the_probes():
    # optimum 1000 s: [100, 1e6] -> 500050, 250075, ..., 2052.93, 1076.46 (feasible), 588.23, 832.35,
    # 954.41 (infeasible), 1015.44 (feasible), 984.92 (infeasible): 1.05 x 984.92 > 1015.44, stop
    assert gavel_bisection(1000.0, 100.0, 1e6, 1.05) == 1015.435791015625
    # infeasible within [100, 1e6]: the interval moves to [1e6, 1e7]
    assert 2e6 <= gavel_bisection(2e6, 100.0, 1e6, 1.05) <= 2e6 * 1.05


def test_finish_time_fairness_is_min_max_ratio():
    """FTF minimises the largest rho_j = (t_j + R_j / y_j) / (R_j / T^iso_j) (fresh jobs): no
    feasible allocation found by a fine grid search does better."""
    s = state(THREE)
    policy = round_policy("finish_time_fairness_perf")
    x = policy.allocate(s)
    iso = (s.throughputs / 3).sum(axis=1) * 2 / 2   # isolated: 1/3 of each type
    y = np.array([x[(j,)] @ s.throughputs[j] for j in range(3)])
    rho = (s.steps_remaining / y / (s.steps_remaining / iso)).max()
    best = np.inf
    grid = np.linspace(0, 1, 21)
    for a_k, a_v, b_k in np.array(np.meshgrid(grid, grid, grid)).reshape(3, -1).T:
        c_k, c_v = max(0.0, 1 - a_k - b_k), max(0.0, 1 - a_v)
        if a_k + b_k > 1 or a_k + a_v > 1:
            continue
        ys = np.array([a_k * 1 + a_v * 2, b_k * 1, c_k * 0.5 + c_v * 3])
        if (ys > 0).all():
            best = min(best, (iso / ys).max())
    assert rho <= best + 1e-6


def test_micro_task_that_cannot_split_fails_and_the_job_is_dropped():
    """A 2-GPU job with 361 steps at 1 step/s: 360 in the first round, then 1 step over 2 GPUs
    fails (Gavel gives each worker steps // 2 = 0); after 5 failures the job is dropped."""
    result = run("fifo_perf", [("B", 2, 361, 0)], layout={"cluster": [Pool("V100", 2, 1)]},
                 extra={("B", "v100", 2): 1.0}, type_order=None)
    assert result.dropped == [0] and np.isnan(result.completion[0])


def test_gandiva_packs_same_size_jobs_when_oversubscribed():
    """Three 1-GPU jobs on two GPUs: requested 3 > 2, so Gandiva pairs two of them (seeded) and
    splits time equally between the pair and the single job."""
    s = state(THREE)
    s.pairs = [(0, 1), (0, 2), (1, 2)]
    s.pair_throughputs = np.full((3, 2, 2), 0.9)
    x = round_policy("gandiva", seed=0).allocate(s)
    chosen = [c for c, v in x.items() if v.sum() > 0]
    assert len(chosen) == 2 and sum(len(c) for c in chosen) == 3
    assert all(x[c] == pytest.approx([0.5, 0.5]) for c in chosen)


def test_unknown_policy_and_constants_are_clear():
    with pytest.raises(ValueError, match="unknown round-based policy 'lottery'"):
        round_policy("lottery")
    with pytest.raises(ValueError, match="type_choice"):
        round_policy("gavel_fifo", type_choice="fastest")
