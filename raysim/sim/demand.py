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
    for placers that prefer fast or slow types. On a VC that counts CPU, memory and GPU milli
    (raysim.sim.vc.VCState.res) also: `milli` of each GPU (less than 1000: a share of one GPU),
    `cpu` milli-cores and `mem` MiB on one node, and the request's `shape` id (scored placers). A
    job of several equal `workers` (a trace's workers column) has each worker's gpu_num / workers
    GPUs on one node (raysim.placement.workers)."""

    gpu_num: int
    types: frozenset | None = None
    speed: tuple | None = None
    milli: int = 1000
    cpu: int = 0
    mem: int = 0
    shape: int = -1
    workers: int = 1

    @property
    def whole_gpus_only(self) -> bool:
        """Whole GPUs and nothing else: what every placer handles by GPU counts alone."""
        return self.milli >= 1000 and not self.cpu and not self.mem
