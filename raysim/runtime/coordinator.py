"""The coordinator: owns simulated time and drives the profiler stage and the VC groups in windows.

Window k covers [t0 + kW, t0 + (k+1)W). The profiler stage turns the trace's arrivals into
per-group job batches (a window at a time, or a day at a time under the pass-through stage: a VC
holds jobs before they arrive); each VC group simulates every event before the window's end and
returns its status, and, once a simulated day (every window with an online estimator), its
finished-job records and time-series change rows. Empty stretches are skipped (cost follows
events, not seconds). The profiler already works on the next batch while the VC groups run the
current window. With quota lending (raysim.quota.exchange) windows end at the loan epochs: the
groups report there, and the operations decided go out with the next window. Group snapshots are taken at window boundaries, so a lost group is
rebuilt and its windows since replayed; the profiler stage is snapshotted after every window, so
a lost stage is rebuilt and redoes its window. With a checkpoint folder an interrupted run resumes
from there. A stall guard (`stall_ticks`, per VC) ends the run at the end of the first window that leaves a VC
whose jobs have not progressed for longer (raysim.sim.engine.VCSimulator.progress_at): the VC groups'
statuses decide it, and a window ends where a VC would stall, so the run stops at the same point
in-process and on Ray, in windows of any size (but for loans decided here, whose windows end at epochs).
Results leave through a ResultSink as Parquet row groups while the run goes on: the coordinator
keeps no per-job results in memory.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from raysim.errors import UserError
from raysim.quota.reports import reports_of
from raysim.runtime.sink import ResultSink, SinkPosition
from raysim.runtime.timing import RunTiming
from raysim.runtime.vcgroup import VCGroup

log = logging.getLogger("raysim")

#: seconds in a (Julian) year, for times past the last date Python writes
YEAR_S = 31_557_600


class GroupLost(RuntimeError):
    """The process running VC group `group` died (raised by executors)."""

    def __init__(self, group: int, cause: BaseException | None = None):
        super().__init__(f"VC group {group} was lost: {cause}")
        self.group = group


class StageLost(RuntimeError):
    """The process running the profiler stage died (raised by executors)."""


@dataclass
class StageCall:
    """One window of the profiler stage, issued (possibly while the VC groups run the window before)."""

    t_start: int
    t_end: int
    jobs: pa.Table  # the window's arrivals, as sent
    outputs: list  # per VC group: its batch (or a handle to it)
    handle: object  # the stage's status (and snapshot) handle


@dataclass
class RunState:
    """Everything needed to continue a run at a window boundary."""

    t: int  # start of the next window to run
    pos: int  # next trace row to dispatch
    group_states: list  # per group: the last snapshot (executor handle or VCGroup.checkpoint() bytes)
    sink: SinkPosition = field(default_factory=SinkPosition)  # where the result files stood
    done: list = field(default_factory=list)  # (trace rows, end times) of finished jobs, for an estimator
    status: dict = field(default_factory=dict)  # per VC: last reported status
    windows: int = 0
    replay: dict = field(default_factory=dict)  # group -> [(batch, t_end)] run since its snapshot
    stage_next: int | None = None  # the profiler stage's next event
    stage_records: list = field(default_factory=list)  # profiler records (profiling start/end/queue)
    stage_state: bytes | None = None  # the profiler stage's state (in checkpoints only)
    fingerprint: dict = field(default_factory=dict)  # digests of the run's inputs (raysim.runtime.fingerprint)
    loans: dict | None = None  # quota lending: pending operations and the due epoch (raysim.quota.exchange)
    shipped_at: int = 0  # end of the last window whose results left the VC groups
    groups: list = field(default_factory=list)  # the VC groups (VC names) the group states belong to


class Coordinator:
    """Runs one simulation over an executor (in-process or Ray actors)."""

    def __init__(self, executor, batch: pa.Table, groups: list[list[str]], sink: ResultSink, *, t0: int,
                 window_s: int, checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False,
                 progress: bool = True, origin: str = "0", ticks_per_s: int = 1, estimator=None, fingerprint: dict | None = None,
                 dispatch_s: int | None = None, exchange=None, stall_ticks: dict | None = None,
                 packings: dict | None = None):
        if window_s <= 0:
            raise ValueError("runtime.window_s must be a positive number of seconds")
        #: arrivals go to the VC groups this many seconds at a time (a multiple of the window: a
        #: VC holds jobs before they arrive, so this changes no result, only how often the stage runs)
        self.dispatch_s = int(dispatch_s or window_s)
        if self.dispatch_s % window_s:
            raise ValueError(f"dispatch_s ({dispatch_s}) must be a multiple of runtime.window_s ({window_s})")
        self.executor = executor
        self.batch = batch
        self.submit = batch.column("submit_time").to_numpy()
        self.groups = groups
        self.sink = sink
        self.t0, self.window_s = int(t0), int(window_s)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.resume = resume
        #: digests of what determines the results: written into checkpoints, compared on resume
        self.fingerprint = dict(fingerprint or {})
        self.progress = progress
        self.origin = origin
        self.ticks_per_s = int(ticks_per_s)  # the simulators' clock ticks per second (progress lines only)
        #: optional estimator filling each window's `estimate` column from jobs finished so far
        self.estimator = estimator
        if estimator is not None and estimator.period_s % self.window_s:
            raise ValueError(f"the estimator's period ({estimator.period_s} s) must be a multiple of "
                             f"runtime.window_s ({self.window_s} s)")
        #: quota lending (raysim.quota.exchange.EpochExchange) or None
        self.exchange = exchange
        #: the stall guard: per VC, how long (ticks) it may have unfinished jobs and no progress
        #: before it stops the run (None: never)
        self.stall_ticks = stall_ticks
        #: why the run stopped before its end (one line), or None: it ran to its end
        self.stalled: str | None = None
        self.recoveries = 0
        #: where the time went, window by window, and the critical paths of the VCs packed as
        #: `packings` says (k -> VC groups for k CPUs: raysim.runtime.timing)
        self.timing = RunTiming(groups, packings or {})
        self.windows_run = 0
        self.events = 0
        self._state_cost: dict[int, float] = {}  # group -> seconds its last state took to save
        self._work_since: dict[int, float] = {}  # group -> simulation seconds since its last snapshot
        self._stage_snapshot = None  # the profiler stage's state after its last window (None: fresh)
        self._reported_at = -math.inf  # wall time of the last progress line

    # ------------------------------------------------------------------ main loop
    def run(self) -> tuple[int, pa.Table | None]:
        """Simulate to completion, results into the sink; return (time of the last event,
        profiler-stage records or None)."""
        state = self._initial_state()
        wall = time.perf_counter()
        queued = None  # StageCall: the stage's next window, issued ahead
        while True:
            started, transfer = time.perf_counter(), self.executor.transfer_s
            stage = self._stage_window(state) if queued is None else queued.t_start
            vc_next = [s["next_event"] for s in state.status.values() if s["next_event"] is not None]
            loans_by = self.exchange.must_start_by(state.loans) if self.exchange else None
            if stage is None and not vc_next and loans_by is None:
                break
            t_start = max(state.t, self._window_of(min(vc_next + [t for t in (stage, loans_by) if t is not None])))
            t_end = self._window_of(t_start) + self.window_s  # (after a window cut short: the rest of its own)
            deadline = self._stall_deadline(state, t_start)
            if deadline is not None and t_start < deadline < t_end:
                t_end = deadline  # (the run stops there if nothing progresses: the same point in any window)
            if stage is not None and stage <= t_start:
                if queued is None:
                    queued = self._profile(state.pos, t_start, t_start + self.dispatch_s, state)
                current, status = self._stage_result(queued)
                state.pos = int(np.searchsorted(self.submit, queued.t_end, side="left"))
                queued = None
                state.stage_next = status["next_event"]
                if status["records"].num_rows:
                    state.stage_records.append(status["records"])
            else:  # only the VCs have events in this window: nothing arrives
                current = [None] * len(self.groups)
            snapshot = [self._snapshot_due(state, g) for g in range(len(self.groups))]
            orders = self._orders(state, t_start, t_end)
            issued = time.perf_counter()
            handles = [self.executor.run_window(g, current[g], t_end, snapshot[g], orders[g])
                       for g in range(len(self.groups))]
            groups_s = time.perf_counter() - issued
            state.t = t_end
            nxt = self._stage_window(state) if queued is None else None  # (one call issued ahead at a time)
            if nxt is not None and self.estimator is not None and \
                    self.estimator.period_of(nxt) != self.estimator.period_of(t_start):
                nxt = None  # a new estimator period: wait until the VCs have reached it
            if nxt is not None and self._checkpoint_after(state.windows):
                nxt = None  # the checkpoint must catch the stage at this window's end, not beyond
            if nxt is not None:  # the stage works on its next window while the VC groups run this one
                queued = self._profile(state.pos, nxt, nxt + self.dispatch_s, state)
            samples, changed = [], set()
            collecting = time.perf_counter()
            outputs, costs = self._collect(state, handles, current, orders, t_end, snapshot)
            groups_s += time.perf_counter() - collecting
            for res, smp, vc_status, reports in outputs:
                if res is not None:  # (a window that does not ship sends no tables)
                    self._add_records(state, res)
                    samples.append(smp)
                state.status.update(vc_status)
                changed.update(vc_status)
                if reports is not None:  # quota reports of the VCs the coordinator decides for
                    for vc, report in reports_of(reports).items():
                        state.status[vc] = {**state.status[vc], "quota": report}
            if self.exchange:
                self.exchange.after_window(state.loans, t_end, state.status, changed)
            self.sink.add_samples(samples, min(state.shipped_at - 1, max(s["last_event"] for s in state.status.values())))
            state.windows += 1
            self._write_checkpoint(state)
            self.timing.window(time.perf_counter() - started, groups_s, self.executor.transfer_s - transfer, costs)
            if self.progress:
                self._report(state, t_end, time.perf_counter() - wall)
            self.stalled = self._stall(state, t_end)
            if self.stalled is not None:
                break
        if self.progress and sys.stderr.isatty():
            sys.stderr.write("\n")
        self.windows_run = state.windows
        self.events = sum(s["events"] for s in state.status.values())
        return self._finish(state)

    def _stall_deadline(self, state: RunState, t_start: int) -> int | None:
        """Where a window from `t_start` must end for the stall guard: at the earliest time a VC with
        unfinished jobs stalls unless they progress before, and at most the least bound after
        `t_start` (a VC that has none now stalls no earlier); None: no guard, or quota loans decided
        here, whose windows end at their epochs."""
        if self.stall_ticks is None or self.exchange is not None:
            return None
        return min([s["progress_at"] + self.stall_ticks[vc] + 1 for vc, s in state.status.items()
                    if s.get("unfinished")] + [t_start + min(self.stall_ticks.values())])

    def _stall(self, state: RunState, t: int) -> str | None:
        """At window end `t`: why the run stalled (one line), or None. It stalled when some VC has
        unfinished jobs and none of its jobs has progressed for longer than its `stall_ticks`."""
        if self.stall_ticks is None:
            return None
        stuck = [(s["progress_at"], vc) for vc, s in state.status.items()
                 if s.get("unfinished") and t - s["progress_at"] > self.stall_ticks[vc]]
        if not stuck:
            return None
        since, vc = min(stuck)
        st = state.status[vc]
        ticks = self.ticks_per_s
        return (f"the run stopped at {_clock(self.origin, t // ticks)}: VC {vc} has {st['unfinished']:,} unfinished "
                f"job(s) ({st['running']:,} running) and none of its jobs finished or kept more work for "
                f"{(t - since) / ticks / 86_400:,.1f} days of simulated time, "
                f"since {_clock(self.origin, since // ticks)}"
                + (f" (so have {len(stuck) - 1} other VC(s))" if len(stuck) > 1 else ""))

    def _stage_window(self, state: RunState) -> int | None:
        """Start of the next window in which the profiler stage has work (arrivals or its own events)."""
        candidates = []
        if state.pos < len(self.submit):
            candidates.append(int(self.submit[state.pos]))
        if state.stage_next is not None:
            candidates.append(state.stage_next)
        return max(state.t, self._window_of(min(candidates))) if candidates else None

    def _snapshot_due(self, state: RunState, g: int) -> bool:
        """Ask group g for its state at this window's end? Often enough that a rebuild replays little,
        rarely enough that shipping states costs at most ~10% of the groups' simulation time."""
        if not self.executor.snapshots_groups:
            return False
        if self._checkpoint_after(state.windows):
            return True
        cost = self._state_cost.get(g)
        return cost is None or self._work_since.get(g, 0.0) >= 10 * cost

    def _checkpoint_after(self, windows_before: int) -> bool:
        """Is a checkpoint written after the window that follows `windows_before` windows?"""
        return self.checkpoint_dir is not None and (windows_before + 1) % self.checkpoint_every == 0

    #: simulated seconds between windows whose results leave the VC groups (with short windows,
    #: e.g. quota epochs, shipping every window would cost more than the window)
    SHIP_EVERY_S = 86_400

    def _orders(self, state: RunState, t_start: int, t_end: int) -> list[dict]:
        """Per group, what it is told besides the arrivals: loan operations and quota reports,
        and whether to ship its results (an online estimator needs them every window)."""
        ship = self.estimator is not None or t_end - state.shipped_at >= self.SHIP_EVERY_S
        if ship:
            state.shipped_at = t_end
        quota = self.exchange.window_input(state.loans, t_start, t_end, self.groups) if self.exchange \
            else [None] * len(self.groups)
        return [{**(q or {}), "ship": ship} for q in quota]

    def _collect(self, state: RunState, handles, prof_out, quota, t_end: int, snapshot: list[bool]) -> tuple[list, list]:
        """(each group's window output, each group's raysim.runtime.timing.GroupCost), rebuilding
        lost groups on the way."""
        outputs, costs = [], []
        for g, h in enumerate(handles):
            history = state.replay.setdefault(g, [])
            while True:
                try:
                    out, cost, group_state = self.executor.get(g, h)
                    break
                except GroupLost as lost:
                    self.recoveries += 1
                    log.warning("VC group %d (%s) lost in the window ending at t=%d: rebuilding it from its "
                                "last snapshot and replaying %d window(s) (%s)",
                                g, ",".join(self.groups[g]), t_end, len(history) + 1, lost)
                    self.executor.rebuild(g, state.group_states[g])
                    for batch, end, loans in history:  # their results are already in: only the state matters
                        self.executor.get(g, self.executor.run_window(g, batch, end, False, loans))
                    h = self.executor.run_window(g, prof_out[g], t_end, snapshot[g], quota[g])
            outputs.append(out)
            costs.append(cost)
            if snapshot[g]:
                state.group_states[g] = group_state
                state.replay[g] = []
                self._state_cost[g] = cost.state_s
                self._work_since[g] = 0.0
            else:
                history.append((prof_out[g], t_end, quota[g]))
                self._work_since[g] = self._work_since.get(g, 0.0) + cost.wall_s
        return outputs, costs

    def _profile(self, pos: int, t_start: int, t_end: int, state: RunState | None = None) -> StageCall:
        hi = int(np.searchsorted(self.submit, t_end, side="left"))
        jobs = self.batch.slice(pos, hi - pos)
        if self.estimator is not None and hi > pos:
            seq, end = self._finished(state)
            est = self.estimator.fill(pos, hi, seq, end)
            jobs = jobs.set_column(jobs.schema.get_field_index("estimate"), "estimate", pa.array(est))
        return StageCall(t_start, t_end, jobs, *self.executor.profile(jobs, t_start, t_end))

    def _stage_result(self, call: StageCall) -> tuple[list, dict]:
        """(per-group outputs, status) of a stage window. A lost stage is rebuilt from its state after
        its previous window (snapshotted every window: it is small) and does this window again."""
        while True:
            try:
                status, snap = self.executor.profile_status(call.handle)
                break
            except StageLost as lost:
                self.recoveries += 1
                log.warning("the profiler stage was lost in the window ending at t=%d: rebuilding it from "
                            "its state after the previous window and redoing this one (%s)", call.t_end, lost)
                self.executor.rebuild_stage(self._stage_snapshot)
                call.outputs, call.handle = self.executor.profile(call.jobs, call.t_start, call.t_end)
        self._stage_snapshot = snap
        return call.outputs, status

    def _add_records(self, state: RunState, res: pa.Table) -> None:
        self.sink.add_records(res)
        if self.estimator is not None and res.num_rows:
            done = res.column("end_time").to_numpy() >= 0
            state.done.append((res.column("seq").to_numpy()[done], res.column("end_time").to_numpy()[done]))

    def _finished(self, state: RunState) -> tuple[np.ndarray, np.ndarray]:
        """(trace rows, end times) of every job finished so far, in the VCs or in profiling."""
        seqs, ends = [s for s, _ in state.done], [e for _, e in state.done]
        for rec in state.stage_records:
            done = rec.column("finished").to_numpy(zero_copy_only=False)
            seqs.append(rec.column("seq").to_numpy()[done])
            ends.append(rec.column("prof_end").to_numpy()[done])
        if not seqs:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(seqs), np.concatenate(ends)

    # ------------------------------------------------------------------ windows and state
    def _window_of(self, t: int) -> int:
        return self.t0 + ((t - self.t0) // self.window_s) * self.window_s

    def _initial_state(self) -> RunState:
        self.executor.start(self.groups)
        ckpt = self.checkpoint_dir / "checkpoint.pkl" if self.checkpoint_dir else None
        if self.resume and ckpt is not None and ckpt.exists():
            state = pickle.loads(ckpt.read_bytes())  # noqa: S301 - written by this coordinator
            check_resumable(ckpt, getattr(state, "fingerprint", None), self.fingerprint)
            held = getattr(state, "groups", None)
            if held is None:  # written before checkpoints kept their groups: read them from the groups' states
                held = [VCGroup.vcs_in(blob) for blob in state.group_states]
            if held != self.groups:
                differ = (f"{len(held)} VC groups, this run has {len(self.groups)}" if len(held) != len(self.groups)
                          else "other VC groups than this run's")
                raise ValueError(f"{ckpt} holds {differ}: resume with the same ray.vcs_per_actor and ray.packing")
            state.groups = self.groups
            for g, blob in enumerate(state.group_states):
                self.executor.restore(g, blob)
            self.sink.reopen(state.sink)
            if state.stage_state is not None:
                self.executor.restore_stage(state.stage_state)
                self._stage_snapshot = state.stage_state
            log.info("resumed from %s at t=%d after %d windows", ckpt, state.t, state.windows)
            return state
        if self.resume:
            log.warning("runtime.resume: no checkpoint in %s, starting from the beginning", self.checkpoint_dir)
        status = {vc: {"next_event": None, "last_event": self.t0, "finished": 0,
                       "running": 0, "pending": 0, "events": 0} for grp in self.groups for vc in grp}
        self.sink.reopen(SinkPosition())  # a fresh run: no result file of an earlier one may remain
        return RunState(t=self.t0, pos=0, status=status, group_states=[None] * len(self.groups), shipped_at=self.t0,
                        groups=self.groups,
                        fingerprint=self.fingerprint, loans=self.exchange.initial() if self.exchange else None)

    def _write_checkpoint(self, state: RunState) -> None:
        """Write a resumable checkpoint every `checkpoint_every` windows (when a folder is set)."""
        if self.checkpoint_dir is not None and state.windows % self.checkpoint_every == 0:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            blobs = [self.executor.materialize(g, s) for g, s in enumerate(state.group_states)]
            state.sink = self.sink.seal()
            payload = pickle.dumps(dataclasses.replace(state, group_states=blobs, replay={},
                                                       stage_state=self.executor.stage_state(self._stage_snapshot)))
            tmp = self.checkpoint_dir / "checkpoint.pkl.tmp"
            tmp.write_bytes(payload)
            tmp.replace(self.checkpoint_dir / "checkpoint.pkl")

    def _finish(self, state: RunState) -> tuple[int, pa.Table | None]:
        end = max((s["last_event"] for s in state.status.values()), default=self.t0)
        final = [self.executor.finish(g, end) for g in range(len(self.groups))]
        for unfinished, _ in final:
            self.sink.add_records(unfinished)
        self.sink.add_samples([smp for _, smp in final], end)
        stage = pa.concat_tables(state.stage_records) if state.stage_records else None
        return end, stage

    #: seconds of wall time between progress lines on a terminal / in the log
    PROGRESS_EVERY_S = {True: 0.5, False: 5.0}

    def _report(self, state: RunState, t: int, wall: float) -> None:
        """A progress line: after the first window, then at most every PROGRESS_EVERY_S."""
        tty = sys.stderr.isatty()
        if state.windows > 1 and wall - self._reported_at < self.PROGRESS_EVERY_S[tty]:
            return
        self._reported_at = wall
        st = state.status.values()
        done = sum(s["finished"] for s in st)
        line = (f"sim {_clock(self.origin, t // self.ticks_per_s)} | windows {state.windows} | finished {done:,}/{len(self.submit):,}"
                f" | running {sum(s['running'] for s in st):,} | pending {sum(s['pending'] for s in st):,}"
                f" | {wall:6.1f} s wall, {done / wall if wall > 0 else math.inf:,.0f} jobs/s")
        if tty:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
        else:
            log.info("%s", line)


class CheckpointMismatch(UserError):
    """A resume whose checkpoint was written by a run with other inputs (a user error: one line)."""


def check_resumable(where, recorded: dict | None, current: dict) -> None:
    """Refuse to resume from `where` when the recorded fingerprint differs from `current` (when
    `current` is empty, e.g. a caller that does not fingerprint, nothing is checked)."""
    if not current:
        return
    from raysim.runtime.fingerprint import differences

    changed = differences(recorded, current)
    if changed:
        what = "holds no fingerprint (written by an older raysim)" if not recorded else \
            f"was written by a run with other inputs: {', '.join(changed)} differ{'s' if len(changed) == 1 else ''}"
        raise CheckpointMismatch(f"runtime.resume: {where} {what}; run without runtime.resume to start "
                                 "afresh, or give another runtime.checkpoint_dir")


def _clock(origin: str, t: int) -> str:
    """Simulated time as a date when the trace has a datetime origin, else seconds; past the dates
    Python can write (the year 9999), seconds and years since the origin."""
    import datetime as dt

    try:
        start = dt.datetime.fromisoformat(origin)
    except ValueError:
        return f"t={t}"
    try:
        return (start + dt.timedelta(seconds=int(t))).strftime("%Y-%m-%d %H:%M")
    except OverflowError:
        return f"t={t:,} s ({t / YEAR_S:,.0f} years after {start:%Y-%m-%d %H:%M})"
