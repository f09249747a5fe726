"""Command line: `raysim <hydra overrides>` runs an experiment (like `python -m raysim`)."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from raysim.paths import CONF_DIR, project_path

if not OmegaConf.has_resolver("raysim_path"):
    OmegaConf.register_new_resolver("raysim_path", project_path)


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    from raysim.app import run

    run(cfg, Path(HydraConfig.get().runtime.output_dir))


def main() -> None:
    """Console script `raysim`: every argument is a Hydra override."""
    sys.argv[0] = "raysim"
    hydra_main()
