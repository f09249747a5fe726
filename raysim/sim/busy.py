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
the new one (`armed`). Costs grow with job starts and stops, never with simulated seconds.

A job that holds every GPU of two nodes or more is the only work on them, so their stretches begin
and end together, with its runs: its clock (JobClocks) draws all its nodes' lifetimes at once as a
run begins, from the job's own generator, and arms the first to end on its node's stream. The
process is the same as per node (each node a fresh lifetime of its own distribution per stretch);
the cost of a run is one vector draw, not one draw and heap entry per node. Every other run (one
node, or nodes it shares with other jobs) draws from each node's own generator. Either way the
draws follow the work, never the actor packing, windows or runtime.
"""

from __future__ import annotations

import numpy as np

from raysim.sim.capacity import DOWN

#: The last word of a job's lifetime seed ([run seed, 0, job's trace sequence number, JOB_LIVES])
JOB_LIVES = 5


class BusyFailures:
    """One node's failures under the busy clock: a NodeStream the engine also tells of the work on
    the node, drawing from `failures` (the node's raysim.sim.failures.NodeFailures: its generator,
    lifetimes, categories and repairs). `work`: per job on the node (by trace sequence number), the
    second its progress begins; `since`: when the stretch whose failure is pending began (or begins)."""

    def __init__(self, failures):
        self.failures = failures
        self.work: dict[int, int] = {}
        self.since = 0
        #: (time, category index, cause index, kind) of the failure the engine holds, or None; its kind
        #: (what it does: raysim.sim.failures.NodeFailures.outcome) is drawn as it is armed
        self.pending = None

    @property
    def armed(self) -> tuple[int, int, int, int] | None:
        """The pending failure as an event (time s, rank, kind, cause index), or None."""
        if self.pending is None:
            return None
        t, _, cause, kind = self.pending
        return t, self.failures.rank, kind, cause

    def arm(self, t: int, since: int) -> None:
        """Arm the failure at `t` of the stretch that began at `since`: its category, cause and
        outcome drawn now."""
        f = self.failures
        k = f.category()
        cause = f.cause_of(k)
        self.since = since
        self.pending = (t, k, cause, f.outcome(k))

    def blame_own(self) -> None:
        """The pending failure blames another node, but its jobs run on no other: it is this node's own
        (its outcome becomes DOWN)."""
        t, k, cause, _ = self.pending
        self.pending = (t, k, cause, DOWN)

    def blamed(self, t: int, k: int, cause: int) -> tuple[int, int, int, int]:
        """Another node's failure (category `k`, `cause`) is blamed on this one at `t`: its pending
        failure, if any, is dropped, its jobs stop, and it goes to repair (its DOWN; `next()` then
        gives the repair's end)."""
        self.pending, self.work = None, {}
        return self.failures.blamed(t, k, cause)

    def next(self) -> tuple[int, int, int, int] | None:
        """The event after the one the engine applies now: after a failure, the repair's end (a
        ``down``) or nothing (a ``restart``: its jobs stop); after a repair, nothing (the node is
        idle until work starts on it)."""
        f = self.failures
        if self.pending is not None:  # the failure happens: the jobs on the node stop
            t, k, cause, kind = self.pending
            self.pending, self.work = None, {}
            f.fail(t, k, life=t - self.since, cause=cause, kind=kind)
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
        f.refresh(begins)
        t = begins + f.life(f.rng)
        self.arm(max(int(t), now + 1), begins)
        return True


class JobClocks:
    """The busy clocks of a VC's jobs that hold whole nodes (see the module docs): per such job its
    nodes (as an array, kept while it holds them) and generator (kept until it finishes), and the node
    whose failure is armed. `streams`: the VC's BusyFailures per node (None: a node without one);
    `seed`: the run's."""

    def __init__(self, streams, seed: int):
        self.streams = list(streams)
        self.seed = seed
        failures = next((s.failures for s in self.streams if s is not None), None)
        self.model = None if failures is None else failures.model
        #: per node, the scale of its lifetimes (a bad node's until a repair truly fixes it: `rescale`),
        #: and when a good one turns bad (bad-node regeneration; inf: never)
        self.scales = np.array([s.failures.scale if s is not None else np.inf for s in self.streams])
        self.bad_at = np.array([s.failures.bad_at if s is not None else np.inf for s in self.streams])
        self.regenerates = self.model is not None and self.model.regen_s is not None
        self.nodes: dict[int, np.ndarray] = {}  # job (trace sequence number) -> its nodes
        self.rngs: dict[int, np.random.Generator] = {}
        self.armed: dict[int, int] = {}  # job -> the node its pending failure is on

    def covers(self, seq: int, vc, placed) -> bool:
        """Whether the job of trace sequence number `seq`, placed on `placed` ((node, GPU ids) of VC
        state `vc`), runs on a clock of its own: it holds every GPU of two nodes or more (and no
        resource other than GPUs is placed). Decided once per placement."""
        if seq in self.nodes:
            return True
        if vc.res is not None or len(placed) < 2:
            return False
        nodes = [node for node, _ in placed]
        if len(set(nodes)) != len(nodes) or any(len(ids) != vc.size[node] for node, ids in placed):
            return False
        self.nodes[seq] = np.array(nodes, dtype=np.intp)
        return True

    def carry(self, seq: int, begins: int, now: int) -> int | None:
        """Job `seq` begins a run at `now` that progresses from `begins` on: each of its nodes draws a
        lifetime, and the first to end is armed on its node's stream. Returns that node (None: none
        of its nodes can fail)."""
        rng = self.rngs.get(seq)
        if rng is None:
            rng = self.rngs[seq] = np.random.default_rng([self.seed, 0, seq, JOB_LIVES])
        nodes = self.nodes[seq]
        model, n = self.model, len(nodes)
        if self.regenerates:  # (good nodes whose regeneration fell before this run turn bad now)
            for node in nodes[self.bad_at[nodes] <= begins].tolist():
                self.streams[node].failures.refresh(begins)
                self.rescale(node)
        if model.distribution == "exponential":
            lives = rng.standard_exponential(n)
        elif model.distribution == "weibull":
            lives = rng.weibull(model.shape, n)
        else:
            lives = rng.lognormal(0.0, model.sigma, n)
        lives *= self.scales[nodes]
        i = int(np.argmin(lives))
        if not np.isfinite(lives[i]):
            return None
        node = int(nodes[i])
        self.streams[node].arm(max(int(begins + lives[i]), now + 1), begins)
        self.armed[seq] = node
        return node

    def rest(self, seq: int) -> int | None:
        """Job `seq`'s run ends: the failure armed for it, if not applied yet, is dropped. Returns its
        node (None: nothing was pending)."""
        node = self.armed.pop(seq, None)
        if node is None or self.streams[node].pending is None:
            return None
        self.streams[node].pending = None
        return node

    def move(self, seq: int, node: int, to: int) -> None:
        """Job `seq`'s GPUs of node `node` moved to node `to` (a warm standby swapped in)."""
        nodes = self.nodes.get(seq)
        if nodes is not None:
            nodes[nodes == node] = to

    def release(self, seq: int) -> None:
        """Job `seq` left its nodes."""
        self.nodes.pop(seq, None)

    def finished(self, seq: int) -> None:
        """Job `seq` finished: its generator is not needed any more."""
        self.rngs.pop(seq, None)

    def rescale(self, node: int) -> None:
        """Node `node`'s stream applied an event: its scale may have changed (a bad node truly fixed)."""
        stream = self.streams[node]
        if stream is not None:
            self.scales[node] = stream.failures.scale
            self.bad_at[node] = stream.failures.bad_at
