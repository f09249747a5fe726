"""Pass-through profiler stage: every job reaches its VC at its submit time, unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from raysim.profiler.lgf import PROFILE_RECORD_SCHEMA


class PassThroughProfiler:
    """Routes each window's jobs to the VC group that simulates their VC."""

    def __init__(self, group_of_vc: dict[str, int], n_groups: int):
        self.group_of_vc = dict(group_of_vc)
        self.n_groups = n_groups

    def process(self, jobs: pa.Table, t_start: int, t_end: int):
        """Per-group {"jobs", "loans"} for [t_start, t_end) and the stage's status."""
        status = {"records": PROFILE_RECORD_SCHEMA.empty_table(), "next_event": None}
        if jobs.num_rows == 0:
            return [{"jobs": None, "loans": []} for _ in range(self.n_groups)], status
        if self.n_groups == 1:
            return [{"jobs": jobs, "loans": []}], status
        vc = pc.cast(jobs.column("vc"), pa.string()).to_numpy(zero_copy_only=False)
        group = np.fromiter((self.group_of_vc[v] for v in vc), dtype=np.int64, count=len(vc))
        return [{"jobs": jobs.filter(pa.array(group == g)), "loans": []} for g in range(self.n_groups)], status
