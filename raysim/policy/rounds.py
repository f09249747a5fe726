"""Round-based scheduling on the VC engine: Gavel's family of policies (OSDI'20).

Every round (``policy.round_s``, Gavel: 360 s) a policy of :mod:`raysim.rounds.policies` computes a
target allocation -- the fraction of time each job should run on each GPU type -- and Gavel's
priority and deficit mechanism (:mod:`raysim.rounds.mechanism`) turns it into the jobs that run this
round. Here that mechanism meets the kernel: jobs arrive and are recorded by the VC engine, each
chosen job is placed on GPUs of its type by the run's placer (``view.start_on_type``), a job chosen
again on the same type keeps its GPUs (Gavel's lease extension), the others give theirs back at the
round's end (``view.end_lease``), and a job ends at its micro-task's finish (``view.finish``). Each
VC runs its own rounds; with ``quota=global`` (or one VC) they are cluster-wide.

The engine's clock runs in microseconds under these policies (``ticks_per_s``): rounds end at the
latest micro-task finish, between seconds. The mechanism itself computes in seconds, exactly as
Gavel's simulator; the clock only orders events.

A job whose node goes down mid-round keeps the steps its micro-task did by then (Gavel's lease
loss: the part of a step). With checkpoint-restart (``checkpoint.*``, raysim.sim.checkpoint) its
steps are instead the timeline of its run in steps (``steps / duration`` per second of it): its work,
a checkpoint write (``write_s``) every ``interval_s`` of it and, after a stop, the restore; the
stop keeps the work of its last completed checkpoint, as under every other policy, and the next run's
span becomes the job's remaining steps at the round's end (:meth:`RoundBased.stop_cost`). A lease
that is not extended at a round's end is Gavel's micro-task ending, not a stop: it costs nothing and
the run goes on.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace

import numpy as np

from raysim.errors import UserError
from raysim.policy.base import NEVER
from raysim.policy.selftimed import Plan, SelfTimed, Share, Start
from raysim.rounds.mechanism import MicroTask, RoundState
from raysim.rounds.policies import round_policy

#: Consecutive rounds in which nothing runs, nothing is left to arrive, yet jobs wait, after which
#: the run stops: the policy gives the waiting jobs no GPU (Gavel's simulator loops forever).
IDLE_ROUNDS = 3


class NoProgress(UserError):
    """The round-based policy gives no GPU to jobs that wait while nothing runs or arrives (one line:
    the policy and its inputs, not raysim, must change)."""


class RoundBased(SelfTimed):
    """Kernel side of a round-based policy; subclasses name one of :mod:`raysim.rounds.policies`.

    Options (from the run, see :meth:`prepare`): ``inputs`` (raysim.rounds.inputs.RoundInputs),
    ``round_s``, ``reset_min_s``, ``type_order`` (GPU type names, the greedy pass's order; None:
    the types by name), ``reference_type`` and ``lp_method`` (the round mechanism's settings,
    raysim.rounds.policies.base.RoundSettings); the rest are the allocator's own constants."""

    name = "round"
    kind = "round"
    ticks_per_s = 1_000_000

    def __init__(self, params, *, inputs=None, round_s: float = 360.0, reset_min_s: float = 1920.0,
                 type_order=None, reference_type: str | None = None, lp_method: str = "ipm", **constants):
        super().__init__(params)
        if inputs is None:
            raise TypeError(f"policy {self.name!r} needs the run's round inputs (RoundBased.prepare)")
        self.allocator = round_policy(self.name, seed=params.seed, lp_method=lp_method, **constants)
        self.inputs = inputs
        types = inputs.types
        from raysim.rounds.inputs import index_of

        order = index_of(types, type_order, "policy.type_order") if type_order else list(range(len(types)))
        reference = index_of(types, [reference_type], "rounds.reference_type")[0] if reference_type else order[0]
        self.state = RoundState(self.allocator, len(types), rates=inputs.rates, steps=inputs.steps,
                                weight=inputs.weight, arrival=inputs.arrival, round_s=round_s,
                                reset_min_s=reset_min_s, order=order, reference=reference, seed=params.seed,
                                pair_rates=inputs.pair_rates if self.allocator.packing else None)
        self.waiting: deque[int] = deque()   # arrived (seq, arrival order), not yet joined the rounds
        self.tasks: list[MicroTask] = []     # the micro-tasks of the round in progress
        self.lease: dict[int, tuple] = {}    # seq -> (combo, type) of the GPUs it holds
        self.end_tick = NEVER
        self.round_start = 0.0               # when the round in progress launched its micro-tasks (s)
        self.round_end = 0.0                 # the latest finish of the round in progress (s)
        self.replan = False                  # nodes came or went while no round was in progress
        self.capacity = None                 # GPUs per type of the run's types (VC's nodes)
        self.idle = 0
        self.last_arrival = None
        self.runs: dict[int, tuple] = {}     # checkpoints: seq -> (work of its last checkpoint, restores?)
        self.rebase: dict[int, int] = {}     # checkpoints: seq -> steps of its next run, from the round's end

    @classmethod
    def prepare(cls, settings, run, trace, spec):
        """The run's round inputs and clock: each job's throughput per GPU type (from
        `cluster.throughput`), steps, weights and exact arrivals; the clock in micro-seconds."""
        from raysim.rounds.settings import round_options

        options = round_options(settings, run, trace, spec, packing=cls.allocator_class().packing)
        params = replace(spec.params, ticks_per_s=cls.ticks_per_s)
        return replace(spec, params=params, policy_options={**spec.policy_options, **options}), None

    @classmethod
    def allocator_class(cls):
        from raysim.rounds.policies import POLICIES

        return POLICIES[cls.name]

    # -- the engine's hooks ----------------------------------------------------------------
    def on_arrival(self, view, j: int) -> None:
        super().on_arrival(view, j)
        self.waiting.append(view.jobs.seq[j])

    def on_capacity(self, view, now: int) -> None:
        self.capacity = None  # nodes came or went: count the GPUs again at the next round
        self.replan = True
        self.state.need_update = True  # and recompute the allocation (when reset_min_s allows)

    def on_requeue(self, view, j: int, now: int) -> None:
        """Job j's node went down mid-round: its micro-task is cut short there (the steps done by
        then count at the round's end) and it waits for the next round."""
        seq = view.jobs.seq[j]
        self.lease.pop(seq, None)
        at = now / self.tps
        for i, task in enumerate(self.tasks):
            if seq in task.combo and task.finish > at:
                self.tasks[i] = self.state.interrupt(task, self.round_start, at)

    def stop_cost(self, view, j: int, now: int, cp) -> tuple:
        """Job j's node went down at tick `now` (checkpoint-restart): where its run stands, from its
        steps not yet done (its micro-task's whole steps by then counted); from the round's end it
        has the steps of its next run, from its last completed checkpoint. A run with nothing left
        (stopped between its last step and its round's end) had ended: its restore and writes."""
        seq, state, work = view.jobs.seq[j], self.state, view.jobs.duration[j]
        at = now / self.tps
        left = state.total[seq] - state.done[seq]
        for task in self.tasks:
            if seq in task.combo:
                done = task if task.finish <= at else state.interrupt(task, self.round_start, at)
                left -= done.steps[task.combo.index(seq)]
        kept, restart = self.runs[seq]
        span = cp.span(kept, work, restart)
        if left <= 0:  # (it finishes at the round's end, waiting)
            del self.runs[seq]
            return 0, span - (work - kept)
        kept, lost, overhead = cp.at(kept, work, restart, span - left / self._steps_per_tick(view, j))
        self.runs[seq] = (kept, True)
        self.rebase[seq] = round(cp.span(kept, work, True) * self._steps_per_tick(view, j))
        return lost, overhead

    def finish_cost(self, view, j: int, cp):
        """Job j completes: its last run's restore and writes."""
        kept, restart = self.runs.pop(view.jobs.seq[j])
        work = view.jobs.duration[j]
        return cp.span(kept, work, restart) - (work - kept)

    def _steps_per_tick(self, view, j: int) -> float:
        """Job j's steps per tick of its duration (the engine's unit of the checkpoint model's lengths)."""
        return self.state.steps[view.jobs.seq[j]] / view.jobs.duration[j]

    def schedule(self, view, t: int) -> None:
        replan, self.replan = self.replan, False
        if self.tasks:
            if t < self.end_tick:
                return  # mid-round: arrivals wait for the round's end
            now = self.round_end
            self._end_round(view, t, now)
        elif self.waiting:
            now = self.inputs.arrival[self.waiting[0]]  # nothing ran: time jumps to the next arrival
        elif replan and self.state.active:
            now = t / self.tps  # nodes came back while jobs waited for GPUs
        else:
            return
        if self.last_arrival is None:
            self.last_arrival = self.inputs.last_arrival.get(view.name, -math.inf)
        while True:
            self._round(view, t, now)
            if self.tasks or not self.state.active and not self.waiting:
                break
            if self.waiting:  # nothing launched: on to the next arrival already here
                now = self.inputs.arrival[self.waiting[0]]
                continue
            if self.last_arrival > now:
                break  # wait for the next arrival
            if view.nodes_down:
                break  # wait for nodes to come back (raysim.sim.capacity)
            # nothing runs and nothing is left to arrive: Gavel forces a recompute
            self.idle += 1
            if self.idle >= IDLE_ROUNDS:
                raise NoProgress(f"{view.name}: policy {self.name} gives no GPU to the {len(self.state.active)} "
                                 f"waiting job(s) (at {now:.0f} s); the run cannot progress")
            self.state.last_reset = 0.0
        self._repeat_rounds(view)

    # -- one round ----------------------------------------------------------------------------
    def _end_round(self, view, t: int, now: float) -> None:
        """The round in progress ends at `now` (tick `t`): its micro-tasks complete."""
        state = self.state
        if state.round_end is not None:
            state.round_start = state.round_end
        state.round_end = now
        self._complete(view, t, now)

    def _repeat_rounds(self, view) -> None:
        """Run the rounds that provably repeat the one just launched (RoundState.repeats: the same
        jobs on the same GPUs, only steps and time counters move) as long as each starts before
        anything else happens on the VC (view.quiet_until): the engine then wakes once for all of
        them rather than once a round. Each runs exactly as a round of its own would."""
        if not self.tasks or self.waiting or not self.state.fixed:
            return
        quiet = view.quiet_until()
        while self.end_tick < quiet and self.state.repeats(self.tasks, self.round_end):
            t, now = self.end_tick, self.round_end
            self._end_round(view, t, now)
            self._launch(view, t, now, self.state.repeat())

    def _complete(self, view, t: int, now: float) -> None:
        """The last round's micro-tasks complete (latest finish first)."""
        tick = self._tick
        for task in sorted(self.tasks, key=lambda task: (-task.finish, task.combo)):
            finished, dropped = self.state.complete(task)
            for seq in finished:
                self.lease.pop(seq, None)
                view.finish(self.index.pop(seq), t, tick(task.finish))
            for seq in dropped:
                self.lease.pop(seq, None)
                self.runs.pop(seq, None)
                view.drop(self.index.pop(seq), t)
        self.tasks = []
        state = self.state
        for seq, steps in self.rebase.items():  # jobs stopped this round continue from their checkpoints
            if seq in state.active:
                state.total[seq] = state.done[seq] + steps
        self.rebase.clear()

    def _round(self, view, t: int, now: float) -> None:
        """Arrivals join, the policy's allocation picks this round's jobs, they get GPUs and run."""
        state, arrival = self.state, self.inputs.arrival
        jobs = view.jobs
        while self.waiting and arrival[self.waiting[0]] <= now:
            seq = self.waiting.popleft()
            j = self.index[seq]
            state.add(seq, jobs.gpu[j])
            cp = view.checkpointing(j)
            if cp is not None:  # its run's checkpoint writes are steps too
                work = jobs.duration[j]
                self.runs[seq] = (0, False)
                state.total[seq] += round((cp.span(0, work, False) - work) * self._steps_per_tick(view, j))
        if self.capacity is None:
            gpus = view.gpus_by_type()
            self.capacity = np.array([gpus.get(name, 0) for name in self.inputs.types])
        self._launch(view, t, now, state.choose(now, self.capacity))

    def _launch(self, view, t: int, now: float, chosen: list) -> None:
        """The `chosen` (combination, type) pairs get GPUs (leases not extended end) and run."""
        state = self.state
        keep = {}
        for combo, k in chosen:
            for seq in combo:
                keep[seq] = (combo, k)
        plan = Plan()
        for seq, held in list(self.lease.items()):  # leases not extended end with the round
            if keep.get(seq) != held:
                plan.ends.append(seq)
                del self.lease[seq]
        names, lease = self.inputs.types, self.lease
        starting = [(combo, k) for combo, k in chosen if lease.get(combo[0]) != (combo, k)]  # (not extended)
        for combo, k in sorted(starting, key=lambda c: -state.scale[c[0][0]]):  # the largest jobs first (Gavel)
            plan.starts.append(Start(combo[0], names[k]))
            self.lease[combo[0]] = (combo, k)
            for seq in combo[1:]:  # a packed pair: its second job shares the first one's GPUs
                plan.starts.append(Start(seq, Share(combo[0])))
                self.lease[seq] = (combo, k)
        self.apply(view, plan, t, self._tick(now))
        self.tasks = [state.launch(combo, k, now) for combo, k in chosen]
        self.round_start = now
        state.rounds += 1
        self.wake = NEVER
        if self.tasks:
            self.idle = 0
            self.round_end = max(task.finish for task in self.tasks)
            self.end_tick = self.wake = max(self._tick(self.round_end), t + 1)


def __getattr__(attribute: str) -> type:
    """`RoundBased_<name>`: the kernel policy of round-based policy <name> (raysim.rounds.policies),
    made on first use and kept as a module attribute, so that checkpoints can pickle it."""
    from raysim.rounds.policies import POLICIES

    name = attribute.removeprefix("RoundBased_")
    if name == attribute or name not in POLICIES:
        raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
    cls = type(attribute, (RoundBased,), {"name": name, "__doc__": POLICIES.summary(name) + " (round-based).",
                                          "Settings": POLICIES[name].Settings,
                                          "__module__": __name__, "__qualname__": attribute})
    globals()[attribute] = cls
    return cls
