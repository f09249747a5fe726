"""Shortest remaining time first with oracle durations; preemptive."""

from __future__ import annotations

import bisect
import math

from raysim.policy.base import NEVER, QuotaWalkPolicy


class SRTF(QuotaWalkPolicy):
    """Shortest remaining time first with oracle durations; preemptive.

    Order by remaining time; ties: queue order (pending jobs first in compat mode, running first
    in clean mode). Because running jobs' remaining time shrinks, the order changes between events;
    `next_wakeup` asks for a decision exactly when a running job overtakes a pending one."""

    name = "srtf"

    def __init__(self, params, **preemption):
        super().__init__(params, **preemption)
        self._changed = False

    def ordered(self, view, now):
        remain, rem = view.jobs.remain, view.remaining
        pend_rank, run_rank = (0, 1) if self.params.pending_first_on_ties else (1, 0)
        items = [(remain[j], pend_rank, i, j) for i, j in enumerate(view.pending)]
        items += [(rem(j, now), run_rank, i, j) for i, j in enumerate(view.running)]
        items.sort()
        return [it[3] for it in items]

    def schedule(self, view, now):
        self._changed = self.walk(view, now)

    def next_wakeup(self, view, now):
        if self._changed:
            return now + 1
        if not view.pending or view.pending_gpus <= view.free_gpus and view.spot_quota() is None:
            # (a spot quota may hold pending spot jobs back while GPUs are free: the order still counts)
            return NEVER  # every pending job is already selected: reordering changes nothing
        jobs = view.jobs
        remain, due, rate, spot = jobs.remain, jobs.end_due, jobs.rate, jobs.spot
        # (with priority classes each class is walked on its own: only overtaking within one counts)
        by_class = {}
        for j in view.pending:
            by_class.setdefault(spot[j], []).append(remain[j])
        for pend in by_class.values():
            pend.sort()
        compat_ties = self.params.pending_first_on_ties  # a tie keeps the pending job first
        lag = self.params.countdown_lag
        best = NEVER
        for r in view.running:
            pend = by_class.get(spot[r])
            if pend is None:
                continue
            if rate[r] == 1.0 and type(remain[r]) is int:
                # r's remaining time at t is D - t. It overtakes pending p (remaining rem_p, maybe
                # fractional after a slowdown) at the first t with D - t < rem_p (compat ties) or
                # D - t <= rem_p; the next such t > now comes from the largest rem_p not yet passed.
                d = due[r] - lag
                if compat_ties:
                    k = bisect.bisect_right(pend, d - now)
                    t = math.floor(d - pend[k - 1]) + 1 if k else NEVER
                else:
                    k = bisect.bisect_left(pend, d - now)
                    t = math.ceil(d - pend[k - 1]) if k else NEVER
            else:
                t = self._slow_overtake(view, r, pend, now, compat_ties)
            if t < best:
                best = t
        return best

    @staticmethod
    def _slow_overtake(view, r, pend, now, compat_ties):
        """A second > now at or before which running job r, whose remaining work is fractional or
        shrinks at a rate below 1 (network contention), overtakes the next pending job. Waking
        early only costs a decision that changes nothing, and the next wake-up is computed again."""
        left = view.remaining(r, now)
        k = bisect.bisect_right(pend, left) if compat_ties else bisect.bisect_left(pend, left)
        if not k:
            return NEVER
        # left - rate * (t - now) reaches pend[k - 1] after (left - pend[k - 1]) / rate seconds
        return now + max(1, int((left - pend[k - 1]) / view.jobs.rate[r]))
