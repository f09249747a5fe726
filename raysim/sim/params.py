"""Semantic switches of the simulator: the clean defaults and the Lucid-compatible set.

`compat=lucid` reproduces the published Lucid simulator job for job, defects included; every
difference from the clean semantics is one named switch here (and one row in the table of docs/lucid.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimParams:
    #: Countdown policies (SRTF, Tiresias) start counting the second after placement, so an
    #: uninterrupted job ends at start + duration + 1 (Lucid defect). Clean: 0.
    countdown_lag: int = 0
    #: SRTF ordering: on equal remaining time a pending job goes before a running one, which can
    #: preempt a job only to start an identical one (Lucid). Clean: running jobs win ties.
    pending_first_on_ties: bool = False
    #: QSSF: priorities are assigned (and the queue sorted by them) only in seconds where some queued
    #: job arrived earlier; otherwise the queue is sorted by GPU count only (Lucid defect).
    #: Clean: priority assigned at arrival, queue always in priority order.
    qssf_late_priority: bool = False
    #: Multi-node consolidate placement: "reference" scans nodes by free GPUs descending and gives up
    #: at the first obstacle (Lucid defect); "search_all" searches every node.
    multinode_search: str = "search_all"
    #: Node loans: the lender gives away its largest-named idle node and nodes are renamed like the
    #: reference (a returned node is called 9999; a second one is refused) (Lucid). Clean: the last
    #: idle node in scan order goes, nodes keep their names.
    reference_node_naming: bool = False
    #: Node loans: a lender with no idle node owes one and gives the next node that becomes idle
    #: (clean). Lucid: nothing is lent.
    loans_wait_for_idle: bool = True
    #: Lucid packing: when the first of two GPU-sharing jobs ends, the other keeps its pair speed and
    #: never shares again (the reference finds the ending job itself as "the partner") (Lucid).
    #: Clean: the survivor returns to full speed and may share again.
    partner_keeps_pair_speed: bool = False
    #: Lucid profiler: a job that outlives profiling enters its VC at its submit time with its full
    #: duration, only the profiling wait is added to its queue (Lucid). Clean: it enters its VC when
    #: profiling ends, keeps the work done there, and the wait counts in queue and JCT.
    profiled_jobs_keep_submit_time: bool = False
    #: Seconds between time-series samples (aligned to multiples on the trace clock).
    sample_interval: int = 60
    #: Clock ticks per second: times inside the simulator (submit, start, end, events) count ticks.
    #: 1 (whole seconds) unless the policy needs finer (raysim.policy.base.Policy.ticks_per_s).
    ticks_per_s: int = 1
    #: Seed for randomised components (the random placer); combined with the VC index.
    seed: int = 0

    @classmethod
    def for_mode(cls, compat: str, **overrides) -> "SimParams":
        """The switch set of a semantic mode: "clean" (default) or "lucid"."""
        if compat == "clean":
            return cls(**overrides)
        if compat == "lucid":
            return cls(
                countdown_lag=1,
                pending_first_on_ties=True,
                qssf_late_priority=True,
                multinode_search="reference",
                reference_node_naming=True,
                loans_wait_for_idle=False,
                partner_keeps_pair_speed=True,
                profiled_jobs_keep_submit_time=True,
                **overrides,
            )
        raise ValueError(f"sim.compat must be 'clean' or 'lucid', not {compat!r}")
