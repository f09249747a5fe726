"""Tiresias: discretised two-level least-attained-service, rescheduled periodically; preemptive."""

from __future__ import annotations

from dataclasses import dataclass

from raysim.policy.base import NEVER, PreemptionSettings, QuotaWalkPolicy
from raysim.settings import setting


@dataclass(frozen=True)
class TiresiasSettings(PreemptionSettings):
    """Tiresias's two queues and period, and what a preemption costs."""

    threshold_gpu_s: int = setting(18000, "attained GPU-seconds above which a job drops to the low queue", minimum=0)
    period_s: int = setting(60, "seconds between rescheduling decisions", minimum=1)


class Tiresias(QuotaWalkPolicy):
    """Tiresias: two-level discretised least-attained-service, rescheduled periodically; preemptive.

    Attained service = GPU-seconds received. Every `period_s` seconds, jobs split into a high
    queue (attained <= `threshold_gpu_s`) and a low queue, each in submit order (running before
    pending on ties), high first; then the quota walk. No promotion or aging."""

    name = "tiresias"
    Settings = TiresiasSettings

    def __init__(self, params, *, threshold_gpu_s: int, period_s: int, **preemption):
        super().__init__(params, **preemption)
        self.threshold = int(threshold_gpu_s)
        self.period_s = int(period_s)
        self._dirty = False

    def on_arrival(self, view, j):
        self._dirty = True

    def on_complete(self, view, j):
        self._dirty = True

    def on_capacity(self, view, now):
        self._dirty = True

    def ordered(self, view, now):
        submit, attained, thr = view.jobs.submit, view.attained, self.threshold
        high, low = [], []
        for i, j in enumerate(view.running):
            (low if attained(j, now) > thr else high).append((submit[j], 0, i, j))
        for i, j in enumerate(view.pending):
            (low if attained(j, now) > thr else high).append((submit[j], 1, i, j))
        high.sort()
        low.sort()
        return [it[3] for it in high] + [it[3] for it in low]

    def schedule(self, view, now):
        if now % self.period_s:
            return
        self._dirty = self.walk(view, now)

    def decides_at(self, t):
        return t if t == NEVER else -(-t // self.period_s) * self.period_s

    def next_wakeup(self, view, now):
        step = self.period_s
        best = (now // step + 1) * step if self._dirty else NEVER
        if not view.pending or view.pending_gpus <= view.free_gpus and view.spot_quota() is None:
            # (a spot quota may hold pending spot jobs back while GPUs are free: the order still counts)
            return best
        jobs = view.jobs
        for r in view.running:
            base = jobs.attained[r]
            if base > self.threshold or not jobs.gpu[r]:  # a CPU-only job attains no GPU service
                continue
            # first second at which attained service exceeds the threshold
            cross = jobs.run_since[r] + (self.threshold - base) // jobs.gpu[r] + 1
            t = -(-cross // step) * step
            if now < t < best:
                best = t
        return best
