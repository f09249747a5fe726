"""Event-driven simulator of one virtual cluster.

Time is integer seconds on the trace clock. At each event time, in order: (1) jobs whose end is
due complete and free their GPUs, (2) jobs submitted at that second arrive in trace order, (3) the
policy orders, selects, preempts and places, (4) the state is snapshotted for the time series.
Nothing changes between event times, so deciding only then equals deciding every second; a policy
that needs a decision without an arrival or completion (periodic rescheduling, a change in its
ordering) asks for it through ``next_wakeup``. Cost grows with events, not simulated seconds.
"""

from __future__ import annotations

import heapq
import math

from raysim.sim.jobs import JobTable
from raysim.sim.params import SimParams
from raysim.sim.recorder import Recorder
from raysim.sim.vc import VCState

NEVER = math.inf


class VCSimulator:
    """Simulates one VC under one policy and placer. Feed jobs with `add_jobs`, advance with `run`."""

    def __init__(self, name: str, num_nodes: int, policy, placer, params: SimParams,
                 *, gpus_per_node: int = 8, t0: int = 0):
        self.name = name
        self.params = params
        self.policy = policy
        self.placer = placer
        self.vc = VCState(num_nodes, gpus_per_node)
        self.jobs = JobTable()
        self.recorder = Recorder(params.sample_interval, t0)
        self.now = t0 - 1  # last time fully processed
        self.pending: dict[int, None] = {}  # insertion order = queue order of (re)entry
        self.running: dict[int, None] = {}  # insertion order = order of (re)start
        self.arrived_now = 0  # jobs that arrived at the time being processed
        self.pending_gpus = 0
        self.pending_small = 0
        self.finished = 0
        self.events = 0
        self.last_event = t0  # time of the last processed event
        self.finished_log: list[int] = []  # jobs finished since the caller last drained it
        self._completions: list[tuple[int, int, int]] = []  # (time, version, job)
        self._next_arrival = 0
        self._wakeup = NEVER
        self._snapshot(t0)

    # ------------------------------------------------------------------ feeding and running
    def add_jobs(self, cols) -> None:
        """Append jobs (numpy columns, see jobs.INPUT_COLUMNS) submitted after `now`, in submit order."""
        if len(cols["job_id"]) and int(cols["submit_time"][0]) <= self.now:
            raise ValueError(f"{self.name}: job submitted at {int(cols['submit_time'][0])} arrives "
                             f"after the simulation already reached {self.now}")
        self.jobs.extend(cols)

    def next_event_time(self) -> float:
        """Time of the next event this VC knows of (inf when idle and no job is waiting to arrive)."""
        t = self._wakeup
        if self._next_arrival < self.jobs.n:
            t = min(t, self.jobs.submit[self._next_arrival])
        heap = self._completions
        while heap and heap[0][1] != self.jobs.version[heap[0][2]]:
            heapq.heappop(heap)
        if heap:
            t = min(t, heap[0][0])
        return t

    def run(self, until: float = NEVER) -> None:
        """Process every event at a time < `until` (all of them by default)."""
        jobs, policy = self.jobs, self.policy
        heap = self._completions
        while True:
            t = self.next_event_time()
            if t >= until:
                break
            self.events += 1
            while heap and heap[0][0] == t:
                _, version, j = heapq.heappop(heap)
                if version == jobs.version[j]:
                    self._complete(j, t)
            arrived = 0
            submit, n = jobs.submit, jobs.n
            while self._next_arrival < n and submit[self._next_arrival] == t:
                j = self._next_arrival
                self._next_arrival += 1
                self._enqueue(j)
                policy.on_arrival(self, j)
                arrived += 1
            self.arrived_now = arrived
            self.now = t
            policy.schedule(self, t)
            self._wakeup = policy.next_wakeup(self, t)
            self._snapshot(t)
            self.last_event = t
        if until is not NEVER and until - 1 > self.now:
            self.now = int(until) - 1

    @property
    def done(self) -> bool:
        """True when every job added so far has finished."""
        return self.finished == self.jobs.n

    # ------------------------------------------------------------------ actions for policies
    def try_start(self, j: int, now: int) -> bool:
        """Place job j now if the placer finds GPUs; returns whether it started."""
        jobs, vc = self.jobs, self.vc
        g = jobs.gpu[j]
        if g > vc.free_gpus:
            return False
        alloc = self.placer.select(vc, g)
        if alloc is None:
            return False
        vc.allocate(j, alloc, jobs.util_milli[j], jobs.gmem[j])
        del self.pending[j]
        self.pending_gpus -= g
        self.pending_small -= g < 8
        self.running[j] = None
        if jobs.start[j] < 0:
            jobs.start[j] = now
            jobs.queue[j] = now - jobs.submit[j]
        else:
            jobs.queue[j] += now - jobs.ckpt_time[j]
        jobs.first_node[j] = alloc[0][0]
        jobs.num_nodes[j] = len(alloc)
        jobs.run_since[j] = now
        if self.policy.countdown:
            due = now + jobs.remain[j] + self.params.countdown_lag
        else:
            due = now + jobs.duration[j]
        jobs.end_due[j] = due
        heapq.heappush(self._completions, (due, jobs.version[j], j))
        return True

    def preempt(self, j: int, now: int) -> None:
        """Stop running job j: it checkpoints, frees its GPUs and waits again (pays the overhead)."""
        jobs = self.jobs
        g = jobs.gpu[j]
        jobs.preemptions[j] += 1
        jobs.ckpt_time[j] = now
        jobs.attained[j] = self.attained(j, now)
        jobs.remain[j] = self.remaining(j, now) + self.params.preempt_overhead(g)
        jobs.version[j] += 1
        jobs.end_due[j] = -1
        self.vc.release(j, jobs.util_milli[j], jobs.gmem[j])
        del self.running[j]
        self._enqueue(j)

    def remaining(self, j: int, now: int) -> int:
        """Seconds of work job j still has at time `now` (after that second's progress)."""
        due = self.jobs.end_due[j]
        if due < 0:
            return self.jobs.remain[j]
        return due - now - self.params.countdown_lag

    def attained(self, j: int, now: int) -> int:
        """GPU-seconds of service job j has received by time `now`."""
        jobs = self.jobs
        if jobs.end_due[j] < 0:
            return jobs.attained[j]
        return jobs.attained[j] + jobs.gpu[j] * (now - jobs.run_since[j])

    # ------------------------------------------------------------------ internals
    def _enqueue(self, j: int) -> None:
        g = self.jobs.gpu[j]
        self.pending[j] = None
        self.pending_gpus += g
        self.pending_small += g < 8

    def _complete(self, j: int, t: int) -> None:
        jobs = self.jobs
        jobs.end[j] = t
        jobs.end_due[j] = -1
        jobs.remain[j] = 0
        self.vc.release(j, jobs.util_milli[j], jobs.gmem[j])
        del self.running[j]
        self.finished += 1
        self.finished_log.append(j)
        self.policy.on_complete(self, j)

    def _snapshot(self, t: int) -> None:
        vc = self.vc
        total = vc.total_gpus
        self.recorder.snapshot(t, (
            total, vc.free_gpus, self.pending_gpus, len(self.running), len(self.pending),
            self.pending_small, vc.num_nodes, vc.nodes_one_job, vc.nodes_multi_job,
            vc.util_milli / 1000 / total if total else 0.0,
            vc.gmem_mb / total if total else 0.0,
        ))
