"""The policy interface and the two scheduling skeletons the baselines share.

A policy orders jobs and decides which to start or preempt; a placer finds the GPUs. Policies act
on the simulator through ``sim.try_start(j, now)`` and ``sim.preempt(j, now)`` only.
"""

from __future__ import annotations

import bisect
import math

NEVER = math.inf


class Policy:
    """Base class. Subclasses implement `schedule`; the hooks default to doing nothing."""

    name = "policy"
    #: True for policies whose jobs count remaining work down (they can be preempted and resumed).
    countdown = False

    def __init__(self, params):
        self.params = params

    def on_arrival(self, sim, j: int) -> None:
        """Job j entered the queue."""

    def on_ending(self, sim, j: int, now: int) -> None:
        """Job j is about to finish at `now` and still holds its GPUs."""

    def on_complete(self, sim, j: int) -> None:
        """Job j finished."""

    def schedule(self, sim, now: int) -> None:
        """Decide at time `now`: start (and, if preemptive, preempt) jobs."""
        raise NotImplementedError

    def next_wakeup(self, sim, now: int) -> float:
        """Next time > now this policy needs a decision although no job arrives or ends (inf: none)."""
        return NEVER

    def renumber(self, new: list[int]) -> None:
        """Job j is now called new[j] (-1: finished and forgotten); the order of jobs is unchanged.
        Policies that keep job indices override this."""


class BlockingQueuePolicy(Policy):
    """Non-preemptive, head-of-line blocking: jobs are placed in key order and the first job that
    does not fit stops the walk. Subclasses define `key(sim, j)`; ties fall back to arrival order."""

    def __init__(self, params):
        super().__init__(params)
        self.queue: list[tuple] = []  # (key..., j) kept sorted

    def key(self, sim, j: int) -> tuple:
        raise NotImplementedError

    def on_arrival(self, sim, j: int) -> None:
        bisect.insort(self.queue, (*self.key(sim, j), j))

    def renumber(self, new: list[int]) -> None:
        self.queue = [(*e[:-1], new[e[-1]]) for e in self.queue]

    def schedule(self, sim, now: int) -> None:
        placed = 0
        for entry in self.queue:
            if not sim.try_start(entry[-1], now):
                break
            placed += 1
        if placed:
            del self.queue[:placed]


class QuotaWalkPolicy(Policy):
    """Preemptive: all pending and running jobs are walked in priority order against a quota equal to
    the VC's GPUs. A job that fits the remaining quota is kept (running) or selected (pending); a
    running job that does not fit is preempted; a pending one is skipped. Selected jobs are then
    placed in order; one that fails placement (fragmentation) keeps waiting while others are tried.
    Subclasses give the order with `ordered(sim, now)`."""

    countdown = True

    def ordered(self, sim, now: int) -> list[int]:
        raise NotImplementedError

    def walk(self, sim, now: int) -> bool:
        """Run one quota walk; return whether anything started or was preempted."""
        if not sim.pending:
            return False
        gpu = sim.jobs.gpu
        if sim.pending_gpus <= sim.vc.free_gpus:
            # Everything fits the quota: nobody is preempted, every pending job is tried in order.
            preempt = []
            prerun = [j for j in self.ordered(sim, now) if j in sim.pending]
        else:
            quota = sim.vc.total_gpus
            preempt, prerun = [], []
            pending = sim.pending
            for j in self.ordered(sim, now):
                g = gpu[j]
                if g <= quota:
                    quota -= g
                    if j in pending:
                        prerun.append(j)
                elif j not in pending:
                    preempt.append(j)
        for j in preempt:
            sim.preempt(j, now)
        started = False
        for j in prerun:
            started |= sim.try_start(j, now)
        return started or bool(preempt)
