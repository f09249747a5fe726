"""A run's ``data:NAME[/FILE]`` settings resolved to the cached datasets (raysim.data), in its config,
before anything reads them; `data.auto_fetch` declared."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict, read_write

from raysim.data.resolve import is_data_ref, records, reset_records, resolve
from raysim.settings import setting


@dataclass(frozen=True)
class DataSettings:
    """The `data:` section."""

    auto_fetch: bool = setting(False, "a dataset that is not cached is downloaded (and verified) before the run")


def resolve_config(cfg: DictConfig, skip=()) -> list[dict]:
    """Replace every ``data:`` string of `cfg` (an OmegaConf config, in place) by its local path,
    except under the dotted prefixes `skip` (settings this run does not read); returns what was
    resolved. `data.auto_fetch` (default false) fetches datasets not yet cached.
    Values that cannot be read (a missing mandatory value, a broken interpolation) are left for the
    run to report."""
    auto = False
    try:
        section = cfg.get("data")
        auto = bool(section.get("auto_fetch", False)) if section is not None else False
    except Exception:  # noqa: BLE001 (a bad data section is reported by the run's own checks)
        auto = False
    reset_records()

    def walk(node, prefix: str) -> None:
        keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
        for k in list(keys):
            key = f"{prefix}{k}" if isinstance(node, DictConfig) else f"{prefix.rstrip('.')}[{k}]"
            if any(key == s or key.startswith(s + ".") for s in skip):
                continue
            try:
                child = node._get_node(k) if isinstance(node, DictConfig) else node._get_node(k)
                if child is None:
                    continue
                value = node[k]
            except Exception:  # noqa: BLE001
                continue
            if isinstance(value, (DictConfig, ListConfig)):
                walk(value, f"{key}.")
            elif is_data_ref(value):
                node[k] = resolve(value, key, auto_fetch=auto)

    if OmegaConf.is_config(cfg):
        with read_write(cfg), open_dict(cfg):
            walk(cfg, "")
    return records()
