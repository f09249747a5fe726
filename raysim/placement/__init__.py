"""Placers find GPUs for a job; they never decide which job goes next (that is the policy's job).

A placer is a class with ``select(vc, demand) -> list[(node, gpu_count)] | None``: `vc` is the VC's
GPU state (raysim.sim.vc.VCState, read only) and `demand` the job's raysim.sim.demand.Demand (GPU
count, allowed GPU types, speed per type). A placement uses GPUs of one type only, among the
allowed ones. Register a placer in PLACERS and it is available as ``placer=<name>``; every placer
takes `type_order` (raysim.placement.types) besides the run's parameters.
"""

from __future__ import annotations

from raysim.placement.consolidate import Consolidate
from raysim.placement.first_fit import FirstFit
from raysim.placement.random_fit import RandomFit

PLACERS = {"consolidate": Consolidate, "first_fit": FirstFit, "random": RandomFit}


def make_placer(name: str, *, params, vc_index: int = 0, type_order: str = "any"):
    """Build the placer called `name` for one VC."""
    try:
        cls = PLACERS[name]
    except KeyError:
        raise ValueError(f"unknown placer {name!r}; choose one of {sorted(PLACERS)}") from None
    return cls(params=params, vc_index=vc_index, type_order=type_order)
