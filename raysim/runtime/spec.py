"""What every runtime needs to build one VC's simulator, independent of where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.jobs import INPUT_COLUMNS


@dataclass(frozen=True)
class RunSpec:
    """Policy, placer and semantics of a run, plus the cluster layout (VC -> nodes, in layout order)."""

    policy: str
    placer: str
    params: SimParams
    vc_nodes: dict = field(default_factory=dict)
    gpus_per_node: int = 8
    t0: int = 0

    def make_simulator(self, vc: str) -> VCSimulator:
        index = list(self.vc_nodes).index(vc)
        return VCSimulator(
            vc, self.vc_nodes[vc],
            make_policy(self.policy, params=self.params),
            make_placer(self.placer, params=self.params, vc_index=index),
            self.params, gpus_per_node=self.gpus_per_node, t0=self.t0,
        )


def vc_batches(table: pa.Table, estimates: np.ndarray | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Split a trace table into per-VC numpy column batches (INPUT_COLUMNS), keeping row order.

    `seq` is the row index in the trace, the final tie-breaker everywhere.
    """
    n = table.num_rows
    vc = table.column("vc").combine_chunks()
    vc_codes = vc.indices.to_numpy(zero_copy_only=False)
    names = vc.dictionary.to_pylist()
    cols = {
        "job_id": table.column("job_id").to_numpy(),
        "seq": np.arange(n, dtype=np.int64),
        "submit_time": table.column("submit_time").to_numpy(),
        "duration": table.column("duration").to_numpy(),
        "gpu_num": table.column("gpu_num").to_numpy().astype(np.int64),
        "gpu_util": table.column("gpu_util").to_numpy(zero_copy_only=False).astype(np.float64),
        "gmem": table.column("gmem").to_numpy(zero_copy_only=False).astype(np.float64),
        "estimate": (np.full(n, np.nan) if estimates is None else np.asarray(estimates, dtype=np.float64)),
    }
    out = {}
    for code, name in enumerate(names):
        idx = np.flatnonzero(vc_codes == code)
        if len(idx):
            out[name] = {k: np.ascontiguousarray(v[idx], dtype=INPUT_COLUMNS[k]) for k, v in cols.items()}
    return out
