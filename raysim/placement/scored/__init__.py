"""FGD's placement policies: name -> class (:data:`POLICIES`), run by the scored placers
(raysim.placement.scored.placer, ``placer=fgd_random|dotprod|...|fgd``).

Each policy scores the feasible nodes (:meth:`Policy.score`, integers, higher is better; ties go to
a fixed random node order drawn once per run) and picks the GPUs inside the chosen node
(:meth:`Policy.gpus`). Names and the reference's labels:

========================  ===================  ============================================
name                      label (sc_policy)    module
========================  ===================  ============================================
``random``                01-Random            :mod:`raysim.placement.scored.random`
``dotprod``               02-DotProd           :mod:`raysim.placement.scored.dotprod`
``gpu_clustering``        03-GpuClustering     :mod:`raysim.placement.scored.gpu_clustering`
``gpu_packing``           04-GpuPacking        :mod:`raysim.placement.scored.gpu_packing`
``bestfit``               05-BestFit           :mod:`raysim.placement.scored.bestfit`
``fgd``                   06-FGD               :mod:`raysim.placement.scored.fgd`
========================  ===================  ============================================
"""

from __future__ import annotations

import numpy as np

from raysim.placement.scored.base import Policy, best_fit_gpus
from raysim.placement.scored.bestfit import BestFitPolicy
from raysim.placement.scored.dotprod import DotProdPolicy
from raysim.placement.scored.fgd import FGDPolicy
from raysim.placement.scored.gpu_clustering import GpuClusteringPolicy
from raysim.placement.scored.gpu_packing import GpuPackingPolicy
from raysim.placement.scored.random import RandomPolicy

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (RandomPolicy, DotProdPolicy, GpuClusteringPolicy, GpuPackingPolicy,
                              BestFitPolicy, FGDPolicy)
}
#: sc_policy label -> name (e.g. "06-FGD" -> "fgd").
BY_LABEL = {cls.label: name for name, cls in POLICIES.items()}


def policy_class(name: str) -> type[Policy]:
    """The class of a policy given its name or its label (``"fgd"``, ``"06-FGD"``, ``"FGD"``)."""
    key = str(name).strip()
    if key in POLICIES:
        return POLICIES[key]
    for label, pname in BY_LABEL.items():
        if key in (label, label.split("-", 1)[1]) or key.lower() == label.split("-", 1)[1].lower():
            return POLICIES[pname]
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")


def make_policy(name: str, state, frag, kinds, rng: np.random.Generator) -> Policy:
    return policy_class(name)(state, frag, kinds, rng)


__all__ = ["POLICIES", "BY_LABEL", "Policy", "policy_class", "make_policy", "best_fit_gpus"]
