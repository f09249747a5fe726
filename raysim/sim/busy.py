"""Failure clocks that run only while work progresses (`failures.clock=busy`, docs/failures.md).

Under `failures.clock=up` a node ages while it is up, busy or idle (raysim.sim.failures). Under
`busy`, as in AIReSim, a node fails only while some job on it makes progress: not while it is
idle, not while the jobs on it only restore their checkpoint after a restart
(`checkpoint.restart_s`), not while it is down. Each stretch of progress draws a fresh lifetime
from the node's own generator when it begins (a renewal: for exponential lifetimes the same
process as a clock that pauses, for Weibull and lognormal ones AIReSim's fresh draw per stretch),
and its failure is dropped, not having happened, when the stretch ends first.

The engine (raysim.sim.engine.VCSimulator) tells a node's stream when a job begins a run on it
(`carry`: from when it progresses, after its restore) and when it leaves (`rest`); the stream
says whether its pending failure changed, and the engine then drops the one it holds and asks for
the new one (`armed`). Costs grow with job starts and stops, never with simulated seconds; the
draws stay per node, so a node's failures follow its own work only.
"""

from __future__ import annotations

from raysim.sim.capacity import DOWN, RESTART


class BusyFailures:
    """One node's failures under the busy clock: a NodeStream the engine also tells of the work on
    the node, drawing from `failures` (the node's raysim.sim.failures.NodeFailures: its generator,
    lifetimes, categories and repairs). `work`: per job on the node (by trace sequence number), the
    second its progress begins; `since`: when the stretch whose failure is pending began (or begins)."""

    def __init__(self, failures):
        self.failures = failures
        self.work: dict[int, int] = {}
        self.since = 0
        self.pending = None  # (time, category index, cause index) of the failure the engine holds, or None

    @property
    def armed(self) -> tuple[int, int, int, int] | None:
        """The pending failure as an event (time s, rank, kind, cause index), or None."""
        if self.pending is None:
            return None
        t, k, cause = self.pending
        f = self.failures
        return t, f.rank, RESTART if f.model.categories[k].kind == "restart" else DOWN, cause

    def next(self) -> tuple[int, int, int, int] | None:
        """The event after the one the engine applies now: after a failure, the repair's end (a
        ``down``) or nothing (a ``restart``: its jobs stop); after a repair, nothing (the node is
        idle until work starts on it)."""
        f = self.failures
        if self.pending is not None:  # the failure happens: the jobs on the node stop
            t, k, cause = self.pending
            self.pending, self.work = None, {}
            f.fail(t, k, life=t - self.since, cause=cause)
        return f.next() if f.repair_due is not None else None

    def carry(self, job: int, begins: int, now: int) -> bool:
        """Job `job` (its trace sequence number) begins a run on the node at `now`, progressing from
        `begins` on. Returns whether the pending failure changed."""
        self.work[job] = begins
        return self._rearm(now)

    def rest(self, job: int, now: int) -> bool:
        """Job `job` leaves the node at `now`. Returns whether the pending failure changed."""
        if self.work.pop(job, None) is None:
            return False
        return self._rearm(now)

    def _rearm(self, now: int) -> bool:
        """After a change of the node's work at `now`: the pending failure stands while the stretch
        of progress it belongs to goes on (or is still to begin at the same second); else it is
        dropped, and a new stretch, if any, draws a fresh lifetime (its failure falls in a second
        after `now`)."""
        begins = min(self.work.values(), default=None)
        if self.pending is not None:
            if begins is not None and (begins == self.since or self.since <= now and begins <= now):
                return False
            self.pending = None
            changed = True
        else:
            changed = False
        if begins is None:
            return changed
        f = self.failures
        self.since = begins
        t = begins + f.life(f.rng)
        k = f.category()
        self.pending = (max(int(t), now + 1), k, f.cause_of(k))
        return True
