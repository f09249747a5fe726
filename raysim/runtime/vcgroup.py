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
    records have left with a window's output, so memory follows the live jobs."""

    def __init__(self, spec: RunSpec, vcs: list[str]):
        self.vcs = list(vcs)
        self.sims = {vc: spec.make_simulator(vc) for vc in self.vcs}

    def run_window(self, batch: dict | None, t_end: int) -> tuple[pa.Table, pa.Table, dict]:
        """Add this window's arrivals (`batch["jobs"]`, an Arrow table) and node loans
        (`batch["loans"]`: (vc, time, +1/-1)), then simulate every event before `t_end`.

        Returns (finished-job records, time-series change rows up to `t_end` - 1, per-VC status).
        """
        jobs = batch["jobs"] if batch else None
        if jobs is not None and jobs.num_rows:
            for vc, cols in split_by_vc(jobs).items():
                self.sims[vc].add_jobs(cols)
        for vc, t, delta in (batch or {}).get("loans", ()):
            self.sims[vc].add_node_events([(t, delta)])
        finished, samples, status = [], {}, {}
        for vc, sim in self.sims.items():
            sim.run(until=t_end)
            if sim.finished_log:
                finished.append(sim.results(sim.finished_log))
                sim.finished_log = []
            sim.forget_if_worth()
            samples[vc] = sim.recorder.emit(t_end - 1)
            status[vc] = self._status(sim)
        return results_table(finished), samples_table(samples, self.interval), status

    def finish(self, end: int) -> tuple[pa.Table, pa.Table]:
        """At the end of a run: records of jobs that have not finished, and every VC's change rows
        up to `end` (the cluster's last event)."""
        parts = []
        for sim in self.sims.values():
            rows = [j for j in range(sim.jobs.n) if sim.jobs.end[j] < 0]
            if rows:
                parts.append(sim.results(rows))
        samples = {vc: sim.recorder.emit(end) for vc, sim in self.sims.items()}
        return results_table(parts), samples_table(samples, self.interval)

    def checkpoint(self) -> bytes:
        """The whole group's state, to rebuild it after a crash or resume an interrupted run."""
        return pickle.dumps(self.sims, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, state: bytes) -> "VCGroup":
        """Rebuild a group from `checkpoint()` output (raysim's own bytes, never user input)."""
        group = cls.__new__(cls)
        group.sims = pickle.loads(state)  # noqa: S301 - produced by checkpoint() of this run
        group.vcs = list(group.sims)
        return group

    @property
    def interval(self) -> int:
        """Seconds between time-series samples (the same for every VC of a run)."""
        return next(iter(self.sims.values())).recorder.interval

    @staticmethod
    def _status(sim) -> dict:
        nxt = sim.next_event_time()
        return {"next_event": None if nxt == np.inf else int(nxt),
                "last_event": sim.last_event, "finished": sim.finished,
                "running": len(sim.running), "pending": len(sim.pending), "events": sim.events}
