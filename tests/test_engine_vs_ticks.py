"""The event-driven engine equals a literal per-second model of the reference, job by job."""

import numpy as np
import pytest
from simutil import random_jobs, run_vc
from tick_oracle import simulate

POLICIES = ["fifo", "sjf", "srtf", "qssf", "tiresias"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(6))
def test_matches_per_second_reference(policy, seed):
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(1, 4))
    jobs = random_jobs(rng, 40, 1500, max_gpu=8 * nodes, long_tail=policy == "tiresias" and seed % 2 == 0)
    _, res = run_vc(jobs, policy, nodes=nodes, compat="lucid")
    oracle = simulate([dict(submit=s, duration=d, gpu=g, est=e) for s, d, g, e in jobs], nodes, policy)
    got = list(zip(res["start_time"].tolist(), res["end_time"].tolist(), res["queue"].tolist(),
                   res["preemptions"].tolist()))
    assert got == oracle
