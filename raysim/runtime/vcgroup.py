"""A group of VC simulators: the unit of work a runtime places in one process (a Ray actor).

Pure Python: the Ray backend wraps it in an actor, the local backend calls it directly.
"""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa

from raysim.runtime.codec import results_table, samples_table, split_by_vc
from raysim.runtime.spec import RunSpec


class VCGroup:
    """Simulators of the VCs `vcs`, advanced window by window. Finished jobs are forgotten once their
    records have left with a window's output, so memory follows the live jobs.

    A window visits only the VCs that get input or have an event before its end, and results
    leave only when the coordinator says so: short windows (quota-sharing epochs) cost what
    happens in them, not the number of VCs."""

    def __init__(self, spec: RunSpec, vcs: list[str]):
        self.vcs = list(vcs)
        self.sims = {vc: spec.make_simulator(vc) for vc in self.vcs}
        self._track()

    def _track(self) -> None:
        """Start tracking every VC: its next event time, whether its recorder has unemitted
        snapshots, and whether it changed since its last quota report."""
        self._next = {vc: sim.next_event_time() for vc, sim in self.sims.items()}
        self._unsettled = set(self.sims)
        self._unreported = set(self.sims)

    def run_window(self, batch: dict | None, t_end: int, orders: dict | None = None) -> tuple[pa.Table, pa.Table, dict]:
        """Add this window's arrivals (`batch["jobs"]`, an Arrow table) and the profiler's node
        loans (`batch["loans"]`: (vc, time, +1/-1)), carry out the coordinator's `orders` given at
        the window's start, then simulate every event before `t_end`.

        Orders: `ops` (VC -> quota-sharing operations at time `t`, see raysim.elastic.lending),
        `report` (t_end is a quota epoch) and `ship` (send the results now; without it finished
        jobs' records and time-series rows wait in the simulators for a later window).

        Returns (finished-job records, time-series change rows, the status of every VC that got
        input or had events: the others' is unchanged). The records and rows are those since the
        last window that shipped, reaching t_end - 1; both are None when this one does not ship.
        With `report`, the status of every VC that changed since its last report carries its new
        one (`status[vc]["quota"]`, VCSimulator.quota_report at t_end)."""
        orders = orders or {}
        touched = set()
        jobs = batch["jobs"] if batch else None
        if jobs is not None and jobs.num_rows:
            for vc, cols in split_by_vc(jobs).items():
                self.sims[vc].add_jobs(cols)
                touched.add(vc)
        for vc, t, delta in (batch or {}).get("loans", ()):
            self.sims[vc].add_node_events([(t, delta)])
            touched.add(vc)
        ops = orders.get("ops") or {}
        for vc in self.vcs:
            if vc in ops:
                apply_operations(self.sims[vc], orders["t"], ops[vc])
                touched.add(vc)
        status = {}
        for vc in touched.union(vc for vc, t in self._next.items() if t < t_end):
            sim = self.sims[vc]
            sim.run(until=t_end)
            self._next[vc] = nxt = sim.next_event_time()
            status[vc] = self._status(sim, nxt)
            self._unreported.add(vc)
            self._unsettled.add(vc)
        if orders.get("report"):
            for vc in self._unreported:
                status[vc] = {**(status.get(vc) or self._status(self.sims[vc], self._next[vc])),
                              "quota": self.sims[vc].quota_report(t_end)}
            self._unreported.clear()
        if not orders.get("ship"):
            return None, None, status  # (not even empty tables: they would cost more than the window)
        finished, samples = [], {}
        for vc in self.vcs:  # layout order
            sim = self.sims[vc]
            if sim.finished_log:
                finished.append(sim.results(sim.finished_log))
                sim.finished_log = []
                sim.forget_if_worth()
            if vc in self._unsettled:
                samples[vc] = sim.recorder.emit_rows(t_end - 1)
                if sim.recorder.settled:
                    self._unsettled.discard(vc)
        return results_table(finished), samples_table(samples, self.columns, self.interval), status

    def finish(self, end: int) -> tuple[pa.Table, pa.Table]:
        """At the end of a run: records of jobs not shipped yet (finished since the last window
        that shipped, or not finished), and every VC's change rows up to `end` (the cluster's last event)."""
        parts = []
        for sim in self.sims.values():
            rows = sim.finished_log + [j for j in range(sim.jobs.n) if sim.jobs.end[j] < 0]
            sim.finished_log = []
            if rows:
                parts.append(sim.results(rows))
        samples = {vc: sim.recorder.emit_rows(end) for vc, sim in self.sims.items()}
        return results_table(parts), samples_table(samples, self.columns, self.interval)

    def checkpoint(self) -> bytes:
        """The whole group's state, to rebuild it after a crash or resume an interrupted run."""
        return pickle.dumps(self.sims, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, state: bytes) -> "VCGroup":
        """Rebuild a group from `checkpoint()` output (raysim's own bytes, never user input)."""
        group = cls.__new__(cls)
        group.sims = pickle.loads(state)  # noqa: S301 - produced by checkpoint() of this run
        group.vcs = list(group.sims)
        group._track()
        return group

    @property
    def interval(self) -> int:
        """Seconds between time-series samples (the same for every VC of a run)."""
        return next(iter(self.sims.values())).recorder.interval

    @property
    def columns(self) -> tuple[str, ...]:
        """The sampled columns (the same for every VC of a run)."""
        return next(iter(self.sims.values())).recorder.columns

    @staticmethod
    def _status(sim, nxt: float) -> dict:
        return {"next_event": None if nxt == np.inf else int(nxt),
                "last_event": sim.last_event, "finished": sim.finished,
                "running": len(sim.running), "pending": len(sim.pending), "events": sim.events}


def apply_operations(sim, t: int, ops: list[tuple]) -> None:
    """Carry out one VC's quota-sharing operations at epoch t, in order (see
    raysim.elastic.lending.decide); a reclaim must give back at once what the coordinator expects."""
    for kind, *args in ops:
        if kind == "reclaim":
            lender, shape, count, mode, expected = args
            back = sim.reclaim(t, lender, shape, count, mode)
            if back != expected:
                raise AssertionError(f"{sim.name}: reclaim of {count} node(s) of {lender}'s pool {shape.pool} at "
                                     f"t={t} gave back {back} at once, the coordinator expected {expected}")
        elif kind == "take_back":
            sim.take_back(t, *args)
        elif kind == "lend":
            sim.lend(t, *args)
        elif kind == "borrow":
            sim.borrow(t, *args)
        else:
            raise ValueError(f"unknown quota operation {kind!r}")
