"""Lucid (ASPLOS'23): priority by estimated GPU time, forecast-driven GPU packing with measured pair speeds.

Priority = estimated duration x GPUs (fixed, lower first). Every 100 s a packing switch is read from
the throughput forecast: off -> blocking exclusive placement in priority order; on -> no blocking,
and each job of <= 8 GPUs first looks for a partner: the first running job (in start order) that
runs alone, has the same GPU count, fits in GPU memory with it, whose share scores sum to <= 2 and
whose priority is at least half the job's. Partners progress at their measured pair speeds.
No preemption or migration.
"""

from __future__ import annotations

import bisect

import numpy as np

from raysim.policy.base import NEVER, Policy

GPU_MEMORY_MB = 24_576  # RTX 3090, the GPU Lucid's pair speeds were measured on
SWITCH_PERIOD = 100


class PackingSwitch:
    """Packing on/off as a step function of time, read at multiples of SWITCH_PERIOD.

    `times` are the multiples of the period at which the value changes; before the first one the
    value is `initial`.
    """

    def __init__(self, times=(), values=(), initial: bool = True):
        self.times = np.asarray(times, dtype=np.int64)
        self.values = np.asarray(values, dtype=bool)
        self.initial = initial

    def at(self, t: int) -> bool:
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        return self.initial if i < 0 else bool(self.values[i])

    def next_change(self, t: int) -> float:
        i = int(np.searchsorted(self.times, t, side="right"))
        return int(self.times[i]) if i < len(self.times) else NEVER


class Lucid(Policy):
    name = "lucid"
    countdown = True

    def __init__(self, params, *, pairs: dict | None = None, switch: PackingSwitch | None = None,
                 memory_mb: float = GPU_MEMORY_MB):
        super().__init__(params)
        self.pairs = pairs or {}
        self.switch = switch or PackingSwitch()
        self.memory_mb = memory_mb
        self.queue: list[tuple[float, int]] = []  # (priority, j), sorted
        self.partner: dict[int, int] = {}  # j -> the job sharing its GPUs
        self.solo: dict[int, list[tuple[int, int]]] = {}  # gpu_num -> [(run order, j)] of jobs alone on their GPUs
        self.orphans: set[int] = set()  # Lucid defect: jobs that lost a partner but keep its speed

    # ------------------------------------------------------------------ bookkeeping
    def on_arrival(self, sim, j):
        bisect.insort(self.queue, (sim.jobs.estimate[j] * sim.jobs.gpu[j], j))

    def _solo_add(self, sim, j):
        bisect.insort(self.solo.setdefault(sim.jobs.gpu[j], []), (sim.jobs.run_order[j], j))

    def _solo_remove(self, sim, j):
        lst = self.solo.get(sim.jobs.gpu[j], [])
        i = bisect.bisect_left(lst, (sim.jobs.run_order[j], j))
        if i < len(lst) and lst[i][1] == j:
            del lst[i]

    def on_ending(self, sim, j, now):
        self._solo_remove(sim, j)
        other = self.partner.pop(j, None)
        if other is None:
            return
        self.partner.pop(other, None)
        if sim.jobs.end_due[other] == now:
            return  # both end this second
        host_ends = sim.jobs.run_order[j] < sim.jobs.run_order[other]
        if self.params.countdown_lag and host_ends:
            # Lucid looks up "the partner" as the first job on the node with the same GPUs, which is
            # the ending host itself: the guest keeps its pair speed and is never paired again.
            self.orphans.add(other)
            return
        sim.set_rate(other, 1.0, now)
        self._solo_add(sim, other)

    def renumber(self, new):
        self.queue = [(prio, new[j]) for prio, j in self.queue]
        self.partner = {new[j]: new[k] for j, k in self.partner.items()}
        self.solo = {g: [(order, new[j]) for order, j in lst] for g, lst in self.solo.items()}
        self.orphans = {new[j] for j in self.orphans if new[j] >= 0}

    # ------------------------------------------------------------------ decisions
    def schedule(self, sim, now):
        packing = self.switch.at(now)
        jobs = sim.jobs
        started = set()
        for prio, j in self.queue:
            g = jobs.gpu[j]
            if packing and g <= 8:
                host = self._find_partner(sim, j, prio)
                if host is not None:
                    self._share(sim, j, host, now)
                    started.add(j)
                    continue
            if sim.try_start(j, now):
                started.add(j)
                self._solo_add(sim, j)
            elif not packing:
                break  # exclusive mode blocks at the first job that does not fit
        if started:
            self.queue = [e for e in self.queue if e[1] not in started]

    def next_wakeup(self, sim, now):
        return self.switch.next_change(now) if sim.pending else NEVER

    def _find_partner(self, sim, j, prio):
        jobs = sim.jobs
        limit = self.memory_mb - jobs.gmem[j]
        score = jobs.share_score[j]
        gmem, scores, est, gpu = jobs.gmem, jobs.share_score, jobs.estimate, jobs.gpu
        for _, r in self.solo.get(gpu[j], ()):
            if gmem[r] < limit and score + scores[r] <= 2 and prio <= 2 * est[r] * gpu[r]:
                return r
        return None

    def _share(self, sim, j, host, now):
        jobs = sim.jobs
        s1, s2, util, gmem = pair_speeds(self.pairs, jobs, j, host)
        self._solo_remove(sim, host)
        self.partner[j], self.partner[host] = host, j
        sim.start_shared(j, host, now, s1, s2, util, gmem)


def pair_speeds(pairs: dict, jobs, a: int, b: int):
    """(speed of a, speed of b, joint GPU util %, joint memory MB) when a and b share GPUs.

    Looked up by workload ids in either order; unknown pairs fall back to no slowdown with summed
    utilisation and memory (as the reference does for models it did not measure).
    """
    wa, wb = jobs.workload[a], jobs.workload[b]
    hit = pairs.get((wa, wb))
    if hit is not None:
        return hit
    hit = pairs.get((wb, wa))
    if hit is not None:
        return hit[1], hit[0], hit[2], hit[3]
    util = min(1.0, (jobs.util_milli[a] + jobs.util_milli[b]) / 1000)
    return 1.0, 1.0, util, jobs.gmem[a] + jobs.gmem[b]
