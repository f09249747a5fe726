"""Five baseline policies on the Venus trace, in-process: wall time per policy and jobs/s.

    python benchmarks/venus_baselines.py [--trace ../shared/traces/venus_sept] [--compat lucid] [--json]

Trace loading (from the Parquet cache after the first run) is timed separately from simulation. The
cache goes to ~/.cache/raysim, not beside the trace (a copy such as ../shared stays as it is).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.models.estimates import estimates_for
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import load_trace

POLICIES = ("fifo", "sjf", "srtf", "qssf", "tiresias")
DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "venus_sept"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE), help="trace file or folder (with vc_config.csv)")
    ap.add_argument("--estimates", default=None,
                    help="QSSF estimates CSV (default: lucid_artifacts/duration_estimates_ebm.csv beside the trace)")
    ap.add_argument("--compat", default="lucid", choices=["lucid", "clean"])
    ap.add_argument("--json", action="store_true", help="one JSON object per policy")
    args = ap.parse_args()

    t = time.perf_counter()
    trace = load_trace(args.trace, cache_dir=Path.home() / ".cache" / "raysim")
    load_s = time.perf_counter() - t
    est_path = Path(args.estimates) if args.estimates else Path(trace.source).parent / "lucid_artifacts" / "duration_estimates_ebm.csv"
    est = (estimates_for(trace.table, source="file", path=est_path) if est_path.exists()
           else estimates_for(trace.table, source="oracle"))
    n = trace.table.num_rows
    total = 0.0
    if not args.json:
        print(f"trace {trace.source}: {n} jobs, loaded in {load_s:.2f} s ({'cache' if trace.from_cache else 'parsed'})")
    for policy in POLICIES:
        spec = RunSpec(policy, "consolidate", SimParams.for_mode(args.compat), layout_from_vc_nodes(trace.vc_nodes, 8))
        t = time.perf_counter()
        jobs, _ = simulate(trace, spec, est)
        wall = time.perf_counter() - t
        total += wall
        jct = jobs.column("jct").to_numpy().mean()
        queue = jobs.column("queue").to_numpy().mean()
        row = {"policy": policy, "compat": args.compat, "jobs": n, "wall_s": round(wall, 3),
               "jobs_per_s": round(n / wall), "avg_jct": int(jct), "avg_queue": int(queue)}
        print(json.dumps(row) if args.json else
              f"{policy:9s} {wall:6.2f} s  {n / wall:9,.0f} jobs/s   avg JCT {int(jct):>7,}  avg queue {int(queue):>7,}")
    if not args.json:
        print(f"all five: {total:.2f} s")


if __name__ == "__main__":
    main()
