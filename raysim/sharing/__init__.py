"""GPU-sharing placement on a snapshot cluster: the FGD "inflation" experiment, re-created in numpy.

This package re-creates the experiment of "Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent" (Weng et al., USENIX ATC'23; simulator
github.com/hkust-adsl/kubernetes-scheduler-simulator) on the Alibaba GPU trace v2023 ("openb"):
pods arrive one at a time (a shuffled pod list, then pods sampled from it with replacement until the
requested GPUs reach ``tune`` x the cluster's GPUs), never leave, and each is placed by a policy on
one node or fails. Per percent of arrived GPU demand the run reports the GPU allocation ratio and the
fragmentation ratio, in the reference's CSV layout.

- :mod:`raysim.cluster.resources` (the resource model the VC engine uses too): node state (CPU, memory,
  per-GPU free milli), feasibility, placement and an over-allocation check. A pod takes CPU and
  memory on one node and either ``num_gpu`` whole free GPUs or ``gpu_milli`` (< 1000) of one GPU
  shared with other fractional pods.
- :mod:`raysim.placement.frag`: the target workload (the most frequent pod shapes) and FGD's node
  fragmentation measure, vectorised over nodes.
- :mod:`raysim.placement.scored`: Random, DotProd, GpuClustering, GpuPacking, BestFit and FGD, each
  with its node score and its GPU choice inside the node (registry :data:`SCORERS`); the VC
  engine's placers of the same names run them.
- :mod:`raysim.sharing.inflation`: the experiment and the analysis (allocation and fragmentation
  ratio per percent of arrived workload).

Pods in time (arrivals, departures, queueing) are ``+experiment=openb`` on the VC engine.

No Ray: a run is a numpy loop over arrivals (seconds per policy and seed). ``docs/sharing.md`` has
the definitions and every known difference from the reference.
"""

from raysim.cluster.resources import ResourceState, Nodes, OverAllocation, PodKinds, Pods
from raysim.placement.frag import FragModel, TargetWorkload, target_workload
from raysim.sharing.inflation import InflationRun, experiment, load_openb, run_inflation
from raysim.placement.scored import SCORERS, make_scorer

__all__ = [
    "ResourceState", "Nodes", "Pods", "PodKinds", "OverAllocation",
    "FragModel", "TargetWorkload", "target_workload",
    "InflationRun", "run_inflation", "experiment", "load_openb",
    "SCORERS", "make_scorer",
]
