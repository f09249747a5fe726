"""The VC engine with CPU, memory and GPU shares counted (VCState.res): hand-built cases and the
over-allocation invariant after every event, for every policy x placer that places pods."""

from __future__ import annotations

import math

import numpy as np
import pytest

from raysim.cluster.catalog import TypeCatalog
from raysim.cluster.layout import Pool
from raysim.placement import PLACERS, SCORED, make_placer
from raysim.placement.frag import FragModel, FragTracker
from raysim.placement.scored.placer import Shapes
from raysim.policy import make_policy
from raysim.quota.ledger import QuotaLending
from raysim.sim import SimParams, VCSimulator
from raysim.sim.extensions import Resources
from raysim.cluster.resources import Pods
from raysim.sim.vc import SHARED

from simutil import batch


def pods_batch(pods):
    """pods: (submit, duration, num_gpu, gpu_milli, cpu_milli, mem_mib[, constraint id]) -> columns."""
    cols = batch([(p[0], p[1], p[2]) for p in pods])
    cols["gpu_milli"] = np.array([p[3] for p in pods], dtype=np.int64)
    cols["cpu_milli"] = np.array([p[4] for p in pods], dtype=np.int64)
    cols["mem_mib"] = np.array([p[5] for p in pods], dtype=np.int64)
    cols["constraint"] = np.array([p[6] if len(p) > 6 else -1 for p in pods], dtype=np.int64)
    cols["gpu_util"] = np.zeros(len(pods))
    cols["gmem"] = np.zeros(len(pods))
    return cols


def shapes_of(pods, constraints=()):
    spec = [("|".join(sorted(constraints[p[6]])) if len(p) > 6 and p[6] >= 0 else None) for p in pods]
    return Shapes.of(Pods([p[4] for p in pods], [p[5] for p in pods], [p[2] for p in pods],
                          [p[3] for p in pods], np.array(spec, dtype=object)))


def simulator(pods, layout, policy="fifo", placer="first_fit", constraints=(), seed=0):
    params = SimParams.for_mode("clean", seed=seed)
    shapes, of_pod = shapes_of(pods, constraints)
    types = tuple(dict.fromkeys(p.gpu_type for p in layout))
    catalog = TypeCatalog(gpu_types=types, constraints=tuple(frozenset(c) for c in constraints))
    sim = VCSimulator("vc", layout, make_policy(policy, params=params),
                      make_placer(placer, params=params, shapes=shapes), params, catalog=catalog,
                      extensions=[Resources(FragTracker(shapes.workload))])
    cols = pods_batch(pods)
    cols["shape"] = of_pod
    sim.add_jobs(cols)
    return sim


def run_checked(sim):
    """Run event by event, checking every resource after each, and the fragment amount the time
    series records against a recount of every node."""
    frag = FragModel(sim.fragmentation.target, sim.vc.res.nodes.models)
    while (t := sim.next_event_time()) < math.inf:
        sim.run(until=t + 1)
        sim.vc.check()
        res = sim.vc.res
        if len(frag.models) != len(res.nodes.models):
            frag = FragModel(sim.fragmentation.target, res.nodes.models)
        whole = frag.numerator(res.cpu_left, res.gpu_left, res.nodes.model)[res.present].sum()
        assert sim.fragmentation.amount(res) == round(whole / frag.total)
    return sim.jobs.results()


