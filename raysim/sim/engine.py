"""Event-driven simulator of one virtual cluster.

Time is integer seconds on the trace clock. At each event time, in order: (1) jobs whose end is
due complete and free their GPUs, (2) jobs submitted at that second arrive in trace order, (3) the
policy orders, selects, preempts and places, (4) the state is snapshotted for the time series.
Nothing changes between event times, so deciding only then equals deciding every second; a policy
that needs a decision without an arrival or completion (periodic rescheduling, a change in its
ordering) asks for it through ``next_wakeup``. Cost grows with events, not simulated seconds.

Capacity events (raysim.sim.capacity: nodes that go down, come back, join or leave) apply at
their time after that second's completions and before its arrivals; a node going down stops the
jobs on it through the one path of jobs their VC stops (`stop_jobs`, also quota reclaims). Each
node follows one stream of events (`follow`), merged in a heap; a node on loan follows its
lender's node's stream.

Time counts clock ticks: seconds, or finer ticks where the policy needs them (``SimParams.ticks_per_s``,
round-based policies). What policies see and may do is the mixin raysim.sim.view.PolicyView (the
policy-facing half of this class); node loans between VCs are a component, `loans`
(raysim.quota.ledger.QuotaLoans: its ledger and operations, which act on this simulator's nodes).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from raysim.cluster.catalog import TypeCatalog
from raysim.sim.busy import JobClocks
from raysim.sim.capacity import BLAME, DOWN, UP
from raysim.sim.checkpoint import Checkpointing, charge, completed
from raysim.sim.jobs import CAPACITY, RETRY, UNSET, JobTable
from raysim.sim.params import SimParams
from raysim.sim.recorder import Recorder, per_type_columns
from raysim.sim.demand import Demand
from raysim.sim.lifecycle import ABSENT
from raysim.sim.vc import VCState
from raysim.sim.view import PolicyView

NEVER = math.inf
#: forget_if_worth: the fewest finished jobs worth a pass over a job table
FORGET_AT = 4096


class VCSimulator(PolicyView):
    """Simulates one VC under one policy and placer. Feed jobs with `add_jobs`, advance with `run`.
    Its features beyond the plain replay are `extensions` (raysim.sim.extensions: NIC contention,
    GPU shares and CPU/memory, quota lending, one cluster-wide queue, capacity events, checkpoint-
    restart, replayed failed runs, priority classes), each attached once here; without one, its attributes below keep
    their defaults and the event loop skips it."""

    #: the end of the stretch `run` simulates now (a class default: simulators pickled before it existed)
    _until = NEVER
    #: what the extensions set (raysim.sim.extensions), and their values without them:
    #: NIC contention (raysim.sim.network.NetworkModel)
    network = None
    #: the run's capacity plan (raysim.sim.capacity.CapacityPlan): nodes never change without one
    capacity_plan = None
    #: failures.clock=busy: the nodes' streams hear of the work on them (raysim.sim.busy)
    busy_clock = False
    #: checkpoint-restart: the run's settings (raysim.sim.checkpoint.Checkpointing), the per-
    #: application ones jobs name by `checkpoint_kind`, and whether some jobs checkpoint (results
    #: count lost work and overhead); without them a stopped job keeps its work, or starts over
    checkpoint = None
    checkpoint_kinds: tuple = ()
    checkpoints = False
    #: the trace's jobs that ran several times, replayed (raysim.sim.attempts.Attempts)
    attempts = None
    #: quota lending (raysim.quota.ledger.QuotaLoans: the ledger and the loan operations)
    loans = None
    #: with GPU shares: FGD's fragment amount of the VC's resources (raysim.placement.frag.FragTracker),
    #: and with quota lending the run's layout (VC -> pools), where a held node's CPU and memory come from
    fragmentation = None
    layout = None
    #: priority classes (raysim.sim.spot.Spot): high-priority jobs evict spot jobs
    spot = None
    #: the VC's spare pool (raysim.sim.spares.Spares), pulled while waiting jobs do not fit
    spares = None
    #: warm standbys per multi-node job (raysim.sim.standbys.Standbys), swapped in for failed nodes
    standbys = None

    def __init__(self, name: str, pools, policy, placer, params: SimParams,
                 *, t0: int = 0, catalog: TypeCatalog | None = None, extensions=()):
        self.name = name
        self.params = params
        self.policy = policy
        self.placer = placer
        self.extensions = tuple(extensions)
        #: with an extension that counts resources (or pools that limit CPU and memory) jobs may ask
        #: for GPU shares, CPU and memory
        self.vc = VCState(pools, any(ext.resources for ext in self.extensions))
        self.jobs = JobTable()
        self._catalog = catalog or TypeCatalog()
        #: the run has several GPU types: results say on which type each job ran, and for how long
        self.type_time = len(self._catalog.gpu_types) > 1
        self.reindex_types()
        self._plain_demand: dict[int, Demand] = {}  # GPU count -> Demand of a job without type inputs
        self.t0 = t0
        self.now = t0 - 1  # last time fully processed
        self.pending: dict[int, None] = {}  # insertion order = queue order of (re)entry
        self.running: dict[int, None] = {}  # insertion order = order of (re)start
        self.arrived_now = 0  # jobs that arrived at the time being processed
        self.pending_gpus = 0
        #: pending jobs asking for fewer GPUs than the VC's largest node has ("small" jobs)
        self.pending_small = 0
        self.small_below = self.vc.max_node_gpus
        self.finished = 0
        self.forgotten = 0  # finished jobs dropped from the job table (forget_finished)
        #: the latest time the VC's jobs progressed: one finished (or was dropped, or its trace's run
        #: failed on schedule), a stop left one less work than ever before (`least_remain`: a run
        #: stopped before it gained anything is not progress), a self-timed policy's lease ended, or
        #: a job arrived with none waiting or running; the coordinator's stall guard reads it
        self.progress_at = t0
        self.events = 0
        self.last_event = t0  # time of the last processed event
        self.finished_log: list[int] = []  # jobs finished since the caller last drained it
        self._completions: list[tuple[int, int, int]] = []  # (time, version, job)
        self._returns: list[tuple[int, int, int]] = []  # jobs between runs (attempts): (time, seq, job)
        self._node_events: list[tuple[int, int, int]] = []  # (time, order, +1 gain / -1 lend)
        self._node_debt = 0  # nodes owed to a lender but not yet idle (clean semantics)
        self._next_arrival = 0
        self._starts = 0  # counts starts: run_order of the next one
        self._wakeup = NEVER
        #: the VC's trace jobs: its capacity events apply while some of them are unfinished
        self._cap_jobs = 0
        #: one pending event per node that has a stream: (tick, rank, node, serial, kind, cause, stream)
        self._cap_heap: list[tuple] = []
        self._streams: dict[int, object] = {}  # node -> the stream it follows
        self._serial = 0  # tells a stale heap entry (its node stopped following that stream) from a live one
        #: node -> the last serial of its entries that are stale (busy clocks drop a pending failure)
        self._dropped: dict[int, int] = {}
        #: failures.clock=busy: the clocks of jobs that hold whole nodes (raysim.sim.busy.JobClocks)
        self._job_clocks = None
        #: the nodes whose capacity streams moved on since the time series' last row, as (node, stream),
        #: where a plan counts what its streams do (raysim.sim.extensions.Capacity; else None)
        self.advanced = None
        #: (node, up?) of the capacity events applied at the latest capacity tick, in apply order
        self.capacity_changes: list[tuple[int, bool]] = []
        #: own nodes that have not joined yet (absent until their node log's join)
        self.joining = 0
        for ext in self.extensions:
            ext.attach(self)
        #: the extensions that add time-series columns
        self._sampled = tuple(ext for ext in self.extensions if ext.series_columns)
        self.recorder = Recorder(params.sample_interval * params.ticks_per_s, t0, per_type_columns(self._catalog.gpu_types)
                                 + tuple(c for ext in self._sampled for c in ext.series_columns))
        # with quota lending a job may also run on the GPU types of other VCs
        types = list(dict.fromkeys(self.vc.types + list(self._catalog.gpu_types))) if self.loans else self.vc.types
        #: remaining work counts down at a rate (needed for preemption, network slowdowns, checkpoints,
        #: runs that fail, speeds per GPU type)
        self.countdown = policy.countdown or any(ext.countdown for ext in self.extensions) or any(
            s != 1.0 for row in self._catalog.speed_rows(types) for s in row)
        self._snapshot(t0)

    def follow_plan(self, plan) -> tuple:
        """Capacity events (raysim.sim.extensions.Capacity): each of this VC's nodes follows its
        stream of `plan`, and nodes that join later start absent. Returns the streams they follow."""
        own = plan.of(self.name)
        if own is None:
            return ()
        self._cap_jobs = own.jobs
        self.busy_clock = plan.busy
        streams = tuple(own.stream(node) for node in range(self.vc.num_nodes))
        for node, stream in enumerate(streams):
            self.follow(node, stream, self.t0)
        if plan.busy:
            self._job_clocks = JobClocks(streams, own.seed)
        for node in own.absent:
            self.vc.change(node, "leave", "not_joined")
            self.joining += 1
        return streams

    def reindex_types(self) -> None:
        """Lookups over the VC's GPU types (again when a borrowed node brings a new type)."""
        catalog, types = self._catalog, self.vc.types
        #: per constraint id: the indices of this VC's GPU types the constraint allows
        self._allowed = catalog.allowed(types)
        #: per speed-profile id: the job's speed on each of this VC's GPU types
        self._speeds = catalog.speed_rows(types)
        #: the run's GPU types (time-series columns per type when there are several)
        self._series_types = [types.index(t) if t in types else -1
                              for t in catalog.gpu_types] if len(catalog.gpu_types) > 1 else []
        #: per VC type index: its index among the run's GPU types
        self._run_type = [catalog.gpu_types.index(t) if t in catalog.gpu_types else -1 for t in types]

    def own_pool_nodes(self) -> list[range]:
        """Per own pool, the indices of its nodes (VCState creates them pool by pool)."""
        out, start = [], 0
        for pool in self.vc.pools:
            out.append(range(start, start + pool.nodes))
            start += pool.nodes
        return out

    # ------------------------------------------------------------------ feeding and running
    def add_jobs(self, cols) -> None:
        """Append jobs (numpy columns, see jobs.INPUT_COLUMNS) submitted after `now`, in submit order."""
        if len(cols["seq"]) and int(cols["submit_time"][0]) <= self.now:
            raise ValueError(f"{self.name}: job submitted at {int(cols['submit_time'][0])} arrives "
                             f"after the simulation already reached {self.now}")
        jobs, first = self.jobs, self.jobs.n
        jobs.extend(cols)
        if self.attempts is not None:
            for j in range(first, jobs.n):
                plan = self.attempts.plan(jobs.seq[j])
                if plan is not None:
                    jobs.set_attempts(j, plan)
        if self.checkpoints:  # a run's span includes its checkpoint writes
            for j in range(first, jobs.n):
                cp = self.checkpointing(j)
                if cp is not None:
                    jobs.remain[j] = jobs.least_remain[j] = cp.span(0, jobs.duration[j], False)

    def next_event_time(self) -> float:
        """Time of the next event this VC knows of (inf when idle and no job is waiting to arrive)."""
        t, jobs = self._wakeup, self.jobs
        if self._next_arrival < jobs.n:
            submit = jobs.submit[self._next_arrival]
            if submit < t:
                t = submit
        heap, version = self._completions, jobs.version
        while heap and heap[0][1] != version[heap[0][2]]:
            heapq.heappop(heap)
        if heap and heap[0][0] < t:
            t = heap[0][0]
        if self._node_events and self._node_events[0][0] < t:
            t = self._node_events[0][0]
        if self._returns and self._returns[0][0] < t:
            t = self._returns[0][0]
        cap = self._cap_heap
        if cap and cap[0][0] < t and self.finished < self._cap_jobs:
            while cap and not self._live(cap[0]):
                heapq.heappop(cap)  # (its node was given back or lent on, or its failure dropped)
            if cap and cap[0][0] < t:
                t = cap[0][0]  # (the VC's nodes matter while some of its jobs have not finished)
        return t

    def follow(self, node: int, stream, since: int) -> None:
        """Node `node` follows capacity `stream` (None: none) from time `since` on (seconds; its
        earlier events are skipped), replacing any stream it followed."""
        if stream is None:
            self._streams.pop(node, None)
            return
        self._streams[node] = stream
        ticks, since = self.params.ticks_per_s, since * self.params.ticks_per_s
        event = stream.next()
        while event is not None and event[0] * ticks < since:
            event = stream.next()
        self._push(node, stream, event)

    def _live(self, entry: tuple) -> bool:
        """Whether capacity heap `entry` still stands: its node follows its stream, and (busy clocks)
        did not drop it since."""
        node = entry[2]
        return self._streams.get(node) is entry[6] and entry[3] > self._dropped.get(node, 0)

    def unfollow(self, node: int) -> None:
        """Node `node` leaves this VC's capacity events (it went back to its lender)."""
        self._streams.pop(node, None)

    def _push(self, node: int, stream, event) -> None:
        if event is not None:
            t, rank, kind, cause = event
            self._serial += 1
            heapq.heappush(self._cap_heap, (t * self.params.ticks_per_s, rank, node, self._serial, kind, cause, stream))

    def add_node_events(self, events) -> None:
        """Timed node loans: (time, +1) the VC gains a node, (time, -1) it lends an idle one."""
        if self.loans is not None:
            raise ValueError(f"{self.name}: the profiler's node loans and quota lending do not mix")
        for t, delta in events:
            if t <= self.now:
                raise ValueError(f"{self.name}: node event at {t} arrives after t={self.now}")
            heapq.heappush(self._node_events, (int(t), len(self._node_events), int(delta)))

    def run(self, until: float = NEVER) -> float:
        """Process every event at a time < `until` (all of them by default); returns the time of
        the next event (next_event_time())."""
        self._until = until
        jobs, policy = self.jobs, self.policy
        heap = self._completions
        while True:
            t = self.next_event_time()
            if t >= until:
                break
            self.events += 1
            ending = []
            while heap and heap[0][0] == t:
                _, version, j = heapq.heappop(heap)
                if version == jobs.version[j]:
                    ending.append(j)
            if len(ending) > 1:
                ending.sort(key=jobs.run_order.__getitem__)  # the reference's run-list order
            fail_at = jobs.fail_at
            for j in ending:
                if fail_at[j]:
                    self._fail_run(j, t)
                else:
                    self._complete(j, t)
            if self._cap_heap and self._cap_heap[0][0] == t:
                self._apply_capacity(t)
            if self.spares is not None and self.spares.due == t:
                self.spares.arrive(self, t)
            while self._returns and self._returns[0][0] == t:
                j = heapq.heappop(self._returns)[2]
                self._enqueue(j)
                policy.on_requeue(self, j, t)
            arrived = 0
            submit, n = jobs.submit, jobs.n
            if self._next_arrival < n and submit[self._next_arrival] == t and not self.unfinished:
                self.progress_at = t  # (the VC was empty: nothing could progress before)
            while self._next_arrival < n and submit[self._next_arrival] == t:
                j = self._next_arrival
                self._next_arrival += 1
                self._enqueue(j)
                policy.on_arrival(self, j)
                arrived += 1
            self.arrived_now = arrived
            self.now = t
            policy.schedule(self, t)
            if self.spot is not None:  # (jobs evicted during the decision return to the policy)
                self.spot.after_schedule(self, t)
            if self.spares is not None:  # (a spare is pulled while waiting jobs do not fit)
                self.spares.after_schedule(self, t)
            if self.standbys is not None:  # (nodes back in service refill standbys; stalls are counted)
                self.standbys.after_schedule(self, t)
            self._wakeup = policy.next_wakeup(self, t)
            if self.spot is not None:  # (an HP job waits for a spot job's guarantee to end)
                self._wakeup = min(self._wakeup, policy.decides_at(self.spot.next_wake(t)))
            if self.spares is not None:
                self._wakeup = min(self._wakeup, self.spares.next_wake())
            if self._node_events and self._node_events[0][0] == t or self._node_debt:
                self._apply_node_events(t)
            self._snapshot(t)
            self.last_event = t
        if until is not NEVER and until - 1 > self.now:
            self.now = int(until) - 1
        return t

    def results(self, rows=None) -> dict[str, np.ndarray]:
        """Result columns of the given jobs (all by default), see JobTable.results; then, where the run
        has several GPU types, the type each ran on and for how long; then each extension's
        (raysim.sim.extensions), in their order; then the policy's own."""
        out = self.jobs.results(rows)
        if rows is None:
            rows = range(self.jobs.n)
        if self.type_time:
            out.update(self.jobs.type_results(rows, len(self._catalog.gpu_types)))
        for ext in self.extensions:
            out.update(ext.results(self, rows))
        if self.policy.result_columns:
            out.update(self.policy.job_results(out["seq"].tolist()))
        return out

    @property
    def done(self) -> bool:
        """True when every job added so far has finished."""
        return self.finished == self.jobs_added

    @property
    def unfinished(self) -> int:
        """Jobs that have arrived and not finished (waiting, running, or between runs)."""
        return self._next_arrival + self.forgotten - self.finished

    @property
    def jobs_added(self) -> int:
        """Jobs added so far, including those forgotten since they finished."""
        return self.jobs.n + self.forgotten

    def forget_if_worth(self) -> int:
        """`forget_finished` once the job table holds at least FORGET_AT finished jobs and at least
        as many as live ones, so its cost stays O(1) per job. Returns the number dropped."""
        in_table = self.finished - self.forgotten
        if in_table >= max(FORGET_AT, self.jobs.n - in_table):
            return self.forget_finished()
        return 0

    def forget_finished(self) -> int:
        """Drop the finished jobs from the job table (their results must have been taken from
        `finished_log` already) and renumber the others in the same order, so that memory follows
        the live jobs rather than the trace. Every order among jobs, and so every decision, is
        unchanged. Returns the number of jobs dropped."""
        if self.finished_log:
            raise RuntimeError(f"{self.name}: take the finished jobs' results before forgetting them")
        jobs = self.jobs
        end = jobs.end
        keep = [j for j in range(jobs.n) if end[j] == UNSET]
        dropped = jobs.n - len(keep)
        if not dropped:
            return 0
        new = [-1] * jobs.n
        for i, j in enumerate(keep):
            new[j] = i
        jobs.retain(keep)
        self.pending = {new[j]: None for j in self.pending}
        self.running = {new[j]: None for j in self.running}
        version = jobs.version
        live = [(t, v, new[j]) for t, v, j in self._completions if new[j] >= 0 and v == version[new[j]]]
        heapq.heapify(live)
        self._completions = live
        self._returns = [(t, seq, new[j]) for t, seq, j in self._returns]  # (renumbering keeps the heap order)
        self._next_arrival -= dropped  # finished jobs have all arrived
        self.vc.renumber(new)
        self.policy.renumber(new)
        if self.network is not None:
            self.network.renumber(new)
        if self.spot is not None:
            self.spot.renumber(new)
        if self.standbys is not None:
            self.standbys.renumber(new)
        self.forgotten += dropped
        return dropped

    # ------------------------------------------------------------------ internals
    def _enqueue(self, j: int) -> None:
        g = self.jobs.gpu[j]
        self.pending[j] = None
        self.pending_gpus += g
        self.pending_small += g < self.small_below

    def _complete(self, j: int, t: int, ran_until: int | None = None) -> None:
        jobs = self.jobs
        cp = self.checkpointing(j) if self.checkpoints else None
        if cp is not None and self.policy.times_jobs:  # (it keeps its jobs' runs: it prices the last one)
            charge(jobs, j, 0, self.policy.finish_cost(self, j, cp))
        elif cp is not None:
            completed(cp, jobs, j)
        jobs.end[j] = t
        jobs.end_due[j] = -1
        jobs.remain[j] = 0
        self.policy.on_ending(self, j, t)
        self._release(j, t if ran_until is None else ran_until)
        del self.running[j]
        if self._job_clocks is not None:
            self._job_clocks.finished(jobs.seq[j])
        self.finished += 1
        self.progress_at = t
        self.finished_log.append(j)
        self.policy.on_complete(self, j)
        if self.network is not None:
            self._reprice(self.network.remove(j), t)
        if self.vc.draining:
            self.loans.return_drained(t)

    def checkpointing(self, j: int) -> Checkpointing | None:
        """Job j's checkpoint settings: its application's (`checkpoint_kinds`) or the run's."""
        kind = self.jobs.checkpoint_kind[j]
        return self.checkpoint if kind < 0 else self.checkpoint_kinds[kind]

    def _fail_run(self, j: int, t: int) -> None:
        """Running job j's run failed at t, as its trace recorded (raysim.sim.attempts): it leaves its
        GPUs (its policy hears of it as of an ending: `on_ending`, `on_failed`), loses that run's
        work and arrives again after the trace's gap (`on_requeue`); the gap is not queueing."""
        jobs = self.jobs
        retry = jobs.retry[j]
        remain, gap = retry[1].pop(0)
        retry[0] = remain
        jobs.count_stop(j, RETRY)
        jobs.fail_at[j] = retry[1][0][0] if retry[1] else 0
        self.policy.on_ending(self, j, t)
        jobs.attained[j] = self.attained(j, t)
        jobs.remain[j] = jobs.least_remain[j] = remain
        self.progress_at = t  # (its next run: the trace's runs are finitely many)
        back = t + gap * self.params.ticks_per_s
        jobs.ckpt_time[j] = back
        self._leave(j, t)
        heapq.heappush(self._returns, (back, jobs.seq[j], j))
        self.policy.on_failed(self, j, t)

    def _release(self, j: int, until: int) -> None:
        """Running job j gives back its GPUs; where the run has several GPU types, the time it ran on
        them (until `until`: now, or a round-based job's end mid-round) is booked to its type
        (jobs.parquet's `run_s_<type>`); with priority classes, a spot job's run counts its guarantee
        hours (raysim.sim.spot.Spot.released)."""
        if self.type_time:
            jobs = self.jobs
            held = jobs.type_held[j]
            if held is None:
                held = jobs.type_held[j] = {}
            t = jobs.gpu_type[j]
            held[t] = held.get(t, 0) + until - jobs.placed_at[j]
        if self.spot is not None:
            self.spot.released(self, j, until)
        if self.busy_clock:
            self._busy_nodes(j, until, None)
        if self.standbys is not None and self.standbys.released(self, j):
            return  # (a standby swap: the job keeps its GPUs, and one node of them moves)
        if self._job_clocks is not None:
            self._job_clocks.release(self.jobs.seq[j])
        self.vc.release(j)

    def move(self, j: int, node: int, to: int) -> None:
        """Running job j's GPUs of node `node` move to idle node `to`, the rest of its placement
        untouched (a warm standby swapped in: raysim.sim.standbys)."""
        self.vc.move(j, node, to)
        if self._job_clocks is not None:
            self._job_clocks.move(self.jobs.seq[j], node, to)

    def resume(self, j: int, now: int) -> None:
        """Waiting job j, stopped at `now` but holding its GPUs still (a standby swap: raysim.sim.standbys),
        runs again on them, as `start_on` starts a job on a new placement."""
        jobs, placed = self.jobs, self.vc.placement[j]
        self._dequeue(j)
        self.running[j] = None
        p = jobs.speed_profile[j]
        if p >= 0:
            jobs.type_speed[j] = self._speeds[p][self.vc.type_of[placed[0][0]]]
            jobs.rate[j] = jobs.type_speed[j] * jobs.share_speed[j] * jobs.net_speed[j]
        self._started(j, now, placed[0][0], len(placed))
        if self.network is not None:
            self._reprice(self.network.add(j, placed), now)

    def hold_back(self, j: int, until: int) -> None:
        """Waiting job j leaves the queue until `until`, then waits again and its policy hears of it
        (`on_requeue`), as a failed run's job after its gap: the time away is not queueing (a host
        selection: raysim.sim.standbys)."""
        self._dequeue(j)
        self.jobs.ckpt_time[j] = until
        heapq.heappush(self._returns, (until, self.jobs.seq[j], j))

    def _busy_nodes(self, j: int, now: int, begins: int | None) -> None:
        """Failures.clock=busy: job j's nodes hear that it began a run at `now` that progresses from
        `begins` on (None: it leaves them now); a node whose pending failure changed has its capacity
        event replaced (a job on whole nodes: the one node its own clock armed). The heap keeps to its
        live entries (at most one per node, and as many again of dropped ones: compacting in place
        costs O(1) per drop, amortized)."""
        seq, heap, clocks = self.jobs.seq[j], self._cap_heap, self._job_clocks
        if clocks is not None and clocks.covers(seq, self.vc, self.vc.placement[j]):
            node = clocks.rest(seq) if begins is None else clocks.carry(seq, begins, now)
            if node is not None:
                self._dropped[node] = self._serial
                if begins is not None:
                    self._push(node, self._streams[node], self._streams[node].armed)
            return
        for node in dict.fromkeys(node for node, _ in self.vc.placement[j]):
            stream = self._streams.get(node)
            if stream is None or not (stream.rest(seq, now) if begins is None else stream.carry(seq, begins, now)):
                continue
            self._dropped[node] = self._serial
            self._push(node, stream, stream.armed)
        if len(heap) > 2 * len(self._streams) + 64:
            heap[:] = [entry for entry in heap if self._live(entry)]
            heapq.heapify(heap)

    def _progress_from(self, j: int, now: int) -> int:
        """When running job j, started now, begins to progress: after its restore, at its rate now
        (a stop before then restores again: raysim.sim.checkpoint)."""
        cp = self.checkpointing(j) if self.checkpoints and self.jobs.ck_restart[j] else None
        if cp is None or not cp.restart_s:
            return now
        return self._due(cp.restart_s, self.jobs.rate[j], now)

    def wake_at(self, t: int) -> None:
        """Make t an event of this VC: its policy decides, and its state is sampled, at t."""
        self._wakeup = min(self._wakeup, t)

    def finish_due(self, j: int, t: int) -> None:
        """Running job j, due at t, completes now (before the events of t are processed)."""
        self.jobs.version[j] += 1  # its completion event is spent
        self._complete(j, t)

    def _apply_capacity(self, t: int) -> None:
        """The capacity events due at t: a node going down stops its jobs (each counted for the
        event's cause) and leaves the scan order; a node coming up returns to its place; a restart
        stops its jobs and leaves the node up; a failure that blames another node of its jobs sends
        that one to repair in its place (`_blame`). A node away (lent to another VC) changes state only:
        its jobs are the borrower's, who follows the same events. The policy hears of the change once
        (`Policy.on_capacity`), and may read what changed (`capacity_changes`)."""
        heap, streams, vc = self._cap_heap, self._streams, self.vc
        changes = self.capacity_changes = []
        ticks, names = self.params.ticks_per_s, self.capacity_plan.causes
        while heap and heap[0][0] == t:
            _, _, node, _, kind, cause, stream = heap[0]
            if not self._live(heap[0]):
                heapq.heappop(heap)
                continue  # stale: the node left this VC, or its failure was dropped
            blamed = None
            if kind == BLAME:
                blamed = self._blamed_node(node, stream)
                if blamed is None:  # (its jobs run on no other node: the failure is its own)
                    stream.blame_own()
                    kind = DOWN
            after = stream.next()
            if self.advanced is not None:
                self.advanced.append((node, stream))
            if after is None:
                heapq.heappop(heap)
            else:  # (the node's next event takes this one's place)
                self._serial += 1
                heapq.heapreplace(heap, (after[0] * ticks, after[1], node, self._serial, after[2], after[3], stream))
            if self._job_clocks is not None:
                self._job_clocks.rescale(node)
            if blamed is not None:
                self._blame(node, blamed, stream.failures.blame, t, cause, changes)
                continue
            if kind == UP:
                changes.append((node, True))
                if vc.state[node] == ABSENT:
                    self.joining -= 1
                vc.change(node, "up", names[cause])
                continue
            on = self.jobs_on([node])
            vc.failed(node)  # (a host order may count it: raysim.sim.host_selection)
            if self.standbys is not None and on:  # (jobs holding standbys restart themselves)
                on = self.standbys.fail(self, node, kind == DOWN, on, t, CAPACITY + cause)
            self.stop_jobs(on, t, CAPACITY + cause)
            if kind == DOWN and node in streams:  # (a drained held node whose jobs stopped went back)
                changes.append((node, False))
                vc.change(node, "down", names[cause])
        if self.standbys is not None:
            self.standbys.came_up(changes)
        self.policy.on_capacity(self, t)

    def _blamed_node(self, node: int, stream) -> int | None:
        """The node a failure of `node` (following busy `stream`) is blamed on: one of the other nodes
        of the jobs on it, drawn by the node's own diagnosis generator; None when they have none."""
        others = list(dict.fromkeys(n for j in self.jobs_on([node]) for n, _ in self.vc.placement[j]
                                    if n != node and n in self._streams))
        return others[stream.failures.pick(len(others))] if others else None

    def _blame(self, node: int, other: int, blame: tuple, t: int, cause: int, changes: list) -> None:
        """Node `node` failed at `t`, but its diagnosis blamed node `other` (of the same jobs) for it
        (`blame`: the failure's category and cause): `other` goes to repair in its place (its own
        stream draws the repair; its pending failure is dropped) and `node` stays up. The jobs on
        `other` stop for the failure's cause (a warm standby swapped in for `other`), and so do the
        jobs on `node` alone (they restart on their own nodes)."""
        vc, stream = self.vc, self._streams[other]
        self._dropped[other] = self._serial
        stream.blamed(t, *blame)
        self._push(other, stream, stream.next())  # (the repair's end)
        if self.advanced is not None:
            self.advanced.append((other, stream))
        if self._job_clocks is not None:
            self._job_clocks.rescale(other)
        on_other = self.jobs_on([other])
        on_node = [j for j in self.jobs_on([node]) if j not in on_other]
        vc.failed(node)  # (a host order counts the failure where it happened, as AIReSim does)
        if self.standbys is not None:
            on_other = self.standbys.fail(self, other, True, on_other, t, CAPACITY + cause) if on_other else []
            on_node = self.standbys.fail(self, node, False, on_node, t, CAPACITY + cause) if on_node else []
        self.stop_jobs(sorted(on_other + on_node, key=self.jobs.run_order.__getitem__), t, CAPACITY + cause)
        changes.append((other, False))
        vc.change(other, "down", self.capacity_plan.causes[cause])

    def stop_jobs(self, on: list[int], t: int, cause: int) -> None:
        """Stop running jobs `on` (in this order) for `cause` (raysim.sim.jobs: RECLAIM, CAPACITY + k,
        or a producer's own), because their VC took nodes from under them, not their policy. Each
        stops through the one path of stops (`_stop_for`: counted in its ledger with the work the
        stop cost it), frees its GPUs and waits again: under a policy that preempts it continues its
        remaining work plus the policy's preemption overhead, under any other it restarts from the
        beginning (`_restart_cost`); with checkpoints it keeps its last checkpoint and restores from
        it (`_stop`). Then each returns to its policy (`Policy.on_requeue`)."""
        for j in on:
            self._stop_for(j, t, cause, self._restart_cost(j))
        for j in on:
            self.policy.on_requeue(self, j, t)

    def jobs_on(self, nodes) -> list[int]:
        """Jobs holding GPUs (with `res`: any resource) on `nodes`, in the order they (re)started."""
        vc, on = self.vc, set()
        if vc.res is not None:  # shares and CPU-only jobs own no GPU: ask the placements
            nodes = set(nodes)
            on.update(j for j, placed in vc.placement.items() if any(node in nodes for node, _ in placed))
        for node in nodes:
            on.update(j for j in vc.owner[node] if j >= 0)
            on.update(j for j in vc.second[node] if j >= 0)
        return sorted(on, key=self.jobs.run_order.__getitem__)

    def _restart_cost(self, j: int) -> int | None:
        """Work job j redoes after its VC stops it: the policy's preemption overhead, or None (it
        restarts from the beginning) under a policy that does not preempt (with checkpoints `_stop`
        charges the checkpoint model instead)."""
        return self.policy.preempt_overhead(self.jobs.gpu[j]) if self.policy.preemptive else None

    def _apply_node_events(self, t: int) -> None:
        """Node loans due at t take effect after that second's placements (as in the reference)."""
        naming, owe = self.params.reference_node_naming, self.params.loans_wait_for_idle
        while self._node_events and self._node_events[0][0] == t:
            _, _, delta = heapq.heappop(self._node_events)
            if delta > 0:
                if self._node_debt:
                    self._node_debt -= 1  # the node never left: the loan is simply over
                elif self.vc.add_node(naming):
                    self.policy.on_capacity(self, t)
            elif not self.vc.lend_node(naming) and owe:
                self._node_debt += 1  # lend the next node that becomes idle
        while self._node_debt and self.vc.lend_node(False):
            self._node_debt -= 1
        if self.pending:
            self._wakeup = min(self._wakeup, t + 1)

    def _snapshot(self, t: int) -> None:
        vc = self.vc
        total = vc.total_gpus
        row = (
            total, vc.free_gpus, self.pending_gpus, len(self.running), len(self.pending),
            self.pending_small, vc.num_nodes, vc.nodes_one_job, vc.nodes_multi_job,
            vc.util_milli / 1000 / total if total else 0.0,
            vc.gmem_mb / total if total else 0.0,
        )
        if self._series_types:
            tt, tf = vc.type_total, vc.type_free
            row += tuple(tt[i] if i >= 0 else 0 for i in self._series_types)
            row += tuple(tf[i] if i >= 0 else 0 for i in self._series_types)
        for ext in self._sampled:
            row += ext.series_row(self)
        self.recorder.snapshot(t, row)
