"""The command line of the run in progress: Hydra's overrides, and what they name."""

from __future__ import annotations

from omegaconf import OmegaConf


def command_line_overrides() -> list[str]:
    """Hydra's command-line overrides of this run (none outside a Hydra run)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    # as typed: an override's own interpolation (trace.path=${oc.env:X}) is the run's to resolve
    return [str(o) for o in OmegaConf.to_container(HydraConfig.get().overrides.task, resolve=False)]


def in_multirun() -> bool:
    """Whether this is one job of a Hydra multirun."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def override_key(text: str) -> str:
    """`policy.overhead_s` of `+policy.overhead_s=3`."""
    return str(text).lstrip("+~").split("=", 1)[0]


def covers(prefix: str, key: str) -> bool:
    """Whether dotted `key` is `prefix` or lies under it."""
    return key == prefix or key.startswith(prefix + ".")
