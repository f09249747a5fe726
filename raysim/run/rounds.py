"""Round-based runs without a config: Gavel's jobs on a cluster under one of its policies, through
the VC engine, for tests, benchmarks and scripts (`python -m raysim +experiment=gavel_trace` is the
configured way). Results are jobs.parquet's table (raysim.report.results)."""

from __future__ import annotations

import pyarrow as pa

from raysim.cluster.throughput import ThroughputTable
from raysim.policy import policy_class
from raysim.policy.rounds import RoundBased
from raysim.rounds.inputs import gavel_trace_table, round_inputs, run_types
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.errors import SkipReport


def round_spec(trace: pa.Table, layout: dict, table: ThroughputTable | None, policy: str, *, seed: int = 0,
               round_s: float = 360.0, reset_min_s: float = 1920.0, type_order=None, reference_type=None,
               lp_method: str = "ipm", placer: str = "consolidate", **constants) -> RunSpec:
    """The run spec of round-based `policy` on `trace` (a raysim trace, e.g. gavel_trace_table's)."""
    cls = policy_class(policy)
    if not issubclass(cls, RoundBased):
        raise ValueError(f"{policy} is not a round-based policy")
    reference = reference_type or run_types(layout)[0]
    inputs = round_inputs(trace, layout, table, reference=reference, source="trace",
                          packing=cls.allocator_class().packing)
    params = SimParams(seed=seed, ticks_per_s=cls.ticks_per_s)
    options = {"inputs": inputs, "round_s": round_s, "reset_min_s": reset_min_s, "type_order": type_order,
               "reference_type": reference, "lp_method": lp_method, **constants}
    return RunSpec(policy, placer, params, layout, policy_options=options)


def run_gavel_jobs(jobs: pa.Table, layout: dict, table: ThroughputTable, policy: str, *, reference_type: str,
                   runtime: str = "local", **settings) -> pa.Table:
    """Simulate Gavel jobs (raysim.trace.gavel.SCHEMA) on `layout` (one VC) under `policy`;
    returns the jobs table (one row per job, ids as in `jobs`)."""
    from raysim.run.simulate import simulate
    from raysim.trace.load import Trace

    (vc,) = layout
    trace = gavel_trace_table(jobs, table, reference=reference_type, vc=vc, source="jobs")
    spec = round_spec(trace, layout, table, policy, reference_type=reference_type, **settings)
    result, _ = simulate(Trace(trace, {vc: sum(p.nodes for p in layout[vc])}, SkipReport(), "jobs"), spec,
                         runtime=runtime)
    return result
