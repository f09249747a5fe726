"""Config groups of named presets whose settings each preset declares (`repair=`, `retire=`): a
preset as its group's registry holds it, the preset a run chose and its checked settings."""

from __future__ import annotations

from omegaconf import DictConfig

from raysim.registry import Registry
from raysim.run.values import plain, value
from raysim.settings import NoSettings, parse


class Preset:
    """A preset of a group as its registry holds it: its one-line doc and declared settings."""

    def __init__(self, doc: str, settings=NoSettings):
        self.__doc__, self.Settings = doc, settings


def chosen(cfg: DictConfig, group: str, presets: Registry, default: str) -> str:
    """The preset of `group` the run chose (`default` where the group is absent); an unknown name is
    one line naming `<group>.name`."""
    return default if value(cfg, group) is None else presets.chosen(value(cfg, f"{group}.name"), f"{group}.name")


def chosen_settings(cfg: DictConfig, group: str, presets: Registry, default: str):
    """The chosen preset's checked settings (`<group>.*` but its name)."""
    name = chosen(cfg, group, presets, default)
    conf = dict(plain(cfg, group) or {})
    conf.pop("name", None)
    return parse(presets[name].Settings, conf, prefix=group, owner=f"{group}={name}")
