"""FIFO with backfilling: jobs in submit order, and a job that does not fit lets later ones go first.

At each decision point the waiting jobs are tried in submit order (ties: arrival order); one that
the placer cannot place now keeps its place in the queue and the walk goes on (no reservation for
the head: a stream of small jobs can delay a large one indefinitely). Non-preemptive.

A job is tried only where its outcome may have changed: every waiting job after capacity was freed
(a job ended, or nodes joined the VC), otherwise only the jobs that arrived since the last decision;
within one decision point a job whose request (GPU count, GPU milli, CPU, memory, allowed GPU
types, workers) equals one that already failed there is not tried again. With placers whose failure only
depends on free capacity this is the same as trying every job every time, and much cheaper. It is
the backfilling FIFO of the former timed FGD experiment, which it replaces.

With priority classes (raysim.sim.spot) the high-priority jobs are tried first, in submit order,
then the spot jobs, in submit order: a job that does not fit lets later jobs of its class and every
spot job go first (backfilling within and across classes; still no reservation). A high-priority
job that does not fit may evict spot jobs (`view.try_start`); an eviction frees capacity, so the
decision after it tries every waiting job. A spot job above the spot quota is passed over.
"""

from __future__ import annotations

import bisect

from raysim.policy.base import Policy


class FIFOBackfill(Policy):
    name = "fifo_backfill"
    ranks_classes = True

    def __init__(self, params, **constants):
        super().__init__(params, **constants)
        self.queue: list[tuple[int, int, int]] = []  # (class, submit, j), sorted (class 0 for every job without classes)
        self.fresh: list[tuple[int, int, int]] = []  # entries that arrived since the last decision
        self.freed = False  # capacity was freed since the last decision

    def on_arrival(self, view, j: int) -> None:
        jobs = view.jobs
        entry = (jobs.spot[j], jobs.submit[j], j)
        bisect.insort(self.queue, entry)
        self.fresh.append(entry)

    def on_complete(self, view, j: int) -> None:
        self.freed = True

    def on_evicted(self, view, j: int, now: int) -> None:
        self.freed = True
        self.on_requeue(view, j, now)

    def on_capacity(self, view, now: int) -> None:
        self.freed = True

    def renumber(self, new: list[int]) -> None:
        self.queue = [(c, s, new[j]) for c, s, j in self.queue]
        self.fresh = [(c, s, new[j]) for c, s, j in self.fresh]

    def schedule(self, view, now: int) -> None:
        tried = self.queue if self.freed else sorted(self.fresh)
        self.freed, self.fresh = False, []
        jobs, failed, started = view.jobs, set(), set()
        for c, _, j in tried:  # (a request of each class: only a high-priority job may evict)
            request = (c, jobs.gpu[j], jobs.gpu_milli[j], jobs.cpu_milli[j], jobs.mem_mib[j], jobs.constraint[j],
                       jobs.workers[j])
            if request in failed:
                continue
            if view.try_start(j, now):
                started.add(j)
            else:
                failed.add(request)
        if started:
            self.queue = [e for e in self.queue if e[2] not in started]
