"""Gavel's policy family on Gavel's own trace: raysim's wall time per policy next to the wall time
Gavel's simulator recorded for the same run (../shared/references/gavel/results_seed0.csv, measured
on a 2-core machine), the LP solve time per round and per solve, and the average JCTs next to Gavel's.

    python benchmarks/gavel.py [--policies fifo max_min_fairness_perf ...] [--repeat 3]
                               [--lp-method ipm|simplex] [--json]   (--json: one JSON line per policy)

Timing: RoundEngine.run() only (Gavel's figure is its simulate()), the best of --repeat runs in
this process, after one untimed warm-up run of fifo_perf (imports, HiGHS start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from raysim.cluster.throughput import read_gavel_throughputs  # noqa: E402
from raysim.rounds import lp  # noqa: E402
from raysim.rounds.cluster import RoundCluster, RoundJobs, pair_throughputs, throughput_matrix  # noqa: E402
from raysim.rounds.engine import RoundEngine  # noqa: E402
from raysim.rounds.policies import round_policy  # noqa: E402
from raysim.trace.gavel import read_gavel_trace  # noqa: E402

SHARED = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared"))
POLICIES = ("fifo", "fifo_perf", "isolated", "max_min_fairness", "max_min_fairness_perf", "finish_time_fairness",
            "finish_time_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf", "gandiva")
CONSTANTS = {"fifo": {"type_choice": "gavel"}}


def one_run(name: str, jobs, cluster, thr, table):
    policy = round_policy(name, seed=0, **CONSTANTS.get(name, {}))
    engine = RoundEngine(jobs, cluster, thr, policy, type_order=["V100", "P100", "K80"], reference_type="V100",
                         seed=0, pair_throughputs=pair_throughputs(jobs, cluster, table) if policy.packing else None)
    lp.reset_solve_time()
    start = time.perf_counter()
    result = engine.run()
    return time.perf_counter() - start, result, dict(lp.SOLVE_TIME)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lp-method", default="ipm", choices=["ipm", "simplex"])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    folder = SHARED / "references" / "gavel"
    if not (folder / "results_seed0.csv").exists():
        print(f"Gavel's reference results not found in {folder} (set RAYSIM_SHARED)", file=sys.stderr)
        return 2
    lp.SOLVER["method"] = args.lp_method
    table = read_gavel_throughputs(folder / "simulation_throughputs.json")
    jobs = RoundJobs.from_table(read_gavel_trace(folder / "gavel_seed0_lam8000_n300.trace"))
    cluster = RoundCluster(("K80", "P100", "V100"), np.array([8, 8, 8]), np.array([4, 4, 4]))
    thr = throughput_matrix(jobs, cluster, table)
    reference = pd.read_csv(folder / "results_seed0.csv").set_index("policy")
    one_run("fifo_perf", jobs, cluster, thr, table)
    rows = []
    for name in args.policies:
        runs = [one_run(name, jobs, cluster, thr, table) for _ in range(args.repeat)]
        wall, result, solves = min(runs, key=lambda r: r[0])
        jct = result.completion - jobs.arrival_time
        ref = reference.loc[name]
        rows.append({"policy": name, "wall_s": round(wall, 3), "gavel_wall_s": float(ref.wall_s),
                     "speedup": round(float(ref.wall_s) / wall, 1), "rounds": result.rounds,
                     "lp_solves": solves["lps"], "lp_s": round(solves["seconds"], 3),
                     "lp_ms_per_round": round(1e3 * solves["seconds"] / result.rounds, 3),
                     "lp_ms_per_solve": round(1e3 * solves["seconds"] / max(solves["lps"], 1), 3),
                     "jct_window_vs_gavel_pct": round(100 * (jct[100:200].mean() / ref.avg_jct_window - 1), 2),
                     "jct_all_vs_gavel_pct": round(100 * (np.nanmean(jct) / ref.avg_jct_all - 1), 2)})
    if args.json:  # JSON lines, one per policy (benchmarks/before_after.py reads them)
        for row in rows:
            print(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(), "lp_method": args.lp_method, **row}))
        return 0
    print(f"Gavel's trace (300 jobs, 8 V100 + 8 P100 + 8 K80), LP method {args.lp_method}, "
          f"best of {args.repeat} on {os.cpu_count()} CPUs")
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
