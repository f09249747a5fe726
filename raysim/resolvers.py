"""raysim's OmegaConf resolvers (``${raysim_path:traces/venus_synth}``), registered once per process
by whatever composes raysim's configs: the command line (raysim.cli) and the Ray launcher's workers."""

from __future__ import annotations

from omegaconf import OmegaConf

from raysim.paths import project_path


def register_resolvers() -> None:
    """Register ``raysim_path`` (a path shipped with raysim) if it is not registered yet."""
    if not OmegaConf.has_resolver("raysim_path"):
        OmegaConf.register_new_resolver("raysim_path", project_path)
