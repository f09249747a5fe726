"""What a job asks of the cluster's GPU types: its type constraint and its speed on each type.

Jobs carry two small integer ids instead of strings: `constraint` indexes the run's list of GPU-type
sets a job may run on (-1: any type) and `speed_profile` indexes its list of speed profiles, each a
mapping GPU type -> how fast the job's work progresses there relative to its reference type
(-1: the same speed on every type). The run builds both lists once (raysim.cluster.catalog.TypeCatalog) and
every VC simulator turns them into indices of its own GPU types.
"""

from __future__ import annotations

from typing import NamedTuple


class Demand(NamedTuple):
    """What a placer must satisfy: `gpu_num` GPUs, all of one GPU type among `types` (indices into
    the VC's types; None: any), and the job's speed per type index (`speed`; None: 1 everywhere),
    for placers that prefer fast or slow types."""

    gpu_num: int
    types: frozenset | None = None
    speed: tuple | None = None
