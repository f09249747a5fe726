"""Where a run's simulation time goes: per window and per VC group, measured with a few clock reads
per window (never per event), and the speedup bound for k CPUs (raysim.runtime.speedup) kept up
as the run goes, so no per-window, per-VC table is held.

Per window the coordinator records its wall time, the time it spent issuing and collecting the
groups' windows (`groups_s`: waiting for them, and under runtime=local running them) and the time
spent serialising and moving batches and results (`transfer_s`: Ray's put and get); each group
reports its call's wall and CPU time (time.process_time) and the CPU time of each VC it ran.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from raysim.runtime.speedup import bound, critical_path, group_costs, spread

#: the k of the speedup bounds a run reports
BOUND_CPUS = (2, 16, 64)
#: trace_report.json holds at most this many rows per window array: consecutive windows are summed
#: into one row beyond it (every recorded quantity is a per-window sum, so totals stay exact)
MAX_ROWS = 2_000


@dataclass
class GroupCost:
    """What one VC group's window cost where it ran: wall and CPU seconds of the simulation (state
    snapshot apart), seconds saving its state, and CPU seconds per VC it ran."""

    wall_s: float
    cpu_s: float
    state_s: float = 0.0
    vc_cpu: dict = field(default_factory=dict)


def run_timed(group, batch, t_end: int, orders: dict | None) -> tuple:
    """(output, GroupCost) of VC group `group` (a raysim.runtime.vcgroup.VCGroup) running a window."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = group.run_window(batch, t_end, orders)
    return out, GroupCost(time.perf_counter() - wall, time.process_time() - cpu, vc_cpu=group.take_costs())


class RunTiming:
    """The per-window records of a run with VC groups `groups`, and the critical paths of the VCs
    packed as the runtime would pack them for each k of `packings` (k -> list of VC groups)."""

    def __init__(self, groups: list[list[str]], packings: dict[int, list[list[str]]]):
        self.groups = groups
        self.vcs = [vc for grp in groups for vc in grp]
        self.index = {vc: i for i, vc in enumerate(self.vcs)}
        ends = np.cumsum([len(grp) for grp in groups])
        self.spans = list(zip((ends - [len(grp) for grp in groups]).tolist(), ends.tolist()))  # group -> VC slice
        self.packings = {k: (np.array([g for g, grp in enumerate(p) for _ in grp], dtype=np.intp),
                             np.array([self.index[vc] for grp in p for vc in grp], dtype=np.intp), len(p))
                         for k, p in packings.items()}
        self.rows: list[tuple] = []  # per window: (wall, own, transfer, critical, waiting, work)
        self.critical = dict.fromkeys(packings, 0.0)
        self.group_cpu = np.zeros(len(groups))
        self.group_wall = np.zeros(len(groups))
        self.group_idle = np.zeros(len(groups))
        self.vc_cpu = np.zeros(len(self.vcs))

    def window(self, wall_s: float, groups_s: float, transfer_s: float, costs: list[GroupCost]) -> None:
        """Record one window: its wall time, the coordinator's time in the groups' calls, the
        transfer time, and each group's cost (in group order)."""
        cpu = np.array([c.cpu_s for c in costs])
        self.group_cpu += cpu
        wall = np.array([c.wall_s + c.state_s for c in costs])
        self.group_wall += wall
        self.group_idle += np.maximum(0.0, groups_s - wall)
        vc = np.zeros(len(self.vcs))
        for c, (lo, hi) in zip(costs, self.spans):
            for name, seconds in c.vc_cpu.items():
                vc[self.index[name]] = seconds
            vc[lo:hi] = spread(c.cpu_s, vc[lo:hi])
        self.vc_cpu += vc
        for k, (assign, order, n) in self.packings.items():
            self.critical[k] += critical_path(group_costs(vc[order], assign, n), k)
        crit = float(cpu.max()) if len(cpu) else 0.0
        self.rows.append((wall_s, max(0.0, wall_s - groups_s), transfer_s, crit,
                          max(0.0, groups_s - transfer_s - crit), float(cpu.sum())))

    def report(self, total_s: float) -> dict:
        """trace_report.json's `timing` of a simulation that took `total_s` seconds: what its
        windows do not hold (starting the groups, collecting and writing the results) is serial."""
        rows = np.array(self.rows, dtype=float).reshape(-1, 6)
        outside_s = max(0.0, total_s - float(rows[:, 0].sum()))
        per_row = max(1, -(-len(rows) // MAX_ROWS))
        summed = np.add.reduceat(rows, np.arange(0, len(rows), per_row)) if len(rows) else rows
        serial = float(rows[:, 1].sum() + rows[:, 2].sum()) + outside_s
        work = float(rows[:, 5].sum())
        names = ("wall_s", "own_s", "transfer_s", "critical_s", "waiting_s", "work_s")
        return {
            "windows": len(rows), "windows_per_row": per_row,
            "window": {name: [round(float(v), 4) for v in summed[:, i]] for i, name in enumerate(names)},
            "totals": {name: round(float(rows[:, i].sum()), 4) for i, name in enumerate(names)},
            "outside_s": round(outside_s, 4),
            "groups": {"vcs": self.groups, "cpu_s": _rounded(self.group_cpu), "wall_s": _rounded(self.group_wall),
                       "idle_s": _rounded(self.group_idle)},
            "vc_cpu_s": dict(zip(self.vcs, _rounded(self.vc_cpu))),
            "serial_work_s": round(work + serial, 4),
            "speedup_bound": {str(k): round(bound(work, c, serial), 3) for k, c in self.critical.items()},
        }


def _rounded(values) -> list[float]:
    return [round(float(v), 4) for v in values]


def bound_line(timing: dict) -> str:
    """The speedup bounds of a run's `timing` in one line, for the command line."""
    bounds = ", ".join(f"{b:.2f}x on {k} CPUs" for k, b in timing["speedup_bound"].items())
    return (f"speedup bound (critical path per window, VCs packed as for k CPUs): {bounds} "
            f"({timing['serial_work_s']:,.1f} s of serial work)")
