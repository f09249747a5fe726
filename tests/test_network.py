"""NIC contention: fair shares, slowdown of communication phases only, and engine integration."""

import pytest
from simutil import batch, pools

from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.extensions import Network
from raysim.sim.network import NetworkModel, fair_shares


def test_fair_shares_water_fill():
    assert fair_shares([10, 10], 100) == [1.0, 1.0]
    assert fair_shares([100, 100, 100], 100) == pytest.approx([1 / 3] * 3)
    # the small demand is met in full, the rest split the remainder
    assert fair_shares([10, 100, 100], 100) == pytest.approx([1.0, 0.45, 0.45])


@pytest.mark.parametrize("k", [2, 3, 4])
def test_k_identical_always_communicating_jobs_get_the_fair_share(k):
    net = NetworkModel(nic_gbps=100, gbps_per_gpu=100 / 4, duty=1.0)
    for j in range(k):  # each spans node 0 (4 GPUs) and its own other node
        net.add(j, [(0, [0, 1, 2, 3]), (j + 1, [0])])
    assert [net.rate(j) for j in range(k)] == pytest.approx([1 / k] * k)


def test_only_the_communication_phase_slows_down():
    net = NetworkModel(nic_gbps=100, gbps_per_gpu=50, duty=0.5)  # mean demand 4 x 50 x 0.5 = 100
    net.add(0, [(0, [0, 1, 2, 3]), (1, [0])])
    assert net.rate(0) == 1.0
    net.add(1, [(0, [4, 5, 6, 7]), (2, [0])])
    # share 1/2 -> communication takes twice as long: 1 / (0.5 + 0.5 / 0.5)
    assert net.rate(0) == pytest.approx(1 / 1.5)
    net.remove(1)
    assert net.rate(0) == 1.0


def run(network):
    params = SimParams.for_mode("clean")
    sim = VCSimulator("vc", pools(3), make_policy("fifo", params=params), make_placer("first_fit", params=params), params,
                      extensions=[Network(NetworkModel(**network))] if network else [])
    # two 12-GPU jobs: first fit puts A on nodes 0 (8) + 1 (4) and B on nodes 1 (4) + 2 (8): they share node 1
    sim.add_jobs(batch([(0, 100, 12), (0, 100, 12)]))
    sim.run()
    return sim.jobs.results()["end_time"].tolist()


def test_engine_slows_jobs_sharing_a_nic_and_speeds_them_up_again():
    assert run(None) == [100, 100]
    ends = run({"nic_gbps": 100, "gbps_per_gpu": 25, "duty": 1.0})
    # on node 1 each job sends 4 x 25 = 100 Gb/s: half the NIC each -> rate 1/2 -> 200 s of wall time
    assert ends == [200, 200]
    assert run({"nic_gbps": 400, "gbps_per_gpu": 25, "duty": 1.0}) == [100, 100]


class SRTFEverySecond:
    """SRTF deciding every second while anything waits: what event-driven SRTF must reproduce."""

    def __new__(cls, params):
        from raysim.policy import policy_constants
        from raysim.policy.srtf import SRTF

        class Ticking(SRTF):
            def next_wakeup(self, sim, now):
                return now + 1 if sim.pending else super().next_wakeup(sim, now)

        return Ticking(params, **policy_constants("srtf"))


@pytest.mark.parametrize("compat", ["lucid", "clean"])
@pytest.mark.parametrize("seed", range(12))
def test_srtf_under_contention_decides_when_deciding_every_second_would(compat, seed):
    import numpy as np
    from simutil import random_jobs

    rng = np.random.default_rng(seed)
    jobs = [(s, d, g) for s, d, g, _ in random_jobs(rng, 40, 3_000, max_gpu=24)]
    out = []
    for policy, network in ((lambda p: make_policy("srtf", params=p), True), (SRTFEverySecond, True),
                            (lambda p: make_policy("srtf", params=p), False)):
        params = SimParams.for_mode(compat)
        sim = VCSimulator("vc", pools(4), policy(params), make_placer("first_fit", params=params), params,
                          extensions=[Network(NetworkModel(nic_gbps=100, gbps_per_gpu=25, duty=0.8))] if network else [])
        sim.add_jobs(batch(jobs))
        sim.run()
        out.append({k: v.tolist() for k, v in sim.jobs.results().items()})
    assert out[0] == out[1]
    assert out[0]["end_time"] != out[2]["end_time"]  # contention did slow jobs down
