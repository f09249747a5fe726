"""Harvest mode on the Summit node log and BFTrainer task sets in ../shared (skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

from raysim.harvest.replay import load_node_log, slice_events
from raysim.harvest.run import run_harvest
from raysim.paths import CONF_DIR

pytestmark = pytest.mark.shared


def harvest_cfg(shared_dir, *overrides, experiment="harvest_summit"):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"+experiment={experiment}", "harvest.plots=false",
                                                        f"harvest.data_dir={shared_dir / 'harvest'}", *overrides])


@pytest.fixture(scope="module")
def acceptance(shared_dir, tmp_path_factory):
    """The acceptance setting (10 shufflenet tasks, Tfwd 10, 10 jobs, 256 nodes), both allocators."""
    out = tmp_path_factory.mktemp("harvest")
    return {a: run_harvest(harvest_cfg(shared_dir, f"harvest.allocator={a}"), out / a) for a in ("exact", "heuristic")}


def test_summit_log_start_and_slice(shared_dir):
    log = load_node_log(shared_dir / "harvest" / "summit_node_events.parquet")
    assert log.num_nodes == 4734
    ev = slice_events(log, 256)
    assert str(np.datetime64(ev.t0_ns, "ns")) == "2021-02-10T20:21:15.000000000"
    assert ev.num_nodes == 256 and np.all(np.diff(ev.times) > 0)


def test_acceptance_exact_allocator_with_compat_cap(acceptance):
    s = acceptance["exact"]
    assert s["jobs_finished"] == 10
    assert s["total_samples"] == pytest.approx(1.3e9)
    assert s["makespan_h"] == pytest.approx(23.47, rel=0.07)
    assert s["efficiency"] == pytest.approx(0.945, abs=0.03)
    assert s["precost"] == pytest.approx(5.268e7, rel=0.15)


def test_acceptance_optimiser_beats_heuristic(acceptance):
    assert acceptance["exact"]["efficiency"] >= acceptance["heuristic"]["efficiency"] + 0.04


@pytest.mark.slow
def test_full_machine_with_imagenet_tasks(shared_dir, tmp_path):
    s = run_harvest(harvest_cfg(shared_dir, experiment="harvest_summit_full"), tmp_path)
    assert s["nodes"] == 4734 and s["jobs_finished"] == 1001
    assert s["wall_seconds"] < 120
