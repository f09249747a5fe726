"""A spare pool per VC (`spares.*`, docs/failures.md), as AIReSim keeps one: the last `nodes` nodes
of each VC's layout start as spares (lifecycle state ``spare``: idle, out of the scan order and the
GPU totals; they run background work that raysim does not model, and, idle, they never fail under
`failures.clock=busy`). A spare is pulled into service while the VC's waiting jobs ask for more GPUs
than it has free: one at a time, each up `wait` ticks after it is pulled (AIReSim's preemption wait:
its background work is stopped), the next pull decided once it is up. A spare that joins stays, as
in AIReSim; nodes back from repair rejoin the scan order where the run's host selection puts them
(raysim.sim.host_selection; by default in their place). Pulls are counted per VC
(`spares_pulled`, a cumulative time-series column, and the summary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from raysim.sim.extensions import Extension
from raysim.sim.host_selection import HostSelection
from raysim.sim.recorder import SPARE_COLUMNS

NEVER = math.inf


class Spares(Extension):
    """The VC's spare pool (see the module docs): `nodes` spares, each up `wait` ticks after it is pulled."""

    name = "spares"
    settings = ("spares.nodes",)
    refuses = {
        "failures.clock=up": "a spare must not fail while it is one, which failures.clock=up does not know (a node "
                             "ages whenever it is up): use failures.clock=busy (AIReSim's)",
        "failures=trace": "a failure trace may fail a spare while it is one: drop spares.nodes, or use a drawn model "
                          "with failures.clock=busy",
        "cluster.capacity": "a node log may move a spare while it is one: leave cluster.capacity null",
        "quota=borrow": "spares stay in their VC, and a node lent on would leave it: use quota=none or quota=global",
    }
    series_columns = SPARE_COLUMNS

    def __init__(self, nodes: int, wait: int = 0):
        self.nodes, self.wait = int(nodes), int(wait)
        self.pool: list[int] = []  # spares still in the pool, the first pulled first
        self.due = NEVER  # when the spare pulled last is up (NEVER: none on its way)
        self.pulled = 0

    def attach(self, sim) -> None:
        vc = sim.vc
        if self.nodes >= len(vc.order):
            raise ValueError(f"{sim.name}: {self.nodes} spares leave none of its {len(vc.order)} nodes working")
        sim.spares = self
        self.pool = vc.order[len(vc.order) - self.nodes:]
        for node in self.pool:
            vc.change(node, "spare", "spare")

    def series_row(self, sim) -> tuple:
        return (self.pulled,)

    def arrive(self, sim, now: int) -> None:
        """The spare pulled last is up at `now` (its due time): it joins the scan order, and the
        policy hears of it (`on_capacity`) before it decides at `now`."""
        self.due = NEVER
        self._join(sim, now)

    def after_schedule(self, sim, now: int) -> None:
        """The decision at `now` is over: while waiting jobs ask for more GPUs than are free and no
        spare is on its way, pull one (up at once, and the policy decides again, when `wait` is 0)."""
        while self.pool and self.due == NEVER and sim.pending_gpus > sim.vc.free_gpus:
            if self.wait:
                self.due = now + self.wait
                return
            self._join(sim, now)
            sim.policy.schedule(sim, now)

    def next_wake(self) -> float:
        """When the spare on its way is up (NEVER: none)."""
        return self.due

    def _join(self, sim, now: int) -> None:
        node = self.pool.pop(0)
        sim.vc.change(node, "up", "spare")
        self.pulled += 1
        sim.capacity_changes = [(node, True)]
        sim.policy.on_capacity(sim, now)


@dataclass(frozen=True)
class SpareRules:
    """A run's spare pool per VC (`spares.*`, raysim.run.spares), in seconds, and where nodes back in
    service join the scan order (`host_selection`: raysim.sim.host_selection's rule and the run seed;
    None: in their place)."""

    nodes: int = 0
    wait_s: int = 0
    host_selection: HostSelection | None = None

    def extensions(self, ticks_per_s: int = 1) -> list:
        """The VC engine's extensions of these rules, on a clock of `ticks_per_s` ticks per second."""
        return ([Spares(self.nodes, self.wait_s * ticks_per_s)] if self.nodes else []) + \
            ([self.host_selection.extension()] if self.host_selection is not None else [])

