"""Lucid (profiler + packing) on the Venus trace, end to end on Ray, Ray start-up included.

    python benchmarks/venus_lucid.py [--shared ../shared] [--vcs-per-actor 5] [--runtime ray|local] [--json]

Uses the reference inputs (Lucid's EBM estimates, throughput forecast and colocation profiles) in
compat mode, so the figures can be checked against the reference (avg JCT 12,886 s, queue 915 s).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(DEFAULT_SHARED))
    ap.add_argument("--runtime", default="ray", choices=["ray", "local"])
    ap.add_argument("--vcs-per-actor", type=int, default=5)
    ap.add_argument("--compat", default="lucid", choices=["lucid", "clean"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()

    from raysim.cluster.layout import layout_from_vc_nodes

    from raysim.run.simulate import simulate
    from raysim.policy import policy_settings
    from raysim.policy.lucid_inputs import lucid_inputs
    from raysim.models.estimates import estimates_for
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams
    from raysim.trace.load import load_trace

    shared = Path(args.shared)
    venus = shared / "traces" / "venus_sept"
    trace = load_trace(venus, cache_dir=Path.home() / ".cache" / "raysim")  # (not beside ../shared's copy)
    settings = policy_settings("lucid", {
        "profiler": {"take_from": ["vc8Gr", "vcefl"], "lender": "vcYVn"},
        "forecast": {"source": "file", "path": str(venus / "lucid_artifacts" / "throughput_forecast.csv")},
        "profiles": {"colocation": str(shared / "profiles" / "colocate_info.csv"),
                     "single": str(shared / "profiles" / "single_data.csv")}})
    est = estimates_for(trace.table, source="file", path=venus / "lucid_artifacts" / "duration_estimates_ebm.csv")
    spec, extra = lucid_inputs(settings, trace, RunSpec("lucid", "consolidate", SimParams.for_mode(args.compat),
                                                   layout_from_vc_nodes(trace.vc_nodes, 8)))
    setup_s = time.perf_counter() - t0
    startup_s = 0.0
    if args.runtime == "ray":
        from raysim.runtime.ray_backend import ensure_ray

        t = time.perf_counter()
        ensure_ray()
        startup_s = time.perf_counter() - t
    t = time.perf_counter()
    jobs, _ = simulate(trace, spec, est, job_extra=extra, runtime=args.runtime, vcs_per_actor=args.vcs_per_actor)
    sim_s = time.perf_counter() - t
    row = {"runtime": args.runtime, "compat": args.compat, "vcs_per_actor": args.vcs_per_actor,
           "jobs": trace.table.num_rows, "setup_s": round(setup_s, 2), "ray_startup_s": round(startup_s, 2),
           "simulate_s": round(sim_s, 2), "total_s": round(time.perf_counter() - t0, 2),
           "avg_jct": int(jobs.column("jct").to_numpy().mean()), "avg_queue": int(jobs.column("queue").to_numpy().mean())}
    print(json.dumps(row) if args.json else
          f"Lucid on Venus ({row['jobs']} jobs, {args.runtime}, {args.compat}): setup {setup_s:.2f} s, "
          f"Ray start-up {startup_s:.2f} s, simulation {sim_s:.2f} s, total {row['total_s']:.2f} s; "
          f"avg JCT {row['avg_jct']:,} s, avg queue {row['avg_queue']:,} s")


if __name__ == "__main__":
    main()
