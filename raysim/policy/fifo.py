"""First in, first out: submit order, head-of-line blocking, non-preemptive.

With priority classes and `spot.requeue=back` an evicted spot job waits again as if it had just
arrived: behind every job waiting at its eviction (those that arrived in that second included), the
jobs it evicted in one decision in eviction order; jobs arriving later queue behind it. That is the
order in which jobs entered the queue, GFS's FIFO with spot jobs (it appends an evicted job to its
spot queue, which it never sorts)."""

import bisect

from raysim.policy.base import BlockingQueuePolicy

#: Above every job index: an evicted job's tie-break after the jobs that arrived in its second.
BEHIND = 1 << 62


class FIFO(BlockingQueuePolicy):
    name = "fifo"
    queues_in_entry_order = True

    def __init__(self, params, **constants):
        super().__init__(params, **constants)
        self.evictions = 0  # evicted jobs requeued behind the others so far (their order among themselves)

    def key(self, view, j):
        return (view.jobs.submit[j],)

    def on_evicted(self, view, j: int, now: int) -> None:
        if not view.evicted_wait_last():
            return super().on_evicted(view, j, now)
        self.evictions += 1
        bisect.insort(self.queue, (view.jobs.spot[j], now, BEHIND + self.evictions, j))
