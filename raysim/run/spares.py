"""The `spares:` settings of a trace replay (a spare pool per VC: raysim.sim.spares, docs/failures.md),
declared here, and the run's spare rules, checked against its layout (every VC keeps a working node)."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.errors import ConfigError
from raysim.settings import setting
from raysim.sim.spares import RETURNS, SpareRules
from raysim.trace.schema import LARGEST


@dataclass(frozen=True)
class SpareSettings:
    """`spares:` a spare pool per VC, pulled while waiting jobs ask for more GPUs than are free."""

    nodes: int = setting(0, "spares per VC: the last nodes of each VC's layout, idle and out of service until "
                            "pulled (0: none)", minimum=0, maximum=LARGEST)
    wait_s: int = setting(0, "seconds from a pull to the spare being up (AIReSim's preemption wait: its background "
                             "work is stopped)", minimum=0, maximum=LARGEST)
    returns: str = setting("in_place", "where a node back in service (from down, repair, the spare pool) rejoins the "
                                       "placers' scan order: in_place | last (AIReSim's working pool order)",
                           choices=RETURNS)


def spare_rules(settings: SpareSettings, layout: dict) -> SpareRules | None:
    """The run's spare pool per VC and where nodes back in service go (None without spares, nodes
    returning in place); a pool that would leave a VC of `layout` (VC -> its node pools) no working
    node is one line naming `spares.nodes`."""
    last = settings.returns == "last"
    if not settings.nodes:
        if settings.wait_s:
            raise ConfigError("spares.wait_s", "only with spares.nodes > 0", settings.wait_s)
        return SpareRules(returns_last=True) if last else None
    for vc, pools in layout.items():
        nodes = sum(p.nodes for p in pools)
        if settings.nodes >= nodes:
            raise ConfigError("spares.nodes", f"must leave every VC a working node: VC {vc!r} has {nodes}",
                              settings.nodes)
    return SpareRules(settings.nodes, settings.wait_s, last)
