"""Checkpoint-restart: what an interruption costs a job (`checkpoint.*` settings, docs/failures.md).

A job with `interval_s` set does `interval_s` of work, then writes a checkpoint for `write_s`
while holding its GPUs, and so on; no checkpoint is written after its last piece of work. When it
is stopped (a node going down or failing, a quota reclaim, its policy preempting it) it keeps the
work of its last *completed* checkpoint and loses the rest; every run after such a stop first
spends `restart_s` restoring it (a stop during a restore keeps nothing new: the restore starts over).

Every length here is in the job's own seconds, the unit of its work (`duration`: seconds on its
reference GPU type), and counts down at the job's progress rate like its work: a job running at
half speed (slow GPU type, a sharing partner, NIC contention) also writes and restores at half
speed, so a run's span stays exact whatever its rate does. A run is one placement: it starts at a
checkpoint (`kept`, a multiple of `interval_s`; 0 at first) and its timeline is the restore (after
a stop), then segments of work each followed by a write but the last.

The engine (raysim.sim.engine.VCSimulator, `checkpoint=`) keeps a job's `remain` as the rest of
its run's timeline; `stopped` books a stop, `completed` a completion. A policy that times its
jobs itself keeps their runs' timelines in its own terms (round-based policies in steps, elastic
and harvesting ones in seconds of a run) and prices a stop and a completion with the same
`Checkpointing` (`SelfTimed.stop_cost`, `finish_cost`); the engine books what it says (`charge`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Checkpointing:
    """The run's checkpoint settings: work between checkpoints, write and restore costs (job seconds)."""

    interval_s: int
    write_s: int = 0
    restart_s: int = 0

    def in_ticks(self, ticks_per_s: int) -> Checkpointing:
        """The same settings on a clock of `ticks_per_s` ticks per second (raysim.sim.params), the
        unit of the engine's job lengths under policies that count finer time."""
        if ticks_per_s == 1:
            return self
        return Checkpointing(self.interval_s * ticks_per_s, self.write_s * ticks_per_s, self.restart_s * ticks_per_s)

    def in_seconds(self, ticks_per_s: int) -> Checkpointing:
        """The settings in seconds of these, on a clock of `ticks_per_s` ticks per second (`in_ticks`)."""
        if ticks_per_s == 1:
            return self
        return Checkpointing(self.interval_s // ticks_per_s, self.write_s // ticks_per_s, self.restart_s // ticks_per_s)

    def writes(self, kept, work):
        """Checkpoints a run from work `kept` (a checkpoint) to the job's end at `work` writes: one
        at each multiple of interval_s strictly between them (work None: an end not in sight, e.g.
        an elastic job's, which ends by its training progress: unbounded)."""
        if work is None:
            return math.inf
        return max(0, math.ceil(work / self.interval_s) - 1 - int(kept // self.interval_s))

    def span(self, kept, work, restart: bool):
        """Job seconds of a run from checkpoint `kept` to the end at `work`: the restore (with
        `restart`), the work and the writes between its segments."""
        return (self.restart_s if restart else 0) + (work - kept) + self.write_s * self.writes(kept, work)

    def at(self, kept, work, restart: bool, elapsed) -> tuple:
        """Where a run from checkpoint `kept` (to the end at `work`, beginning with a restore when
        `restart`) stands when stopped after `elapsed` job seconds: (the work of its last completed
        checkpoint, work lost since then, job seconds spent restoring and writing)."""
        restore = self.restart_s if restart else 0
        if elapsed <= restore:
            return kept, 0, elapsed  # stopped while restoring: the next run restores again
        done = elapsed - restore
        tau, writes = self.interval_s, self.writes(kept, work)
        n = min(int(done // (tau + self.write_s)), writes)  # checkpoints completed in this run
        rest = done - n * (tau + self.write_s)
        if n == writes:  # in the last segment: no write follows it
            return kept + n * tau, rest, restore + n * self.write_s
        return kept + n * tau, min(rest, tau), restore + n * self.write_s + max(0, rest - tau)


def stopped(cp: Checkpointing, jobs, j: int, remain) -> None:
    """Book a stop of job j (of JobTable `jobs`) with `remain` job seconds of its run left: it keeps
    its last completed checkpoint, its lost work and overhead (x its GPUs) are added to its results,
    and its `remain` becomes the span of its next run, which begins with a restore."""
    kept, work, restart = jobs.ck_kept[j], jobs.duration[j], jobs.ck_restart[j]
    kept, lost, overhead = cp.at(kept, work, restart, cp.span(kept, work, restart) - remain)
    charge(jobs, j, lost, overhead)
    jobs.ck_kept[j], jobs.ck_restart[j] = kept, True
    jobs.remain[j] = cp.span(kept, jobs.duration[j], True)


def completed(cp: Checkpointing, jobs, j: int) -> None:
    """Book job j's completion: its last run's restore and writes are overhead (x its GPUs)."""
    kept, work = jobs.ck_kept[j], jobs.duration[j]
    charge(jobs, j, 0, cp.span(kept, work, jobs.ck_restart[j]) - (work - kept))


def charge(jobs, j: int, lost, overhead) -> None:
    """Add `lost` job seconds of lost work and `overhead` of restores and writes, x job j's GPUs, to
    its results (a policy that times its jobs prices them itself: `SelfTimed.stop_cost`)."""
    g = jobs.gpu[j]
    jobs.lost_gpu_s[j] += lost * g
    jobs.overhead_gpu_s[j] += overhead * g


def daly_time(work, cp: Checkpointing, mtbf) -> float:
    """Daly's expected time (FGCS 2006) of a job of `work` under exponential failures of mean `mtbf`,
    checkpointing as `cp` says: each segment of length L (interval_s + write_s; the last, the rest
    of the work, without a write) takes mtbf e^(R/mtbf) (e^(L/mtbf) - 1) on average, R the restore,
    failures during writes and restores included. The check of this module's model against failures."""
    if work <= 0:
        return 0.0
    writes = cp.writes(0, work)
    last = work - writes * cp.interval_s

    def segment(length):
        return mtbf * math.exp(cp.restart_s / mtbf) * math.expm1(length / mtbf)

    return writes * segment(cp.interval_s + cp.write_s) + segment(last)
