"""The scheduler interface and the two scheduling skeletons the baselines share.

A policy decides which jobs start, stop or share; a placer finds the GPUs. A policy receives a
*view* of one VC (the VC's simulator, raysim.sim.engine.VCSimulator) and may use only what `VIEW`
lists: the queue and running jobs, read-only job attributes (`view.jobs.<column>`, see
`JOB_ATTRIBUTES`), free and total GPUs (also per GPU type), remaining work and attained service,
and the named actions (start, start on a given placement, preempt, share, set a rate factor, borrow
or lend a node). `tests/test_policy_api.py` checks every policy module against these lists.

A policy declares what it needs as class attributes (`needs_estimate`, `countdown`, `period_s`,
`preemptive`, `ranks_classes`), what it cannot run with (`refuses`, and `outside_vcs`, which the engine's extensions
name: the run refuses those in their words and compares no policy's name) and its constants (thresholds, periods,
overheads) as a typed declaration, `Settings` (raysim.settings: default, one-line doc, bounds per
field); `conf/policy/<name>.yaml` holds the same defaults for Hydra (a test keeps the two equal).
The policy receives them, checked, as keyword arguments (see raysim.policy.make_policy).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from raysim.inputs import RunInputs
from raysim.settings import NoSettings, setting

NEVER = math.inf

#: What a policy may read or call on its view (the VC simulator).
VIEW = frozenset({
    # state (read only)
    "jobs", "pending", "running", "pending_gpus", "free_gpus", "total_gpus", "free_by_type",
    "arrived_now", "params", "remaining", "attained", "demand", "borrowed_idle", "num_nodes",
    "max_node_gpus", "joinable", "gpu_quota", "name", "gpus_by_type", "nodes_down", "capacity_changes",
    "quiet_until",
    # actions
    "try_start", "start_on", "preempt", "share", "set_rate_factor", "borrow_node", "lend_node",
    "start_on_type", "end_lease", "finish", "drop", "nodes_by_type", "resize", "checkpointing",
    "over_spot_quota", "spot_quota", "spot_held_back", "evicted_wait_last",
})

#: Job attributes a policy may read (`view.jobs.<name>[j]`).
JOB_ATTRIBUTES = frozenset({
    "seq", "submit", "duration", "gpu", "util_milli", "gmem", "estimate", "workload", "share_score",
    "constraint", "speed_profile", "gpu_milli", "cpu_milli", "mem_mib", "start", "queue", "preemptions", "run_order", "shared", "rate",
    "remain", "end_due", "attained", "run_since", "spot", "workers",
})


class Policy:
    """Base class. Subclasses implement `schedule`; the hooks default to doing nothing."""

    name = "policy"
    #: What kind of policy it is: event (decides at events), round (Gavel's round mechanism),
    #: elastic (resizes jobs every round) or harvest; an experiment's `policies.<kind>` table
    #: prepares settings for every policy of a kind (raysim.run.policy_table)
    kind = "event"
    #: The policy's constants: a frozen dataclass of raysim.settings.setting fields (none by default)
    Settings: type = NoSettings
    #: The policy ranks jobs by an estimated duration (the run must supply `estimator.source`).
    needs_estimate = False
    #: Jobs count their remaining work down (needed to preempt and resume them, or to change speed).
    countdown = False
    #: Seconds between the policy's periodic decisions (None: it decides at events only).
    period_s: int | None = None
    #: The policy preempts running jobs (and defines `preempt_overhead`): a stopped job checkpoints
    #: and later continues. Under other policies a job its VC stops restarts from the beginning.
    preemptive = False
    #: The policy times its jobs itself: a started job gets no completion event; the policy ends
    #: it (`view.finish`, `view.end_lease`, `view.drop`). Round-based policies do.
    times_jobs = False
    #: The policy ranks priority classes (raysim.sim.spot): high-priority jobs before spot jobs, each
    #: class in the policy's own order, and tries a waiting high-priority job with `view.try_start`
    #: (which may evict spot jobs for it). A run with priority classes needs such a policy.
    ranks_classes = False
    #: Its queue keeps jobs in the order they entered it, so an evicted spot job may re-enter it last
    #: (`spot.requeue=back`, `view.evicted_wait_last`, `on_evicted`).
    queues_in_entry_order = False
    #: Clock ticks per second of runs under this policy: 1 (whole seconds, the trace's clock), or
    #: finer for policies whose events fall between seconds (round-based ones: micro-seconds).
    ticks_per_s = 1
    #: What the policy cannot run with -> the one line why, refused naming that setting: a setting
    #: (`key`: set to anything but its off value; `key=value`: to that value) or what the run finds in
    #: its trace: `resources` (VCs count GPU shares, CPU and memory: the line names `policy`) and
    #: `requests` (its jobs ask for them, `{asks}`). A line may name the `{policy}`. What the engine's
    #: extensions cannot run with is theirs (raysim.sim.extensions); raysim.run.config checks both.
    refuses: dict[str, str] = {}
    #: A job's trace `duration` is its work at full speed, so the summary's `ettr` (work over the
    #: GPU time held) can be computed from it; False where jobs carry placeholders (elastic and
    #: harvesting policies: their work is their own progress) and the summary leaves `ettr` out.
    duration_is_work = True

    def __init__(self, params, **constants):
        if constants:
            raise TypeError(f"policy {self.name!r} takes no constant(s) {sorted(constants)}; "
                            f"check conf/policy/{self.name}.yaml")
        self.params = params

    @classmethod
    def unread(cls, values: dict) -> dict[str, str]:
        """Settings of the policy's group that its `values` (as given, before they are checked) leave
        unread -> why, e.g. Lucid's packing switch under policy.packing=false: a single run's command
        line that sets one is refused (raysim.run.unused). The default reads every setting."""
        return {}

    @classmethod
    def prepare(cls, settings, run: RunInputs, trace, spec):
        """Run-level inputs beyond the trace (called once per run, before simulation), from the
        policy's checked `settings` (its `Settings`) and the run's other inputs (`run`): returns the
        run spec, possibly with more policy options or a profiler stage, and extra per-job input
        columns or None. The default needs nothing."""
        return spec, None

    @classmethod
    def outside_vcs(cls, values: dict) -> tuple[str, str] | None:
        """With its settings `values` (as given), the stage where the policy runs jobs outside their
        VCs on nodes it moves between VCs itself, and the setting that turns it off, e.g. ("Lucid's
        profiler", "policy.profiler.nodes=0"); None: jobs go straight to their VCs. Checkpoints,
        replayed failures, capacity events and quota lending cannot follow such a stage (they declare
        it: raysim.sim.extensions, raysim.quota.ledger). The default has none."""
        return None

    def preempt_overhead(self, gpu_num: int) -> int:
        """Seconds of work a preempted job of `gpu_num` GPUs must redo (checkpoint + cold start)."""
        raise NotImplementedError(f"policy {self.name!r} does not preempt")

    def on_arrival(self, view, j: int) -> None:
        """Job j entered the queue."""

    def on_ending(self, view, j: int, now: int) -> None:
        """Job j is about to finish at `now` and still holds its GPUs."""

    def on_complete(self, view, j: int) -> None:
        """Job j finished."""

    def on_failed(self, view, j: int, now: int) -> None:
        """Running job j failed at `now` (a run of it its trace records as failed, trace.failed=replay)
        and left its GPUs; it arrives again later (`on_requeue`). By default, as when a job completes."""
        self.on_complete(view, j)

    def on_requeue(self, view, j: int, now: int) -> None:
        """Running job j was stopped at `now` by its VC, not by this policy (a node it ran on went
        down, or back to the VC that lent it), or arrives again after a failed run (`on_failed`), and
        waits again. By default it re-enters like an arrival."""
        self.on_arrival(view, j)

    def on_evicted(self, view, j: int, now: int) -> None:
        """Spot job j was evicted at `now` by a high-priority job (raysim.sim.spot: not this policy's
        preemption), once the decision that evicted it is over, and waits again; the policy decides
        again at once. By default, as a job its VC stopped (`on_requeue`)."""
        self.on_requeue(view, j, now)

    def on_capacity(self, view, now: int) -> None:
        """The VC's nodes changed at `now`: nodes joined (borrowed, back from a loan, up again after
        going down: waiting jobs may now fit) or went down."""

    def schedule(self, view, now: int) -> None:
        """Decide at time `now`: start (and, if preemptive, preempt) jobs."""
        raise NotImplementedError

    def next_wakeup(self, view, now: int) -> float:
        """Next time > now this policy needs a decision although no job arrives or ends (inf: none).
        By default: the next multiple of `period_s` while jobs wait, if the policy has a period."""
        if self.period_s and view.pending:
            return (now // self.period_s + 1) * self.period_s
        return NEVER

    def decides_at(self, t: float) -> float:
        """The first time >= t at which `schedule` decides (a wake-up the engine asks for on the
        policy's behalf, e.g. when a spot job's guarantee ends); by default t: it decides at any time."""
        return t

    def renumber(self, new: list[int]) -> None:
        """Job j is now called new[j] (-1: finished and forgotten); the order of jobs is unchanged.
        Policies that keep job indices override this."""

    #: result columns the policy reports per job (jobs.parquet, of the numpy types `job_results` gives them)
    result_columns: tuple[str, ...] = ()

    def job_results(self, seqs) -> dict:
        """`result_columns` for jobs `seqs` (trace rows): name -> numpy array. None by default."""
        return {}


class BlockingQueuePolicy(Policy):
    """Non-preemptive, head-of-line blocking: jobs are placed in key order and the first job that
    does not fit stops the walk. Subclasses define `key(view, j)`; ties fall back to arrival order.

    With priority classes (raysim.sim.spot) each class is such a queue, high-priority jobs first: a
    high-priority job that does not fit (even by evicting spot jobs) stops its class's walk, and the
    spot jobs walk theirs behind it (as GFS's FIFO with spot jobs does); a spot job above the spot
    quota is passed over, not a stop, and waits in its place (as there too)."""

    ranks_classes = True

    def __init__(self, params, **constants):
        super().__init__(params, **constants)
        self.queue: list[tuple] = []  # (class, key..., j) kept sorted (class 0 for every job without classes)

    def key(self, view, j: int) -> tuple:
        raise NotImplementedError

    def on_arrival(self, view, j: int) -> None:
        bisect.insort(self.queue, (view.jobs.spot[j], *self.key(view, j), j))

    def renumber(self, new: list[int]) -> None:
        self.queue = [(*e[:-1], new[e[-1]]) for e in self.queue]

    def schedule(self, view, now: int) -> None:
        self._walk(view, now, 0)
        queue = self.queue
        if queue and not queue[0][0] and queue[-1][0]:  # a high-priority job waits: spot jobs walk their own queue
            self._walk(view, now, bisect.bisect_left(queue, (1,)))

    def _walk(self, view, now: int, first: int) -> None:
        """Place jobs in order from queue position `first` until one does not fit (spot jobs above
        the spot quota are passed over and stay)."""
        queue, placed, passed = self.queue, first, []
        for i in range(first, len(queue)):
            e = queue[i]
            if e[0] and view.over_spot_quota(e[-1]):  # (e[0]: a spot job)
                passed.append(e)
            elif not view.try_start(e[-1], now):
                break
            placed += 1
        if placed > first:
            queue[first:placed] = passed


@dataclass(frozen=True)
class PreemptionSettings:
    """What preempting a job costs it, for policies that preempt (QuotaWalkPolicy)."""

    overhead_s: int = setting(40, "work a preempted job redoes (checkpoint + cold start), seconds", minimum=0)
    large_overhead_s: int = setting(60, "the same for jobs of more than large_above_gpus GPUs", minimum=0)
    large_above_gpus: int = setting(8, "GPUs above which a job pays large_overhead_s", minimum=0)


class QuotaWalkPolicy(Policy):
    """Preemptive: all pending and running jobs are walked in priority order against a quota equal to
    the VC's GPUs. A job that fits the remaining quota is kept (running) or selected (pending); a
    running job that does not fit is preempted; a pending one is skipped. Selected jobs are then
    placed in order; one that fails placement (fragmentation) keeps waiting while others are tried.
    Subclasses give the order with `ordered(view, now)`.

    A preempted job redoes `overhead_s` seconds of work, `large_overhead_s` if it has more than
    `large_above_gpus` GPUs (its checkpoint and cold start). Where GPU shares are counted, a job
    takes its share of a GPU from the quota (view.gpu_quota).

    With priority classes (raysim.sim.spot) each class walks on its own, in the policy's order, the
    high-priority jobs first: they walk against the VC's GPUs (spot jobs do not count: a selected
    high-priority job that the placer cannot place evicts spot jobs through `view.try_start`), the
    spot jobs then against the GPUs the running high-priority jobs leave. The policy preempts within
    a class only: a high-priority job never preempts a spot job, it evicts it. A decision whose
    high-priority starts evicted spot jobs ends before the spot walk; the policy decides again once
    they are back (`on_evicted`). Under a spot quota the spot walk also counts the GPUs its kept and
    selected jobs hold against it: a pending spot job beyond it is passed over, a running one beyond
    it (behind a selected one in the order) is preempted."""

    countdown = True
    preemptive = True
    ranks_classes = True
    Settings = PreemptionSettings

    def __init__(self, params, *, overhead_s: int, large_overhead_s: int, large_above_gpus: int, **constants):
        super().__init__(params, **constants)
        self.overhead_s, self.large_overhead_s = int(overhead_s), int(large_overhead_s)
        self.large_above_gpus = int(large_above_gpus)

    def preempt_overhead(self, gpu_num: int) -> int:
        return self.overhead_s if gpu_num <= self.large_above_gpus else self.large_overhead_s

    def ordered(self, view, now: int) -> list[int]:
        raise NotImplementedError

    def walk(self, view, now: int) -> bool:
        """Run one quota walk (one per class); return whether anything started or was preempted."""
        if not view.pending:
            return False
        # Everything fits the quota: nobody is preempted, every pending job is tried in order.
        gpu, quota = (None, None) if view.pending_gpus <= view.free_gpus else view.gpu_quota()
        order, spot = self.ordered(view, now), view.jobs.spot
        high = [j for j in order if not spot[j]]
        if len(high) == len(order):  # (no spot job: a run without classes walks once)
            return self._walk_class(view, now, high, gpu, quota)
        running = view.running
        low = [j for j in order if spot[j]]
        held = [j for j in low if j in running]
        changed = self._walk_class(view, now, high, gpu, quota)
        if any(j not in running for j in held):
            return True  # (spot jobs were evicted: the policy decides again once they are back)
        bound = view.spot_quota()
        if gpu is None and bound is not None:  # (the spot quota may still preempt: walk it)
            gpu, quota = view.gpu_quota()
        if gpu is not None:
            quota -= sum(gpu[j] for j in running if not spot[j])
        return self._walk_class(view, now, low, gpu, quota, bound) or changed

    @staticmethod
    def _walk_class(view, now: int, order: list[int], gpu, quota, bound: int | None = None) -> bool:
        """The quota walk of the jobs `order` of one class against `quota` (gpu None: everything fits,
        every pending job is tried) and, unless None, `bound`: the most GPU milli (`jobs.gpu` x
        `jobs.gpu_milli`) the class may hold at once (the spot quota; a pending job passed over for it
        is held back, so that a rise of the quota wakes the policy)."""
        pending = view.pending
        preempt, prerun = [], []
        if gpu is None:
            prerun = [j for j in order if j in pending]
        else:
            gpus, milli = view.jobs.gpu, view.jobs.gpu_milli
            for j in order:
                g = gpu[j]
                fits = g <= quota
                if fits and (bound is None or gpus[j] * milli[j] <= bound):
                    quota -= g
                    if bound is not None:
                        bound -= gpus[j] * milli[j]
                    if j in pending:
                        prerun.append(j)
                elif j not in pending:
                    preempt.append(j)
                elif fits:
                    view.spot_held_back()
        for j in preempt:
            view.preempt(j, now)
        started = False
        for j in prerun:
            started |= view.try_start(j, now)
        return started or bool(preempt)
