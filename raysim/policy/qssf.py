"""Quasi-shortest-service first (Helios): priority = estimated duration x GPUs; blocking, non-preemptive."""

from raysim.policy.base import BlockingQueuePolicy


class QSSF(BlockingQueuePolicy):
    name = "qssf"
    needs_estimate = True

    def key(self, view, j):
        jobs = view.jobs
        return (jobs.estimate[j] * jobs.gpu[j], jobs.gpu[j])

    def schedule(self, view, now):
        if self.params.qssf_late_priority and view.arrived_now == len(view.pending):
            # Lucid: when every queued job arrived this second, no priority is assigned yet and the
            # queue is ordered by GPU count alone.
            gpu = view.jobs.gpu
            started = set()
            for j in sorted(view.pending, key=lambda j: (gpu[j], j)):
                if not view.try_start(j, now):
                    break
                started.add(j)
            if started:
                self.queue = [e for e in self.queue if e[-1] not in started]
            return
        super().schedule(view, now)
