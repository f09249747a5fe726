"""Typed GPU pools, per-type job speed, type constraints and mixed node shapes (issue: heterogeneous clusters)."""

import numpy as np
import pyarrow as pa
import pytest
from simutil import batch, random_jobs

from raysim.cluster.catalog import TypeCatalog, job_types
from raysim.cluster.layout import Pool
from raysim.cluster.throughput import ThroughputTable
from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.policy.base import Policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.demand import Demand
from raysim.sim.vc import VCState

V100, K80 = "V100", "K80"
#: one 8-GPU V100 node and two 4-GPU K80 nodes
MIXED = (Pool(V100, 8, 1), Pool(K80, 4, 2))
#: constraint 0: V100 only; speed profile 0: twice as fast on V100 as on K80 (the reference)
CATALOG = TypeCatalog(gpu_types=(V100, K80), constraints=(frozenset({V100}),), speeds=({V100: 2.0, K80: 1.0},))


def jobs_batch(rows):
    """rows: (submit, duration, gpu, constraint id, speed profile id)."""
    cols = batch([(r[0], r[1], r[2]) for r in rows])
    cols["constraint"] = np.array([r[3] for r in rows], dtype=np.int64)
    cols["speed_profile"] = np.array([r[4] for r in rows], dtype=np.int64)
    return cols


class Recording:
    """A placer wrapper that remembers the GPU types of every placement."""

    def __init__(self, placer):
        self.placer, self.placed = placer, []

    def select(self, vc, demand):
        alloc = self.placer.select(vc, demand)
        if alloc is not None:
            self.placed.append((demand, {vc.types[vc.type_of[n]] for n, _ in alloc}))
        return alloc


def simulator(policy="fifo", placer="consolidate", pools=MIXED, compat="clean", type_order="any", catalog=CATALOG):
    params = SimParams.for_mode(compat)
    rec = Recording(make_placer(placer, params=params, type_order=type_order))
    return VCSimulator("vc", pools, make_policy(policy, params=params), rec, params, catalog=catalog), rec


@pytest.mark.parametrize("placer", ["consolidate", "first_fit", "random"])
@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_a_job_constrained_to_v100_never_runs_elsewhere(policy, placer):
    rng = np.random.default_rng(3)
    rows = [(s, d, min(g, 8), int(rng.integers(0, 2)) - 1, -1) for s, d, g, _ in random_jobs(rng, 200, 5_000, max_gpu=8)]
    sim, rec = simulator(policy, placer)
    sim.add_jobs(jobs_batch(rows))
    sim.run()
    assert sim.finished == len(rows)
    constrained = [types for demand, types in rec.placed if demand.types is not None]
    assert constrained and all(types == {V100} for types in constrained)
    assert all(len(types) == 1 for _, types in rec.placed)  # no placement spans GPU types


def test_a_job_on_a_twice_faster_type_ends_at_start_plus_half_its_duration():
    sim, _ = simulator()
    sim.add_jobs(jobs_batch([(0, 1000, 8, 0, 0), (5, 401, 4, -1, 0)]))
    sim.run()
    res = sim.jobs.results()
    assert res["end_time"][0] == 0 + 1000 // 2  # on V100: 2x
    assert res["end_time"][1] == 5 + 401  # on K80, its reference type: 1x


class Scripted(Policy):
    """Acts at given times: ("start", j) through the placer, ("share", j, host, s_j, s_host), ("preempt", j)."""

    name = "scripted"
    countdown = True

    def __init__(self, params, script):
        super().__init__(params)
        self.script = script
        self.partner = {}

    def on_ending(self, view, j, now):
        other = self.partner.pop(j, None)
        self.partner.pop(other, None)
        if other is not None and view.jobs.end_due[other] != now:
            view.set_rate_factor(other, "share", 1.0, now)

    def preempt_overhead(self, gpu_num):
        return 40

    def schedule(self, view, now):
        for action in self.script.get(now, []):
            if action[0] == "start":
                assert view.try_start(action[1], now)
            elif action[0] == "share":
                view.share(action[1], action[2], now, action[3], action[4], 0.5, 100.0)
                self.partner[action[1]], self.partner[action[2]] = action[2], action[1]
            else:
                view.preempt(action[1], now)

    def next_wakeup(self, view, now):
        later = [t for t in self.script if t > now]
        return min(later) if later else float("inf")


def scripted_run(rows, script, pools=(Pool(V100, 8, 1),), catalog=CATALOG):
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools, Scripted(params, script), make_placer("consolidate", params=params), params,
                      catalog=catalog)
    sim.add_jobs(jobs_batch(rows))
    sim.run()
    return sim.jobs.results()


def test_type_speed_composes_exactly_with_sharing():
    # A (1000 s of work, 2x on V100) runs alone 0..100 (200 s of work done), then shares with B at
    # 0.5 each: A progresses at 2 x 0.5 = 1/s, so its remaining 800 s end at 100 + 800 = 900;
    # B (300 s, 2x on V100) at 2 x 0.5 = 1/s ends at 100 + 300 = 400, after which A is at 2 x 1 again:
    # A's work left at 400 is 800 - 300 = 500 -> ends at 400 + 250 = 650.
    res = scripted_run([(0, 1000, 4, -1, 0), (50, 300, 4, -1, 0)],
                       {0: [("start", 0)], 100: [("share", 1, 0, 0.5, 0.5)]})
    assert res["end_time"].tolist() == [650, 400]


