"""The run's inputs that belong to no policy, as every policy family reads them (`RunInputs`).

A policy's `prepare` (raysim.policy.base.Policy.prepare) gets them beside its own typed settings, and
so do the families' input builders below the policies (raysim.rounds.settings, raysim.elastic.inputs):
a base module, so that none of them imports the policy layer for the type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunInputs:
    """What a policy's `prepare` may read besides its own settings: the run's inputs that belong to
    no policy (raysim.run.config.run_inputs makes them from the run's config)."""

    #: the cluster's throughput table file (cluster.throughput), or None
    throughput: str | None = None
    #: the reference GPU type: rounds.reference_type, else cluster.reference_gpu_type (None: not set)
    reference_type: str | None = None
    #: cluster.reference_gpu_type (None: not set)
    reference_gpu_type: str | None = None
    #: idle-node harvesting's inputs (the `harvest:` section, policy=bftrainer: a
    #: raysim.harvest.inputs.HarvestSettings), or None
    harvest: object | None = None
