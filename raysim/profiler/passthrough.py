"""Pass-through profiler stage: every job reaches its VC at its submit time, unchanged."""

from __future__ import annotations

import pyarrow as pa

from raysim.profiler.stage import PROFILE_RECORD_SCHEMA, route


class PassThroughProfiler:
    """Routes each window's jobs to the VC group that simulates their VC."""

    def __init__(self, group_of_vc: dict[str, int], n_groups: int):
        self.group_of_vc = dict(group_of_vc)
        self.n_groups = n_groups

    def process(self, jobs: pa.Table, t_start: int, t_end: int):
        """Per-group {"jobs", "loans"} for [t_start, t_end) and the stage's status."""
        status = {"records": PROFILE_RECORD_SCHEMA.empty_table(), "next_event": None}
        return route(jobs, self.group_of_vc, self.n_groups), status