def test_type_speed_composes_exactly_with_preemption():
    # On V100 at 2x from 0 to 100: 200 s of work done, 800 left + 40 s overhead; restarted at 200 on
    # the only free type, K80 (1x, its reference) -> ends at 200 + 840.
    pools = (Pool(V100, 8, 1), Pool(K80, 8, 1))  # equal free GPUs: the first node (V100) wins the tie
    res = scripted_run([(0, 1000, 8, -1, 0), (150, 10_000, 8, 0, -1)],
                       {0: [("start", 0)], 100: [("preempt", 0)], 150: [("start", 1)], 200: [("start", 0)]},
                       pools=pools)
    assert res["end_time"][0] == 200 + 840
    assert res["preemptions"][0] == 1


def test_mixed_four_and_eight_gpu_nodes_allocate_and_free():
    vc = VCState((Pool("gpu", 8, 1), Pool("gpu", 4, 2)))
    assert (vc.total_gpus, vc.size) == (16, [8, 4, 4])
    placer = make_placer("consolidate", params=SimParams())
    placements = {}
    for j, g in enumerate([3, 4, 8, 1]):
        alloc = placer.select(vc, Demand(g))
        assert alloc is not None, g
        vc.allocate(j, alloc, 0, 0.0)
        placements[j] = alloc
        vc.check()
    # best fit by free GPUs across node shapes: 3 on a 4-GPU node, 4 on the other, 8 on the 8-GPU
    # node, 1 in the last free slot
    assert placements == {0: [(1, 3)], 1: [(2, 4)], 2: [(0, 8)], 3: [(1, 1)]}
    assert placer.select(vc, Demand(1)) is None
    for j in placements:
        vc.release(j)
        vc.check()
    assert vc.free == [8, 4, 4] and vc.free_gpus == 16
    assert placer.select(vc, Demand(12)) is None  # a multi-node job stays in one pool: none has 12
    assert placer.select(vc, Demand(8)) == [(0, 8)]
    assert placer.select(vc, Demand(16)) is None  # no single pool holds 16 GPUs


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "tiresias"])
@pytest.mark.parametrize("placer,type_order", [("consolidate", "any"), ("consolidate", "fastest"),
                                               ("first_fit", "slowest"), ("random", "given")])
def test_invariants_hold_per_pool_at_every_event(policy, placer, type_order):
    pools = (Pool(V100, 8, 2), Pool(K80, 4, 3), Pool(K80, 8, 1))
    catalog = TypeCatalog(gpu_types=(V100, K80), constraints=(frozenset({V100}), frozenset({K80})),
                          speeds=({V100: 2.0, K80: 1.0}, {V100: 1.5, K80: 0.5}))
    rng = np.random.default_rng(11)
    rows = [(s, d, g, int(rng.integers(-1, 2)), int(rng.integers(-1, 2)))
            for s, d, g, _ in random_jobs(rng, 300, 20_000, max_gpu=16)]
    rows = [(s, d, min(g, 12) if c == 1 else g, c, p) for s, d, g, c, p in rows]  # the largest K80 pool: 12
    sim, rec = simulator(policy, placer, pools=pools, type_order=type_order, catalog=catalog)
    sim.add_jobs(jobs_batch(rows))
    while not sim.done:
        sim.run(until=sim.next_event_time() + 1)
        sim.vc.check()
        for j in sim.running:
            nodes = [n for n, _ in sim.vc.placement[j]]
            assert len({sim.vc.type_of[n] for n in nodes}) == 1
            assert sum(len(ids) for _, ids in sim.vc.placement[j]) == sim.jobs.gpu[j]
    res = sim.jobs.results()
    assert (res["end_time"] > res["start_time"]).all() and (res["queue"] >= 0).all()
    assert len(rec.placed) >= len(rows)


def test_catalog_from_a_trace_and_a_throughput_table():
    table = pa.table({"vc": ["a", "a", "a"], "gpu_num": pa.array([1, 8, 2], pa.int32()),
                      "job_type": ["resnet", "resnet", None], "gpu_type": [None, "K80", None],
                      "gpu_constraint": ["V100", "", "V100|K80"]})
    layout = {"a": MIXED}
    thr = ThroughputTable({("resnet", V100): 30.0, ("resnet", K80): 10.0})
    types = job_types(table, layout, throughput=thr, reference_gpu_type=V100)
    c, p = types.constraint.tolist(), types.speed_profile.tolist()
    assert [types.catalog.constraints[i] for i in (c[0], c[2])] == [frozenset({V100}), frozenset({V100, K80})]
    assert c[1] == -1
    speeds = [types.catalog.speeds[i] for i in (p[0], p[1])]
    assert speeds[0] == {V100: 1.0, K80: 10.0 / 30.0}  # reference: the cluster's (V100)
    assert speeds[1] == {V100: 3.0, K80: 1.0}  # reference: its recorded K80
    assert p[2] == -1


def test_catalog_rejects_what_can_never_run():
    from raysim.errors import TraceError

    layout = {"a": MIXED}
    base = {"vc": ["a"], "gpu_num": pa.array([16], pa.int32())}
    with pytest.raises(TraceError, match=r"row 1.*gpu_constraint"):
        job_types(pa.table({**base, "gpu_constraint": ["A100"]}), layout)
    with pytest.raises(TraceError, match=r"no pool of an allowed GPU type with 16 GPUs \(the largest holds 8\)"):
        job_types(pa.table({**base, "gpu_constraint": ["K80"]}), layout)
    with pytest.raises(TraceError, match=r"no throughput table"):
        job_types(pa.table({"vc": ["a"], "gpu_num": pa.array([1], pa.int32()), "job_type": ["x"]}), layout)
