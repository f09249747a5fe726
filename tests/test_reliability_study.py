"""benchmarks/helios_reliability_study.py: every arm's overrides compose and pass raysim's own check (no run)."""

import importlib.util
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run.config import check_cluster_config

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "helios_reliability_study.py"


def bench():
    spec = importlib.util.spec_from_file_location("helios_reliability_study", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("arm", ["baseline", "spares", "standbys", "retire"])
@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_every_arm_composes_and_passes_the_check(arm, policy):
    b = bench()
    overrides = [o for o in b.overrides(b.arms(32, 1)[arm], 10, 500) if not o.startswith("hydra.")]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[*overrides, f"policy={policy}"])
    check_cluster_config(cfg)
    assert cfg.failures.clock == "busy" and cfg.repair.name == "pipeline" and cfg.quota.mode == "global"
