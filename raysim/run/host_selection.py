"""The `host_selection` config group: the order in which a VC's idle nodes are taken (one rule of
raysim.sim.host_selection.HOST_SELECTIONS per preset of conf/host_selection/). `in_place` (the
default): nodes back in service rejoin in their place, as every run before the group existed;
`returns_last`: at the end (AIReSim's pool order); `fewest_failures`: fewest failures so far first;
`random`: a seeded order per VC. A rule's settings (`host_selection.ties` of fewest_failures) are
declared on it and checked once; what a rule cannot run with is declared on it too and refused with
the other extensions' refusals (raysim.run.config.refuse_together)."""

from __future__ import annotations

from omegaconf import DictConfig

from raysim.run.presets import chosen, chosen_settings
from raysim.sim.host_selection import HOST_SELECTIONS, HostSelection

DEFAULT = "in_place"


def host_selection_name(cfg: DictConfig) -> str:
    """The chosen rule (`in_place` where the group is absent); an unknown name or a key the group
    does not declare is one line naming it."""
    chosen_settings(cfg, "host_selection", HOST_SELECTIONS, DEFAULT)
    return chosen(cfg, "host_selection", HOST_SELECTIONS, DEFAULT)


def host_selection(cfg: DictConfig) -> HostSelection | None:
    """The run's host selection with its seed (None under in_place: nodes rejoin in their place)."""
    name = host_selection_name(cfg)
    if name == DEFAULT:
        return None
    return HostSelection(name, int(cfg.seed), chosen_settings(cfg, "host_selection", HOST_SELECTIONS, DEFAULT))
