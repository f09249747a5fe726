"""Forgetting finished jobs (bounded memory) changes no result: every policy, placer, mode, Lucid, network."""

import pytest
from test_invariants import synthetic_trace
from test_lucid import lucid_on_shipped_trace

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.runtime.spec import RunSpec
from raysim.runtime.vcgroup import VCGroup
from raysim.sim import SimParams, engine

NETWORK = {"nic_gbps": 100.0, "gbps_per_gpu": 25.0, "duty": 0.5}


def both_ways(monkeypatch, run):
    """(results with the default threshold, results forgetting at every window that ships results,
    jobs forgotten)."""
    monkeypatch.setattr(engine, "FORGET_AT", 10**12)
    kept = run()
    monkeypatch.setattr(engine, "FORGET_AT", 1)
    forgotten = []
    original = VCGroup.run_window

    def counting(self, batch, t_end, orders=None):
        out = original(self, batch, t_end, orders)
        forgotten.append(sum(sim.forgotten for sim in self.sims.values()))
        return out

    monkeypatch.setattr(VCGroup, "run_window", counting)
    return kept, run(), max(forgotten)


@pytest.mark.parametrize("policy,placer,compat,network", [
    ("fifo", "consolidate", "lucid", None), ("sjf", "first_fit", "clean", None),
    ("srtf", "consolidate", "lucid", None), ("srtf", "random", "clean", NETWORK),
    ("qssf", "consolidate", "lucid", None), ("tiresias", "consolidate", "clean", None),
    ("tiresias", "first_fit", "lucid", NETWORK), ("fifo", "consolidate", "clean", NETWORK),
])
def test_forgetting_finished_jobs_changes_nothing(policy, placer, compat, network, monkeypatch):
    trace, est = synthetic_trace(seed=21)
    spec = RunSpec(policy, placer, SimParams.for_mode(compat, seed=3), layout_from_vc_nodes(trace.vc_nodes, 8), network=network)
    (jobs_a, ts_a), (jobs_b, ts_b), dropped = both_ways(
        monkeypatch, lambda: simulate(trace, spec, est, window_s=3_600))
    assert dropped > trace.table.num_rows // 10  # many jobs were forgotten before the run ended
    assert jobs_a.equals(jobs_b) and ts_a.equals(ts_b)


@pytest.mark.parametrize("compat", ["lucid", "clean"])
def test_forgetting_finished_jobs_changes_nothing_under_lucid(compat, monkeypatch):
    trace, spec, est, extra = lucid_on_shipped_trace(compat)
    (jobs_a, ts_a), (jobs_b, ts_b), dropped = both_ways(
        monkeypatch, lambda: simulate(trace, spec, est, job_extra=extra, window_s=6 * 3_600))
    assert dropped > 0
    assert jobs_a.equals(jobs_b) and ts_a.equals(ts_b)
