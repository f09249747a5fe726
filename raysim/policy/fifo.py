"""First in, first out: submit order, head-of-line blocking, non-preemptive."""

from raysim.policy.base import BlockingQueuePolicy


class FIFO(BlockingQueuePolicy):
    name = "fifo"

    def key(self, view, j):
        return (view.jobs.submit[j],)
