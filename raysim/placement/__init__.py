"""Placers find GPUs for a job; they never decide which job goes next (that is the policy's job).

A placer is a class with ``select(vc, demand) -> placement | None``: `vc` is the VC's state
(raysim.sim.vc.VCState, read only) and `demand` the job's raysim.sim.demand.Demand (GPU count,
allowed GPU types, speed per type; on a VC that counts CPU, memory and GPU milli also the job's GPU
milli, CPU, memory and request shape). A placement is a list of (node, GPU count) entries, or
(node, GPU count, GPU ids) where the placer chose the GPUs; it uses GPUs of one type only, among the
allowed ones. Register a placer in PLACERS and it is available as ``placer=<name>``; every placer
takes `type_order` (raysim.placement.types) besides the run's parameters.

raysim's own placers (consolidate, first_fit, random) place whole-GPU jobs by GPU counts and every
other job by raysim.placement.resources; a job of several equal workers (`demand.workers`) they
place worker by worker, each worker's GPUs on one node (raysim.placement.workers: their `worker_node`). FGD's scored placers (SCORED: names -> the reference's
policies of raysim.placement.scored) score every feasible node; they need the run's request shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from raysim.placement.consolidate import Consolidate
from raysim.placement.first_fit import FirstFit
from raysim.placement.random_fit import RandomFit
from raysim.placement.types import TYPE_ORDERS
from raysim.registry import Registry
from raysim.settings import parse, setting

#: placer name -> the scored policy of raysim.placement.scored it runs (FGD's Random is "fgd_random",
#: as raysim's own "random" placer came first)
SCORED = {"fgd_random": "random", "dotprod": "dotprod", "gpu_clustering": "gpu_clustering",
          "gpu_packing": "gpu_packing", "bestfit": "bestfit", "fgd": "fgd"}
#: every placer name -> its class; for the scored ones, their node scorer (raysim.placement.scored),
#: which make_placer runs in a ScoredPlacer
PLACERS = Registry({"consolidate": Consolidate, "first_fit": FirstFit, "random": RandomFit,
                    **{name: f"raysim.placement.scored:{scorer}" for name, scorer in (
                        ("fgd_random", "RandomScorer"), ("dotprod", "DotProdScorer"),
                        ("gpu_clustering", "GpuClusteringScorer"), ("gpu_packing", "GpuPackingScorer"),
                        ("bestfit", "BestFitScorer"), ("fgd", "FGDScorer"))}}, what="placer")


@dataclass(frozen=True)
class PlacerSettings:
    """What every placer takes (conf/placer/<name>.yaml)."""

    type_order: str = setting("any", "GPU types tried: any (all compete) | given (layout order) | fastest | "
                              "slowest (the job's speed)", choices=TYPE_ORDERS)


def placer_settings(name: str, values=None) -> PlacerSettings:
    """Placer `name`'s checked settings (`values`: the composed `placer` group without its name); a
    bad or unknown one is a ConfigError naming `placer.<key>`."""
    return parse(PlacerSettings, values or {}, prefix="placer", owner=f"placer {name}")


def make_placer(name: str, *, params, vc_index: int = 0, type_order: str = "any", shapes=None):
    """Build the placer called `name` for one VC (`shapes`: the run's request shapes, which the
    scored placers need; raysim.placement.scored.placer.Shapes)."""
    if name in SCORED:
        from raysim.placement.scored.placer import ScoredPlacer

        return ScoredPlacer(SCORED[name], params=params, vc_index=vc_index, type_order=type_order, shapes=shapes)
    return PLACERS.get_known(name)(params=params, vc_index=vc_index, type_order=type_order)
