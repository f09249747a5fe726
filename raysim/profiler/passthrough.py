"""Pass-through profiler stage: every job reaches its VC at its submit time, unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class PassThroughProfiler:
    """Routes each window's jobs to the VC group that simulates their VC."""

    def __init__(self, group_of_vc: dict[str, int], n_groups: int):
        self.group_of_vc = dict(group_of_vc)
        self.n_groups = n_groups

    def process(self, jobs: pa.Table, t_start: int, t_end: int) -> list[pa.Table]:
        """Jobs leaving profiling in [t_start, t_end), split per VC group (row order kept)."""
        if self.n_groups == 1 or jobs.num_rows == 0:
            return [jobs] + [jobs.slice(0, 0)] * (self.n_groups - 1)
        vc = pc.cast(jobs.column("vc"), pa.string()).to_numpy(zero_copy_only=False)
        group = np.fromiter((self.group_of_vc[v] for v in vc), dtype=np.int64, count=len(vc))
        return [jobs.filter(pa.array(group == g)) for g in range(self.n_groups)]
