"""Shortest job first with oracle durations: blocking, non-preemptive."""

from raysim.policy.base import BlockingQueuePolicy


class SJF(BlockingQueuePolicy):
    name = "sjf"

    def key(self, view, j):
        return (view.jobs.duration[j],)
