"""Settings a mode has no use for, given on the command line, are refused in one line naming them."""

from __future__ import annotations

from raysim.errors import ConfigError


def command_line_overrides() -> list[str]:
    """Hydra's command-line overrides of this run (none outside a Hydra run)."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def refuse_overrides(unused, why: str, overrides=None) -> None:
    """A ConfigError naming the first of `overrides` (default: this run's command-line overrides)
    that sets a config group or key of `unused` (e.g. "placer" covers `placer=fgd` and
    `placer.type_order=...`); `why` says what the mode does instead."""
    for text in command_line_overrides() if overrides is None else overrides:
        key = str(text).lstrip("+~").split("=", 1)[0]
        if key.split(".", 1)[0] in unused:
            raise ConfigError(key, why)