ONE_GPU = (Pool("T4", 1, 1, cpu_milli=32000, memory_mib=65536),)


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_two_halves_share_a_gpu_and_a_third_waits(placer):
    pods = [(0, 100, 1, 500, 1000, 1024), (0, 100, 1, 500, 1000, 1024), (0, 50, 1, 500, 1000, 1024)]
    sim = simulator(pods, ONE_GPU, placer=placer)
    sim.run(until=1)
    assert len(sim.running) == 2 and len(sim.pending) == 1
    assert sim.vc.res.gpu_left[0, 0] == 0 and sim.vc.owner[0] == [SHARED]
    res = run_checked(sim)
    assert res["start_time"].tolist() == [0, 0, 100]
    assert res["end_time"].tolist() == [100, 100, 150]


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_a_whole_gpu_pod_never_lands_on_a_gpu_with_a_share(placer):
    layout = (Pool("T4", 2, 1, cpu_milli=32000, memory_mib=65536),)
    # a share on one GPU; a 2-GPU pod must wait for it, a 1-GPU pod takes the other GPU
    pods = [(0, 100, 1, 300, 0, 0), (1, 10, 2, 1000, 0, 0), (2, 10, 1, 1000, 0, 0)]
    sim = simulator(pods, layout, policy="fifo_backfill", placer=placer)
    res = run_checked(sim)
    assert res["start_time"].tolist() == [0, 100, 2]
    sim = simulator(pods[:1] + pods[2:], layout, placer=placer)
    sim.run(until=3)
    share_gpu = [g for g, o in enumerate(sim.vc.owner[0]) if o == SHARED]
    whole_gpu = [g for g, o in enumerate(sim.vc.owner[0]) if o >= 0]
    assert len(share_gpu) == 1 and len(whole_gpu) == 1 and share_gpu != whole_gpu


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_a_pod_constrained_to_a_gpu_model_never_runs_elsewhere(placer):
    layout = (Pool("T4", 2, 2, cpu_milli=32000, memory_mib=65536), Pool("V100", 2, 2, cpu_milli=32000, memory_mib=65536))
    constraints = ({"V100"},)
    rng = np.random.default_rng(1)
    pods = [(int(t), int(rng.integers(5, 50)), 1, int(rng.choice([250, 500, 1000])), 1000, 1024, 0)
            for t in np.sort(rng.integers(0, 100, 40))]
    sim = simulator(pods, layout, policy="fifo_backfill", placer=placer, constraints=constraints)
    seen = []
    while (t := sim.next_event_time()) < math.inf:
        sim.run(until=t + 1)
        sim.vc.check()
        seen += [sim.vc.types[sim.vc.gpu_type_of(j)] for j in sim.running]
    assert set(seen) == {"V100"}
    assert (sim.jobs.results()["end_time"] >= 0).all()


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_cpu_only_pods_hold_cpu_and_memory_and_nothing_else(placer):
    layout = (Pool("T4", 1, 1, cpu_milli=4000, memory_mib=8192),)
    pods = [(0, 100, 0, 0, 3000, 1024), (0, 100, 0, 0, 2000, 1024), (0, 100, 1, 1000, 1000, 7168)]
    sim = simulator(pods, layout, policy="fifo_backfill", placer=placer)
    sim.run(until=1)
    res = sim.vc.res
    assert len(sim.running) == 2  # the first CPU pod and the GPU pod; the second CPU pod lacks CPU
    assert res.cpu_left[0] == 0 and res.mem_left[0] == 0
    assert sim.vc.free[0] == 0 and res.gpu_left[0, 0] == 0
    out = run_checked(sim)
    assert out["start_time"].tolist() == [0, 100, 0]
    # alone, a CPU pod leaves every GPU free
    sim = simulator(pods[:1], layout, placer=placer)
    sim.run(until=1)
    assert sim.vc.free_gpus == 1 and sim.vc.res.gpu_left[0, 0] == 1000 and sim.vc.res.cpu_left[0] == 1000


def random_pods(rng, n, horizon):
    pods = []
    for t in np.sort(rng.integers(0, horizon, n)):
        kind = rng.integers(4)
        if kind == 0:
            g, m = 0, 0
        elif kind == 1:
            g, m = 1, int(rng.choice([100, 250, 500, 750]))
        else:
            g, m = int(rng.choice([1, 2, 4, 8])), 1000
        constraint = int(rng.integers(-1, 2)) if g <= 2 else -1 if g <= 4 else 0  # every pod fits some node
        pods.append((int(t), int(rng.integers(1, 300)), g, m, int(rng.choice([0, 2000, 8000, 16000])),
                     int(rng.choice([0, 4096, 32768])), constraint))
    return pods


@pytest.mark.parametrize("policy", ["fifo", "fifo_backfill", "srtf", "tiresias"])
@pytest.mark.parametrize("placer", sorted(SCORED))
def test_no_resource_is_ever_over_allocated(policy, placer):
    layout = (Pool("A", 8, 3, cpu_milli=64000, memory_mib=262144), Pool("B", 4, 2, cpu_milli=32000, memory_mib=131072),
              Pool("A", 2, 2, cpu_milli=16000, memory_mib=65536))
    constraints = ({"A"}, {"B"})
    pods = random_pods(np.random.default_rng(7), 150, 2000)
    sim = simulator(pods, layout, policy=policy, placer=placer, constraints=constraints, seed=3)
    res = run_checked(sim)
    assert (res["end_time"] >= 0).all() and (res["start_time"] >= np.array(sim.jobs.submit)).all()
    assert sim.vc.free_gpus == sim.vc.total_gpus and sim.vc.res.placements == []


