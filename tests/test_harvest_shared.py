"""Harvesting (policy=bftrainer) on the Summit node log and BFTrainer task sets in ../shared (skipped
without it): the acceptance figures of BFTrainer's replayer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from raysim.harvest.replay import load_node_log, slice_events
from raysim.paths import CONF_DIR
from raysim.run import run

pytestmark = pytest.mark.shared


def harvest_cfg(shared_dir, *overrides, experiment="harvest_summit"):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=[f"+experiment={experiment}", "runtime=local",
                                                        f"harvest.data_dir={shared_dir / 'harvest'}", *overrides])


def harvest_run(cfg, out) -> dict:
    """The run's summary row ("all") with its harvest figures."""
    run(cfg, out)
    summary = pd.read_csv(out / "summary.csv")
    return summary[summary.vc == "all"].iloc[0].to_dict()


@pytest.fixture(scope="module")
def acceptance(shared_dir, tmp_path_factory):
    """The acceptance setting (10 shufflenet tasks, Tfwd 10, 10 jobs, 256 nodes), both allocators."""
    out = tmp_path_factory.mktemp("harvest")
    return {a: harvest_run(harvest_cfg(shared_dir, f"harvest.allocator={a}"), out / a) for a in ("exact", "heuristic")}


def test_summit_log_start_and_slice(shared_dir):
    log = load_node_log(shared_dir / "harvest" / "summit_node_events.parquet")
    assert log.num_nodes == 4734
    ev = slice_events(log, 256)
    assert str(np.datetime64(ev.t0_ns, "ns")) == "2021-02-10T20:21:15.000000000"
    assert ev.num_nodes == 256 and np.all(np.diff(ev.times) > 0)


def test_acceptance_exact_allocator_with_compat_cap(acceptance):
    s = acceptance["exact"]
    assert s["finished"] == 10
    assert s["total_samples"] == pytest.approx(1.3e9)
    assert s["makespan_h"] == pytest.approx(23.47, rel=0.07)
    assert s["efficiency"] == pytest.approx(0.945, abs=0.03)
    assert s["precost"] == pytest.approx(5.268e7, rel=0.15)


def test_acceptance_optimiser_beats_heuristic(acceptance):
    assert acceptance["exact"]["efficiency"] >= acceptance["heuristic"]["efficiency"] + 0.04


def test_acceptance_setting_keeps_the_old_engines_figures(acceptance):
    """The figures harvest mode's own engine (a38b048, removed since) gave; this one equals it task by task."""
    assert acceptance["exact"]["makespan_h"] == pytest.approx(23.518055555555556, rel=1e-12)
    assert acceptance["exact"]["efficiency"] == pytest.approx(0.9410102209158935, rel=1e-12)
    assert acceptance["heuristic"]["efficiency"] == pytest.approx(0.8152481399987616, rel=1e-12)


@pytest.mark.parametrize("nodes, makespan_h, efficiency", [(64, 41.53666666666667, 0.9659249177118246),
                                                           (1024, 12.567222222222222, 0.8908769743611865)])
def test_other_slices_keep_the_old_engines_figures(shared_dir, tmp_path, nodes, makespan_h, efficiency):
    """64 and 1,024 nodes: the figures harvest mode's own engine gave (a38b048)."""
    s = harvest_run(harvest_cfg(shared_dir, f"harvest.nodes={nodes}"), tmp_path)
    assert s["finished"] == 10
    assert s["makespan_h"] == pytest.approx(makespan_h, rel=1e-12)
    assert s["efficiency"] == pytest.approx(efficiency, rel=1e-12)


@pytest.mark.slow
def test_full_machine_with_imagenet_tasks(shared_dir, tmp_path):
    s = harvest_run(harvest_cfg(shared_dir, experiment="harvest_summit_full"), tmp_path)
    assert s["jobs"] == 1001 and s["finished"] == 1001
    assert s["makespan_h"] == pytest.approx(87.41472222222222, rel=1e-12)  # as the old engine's
    assert s["efficiency"] == pytest.approx(0.9144068032109223, rel=1e-12)
