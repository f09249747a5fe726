"""Shortest remaining time first with oracle durations; preemptive."""

from __future__ import annotations

import bisect

from raysim.policy.base import NEVER, QuotaWalkPolicy


class SRTF(QuotaWalkPolicy):
    """Order by remaining time; ties: queue order (pending jobs first in compat mode, running first
    in clean mode). Because running jobs' remaining time shrinks, the order changes between events;
    `next_wakeup` asks for a decision exactly when a running job overtakes a pending one."""

    name = "srtf"

    def __init__(self, params):
        super().__init__(params)
        self._changed = False

    def ordered(self, sim, now):
        remain, rem = sim.jobs.remain, sim.remaining
        pend_rank, run_rank = (0, 1) if self.params.pending_first_on_ties else (1, 0)
        items = [(remain[j], pend_rank, i, j) for i, j in enumerate(sim.pending)]
        items += [(rem(j, now), run_rank, i, j) for i, j in enumerate(sim.running)]
        items.sort()
        return [it[3] for it in items]

    def schedule(self, sim, now):
        self._changed = self.walk(sim, now)

    def next_wakeup(self, sim, now):
        if self._changed:
            return now + 1
        if not sim.pending or sim.pending_gpus <= sim.vc.free_gpus:
            return NEVER  # every pending job is already selected: reordering changes nothing
        remain, due = sim.jobs.remain, sim.jobs.end_due
        pend = sorted(remain[j] for j in sim.pending)
        extra = 1 if self.params.pending_first_on_ties else 0
        lag = self.params.countdown_lag
        best = NEVER
        for r in sim.running:
            # r overtakes pending p at t = due - lag - rem_p + extra; the next such t > now comes
            # from the largest rem_p <= due - lag + extra - now - 1.
            base = due[r] - lag + extra
            k = bisect.bisect_right(pend, base - now - 1)
            if k:
                t = base - pend[k - 1]
                if t < best:
                    best = t
        return best