# ------------------------------------------------ queueing in time (the former timed FGD experiment)

TWO_ONE_GPU_NODES = (Pool("A", 1, 2, cpu_milli=64000, memory_mib=262144),)


@pytest.mark.parametrize("placer", sorted(PLACERS))
def test_a_pod_that_must_wait_starts_exactly_at_the_departure(placer):
    # two 1-GPU nodes: two whole-GPU pods fill them; the third waits for the first to leave at t=15
    pods = [(0, 15, 1, 1000, 1000, 10), (5, 100, 1, 1000, 1000, 10), (7, 20, 1, 1000, 1000, 10)]
    sim = simulator(pods, TWO_ONE_GPU_NODES, placer=placer, seed=1)
    res = run_checked(sim)
    assert res["start_time"].tolist() == [0, 5, 15] and res["end_time"].tolist() == [15, 105, 35]
    assert res["queue"].tolist() == [0, 0, 8] and res["first_node"][2] == res["first_node"][0]


def test_fifo_blocks_at_the_head_and_fifo_backfill_lets_later_pods_go():
    # node 0: 2 GPUs, node 1: 1 GPU. t=0: a 2-GPU pod on node 0 and a 1-GPU pod on node 1 (both busy);
    # t=1: a 2-GPU pod (waits for node 0 at t=10) then a 1-GPU pod (node 1 frees at 5) and a CPU-only pod
    layout = (Pool("A", 2, 1, cpu_milli=64000, memory_mib=262144), Pool("A", 1, 1, cpu_milli=64000, memory_mib=262144))
    pods = [(0, 10, 2, 1000, 1000, 10), (0, 5, 1, 1000, 1000, 10), (1, 10, 2, 1000, 1000, 10),
            (1, 10, 1, 1000, 1000, 10), (1, 3, 0, 0, 1000, 10)]
    fifo = run_checked(simulator(pods, layout, policy="fifo", placer="bestfit"))
    assert fifo["start_time"].tolist() == [0, 0, 10, 10, 10]  # all behind the 2-GPU head until t=10
    back = run_checked(simulator(pods, layout, policy="fifo_backfill", placer="bestfit"))
    assert back["start_time"].tolist() == [0, 0, 10, 5, 1]  # the CPU pod at once, the 1-GPU pod at 5


def test_departures_of_a_second_free_their_resources_before_its_arrivals_are_served():
    pods = [(0, 10, 1, 1000, 1000, 10), (0, 10, 1, 1000, 1000, 10), (10, 1, 1, 1000, 1000, 10)]
    res = run_checked(simulator(pods, TWO_ONE_GPU_NODES, placer="fgd"))
    assert res["start_time"].tolist() == [0, 0, 10] and res["queue"][2] == 0


@pytest.mark.parametrize("policy", ["srtf", "tiresias"])
def test_preemptive_policies_take_a_share_of_a_gpu_from_their_quota(policy):
    # one GPU: a long half-GPU pod runs; a short half-GPU pod fits beside it, so nobody is preempted
    pods = [(0, 1000, 1, 500, 1000, 10), (10, 100, 1, 500, 1000, 10)]
    res = run_checked(simulator(pods, ONE_GPU, policy=policy, placer="fgd"))
    assert res["preemptions"].tolist() == [0, 0]
    assert res["end_time"][0] == 1000 and res["start_time"][1] == (10 if policy == "srtf" else 60)
    # a whole-GPU pod does not fit beside the share: under SRTF the short one preempts the long share
    pods = [(0, 1000, 1, 500, 1000, 10), (10, 100, 1, 1000, 1000, 10)]
    res = run_checked(simulator(pods, ONE_GPU, policy="srtf", placer="fgd"))
    assert res["preemptions"].tolist() == [1, 0] and res["start_time"][1] == 10


# --------------------------------------------- loans between VCs that count shares, CPU and memory

