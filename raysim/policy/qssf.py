"""Quasi-shortest-service first (Helios): priority = estimated duration x GPUs; blocking, non-preemptive."""

from raysim.policy.base import BlockingQueuePolicy


class QSSF(BlockingQueuePolicy):
    name = "qssf"

    def key(self, sim, j):
        jobs = sim.jobs
        return (jobs.estimate[j] * jobs.gpu[j], jobs.gpu[j])

    def schedule(self, sim, now):
        if self.params.qssf_late_priority and sim.arrived_now == len(sim.pending):
            # Lucid: when every queued job arrived this second, no priority is assigned yet and the
            # queue is ordered by GPU count alone.
            gpu = sim.jobs.gpu
            started = set()
            for j in sorted(sim.pending, key=lambda j: (gpu[j], j)):
                if not sim.try_start(j, now):
                    break
                started.add(j)
            if started:
                self.queue = [e for e in self.queue if e[-1] not in started]
            return
        super().schedule(sim, now)
