"""Typed getters of config values: a bad or missing value is one line naming its key (ConfigError).
Every run mode checks its settings with these before anything is read."""

from __future__ import annotations

import numpy as np
from omegaconf import DictConfig, OmegaConf

from raysim.errors import ConfigError

_MISSING = object()


def value(cfg: DictConfig, key: str, default=None):
    """The value at dotted `key` (a missing mandatory value raises OmegaConf's error)."""
    return OmegaConf.select(cfg, key, default=default, throw_on_missing=True)


def integer(cfg: DictConfig, key: str, *, minimum: int | None = None, maximum: int | None = None,
            hint: str = "", why_maximum: str = "") -> int:
    """The integer at `key` (an int, a whole float or its decimal text), at least `minimum` and at
    most `maximum` (a bound past which a run would not end or not fit in memory: `why_maximum`)."""
    raw = value(cfg, key, _MISSING)
    if raw is _MISSING:
        raise ConfigError(key, "missing")
    number_ = None
    if isinstance(raw, bool):
        number_ = None
    elif isinstance(raw, int):
        number_ = raw
    elif isinstance(raw, float) and raw.is_integer():
        number_ = int(raw)
    elif isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        number_ = int(raw.strip())
    kind = "a non-negative integer" if minimum == 0 else "a positive integer" if minimum == 1 else "an integer"
    if number_ is None or (minimum is not None and number_ < minimum):
        raise ConfigError(key, f"must be {kind}" + (f" {hint}" if hint else ""), raw)
    if maximum is not None and number_ > maximum:
        raise ConfigError(key, f"must be at most {maximum:,}" + (f" {why_maximum}" if why_maximum else ""), raw)
    return number_


def number(cfg: DictConfig, key: str, *, minimum: float | None = None, above: float | None = None,
           maximum: float | None = None) -> float:
    """The finite number at `key` within the given bounds."""
    raw = value(cfg, key, _MISSING)
    if raw is _MISSING:
        raise ConfigError(key, "missing")
    num = None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        num = float(raw)
    elif isinstance(raw, str):
        try:
            num = float(raw)
        except ValueError:
            num = None
    if num is None:
        raise ConfigError(key, "must be a number", raw)
    if not np.isfinite(num):
        raise ConfigError(key, "must be a finite number", raw)
    if above is not None and not num > above:
        raise ConfigError(key, f"must be greater than {above:g}", raw)
    if minimum is not None and num < minimum:
        raise ConfigError(key, f"must be at least {minimum:g}", raw)
    if maximum is not None and num > maximum:
        raise ConfigError(key, f"must be at most {maximum:g}", raw)
    return num


def boolean(cfg: DictConfig, key: str) -> bool:
    raw = value(cfg, key, False)
    if not isinstance(raw, bool):
        raise ConfigError(key, "must be true or false", raw)
    return raw


def choice(cfg: DictConfig, key: str, allowed, *, what: str = ""):
    """The value at `key`, one of `allowed`."""
    raw = value(cfg, key, _MISSING)
    if raw is _MISSING:
        raise ConfigError(key, "missing")
    if any(raw == a and type(raw) is type(a) for a in allowed):
        return raw
    shown = ", ".join(str(a).lower() if isinstance(a, bool) else str(a) for a in allowed
                      if not isinstance(a, bool))
    message = f"unknown {what}; choose one of {shown}" if what else f"must be one of {shown}"
    raise ConfigError(key, message, raw)


def plain(cfg: DictConfig, key: str):
    """The section at dotted `key` as plain values (dicts, lists; interpolations resolved), or None."""
    node = OmegaConf.select(cfg, key, default=None, throw_on_missing=True)
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
