"""What every profiling stage shares: its record schema and the routing of jobs to VC groups."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: One record per job whose profiling ended: when, how long it waited, whether it finished there.
PROFILE_RECORD_SCHEMA = pa.schema([("seq", pa.int64()), ("prof_start", pa.int64()), ("prof_end", pa.int64()),
                                   ("prof_queue", pa.int64()), ("finished", pa.bool_())])


def route(jobs: pa.Table | None, group_of_vc: dict[str, int], n_groups: int) -> list[dict]:
    """Per-group stage outputs {"jobs", "loans"}: each job goes to the group simulating its VC."""
    outputs = [{"jobs": None, "loans": []} for _ in range(n_groups)]
    if jobs is None or not jobs.num_rows:
        return outputs
    if n_groups == 1:
        outputs[0]["jobs"] = jobs
        return outputs
    vc = pc.cast(jobs.column("vc"), pa.string()).to_numpy(zero_copy_only=False)
    group = np.fromiter((group_of_vc[v] for v in vc), dtype=np.int64, count=len(vc))
    for g in np.unique(group):  # only the groups with arrivals: a window costs what arrives in it
        outputs[g]["jobs"] = jobs.filter(pa.array(group == g))
    return outputs
