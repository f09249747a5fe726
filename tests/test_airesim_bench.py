"""benchmarks/airesim.py's raysim side: a scenario's AIReSim settings become raysim overrides that raysim's own
check accepts, in AIReSim's units (warm standbys as spares.standbys with the host selection apart), and a scenario
raysim cannot match yet is skipped with what it lacks."""

import importlib.util
from pathlib import Path

from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run.config import check_cluster_config

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "airesim.py"


def bench():
    spec = importlib.util.spec_from_file_location("airesim_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_scenario_without_standbys_maps_onto_checked_raysim_overrides(tmp_path):
    b = bench()
    trace = b.raysim_trace("standbys_0_512", tmp_path)
    assert (tmp_path / "jobs.csv").read_text().splitlines()[1] == "1,cluster,u,4096,0,0,22118400,COMPLETED"
    assert (tmp_path / "vc_config.csv").read_text() == ",num\ncluster,4360\n"
    overrides = b.raysim_overrides("standbys_0_512", trace, 42)
    for wanted in ("failures.node_mtbf_h=2400.0", "failures.clock=busy", "failures.bad_multiplier=6.0",
                   "repair.manual_h=48.0", "checkpoint.restart_s=1380.0", "spares.nodes=200", "spares.wait_s=1200.0"):
        assert wanted in overrides
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    check_cluster_config(cfg)


def test_scenarios_with_warm_standbys_map_onto_standbys_and_the_host_selection(tmp_path):
    b = bench()
    assert b.unmatched("defaults") is None and b.unmatched("standbys_0_512") is None
    overrides = b.raysim_overrides("defaults", b.raysim_trace("defaults", tmp_path), 42)
    for wanted in ("checkpoint.restart_s=1200.0", "spares.standbys=16", "spares.host_selection_s=180.0",
                   "host_selection=returns_last"):
        assert wanted in overrides
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        check_cluster_config(compose(config_name="config", overrides=overrides))


def test_host_selection_policies_map_onto_the_host_selection_group(tmp_path):
    # AIReSim's default (first idle servers in pool order, repaired ones last) is returns_last; its
    # FewestFailuresFirst is fewest_failures with ties drawn
    b = bench()
    overrides = b.raysim_overrides("fewest_failures", b.raysim_trace("fewest_failures", tmp_path), 42)
    assert {"host_selection=fewest_failures", "host_selection.ties=random"} <= set(overrides)
    assert "host_selection=returns_last" not in overrides
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        check_cluster_config(compose(config_name="config", overrides=overrides))


def test_scenarios_raysim_cannot_match_are_skipped():
    b = bench()  # (a fresh module: the scenario added here is its own)
    b.SCENARIOS["scored"] = ("retire by score", {}, {"removal": ("scored", {})})
    assert b.unmatched("scored") == "needs scored retirement with AIReSim's parameters"
    assert all(b.unmatched(name) is None for name in b.SCENARIOS if name != "scored")


def test_wrong_node_diagnosis_and_bad_node_regeneration_map_onto_raysims_settings():
    b = bench()
    wrong = b.raysim_overrides("wrong_node_20", Path("t.csv"), 42)
    assert "failures.wrong_node=0.2" in wrong and not any(o.startswith("failures.bad_regen_h") for o in wrong)
    assert "failures.bad_regen_h=720.0" in b.raysim_overrides("regen_30d", Path("t.csv"), 42)
    assert "failures.wrong_node=0.0" in b.raysim_overrides("defaults", Path("t.csv"), 42)
