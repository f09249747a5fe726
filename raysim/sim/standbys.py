"""Warm standbys per job and the host-selection time (`spares.standbys`, `spares.host_selection_s`,
docs/failures.md), as AIReSim models them for its one job.

A job the policy places on two nodes or more also takes up to `count` whole idle nodes of its GPU
type, first in scan order, as its standbys (a host selection, counted in `host_selections`): they
stay idle and out of the scan order and the GPU totals (lifecycle state ``spare``, cause
``standby``), so they never fail under `failures.clock=busy`. When a node of the job fails:

- a node that goes down, with a standby left that has the job's GPUs of that node: the standby takes
  the failed node's place in the job's placement, and the job restarts there at once (a swap,
  `standby_swaps`): it is stopped and priced as any stop (its restart, its work since its last
  checkpoint, counted in its stop ledger), but keeps its GPUs, only the failed node's moving to the
  standby (raysim.sim.vc.VCState.move), is not placed again and pays no host selection;
- a failure that leaves the node up (an undiagnosed one): the job restarts on its own nodes, with
  no standby used, as AIReSim's job does (its failed server comes back as a standby at once);
- else: the job gives its standbys back and is away for `selection` ticks (its host selection:
  not queueing; with 0 it waits again at once), then returns to its policy, which places it anew
  with new standbys. If then, after its policy decided, it still waits and no spare of the pool
  (raysim.sim.spares) is left to pull, it stalls until nodes come back (counted once per failure
  in `stalls`).

A node back in service (its repair over) that is still idle after the policy's decision at that
time becomes a standby of the first running job (in start order) that lacks some, as AIReSim's
repaired servers refill its job's standbys; other idle nodes do not (AIReSim's job takes its
idle working-pool servers only at a host selection). A job that ends or stops otherwise (its
policy preempts it, a reclaim) gives its standbys back. The counts are cumulative time-series
columns (STANDBY_COLUMNS) and appear in the summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from raysim.sim.extensions import Extension
from raysim.sim.lifecycle import UP
from raysim.sim.recorder import STANDBY_COLUMNS

NEVER = math.inf


class Standbys(Extension):
    """Warm standbys per multi-node job (see the module docs): `count` per job, a host selection of
    `selection` ticks when a failed job has none left."""

    name = "standbys"
    settings = ("spares.standbys",)
    refuses = {
        "failures.clock=up": "a standby must not fail while it waits idle, which failures.clock=up does not know (a "
                             "node ages whenever it is up): use failures.clock=busy (AIReSim's)",
        "failures=trace": "a failure trace may fail a standby while it waits: drop spares.standbys, or use a drawn "
                          "model with failures.clock=busy",
        "cluster.capacity": "a node log may move a standby while it waits: leave cluster.capacity null",
        "quota=borrow": "a standby stays in its VC, and a node lent on would leave it: use quota=none or quota=global",
    }
    series_columns = STANDBY_COLUMNS

    def __init__(self, count: int, selection: int = 0):
        self.count, self.selection = int(count), int(selection)
        self.held: dict[int, list[int]] = {}  # running job -> its standbys, the first swapped in first
        self.away: dict[int, int] = {}  # job stopped by a failure, without a standby -> when it waits again
        self.back: list[int] = []  # nodes back in service at the latest capacity tick, offered as standbys
        self.swaps = self.selections = self.stalls = 0
        self._moving = False  # a swap or a restart in place stops and starts a job: it keeps its standbys

    def attach(self, sim) -> None:
        if sim.policy.times_jobs or sim.vc.res is not None:  # (raysim.run.spares.refuse_standbys)
            raise ValueError(f"{sim.name}: warm standbys need whole nodes and jobs the engine times")
        sim.standbys = self

    def series_row(self, sim) -> tuple:
        return self.swaps, self.selections, self.stalls

    # ------------------------------------------------------------------ the engine's hooks
    def started(self, sim, j: int) -> None:
        """Job j was placed by its policy: on two nodes or more it takes its standbys (a host selection)."""
        vc = sim.vc
        placed = vc.placement[j]
        if len(placed) < 2:
            return
        self.selections += 1
        kind, taken = vc.type_of[placed[0][0]], []
        for node in vc.order:
            if len(taken) == self.count:
                break
            if vc.type_of[node] == kind and vc.free[node] == vc.size[node] and node not in vc.draining:
                taken.append(node)
        for node in taken:
            vc.change(node, "spare", "standby")
        self.held[j] = taken

    def released(self, sim, j: int) -> bool:
        """Job j leaves its GPUs: unless it only restarts (a swap, or in place), its standbys go back in
        service. Returns whether it keeps its GPUs (it restarts)."""
        if self._moving:
            return True
        for node in self.held.pop(j, ()):
            sim.vc.change(node, "up", "standby")
        return False

    def fail(self, sim, node: int, down: bool, on: list[int], now: int, cause: int) -> list[int]:
        """Node `node` failed at `now` (`down`: it goes down; else it stays up) under jobs `on`: jobs
        with standbys restart (a swap, or in place), the others of them go to their host selection.
        Returns the jobs the engine stops as any other (those that hold no standbys)."""
        rest = []
        for j in on:
            if j not in self.held:
                rest.append(j)
                continue
            if not down:
                self._restart(sim, j, node, None, now, cause)
                continue
            vc, kind = sim.vc, sim.vc.type_of[node]
            gpus = len(vc.placement[j][vc.slot(j, node)][1])
            spare = next((s for s in self.held[j] if vc.type_of[s] == kind and vc.size[s] >= gpus), None)
            if spare is None:
                sim._stop_for(j, now, cause, sim._restart_cost(j))
                if self.selection:
                    sim.hold_back(j, now + self.selection)
                else:
                    sim.policy.on_requeue(sim, j, now)
                self.away[j] = now + self.selection
                continue
            self.held[j].remove(spare)
            vc.change(spare, "up", "standby")
            self.swaps += 1
            self._restart(sim, j, node, spare, now, cause)
        return rest

    def _restart(self, sim, j: int, node: int, spare: int | None, now: int, cause: int) -> None:
        """Job j stops at `now` for `cause`, priced and counted as any stop, keeping its GPUs; those of
        `node` move to `spare` (None: none move), and it runs again at once. Only one node of its
        placement changes, however many it has."""
        self._moving = True
        sim._stop_for(j, now, cause, sim._restart_cost(j))
        if spare is not None:
            sim.move(j, node, spare)
        sim.resume(j, now)
        self._moving = False

    def came_up(self, changes: list[tuple[int, bool]]) -> None:
        """The capacity events applied now: nodes back in service are offered as standbys after the decision."""
        self.back = [node for node, up in changes if up]

    def after_schedule(self, sim, now: int) -> None:
        """The decision at `now` is over: nodes back in service that are still idle become standbys of
        running jobs that lack some; a job back from its host selection that still waits, with no
        spare left to pull, stalls."""
        if self.back:
            vc = sim.vc
            for node in self.back:
                if vc.state[node] != UP or vc.free[node] != vc.size[node] or node in vc.draining:
                    continue
                for j, taken in self.held.items():
                    if len(taken) < self.count and vc.type_of[vc.placement[j][0][0]] == vc.type_of[node]:
                        vc.change(node, "spare", "standby")
                        taken.append(node)
                        break
            self.back = []
        if self.away:
            spares = sim.spares
            left = spares is not None and (spares.pool or spares.due != NEVER)
            for j in [j for j, at in self.away.items() if at <= now]:
                if j not in sim.pending:
                    del self.away[j]
                elif not left:
                    self.stalls += 1
                    del self.away[j]

    def renumber(self, new: list[int]) -> None:
        """Job indices changed (the engine forgot finished jobs): new[old] -> new index."""
        self.held = {new[j]: nodes for j, nodes in self.held.items()}
        self.away = {new[j]: at for j, at in self.away.items()}


@dataclass(frozen=True)
class StandbyRules:
    """A run's warm standbys per multi-node job and its host-selection time in seconds (`spares.standbys`,
    `spares.host_selection_s`: raysim.run.spares)."""

    count: int
    host_selection_s: int = 0

    def extension(self, ticks_per_s: int = 1) -> Standbys:
        """The VC engine's extension of these rules, on a clock of `ticks_per_s` ticks per second."""
        return Standbys(self.count, self.host_selection_s * ticks_per_s)
