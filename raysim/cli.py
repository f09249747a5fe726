"""Command line.

``raysim <hydra overrides>`` runs an experiment exactly like ``python -m raysim``; the first word may
instead name a tool: ``raysim trace ...`` (convert, stats, synth), ``raysim models ...`` (train,
report) and ``raysim report <multirun folder>``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from raysim.paths import CONF_DIR, project_path

if not OmegaConf.has_resolver("raysim_path"):
    OmegaConf.register_new_resolver("raysim_path", project_path)

# raysim's Hydra launcher (hydra/launcher=raysim_ray): importing it registers its config, and
# main() registers the class, which an editable install hides from Hydra's own plugin scan.
from hydra_plugins.raysim_launcher.ray_tasks import register as register_launcher  # noqa: E402

#: `raysim <word> ...` -> module whose main(argv) handles the rest of the command line.
TOOLS = {"trace": "raysim.trace.cli", "models": "raysim.models.cli", "report": "raysim.report.cli"}


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    from raysim.run import run

    run(cfg, Path(HydraConfig.get().runtime.output_dir))


def main(argv: list[str] | None = None) -> None:
    """Console script `raysim`."""
    argv = sys.argv[1:] if argv is None else argv
    register_launcher()
    if argv and argv[0] in TOOLS:
        tool = importlib.import_module(TOOLS[argv[0]])
        sys.exit(tool.main(argv[1:]))
    sys.argv = ["raysim", *argv]
    hydra_main()
