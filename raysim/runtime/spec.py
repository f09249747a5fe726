"""What every runtime needs to build one VC's simulator, independent of where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from raysim.placement import make_placer
from raysim.policy import make_policy
from raysim.sim import SimParams, VCSimulator
from raysim.sim.network import NetworkModel


@dataclass(frozen=True)
class RunSpec:
    """Policy, placer and semantics of a run, plus the cluster layout (VC -> nodes, in layout order)."""

    policy: str
    placer: str
    params: SimParams
    vc_nodes: dict = field(default_factory=dict)
    gpus_per_node: int = 8
    t0: int = 0
    #: policy-specific inputs (e.g. Lucid's pair speeds and packing switch), passed to the policy
    policy_options: dict = field(default_factory=dict)
    #: the profiling stage: None (pass-through) or the Lucid profiler's settings
    profiler: dict | None = None
    #: NIC contention between multi-node jobs: None (off) or NetworkModel's arguments
    network: dict | None = None

    def make_simulator(self, vc: str) -> VCSimulator:
        index = list(self.vc_nodes).index(vc)
        return VCSimulator(
            vc, self.vc_nodes[vc],
            make_policy(self.policy, params=self.params, **self.policy_options),
            make_placer(self.placer, params=self.params, vc_index=index),
            self.params, gpus_per_node=self.gpus_per_node, t0=self.t0,
            network=NetworkModel(**self.network) if self.network else None,
        )
