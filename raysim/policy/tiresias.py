"""Tiresias: discretised two-level least-attained-service, rescheduled every 60 s; preemptive."""

from __future__ import annotations

from raysim.policy.base import NEVER, QuotaWalkPolicy


class Tiresias(QuotaWalkPolicy):
    """Attained service = GPU-seconds received. Every `interval` seconds, jobs split into a high
    queue (attained <= threshold) and a low queue, each in submit order (running before pending on
    ties), high first; then the quota walk. No promotion or aging."""

    name = "tiresias"
    threshold = 18_000
    interval = 60

    def __init__(self, params):
        super().__init__(params)
        self._dirty = False

    def on_arrival(self, sim, j):
        self._dirty = True

    def on_complete(self, sim, j):
        self._dirty = True

    def ordered(self, sim, now):
        submit, attained, thr = sim.jobs.submit, sim.attained, self.threshold
        high, low = [], []
        for i, j in enumerate(sim.running):
            (low if attained(j, now) > thr else high).append((submit[j], 0, i, j))
        for i, j in enumerate(sim.pending):
            (low if attained(j, now) > thr else high).append((submit[j], 1, i, j))
        high.sort()
        low.sort()
        return [it[3] for it in high] + [it[3] for it in low]

    def schedule(self, sim, now):
        if now % self.interval:
            return
        self._dirty = self.walk(sim, now)

    def next_wakeup(self, sim, now):
        step = self.interval
        best = (now // step + 1) * step if self._dirty else NEVER
        if not sim.pending or sim.pending_gpus <= sim.vc.free_gpus:
            return best
        jobs = sim.jobs
        for r in sim.running:
            base = jobs.attained[r]
            if base > self.threshold:
                continue
            # first second at which attained service exceeds the threshold
            cross = jobs.run_since[r] + (self.threshold - base) // jobs.gpu[r] + 1
            t = -(-cross // step) * step
            if now < t < best:
                best = t
        return best
