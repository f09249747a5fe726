"""Elastic policies on Sia's Saturn workloads, end to end as a user runs them: the wall time of
`python -m raysim +experiment=sia_saturn policy=<p>` (one process: start-up, reading the trace and
profiles, the simulation, writing results), the average JCT and makespan, next to Sia's simulator's
figures where ../shared/references/sia/results has them (workload 1; Sia's run took 294 s on a
2-core machine, its README).

    python benchmarks/elastic.py [--policies sia pollux gavel_elastic] [--workloads saturn/workload-1 ...]
                                 [--runtime local|ray]

Inputs: ../shared (RAYSIM_SHARED) when present, else the cached datasets sia_workloads and
sia_profiles (`raysim data fetch sia_workloads sia_profiles`).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared")) / "references" / "sia"
#: Sia's simulator on workload 1, this machine class (../shared/references/sia/README.md)
SIA_WALL_S = {"sia": 294.0, "gavel_elastic": 104.0}
REFERENCE = {"sia": "sia_workload-1.csv", "gavel_elastic": "gavel_workload-1.csv",
             "pollux": "pollux_workload-1_partial.csv"}


def inputs(workload: str) -> list[str]:
    if SHARED.is_dir():
        return [f"trace.path={SHARED / 'workloads' / (workload + '.csv')}", f"policy.profiles={SHARED / 'profiles'}"]
    return [f"trace.path=data:sia_workloads/{workload}.csv"]


def reference(policy: str, workload: str):
    path = SHARED / "results" / REFERENCE.get(policy, "")
    if workload != "saturn/workload-1" or not path.is_file():
        return None
    rows = list(csv.DictReader(path.open()))
    jct = [float(r["jct_s"]) for r in rows if r["jct_s"]]
    end = [float(r["completion_time_s"]) for r in rows if r["completion_time_s"]]
    return np.mean(jct) / 3600, max(end), len(jct)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", nargs="+", default=["sia", "pollux", "gavel_elastic"])
    ap.add_argument("--workloads", nargs="+", default=["saturn/workload-1"])
    ap.add_argument("--runtime", default="local", choices=["local", "ray"])
    args = ap.parse_args()
    print(f"{'workload':<20} {'policy':<14} {'wall s':>7} {'avg JCT h':>9} {'makespan s':>10}   Sia's simulator")
    for workload in args.workloads:
        for policy in args.policies:
            with tempfile.TemporaryDirectory() as out:
                cmd = [sys.executable, "-m", "raysim", "+experiment=sia_saturn", f"policy={policy}",
                       f"runtime={args.runtime}", f"hydra.run.dir={out}", *inputs(workload)]
                start = time.perf_counter()
                subprocess.run(cmd, check=True, cwd=REPO, capture_output=True)
                wall = time.perf_counter() - start
                jobs = pq.read_table(Path(out) / "jobs.parquet").to_pandas()
            ref = reference(policy, workload)
            theirs = ""
            if ref is not None:
                theirs = f"avg JCT {ref[0]:.3f} h, makespan {ref[1]:,.0f} s ({ref[2]} jobs)"
                if policy in SIA_WALL_S:
                    theirs += f", {SIA_WALL_S[policy]:.0f} s wall: {SIA_WALL_S[policy] / wall:.1f}x"
            print(f"{workload:<20} {policy:<14} {wall:7.1f} {jobs.jct.mean() / 3600:9.3f} "
                  f"{jobs.end_time.max():10,.0f}   {theirs}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
