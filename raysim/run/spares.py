"""The `spares:` settings of a trace replay (a spare pool per VC: raysim.sim.spares; warm standbys per
job and the host-selection time: raysim.sim.standbys; docs/failures.md), declared here, and the run's
spare and standby rules, checked against its layout (every VC keeps a working node). Where nodes back
in service go is the `host_selection` group's (raysim.run.host_selection)."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.errors import ConfigError
from raysim.settings import setting
from raysim.sim.host_selection import HostSelection
from raysim.sim.spares import SpareRules
from raysim.sim.standbys import StandbyRules
from raysim.trace.schema import LARGEST


@dataclass(frozen=True)
class SpareSettings:
    """`spares:` a spare pool per VC, pulled while waiting jobs ask for more GPUs than are free."""

    nodes: int = setting(0, "spares per VC: the last nodes of each VC's layout, idle and out of service until "
                            "pulled (0: none)", minimum=0, maximum=LARGEST)
    wait_s: int = setting(0, "seconds from a pull to the spare being up (AIReSim's preemption wait: its background "
                             "work is stopped)", minimum=0, maximum=LARGEST)
    standbys: int = setting(0, "warm standbys per job on two nodes or more: idle nodes it holds, swapped in for a "
                               "failed node at the restart's cost only (0: none)", minimum=0, maximum=LARGEST)
    host_selection_s: int = setting(0, "seconds a job whose node failed with no standby left is away before it "
                                       "asks for nodes again (its host selection; only with standbys)",
                                    minimum=0, maximum=LARGEST)


def spare_rules(settings: SpareSettings, layout: dict, host: HostSelection | None = None) -> SpareRules | None:
    """The run's spare pool per VC and where nodes back in service go (`host`: the run's host selection,
    raysim.run.host_selection; None without spares and with nodes rejoining in their place); a pool that
    would leave a VC of `layout` (VC -> its node pools) no working node is one line naming `spares.nodes`."""
    if not settings.nodes:
        if settings.wait_s:
            raise ConfigError("spares.wait_s", "only with spares.nodes > 0", settings.wait_s)
        return SpareRules(host_selection=host) if host is not None else None
    for vc, pools in layout.items():
        nodes = sum(p.nodes for p in pools)
        if settings.nodes >= nodes:
            raise ConfigError("spares.nodes", f"must leave every VC a working node: VC {vc!r} has {nodes}",
                              settings.nodes)
    return SpareRules(settings.nodes, settings.wait_s, host)


def standby_rules(settings: SpareSettings, layout: dict) -> StandbyRules | None:
    """The run's warm standbys per job and host-selection time (None without standbys); host selection
    without standbys, or more standbys than a VC of `layout` has nodes besides one, is one line naming it."""
    if not settings.standbys:
        if settings.host_selection_s:
            raise ConfigError("spares.host_selection_s", "only with spares.standbys > 0", settings.host_selection_s)
        return None
    for vc, pools in layout.items():
        nodes = sum(p.nodes for p in pools)
        if settings.standbys >= nodes:
            raise ConfigError("spares.standbys", f"must leave every VC a node to run on: VC {vc!r} has {nodes}",
                              settings.standbys)
    return StandbyRules(settings.standbys, settings.host_selection_s)


def refuse_standbys(settings: SpareSettings, times_jobs: bool, resources: bool) -> None:
    """What warm standbys cannot run with, known once the policy and the trace are: a policy that times its
    jobs itself (it places them: no engine swap), or VCs that count GPU shares, CPU and memory (a standby is
    a whole idle node). One line naming `spares.standbys`."""
    if settings.standbys and (times_jobs or resources):
        why = ("the policy times its jobs itself and places them anew: use an event-driven policy (fifo, sjf, ...)"
               if times_jobs else "standbys are whole idle nodes, and the trace's jobs ask for GPU shares, CPU or memory")
        raise ConfigError("spares.standbys", why, settings.standbys)
