"""Jobs of several equal workers in a trace replay (a trace's `workers` column, docs/spot.md): the
job input `workers` (raysim.sim.jobs), which the run's placer turns into one node per worker
(raysim.placement.workers), and what such a trace cannot run with, refused in one line rather than
placed as jobs of one piece."""

from __future__ import annotations

import numpy as np
from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.placement import PLACERS, SCORED
from raysim.placement.workers import places_workers
from raysim.policy import policy_class, policy_kind
from raysim.run.values import value
from raysim.trace.load import Trace

COLUMN = "workers"


def worker_inputs(cfg: DictConfig, trace: Trace, *, resources: bool) -> np.ndarray | None:
    """Per trace job its workers, or None where no job has more than one (a trace without the column
    runs as before). One ConfigError line for a placer that cannot place worker by worker
    (`placer.name`), a policy that does not place its jobs through the placer one by one (round-based,
    elastic and harvesting ones, and those that time their jobs: `policy.name`) and VCs that count
    CPU, memory or GPU shares (`trace.path`)."""
    if COLUMN not in trace.table.column_names:
        return None
    workers = trace.table.column(COLUMN).to_numpy(zero_copy_only=False).astype(np.int64)
    if not (workers > 1).any():
        return None
    why = "the trace's workers column places each worker of a job on one node"
    placer = value(cfg, "placer.name")
    if placer in SCORED or not places_workers(PLACERS[placer]):
        able = ", ".join(n for n in PLACERS if n not in SCORED and places_workers(PLACERS[n]))
        raise ConfigError("placer.name", f"{why}: placer {placer} cannot ({able} can)", placer)
    policy = value(cfg, "policy.name")
    if policy_kind(policy) != "event" or policy_class(policy).times_jobs:
        raise ConfigError("policy.name", f"{why}: policy {policy} places jobs by GPU counts itself (an event-driven "
                                         "policy that starts jobs through the placer can: fifo, sjf, ...)", policy)
    if resources:
        raise ConfigError("trace.path", f"{why}: workers of jobs that ask for GPU shares, CPU or memory are not "
                                        "modelled (drop the column, or the request columns)", trace.source)
    return workers
