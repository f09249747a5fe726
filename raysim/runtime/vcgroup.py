"""A group of VC simulators: the unit of work a runtime places in one process (a Ray actor).

Pure Python: the Ray backend wraps it in an actor, the local backend calls it directly.
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pyarrow as pa

from raysim.quota.cohorts import decided_in_group
from raysim.quota.exchange import CohortEpochs
from raysim.quota.reports import reports_batch
from raysim.runtime.codec import results_table, samples_table, split_by_vc
from raysim.runtime.spec import RunSpec
from raysim.sim.jobs import UNSET


class VCGroup:
    """Simulators of the VCs `vcs`, advanced window by window. Finished jobs are forgotten once their
    records have left with a window's output, so memory follows the live jobs.

    A window visits only the VCs that get input or have an event before its end, and results
    leave only when the coordinator says so: short windows (quota epochs) cost what
    happens in them, not the number of VCs.

    With quota lending, the group decides the loans of the cohorts all of whose VCs it holds
    itself, at their epochs (raysim.quota.exchange.CohortEpochs), and reports the VCs of split
    cohorts to the coordinator, which decides theirs (raysim.quota.cohorts)."""

    def __init__(self, spec: RunSpec, vcs: list[str]):
        self.vcs = list(vcs)
        self.sims = {vc: spec.make_simulator(vc) for vc in self.vcs}
        mine = decided_in_group(spec.quota, spec.vcs, self.vcs)
        #: loan decisions made here (None: no cohort lies wholly in this group)
        self.epochs = CohortEpochs(spec.quota, spec.t0, mine) if mine else None
        #: VCs whose quota reports go to the coordinator (their cohort is split over groups)
        self.reporting = [vc for vc in self.vcs if spec.quota.borrow and vc not in mine]
        self._track()

    def _track(self) -> None:
        """Start tracking every VC: its next event time, whether its recorder has unemitted
        snapshots, whether it changed since its last quota report, and the next event time the
        coordinator was last told."""
        self._next = {vc: sim.next_event_time() for vc, sim in self.sims.items()}
        self._unsettled = set(self.sims)
        self._reporting = frozenset(self.reporting)
        self._unreported = set(self.reporting)
        self._mine = frozenset(self.epochs.vcs if self.epochs is not None else ())
        self._told: dict = {}  # VC -> the next event its last status said
        self._cpu: dict = {}  # VC -> CPU seconds spent on it since take_costs()

    def run_window(self, batch: dict | None, t_end: int, orders: dict | None = None
                   ) -> tuple[pa.Table | None, pa.Table | None, dict, pa.RecordBatch | None]:
        """Add this window's arrivals (`batch["jobs"]`, an Arrow table) and the profiler's node
        loans (`batch["loans"]`: (vc, time, +1/-1)), carry out the coordinator's `orders` given at
        the window's start, then simulate every event before `t_end`, deciding the loans of this
        group's own cohorts at their epochs on the way.

        Orders: `ops` (VC -> loan operations at time `t`, see raysim.quota.lending),
        `report` (t_end is a quota epoch) and `ship` (send the results now; without it finished
        jobs' records and time-series rows wait in the simulators for a later window).

        Returns (finished-job records, time-series change rows, the status of every VC that got
        input, had events or whose next event changed: the others' is unchanged, quota reports).
        A VC's next event includes its cohort's next loan decision. The records and rows are those
        since the last window that shipped, reaching t_end - 1; both are None when this one does
        not ship. With `report`, the reports (an Arrow record batch, raysim.quota.reports; else
        None) are those at t_end of the reporting VCs that changed since their last report."""
        orders = orders or {}
        visited = set()
        jobs = batch["jobs"] if batch else None
        if jobs is not None and jobs.num_rows:
            for vc, cols in split_by_vc(jobs).items():
                t = time.process_time()
                self.sims[vc].add_jobs(cols)
                self._charge(vc, t)
                visited.add(vc)
        for vc, t, delta in (batch or {}).get("loans", ()):
            self.sims[vc].add_node_events([(t, delta)])
            visited.add(vc)
        ops = orders.get("ops") or {}
        for vc in self.vcs:
            if vc in ops:
                self.sims[vc].loans.apply_loan_operations(orders["t"], ops[vc])
                visited.add(vc)
        for vc in visited:  # new arrivals, node events or operations
            self._next[vc] = self.sims[vc].next_event_time()
        if self.epochs is not None:
            self._decide_epochs(t_end, visited)
        self._advance(visited.union(vc for vc, t in self._next.items() if t < t_end), t_end, visited)
        status, reports = self._statuses(visited), None
        if orders.get("report"):
            reports = reports_batch([self.sims[vc].loans.quota_report(t_end) for vc in self.reporting
                                     if vc in self._unreported])
            self._unreported.clear()
        if not orders.get("ship"):
            return None, None, status, reports  # (not even empty tables: they would cost more than the window)
        finished, samples = [], {}
        for vc in self.vcs:  # layout order
            sim, t = self.sims[vc], time.process_time()
            if sim.finished_log:
                finished.append(sim.results(sim.finished_log))
                sim.finished_log = []
                sim.forget_if_worth()
            if vc in self._unsettled:
                samples[vc] = sim.recorder.emit_rows(t_end - 1)
                if sim.recorder.settled:
                    self._unsettled.discard(vc)
            self._charge(vc, t)
        return results_table(finished), samples_table(samples, self.columns, self.interval), status, reports

    def _advance(self, vcs, until: int, visited: set) -> list[str]:
        """Run the VCs `vcs` up to `until` (every event before it); returns those that had events."""
        ran = []
        for vc in vcs:
            sim = self.sims[vc]
            if self._next[vc] < until:
                ran.append(vc)
            t = time.process_time()
            self._next[vc] = sim.run(until=until)
            self._charge(vc, t)
            visited.add(vc)
            self._unsettled.add(vc)
            if vc in self._reporting:
                self._unreported.add(vc)
        return ran

    def _charge(self, vc: str, since: float) -> None:
        """Add the CPU time since `since` (time.process_time) to VC `vc`'s cost."""
        self._cpu[vc] = self._cpu.get(vc, 0.0) + time.process_time() - since

    def take_costs(self) -> dict[str, float]:
        """CPU seconds spent on each VC (running it, adding its arrivals, building its results)
        since the last call; VCs not touched are left out. The rest of a window's time is the
        group's own (raysim.runtime.speedup.spread)."""
        costs, self._cpu = self._cpu, {}
        return costs

    def _decide_epochs(self, t_end: int, visited: set) -> None:
        """Stop this group's own cohorts at every epoch up to t_end that follows a change, and
        decide their loans there; a decision owed to later events of this window becomes `due`."""
        epochs, mine, nxt = self.epochs, self.epochs.vcs, self._next
        while True:
            e = epochs.next_decision(min(map(nxt.__getitem__, mine)))
            if e is None or e > t_end:
                break
            epochs.changed(self._advance([vc for vc in mine if nxt[vc] < e], e, visited))
            for vc, ops in epochs.decide(self.sims, e).items():
                sim = self.sims[vc]
                sim.loans.apply_loan_operations(e, ops)
                nxt[vc] = sim.next_event_time()
                visited.add(vc)
        first = min(map(nxt.__getitem__, mine))
        if first < t_end:  # events the window still processes: the next decision is owed to them
            epochs.changed(vc for vc in mine if nxt[vc] < t_end)
            if epochs.due is None:
                epochs.due = epochs.next_decision(first)

    def finish(self, end: int) -> tuple[pa.Table, pa.Table]:
        """At the end of a run: records of jobs not shipped yet (finished since the last window
        that shipped, or not finished), and every VC's change rows up to `end` (the cluster's last event)."""
        parts = []
        for sim in self.sims.values():
            rows = sim.finished_log + [j for j in range(sim.jobs.n) if sim.jobs.end[j] == UNSET]
            sim.finished_log = []
            if rows:
                parts.append(sim.results(rows))
        samples = {vc: sim.recorder.emit_rows(end) for vc, sim in self.sims.items()}
        return results_table(parts), samples_table(samples, self.columns, self.interval)

    def checkpoint(self) -> bytes:
        """The whole group's state, to rebuild it after a crash or resume an interrupted run."""
        return pickle.dumps((self.sims, self.epochs, self.reporting, self._told), protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def vcs_in(state: bytes) -> list[str]:
        """The VCs of the group whose `checkpoint()` output is `state`, in the group's order."""
        loaded = pickle.loads(state)  # noqa: S301 - produced by checkpoint() of this run
        return list(loaded if isinstance(loaded, dict) else loaded[0])

    @classmethod
    def restore(cls, state: bytes) -> "VCGroup":
        """Rebuild a group from `checkpoint()` output (raysim's own bytes, never user input)."""
        group = cls.__new__(cls)
        loaded = pickle.loads(state)  # noqa: S301 - produced by checkpoint() of this run
        if isinstance(loaded, dict):  # a checkpoint from before quota lending kept only the simulators
            loaded = (loaded, None, [], {})
        group.sims, group.epochs, group.reporting, told = loaded
        group.vcs = list(group.sims)
        group._track()
        group._told = told
        return group

    @property
    def interval(self) -> int:
        """Seconds between time-series samples (the same for every VC of a run)."""
        return next(iter(self.sims.values())).recorder.interval

    @property
    def columns(self) -> tuple[str, ...]:
        """The sampled columns (the same for every VC of a run)."""
        return next(iter(self.sims.values())).recorder.columns

    def _statuses(self, visited: set) -> dict:
        """The status of every visited VC, and of every VC whose next event (its own, or its
        cohort's next loan decision) differs from what the coordinator was last told."""
        if self.epochs is None:  # every next event is the VC's own: only visited VCs change
            return {vc: self._status(vc) for vc in visited}
        status, told = {}, self._told
        for vc in visited.union(self.epochs.vcs):
            st = self._status(vc)
            if vc in visited or st["next_event"] != told.get(vc):
                status[vc] = st
                told[vc] = st["next_event"]
        return status

    def _status(self, vc: str) -> dict:
        sim, nxt = self.sims[vc], self._next[vc]
        if vc in self._mine and self.epochs.due is not None:
            nxt = min(nxt, self.epochs.due)
        return {"next_event": None if nxt == np.inf else int(nxt),
                "last_event": sim.last_event, "finished": sim.finished,
                "running": len(sim.running), "pending": len(sim.pending), "events": sim.events,
                "unfinished": sim.unfinished, "progress_at": sim.progress_at}
