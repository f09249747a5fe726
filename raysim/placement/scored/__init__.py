"""FGD's node scorers (its simulator calls them placement policies, `fgd.policy`): name -> class
(:data:`SCORERS`), run by the scored placers (raysim.placement.scored.placer,
``placer=fgd_random|dotprod|...|fgd``).

Each scorer scores the feasible nodes (:meth:`NodeScorer.score`, integers, higher is better; ties go to
a fixed random node order drawn once per run) and picks the GPUs inside the chosen node
(:meth:`NodeScorer.gpus`). Names and the reference's labels:

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

from raysim.placement.scored.base import NodeScorer, best_fit_gpus
from raysim.placement.scored.bestfit import BestFitScorer
from raysim.placement.scored.dotprod import DotProdScorer
from raysim.placement.scored.fgd import FGDScorer
from raysim.placement.scored.gpu_clustering import GpuClusteringScorer
from raysim.placement.scored.gpu_packing import GpuPackingScorer
from raysim.placement.scored.random import RandomScorer
from raysim.registry import Registry

SCORERS: Registry = Registry({
    cls.name: cls for cls in (RandomScorer, DotProdScorer, GpuClusteringScorer, GpuPackingScorer,
                              BestFitScorer, FGDScorer)
}, what="node scorer")
#: sc_policy label -> name (e.g. "06-FGD" -> "fgd").
BY_LABEL = {cls.label: name for name, cls in SCORERS.items()}


def scorer_class(name: str) -> type[NodeScorer]:
    """The class of a policy given its name or its label (``"fgd"``, ``"06-FGD"``, ``"FGD"``)."""
    key = str(name).strip()
    if key in SCORERS:
        return SCORERS[key]
    for label, pname in BY_LABEL.items():
        if key in (label, label.split("-", 1)[1]) or key.lower() == label.split("-", 1)[1].lower():
            return SCORERS[pname]
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(SCORERS)}")


def make_scorer(name: str, state, frag, kinds, rng: np.random.Generator) -> NodeScorer:
    return scorer_class(name)(state, frag, kinds, rng)


__all__ = ["SCORERS", "BY_LABEL", "NodeScorer", "scorer_class", "make_scorer", "best_fit_gpus"]
