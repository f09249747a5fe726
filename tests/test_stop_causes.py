"""One interruption path, one ledger (issue 49): a new cause of stops, registered with its own producer
in this file alone, reaches jobs.parquet, lost_by_cause.csv and the run page with no other change."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from simutil import one_vc_trace

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run import run
from raysim.run.failures import FAILURES, Producer
from raysim.settings import setting
from raysim.sim.capacity import RESTART, CapacityPlan, VCCapacity

EVICT_AT = 5_000


@dataclass(frozen=True)
class EvictionSettings:
    """When and where the toy eviction happens."""

    at_s: int = setting(EVICT_AT, "when every job on the node is evicted (seconds on the trace clock)", minimum=0)
    node: int = setting(0, "the node of VC a whose jobs are evicted", minimum=0)


class Eviction(Producer):
    """A toy producer: every job on one node of VC a is evicted at one time; the node stays up."""

    Settings = EvictionSettings

    def causes(self, settings):
        return ("eviction",)

    def plan(self, settings, seed, layout, homes, jobs, log_plan):
        return CapacityPlan(("eviction",), {"a": VCCapacity(events=((settings.at_s, settings.node, RESTART, 0),),
                                                            jobs=jobs["a"])})


def test_a_toy_eviction_cause_reaches_every_view_of_the_ledger(tmp_path):
    FAILURES["toy_eviction"] = Eviction("Evict every job on one node at one time (a test's cause)")
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=[
                "+experiment=venus", "runtime=local", "policy=fifo", "checkpoint.interval_s=600",
                "checkpoint.write_s=10", "checkpoint.restart_s=60", "report.plots=none"])
        cfg.failures = OmegaConf.create({"name": "toy_eviction", "at_s": EVICT_AT, "node": 0})
        cfg.trace.path = one_vc_trace(tmp_path, 1, 200, 20_000)
        out = tmp_path / "out"
        overall = run(cfg, out)
    finally:
        del FAILURES["toy_eviction"]
    assert overall["finished"] == 200
    jobs = pq.read_table(out / "jobs.parquet").to_pandas()
    evicted = jobs[jobs.interruptions_eviction > 0]
    # the jobs running on node 0 at EVICT_AT: started before, ending after (a job that ends at that
    # second completes first)
    on_node = jobs[(jobs.first_node == 0) & (jobs.start_time < EVICT_AT)]
    assert len(evicted) >= 1 and set(evicted.index) <= set(on_node.index)
    assert (evicted.lost_gpu_s_eviction > 0).all()  # each lost its work since its last checkpoint
    cluster = pd.read_csv(out / "lost_by_cause.csv").query("vc == 'all'").set_index("cause")
    assert cluster.interruptions["eviction"] == jobs.interruptions_eviction.sum()
    assert cluster.lost_gpu_h["eviction"] * 3600 == pytest.approx(jobs.lost_gpu_s_eviction.sum(), rel=1e-9)
    page = (out / "report.html").read_text()
    assert "eviction" in page

