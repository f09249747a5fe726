"""What every runtime needs to build one VC's simulator, independent of where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from raysim.placement import make_placer
from raysim.placement.frag import FragTracker
from raysim.placement.types import check_type_order
from raysim.policy import checked_constants, policy_class
from raysim.quota.ledger import QuotaLending
from raysim.quota.settings import QuotaSettings
from raysim.sim import SimParams, VCSimulator
from raysim.sim.attempts import Attempts
from raysim.sim.capacity import CapacityPlan
from raysim.sim.extensions import Capacity, Checkpoints, Network, Replays, Resources, SharedQueue
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.spares import SpareRules
from raysim.sim.standbys import StandbyRules
from raysim.sim.spot import SpotRules
from raysim.cluster.catalog import TypeCatalog
from raysim.sim.network import NetworkModel


@dataclass(frozen=True)
class RunSpec:
    """Policy, placer and semantics of a run, plus the cluster layout: VC -> its node pools
    (raysim.cluster.layout.Pool), in layout order."""

    policy: str
    placer: str
    params: SimParams
    layout: dict = field(default_factory=dict)
    t0: int = 0
    #: the policy's constants (conf/policy/<name>.yaml) and run inputs (e.g. Lucid's pair speeds);
    #: constants missing here are filled in from the policy's conf file
    policy_options: dict = field(default_factory=dict)
    #: how placers order GPU types (raysim.placement.types)
    type_order: str = "any"
    #: the profiling stage: None (pass-through) or the Lucid profiler's settings
    profiler: dict | None = None
    #: NIC contention between multi-node jobs: None (off) or NetworkModel's arguments
    network: dict | None = None
    #: GPU-type constraints and per-type speed profiles the jobs refer to by id
    catalog: TypeCatalog = field(default_factory=TypeCatalog)
    #: quotas between VCs (raysim.quota): with mode "global" the layout is one merged VC
    #: (GLOBAL_VC) and `pool_homes` names the VC each of its pools came from
    quota: QuotaSettings = field(default_factory=QuotaSettings)
    pool_homes: tuple = ()
    #: VCs count CPU, memory and GPU milli per node (jobs ask for GPU shares, CPU or memory, or a
    #: scored placer needs them); see raysim.sim.vc.VCState
    resources: bool = False
    #: the run's request shapes (raysim.placement.scored.placer.Shapes) with `resources`: for the
    #: scored placers and FGD's fragmentation in the time series
    shapes: object = None
    #: nodes that go down, come back, join or leave (raysim.sim.capacity); None: the nodes never change
    capacity: CapacityPlan | None = None
    #: checkpoint-restart: what a stop costs a job (raysim.sim.checkpoint); None: stops cost what they always did
    checkpoint: Checkpointing | None = None
    #: per-application checkpoint settings (None: that application does not checkpoint), which jobs
    #: name by their `checkpoint_kind` input (raysim.run.config.checkpoint_kinds)
    checkpoint_kinds: tuple = ()
    #: trace.failed=replay: the trace's jobs that ran several times (raysim.sim.attempts); None: each runs once
    attempts: Attempts | None = None
    #: priority classes (a trace's priority_class column): high-priority jobs evict spot jobs by these
    #: rules (raysim.sim.spot); None: one class
    spot: SpotRules | None = None
    #: a spare pool per VC and where nodes back in service go (spares.*: raysim.sim.spares); None: no
    #: pool, nodes back in their place
    spares: SpareRules | None = None
    #: warm standbys per multi-node job and the host-selection time (spares.standbys: raysim.sim.standbys);
    #: None: none
    standbys: StandbyRules | None = None

    def __post_init__(self):
        check_type_order(self.type_order)  # before any actor is built with it
        object.__setattr__(self, "policy_options", checked_constants(self.policy, self.policy_options))
        if not self.catalog.gpu_types:
            types = list(dict.fromkeys(p.gpu_type for pools in self.layout.values() for p in pools))
            object.__setattr__(self, "catalog", TypeCatalog(gpu_types=tuple(types),
                                                             constraints=self.catalog.constraints,
                                                             speeds=self.catalog.speeds))

    @property
    def checkpoints(self) -> bool:
        """Some jobs checkpoint (the run's settings or an application's)."""
        return self.checkpoint is not None or any(k is not None for k in self.checkpoint_kinds)

    @property
    def vcs(self) -> list[str]:
        """VC names in layout order."""
        return list(self.layout)

    def extensions(self, vc: str) -> list:
        """The engine's extensions this run's settings call for (raysim.sim.extensions), in their ORDER."""
        out = []
        if self.network:
            out.append(Network(NetworkModel(**self.network)))
        if self.quota.borrow:
            out.append(QuotaLending())
        if self.pool_homes:
            out.append(SharedQueue(self.pool_homes))
        if self.resources or any(p.limits_resources for p in self.layout[vc]):
            out.append(Resources(FragTracker(self.shapes.workload) if self.shapes is not None else None,
                                 self.layout if self.quota.borrow else None))
        if self.capacity is not None:
            out.append(Capacity(self.capacity))
        if self.checkpoints:
            ticks = self.params.ticks_per_s  # (the engine's clock)
            out.append(Checkpoints(self.checkpoint and self.checkpoint.in_ticks(ticks),
                                   tuple(k and k.in_ticks(ticks) for k in self.checkpoint_kinds)))
        if self.attempts is not None:
            out.append(Replays(self.attempts))
        if self.spot is not None:
            out.append(self.spot.extension(self.params.ticks_per_s, vc))
        if self.spares is not None:
            out += self.spares.extensions(self.params.ticks_per_s)
        if self.standbys is not None:
            out.append(self.standbys.extension(self.params.ticks_per_s))
        return out

    def make_simulator(self, vc: str) -> VCSimulator:
        index = self.vcs.index(vc)
        return VCSimulator(
            vc, self.layout[vc],
            policy_class(self.policy)(self.params, **self.policy_options),
            make_placer(self.placer, params=self.params, vc_index=index, type_order=self.type_order,
                        shapes=self.shapes),
            self.params, t0=self.t0, catalog=self.catalog, extensions=self.extensions(vc),
        )
