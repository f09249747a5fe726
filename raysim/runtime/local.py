"""The in-process executor: the profiler stage and every VC group run in this process."""

from __future__ import annotations

import pickle

from raysim.profiler import make_profiler
from raysim.runtime.spec import RunSpec
from raysim.runtime.timing import run_timed
from raysim.runtime.vcgroup import VCGroup


class LocalExecutor:
    """Executes the coordinator's calls directly (handles are the results themselves)."""

    def __init__(self, spec: RunSpec, groups: list[list[str]]):
        self.spec = spec
        self.groups = groups
        self.profiler = make_profiler(spec.profiler, {vc: g for g, vcs in enumerate(groups) for vc in vcs},
                                      len(groups), spec.t0)
        self.vcgroups: list[VCGroup] = []

    def start(self, groups):
        self.vcgroups = [VCGroup(self.spec, vcs) for vcs in groups]

    def profile(self, jobs, t_start, t_end):
        """(per-group outputs, handle of the stage's status)."""
        return self.profiler.process(jobs, t_start, t_end)

    def profile_status(self, handle):
        """(status, snapshot): an in-process stage cannot be lost, so it takes none."""
        return handle, None

    def stage_state(self, snapshot=None) -> bytes:
        """The profiler stage's state, for a checkpoint (an in-process stage takes no snapshots between windows)."""
        return pickle.dumps(self.profiler, protocol=pickle.HIGHEST_PROTOCOL)

    def restore_stage(self, state: bytes) -> None:
        self.profiler = pickle.loads(state)  # noqa: S301 - written by stage_state() of this run

    #: in-process groups cannot be lost: no state needs keeping between windows
    snapshots_groups = False
    #: seconds spent serialising and moving batches and results: none in one process
    transfer_s = 0.0

    def run_window(self, g, batch, t_end, snapshot: bool = False, orders: dict | None = None):
        """The window's (output, raysim.runtime.timing.GroupCost): run here and now."""
        return run_timed(self.vcgroups[g], batch, t_end, orders)

    def get(self, g, handle):
        """(window output, its GroupCost, snapshot: none)."""
        return (*handle, None)

    def materialize(self, g, state):
        return self.vcgroups[g].checkpoint()

    def restore(self, g, state):
        self.vcgroups[g] = VCGroup.restore(state)

    rebuild = restore

    def finish(self, g, end):
        return self.vcgroups[g].finish(end)

    def placement(self) -> None:
        """Where the groups ran: in this process, on no Ray node (see RayExecutor.placement)."""
        return None
