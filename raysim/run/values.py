"""Reading the composed config: a value or a section at a dotted key. Values are checked by their
declarations (raysim.settings), not here."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf


def value(cfg: DictConfig, key: str, default=None):
    """The value at dotted `key` (a missing mandatory value raises OmegaConf's error)."""
    return OmegaConf.select(cfg, key, default=default, throw_on_missing=True)


def plain(cfg: DictConfig, key: str):
    """The section at dotted `key` as plain values (dicts, lists; interpolations resolved), or None."""
    node = OmegaConf.select(cfg, key, default=None, throw_on_missing=True)
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
