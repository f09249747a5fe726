"""What policies that time their jobs themselves share: round-based (Gavel's), elastic (Sia,
Pollux, Gavel's baseline) and harvesting (BFTrainer's) ones.

Such a policy keeps its own state of its jobs, named by trace row (``seq``); at each decision it
computes a :class:`Plan` (leases that end, then jobs that start: on given nodes, on a GPU type the
placer chooses from, or on a packed partner's GPUs, at a size it may change) and the engine books
it (:meth:`SelfTimed.apply`). Its jobs get no completion event: it ends them (``view.finish``,
``view.drop``), and it asks for its next decision with ``wake`` (a tick; NEVER: none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from raysim.policy.base import NEVER, Policy


class Share(NamedTuple):
    """Where a job starts: on the GPUs of running job `host` (a trace row), as its packed partner."""

    host: int


class Start(NamedTuple):
    """Job `seq` (a trace row) starts `where`: a placement ((node, GPUs) pairs), a GPU type's name
    (the run's placer chooses among that type's free GPUs) or a Share; with `gpus`, it first asks
    for that many GPUs from now on (an elastic job's new size)."""

    seq: int
    where: object
    gpus: int | None = None


@dataclass
class Plan:
    """One decision of a self-timed policy: the leases that end (trace rows, in order), then the
    jobs that start (Start, in order)."""

    ends: list[int] = field(default_factory=list)
    starts: list[Start] = field(default_factory=list)


class SelfTimed(Policy):
    """Base of policies that time their jobs (see the module docs). Subclasses call
    `super().on_arrival` to have the job indexed, set `wake`, and book their decisions with `apply`."""

    times_jobs = True
    refuses = {
        "quota=borrow": "{policy} is round-based: its rounds run per VC (quota=none) or cluster-wide (quota=global); "
                        "lending nodes between VCs' rounds is not supported",
        "estimator.source": "{policy} is round-based and reads no duration estimates",
        "sim.network": "{policy} is round-based: its jobs progress at their own rates (throughput table, scalability "
                       "curves); NIC contention is not modelled for them",
        "sim.compat": "{policy} is round-based: Lucid's compatibility switches do not apply",
        "checkpoint.apps": "{policy} times its jobs itself: per-application checkpoints apply under event-driven "
                           "policies (set checkpoint.interval_s)",
        "trace.failed": "{policy} times its jobs itself (rounds, elastic, harvesting): failed runs are replayed under "
                        "event-driven policies",
        "failures.clock=busy": "{policy} times its jobs itself (rounds, elastic, harvesting): busy failure clocks "
                               "follow the runs of event-driven policies (use failures.clock=up)",
        "spares.nodes": "{policy} times its jobs itself (rounds, elastic, harvesting): spare pools are pulled for "
                        "the waiting jobs of event-driven policies",
        "requests": "{policy} is round-based: its rounds allocate whole GPUs by type, and this trace's jobs ask for "
                    "{asks}",
    }

    def __init__(self, params, **constants):
        super().__init__(params, **constants)
        self.tps = params.ticks_per_s
        self.index: dict[int, int] = {}  # seq -> the VC's job index
        self.wake = NEVER                # tick of the next decision this policy needs

    def on_arrival(self, view, j: int) -> None:
        self.index[view.jobs.seq[j]] = j

    def renumber(self, new: list[int]) -> None:
        self.index = {s: new[j] for s, j in self.index.items() if new[j] >= 0}

    def next_wakeup(self, view, now: int) -> float:
        return self.wake

    def apply(self, view, plan: Plan, end_at: int, start_at: int) -> None:
        """Book `plan`: its leases end at tick `end_at`, then its jobs start at tick `start_at`."""
        index = self.index
        for seq in plan.ends:
            view.end_lease(index[seq], end_at)
        for seq, where, gpus in plan.starts:
            j = index[seq]
            if gpus is not None:
                view.resize(j, gpus)
            if isinstance(where, str):
                view.start_on_type(j, where, start_at)
            elif isinstance(where, Share):
                view.share(j, index[where.host], start_at, 1.0, 1.0, 0.0, 0.0)
            else:
                view.start_on(j, where, start_at)

    def stop_cost(self, view, j: int, now: int, cp) -> tuple:
        """Running job j, checkpointing as `cp` says (raysim.sim.checkpoint.Checkpointing, in ticks),
        is stopped by its VC at tick `now`: (work lost since its last completed checkpoint, restore
        and writes of the run so far), in ticks of its own; its next run begins with a restore.
        Each family defines it and `finish_cost` with the same Checkpointing arithmetic."""
        raise NotImplementedError(f"policy {self.name} does not price stops with the checkpoint model")

    def finish_cost(self, view, j: int, cp):
        """Job j, checkpointing as `cp` says, completes: the restores and writes not yet priced."""
        raise NotImplementedError(f"policy {self.name} does not price stops with the checkpoint model")

    def _tick(self, seconds: float) -> int:
        """Tick of time `seconds` on the engine's clock."""
        return int(round(seconds * self.tps))