def loan_vcs(policy="fifo_backfill"):
    """A: two 2-GPU T4 nodes (16 CPUs, 64 GiB); B: one 1-GPU V100 node (8 CPUs, 32 GiB) busy with a
    whole-GPU pod (4 CPUs) until t=1000. B's pods at t=10 (a share with 6 CPUs, a CPU-only pod of 6
    CPUs and 20 GiB, a whole GPU) wait: no GPU is free and 4 CPUs are left."""
    from raysim.quota.ledger import check_conservation

    a_pools = (Pool("T4", 2, 2, cpu_milli=16000, memory_mib=65536),)
    b_pools = (Pool("V100", 1, 1, cpu_milli=8000, memory_mib=32768),)
    layout = {"A": a_pools, "B": b_pools}
    params = SimParams.for_mode("clean", seed=0)
    b_pods = [(0, 1000, 1, 1000, 4000, 1024), (10, 500, 1, 300, 6000, 1024), (10, 400, 0, 0, 6000, 20000),
              (10, 300, 1, 1000, 1000, 1024)]
    shapes, of_pod = shapes_of(b_pods)
    catalog = TypeCatalog(gpu_types=("T4", "V100"))
    sims = {}
    for name in ("A", "B"):
        sims[name] = VCSimulator(name, layout[name], make_policy(policy, params=params),
                                 make_placer("fgd", params=params, vc_index=len(sims), shapes=shapes), params,
                                 catalog=catalog,
                                 extensions=[QuotaLending(), Resources(FragTracker(shapes.workload), layout)])
    cols = pods_batch(b_pods)
    cols["shape"] = of_pod
    sims["B"].add_jobs(cols)
    return sims, check_conservation


def step_to(sims, t):
    for sim in sims.values():
        while (e := sim.next_event_time()) < t:
            sim.run(until=e + 1)
            sim.vc.check()
        sim.run(until=t)


def test_a_lent_node_brings_its_cpu_and_memory_and_takes_shares_and_cpu_only_pods():
    from raysim.quota.ledger import PoolShape

    sims, conserved = loan_vcs()
    step_to(sims, 100)
    b = sims["B"]
    assert len(b.pending) == 3  # the V100 node has 7 CPUs left: none of the three fits
    sims["A"].loans.lend(100, 0, 1, "B")
    b.loans.borrow(100, PoolShape(0, "T4", 2), 1, "A")
    conserved(sims)
    held = next(iter(b.vc.held))
    res = b.vc.res
    assert (res.nodes.cpu_milli[held], res.nodes.memory_mib[held], res.nodes.num_gpu[held]) == (16000, 65536, 2)
    assert not sims["A"].vc.res.present[1] and res.present[held]  # A lends its last node
    step_to(sims, 101)
    out = b.results()
    # the share, the CPU-only pod and the whole GPU all start on the held node (13 of its 16 CPUs)
    assert out["start_time"].tolist()[1:] == [100, 100, 100]
    assert set(out["first_node"].tolist()[1:]) == {held} and out["ran_on_vc"].tolist()[1:] == ["A"] * 3
    assert res.cpu_left[held] == 3000 and res.n_pods[held] == 3 and not b.vc.idle(held)
    # the lender reclaims its node: the three pods on it stop (they restart), the node goes back at once
    step_to(sims, 200)
    back = b.loans.reclaim(200, "A", PoolShape(0, "T4", 2), 1, "preempt")
    sims["A"].loans.take_back(200, 0, 1, "B")
    assert back == 1 and sims["A"].vc.res.present[1] and not res.present[held]
    conserved(sims)
    step_to(sims, 5000)
    out = b.results()
    # back on B's one node: the share when the first pod ends, then the other two when the share ends
    assert out["reclaims"].tolist() == [0, 1, 1, 1]
    assert out["end_time"].tolist() == [1000, 1500, 1900, 1800]  # restarted at 1000, 1500 and 1500
    assert sims["A"].vc.free_gpus == 4 and b.vc.used_milli == 0
    conserved(sims)


def test_a_node_running_only_a_cpu_pod_is_not_idle_and_is_not_lent():
    sims, _ = loan_vcs()
    a = sims["A"]
    cols = pods_batch([(0, 1000, 0, 0, 2000, 1024), (0, 1000, 0, 0, 2000, 1024)])
    cols["shape"] = np.zeros(2, dtype=np.int64)
    cols["seq"] = np.array([10, 11])
    a.add_jobs(cols)
    step_to(sims, 50)
    busy = [n for n in range(2) if a.vc.res.n_pods[n]]
    assert busy and all(a.vc.free[n] == a.vc.size[n] for n in busy)  # all their GPUs are free ...
    assert not any(a.vc.idle(n) for n in busy)  # ... but they are not idle
    report = a.loans.quota_report(50)
    assert report["idle_own"] == 2 - len(busy) and report["pools"][0]["idle"] == 2 - len(busy)
    if len(busy) == 2:
        with pytest.raises(ValueError, match="are idle"):
            a.loans.lend(50, 0, 1, "B")
