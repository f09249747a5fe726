"""Gavel's policy family on Gavel's own trace, through the VC engine: raysim's wall time per policy
next to the wall time Gavel's simulator recorded for the same run (../shared/references/gavel/
results_seed0.csv, a 2-core machine), LP solve time, and the average JCTs next to Gavel's. With
`--second-trace` also a second Gavel trace made by Gavel's generator (seed 1, same shape; no Gavel
result to compare JCTs with), for the "ten policies x two traces" total.

    python benchmarks/gavel.py [--policies gavel_fifo max_min_fairness_perf ...] [--repeat 3]
                               [--lp-method ipm|simplex] [--second-trace] [--json]
    python benchmarks/gavel.py --write-second-trace FILE

`--write-second-trace` writes the second trace as a file in Gavel's format (whole steps, as Gavel's
scripts/utils/generate_trace.py writes them: from seed 0 this gives the jobs of Gavel's trace
file, their types, steps, sizes and arrivals), for the multirun commands of benchmarks/README.md,
and stops.

Timing: `raysim.run.rounds.run_gavel_jobs` (Gavel's jobs -> raysim trace -> VC engine ->
jobs table), the best of --repeat runs in this process, after one untimed warm-up run (imports,
HiGHS start-up). Gavel's figure is its `simulate()`.
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
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from raysim.cluster.layout import Pool  # noqa: E402
from raysim.cluster.throughput import read_gavel_throughputs  # noqa: E402
from raysim.rounds import lp  # noqa: E402
from raysim.rounds.generate import generate_jobs  # noqa: E402
from raysim.run.rounds import run_gavel_jobs  # noqa: E402
from raysim.trace.gavel import read_gavel_trace, write_gavel_trace  # noqa: E402

SHARED = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared"))
#: raysim's name -> Gavel's (results_seed0.csv)
POLICIES = {"gavel_fifo": "fifo", "fifo_perf": "fifo_perf", "isolated": "isolated",
            "max_min_fairness": "max_min_fairness", "max_min_fairness_perf": "max_min_fairness_perf",
            "finish_time_fairness": "finish_time_fairness", "finish_time_fairness_perf": "finish_time_fairness_perf",
            "max_sum_throughput_perf": "max_sum_throughput_perf", "min_total_duration_perf": "min_total_duration_perf",
            "gandiva": "gandiva"}
CONSTANTS = {"gavel_fifo": {"type_choice": "gavel"}}
LAYOUT = {"cluster": [Pool(t, 4, 2) for t in ("V100", "P100", "K80")]}
#: Gavel's simulator, the twenty runs (ten policies x two traces) on a 2-core machine (issue figure)
GAVEL_TWENTY_S = 160.0


def second_trace(table):
    """Gavel's generator (its continuous multi-GPU workload) with seed 1: the jobs of the second trace."""
    from omegaconf import OmegaConf

    from raysim.paths import CONF_DIR

    conf = OmegaConf.load(CONF_DIR / "experiment" / "gavel_continuous.yaml")
    templates = [(t["model"], t["distributed"]) for t in conf.rounds.generate.templates]
    return generate_jobs(table, templates, jobs=300, lam_s=8000, seed=1, reference_type="v100")


def one_run(name: str, jobs, table, lp_method: str):
    lp.reset_solve_time()
    start = time.perf_counter()
    out = run_gavel_jobs(jobs, LAYOUT, table, name, reference_type="V100", type_order=["V100", "P100", "K80"],
                         lp_method=lp_method, **CONSTANTS.get(name, {}))
    return time.perf_counter() - start, out.column("jct").to_numpy(zero_copy_only=False).astype(float), \
        dict(lp.SOLVE_TIME)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lp-method", default="ipm", choices=["ipm", "simplex"])
    parser.add_argument("--second-trace", action="store_true", help="also Gavel's generator, seed 1")
    parser.add_argument("--json", action="store_true", help="print one JSON line per policy instead of a table")
    parser.add_argument("--write-second-trace", metavar="FILE", help="write the seed-1 trace in Gavel's format and stop")
    args = parser.parse_args()
    folder = SHARED / "references" / "gavel"
    if not (folder / "results_seed0.csv").exists():
        print(f"Gavel's reference results not found in {folder} (set RAYSIM_SHARED)", file=sys.stderr)
        return 2
    table = read_gavel_throughputs(folder / "simulation_throughputs.json")
    if args.write_second_trace:
        jobs = second_trace(table)
        steps = jobs.schema.get_field_index("total_steps")
        whole = pa.array([float(int(n)) for n in jobs.column(steps).to_pylist()], jobs.schema.field(steps).type)
        print(write_gavel_trace(jobs.set_column(steps, jobs.schema.field(steps), whole), args.write_second_trace))
        return 0
    traces = {"seed0": read_gavel_trace(folder / "gavel_seed0_lam8000_n300.trace")}
    if args.second_trace:
        traces["seed1"] = second_trace(table)
    reference = pd.read_csv(folder / "results_seed0.csv").set_index("policy")
    one_run("fifo_perf", traces["seed0"], table, args.lp_method)  # warm-up
    rows = []
    for trace, jobs in traces.items():
        for name in args.policies:
            runs = [one_run(name, jobs, table, args.lp_method) for _ in range(args.repeat)]
            wall, jct, solves = min(runs, key=lambda r: r[0])
            row = {"trace": trace, "policy": name, "wall_s": round(wall, 3), "lp_solves": solves["lps"],
                   "lp_s": round(solves["seconds"], 3), "avg_jct_all": round(float(np.nanmean(jct)), 1)}
            if trace == "seed0":
                ref = reference.loc[POLICIES[name]]
                row.update(gavel_wall_s=float(ref.wall_s), speedup=round(float(ref.wall_s) / wall, 1),
                           jct_window_vs_gavel_pct=round(100 * (jct[100:200].mean() / ref.avg_jct_window - 1), 2),
                           jct_all_vs_gavel_pct=round(100 * (np.nanmean(jct) / ref.avg_jct_all - 1), 2))
            rows.append(row)
    if args.json:  # JSON lines, one per run (benchmarks/before_after.py reads them)
        for row in rows:
            print(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(), "lp_method": args.lp_method, **row}))
        return 0
    frame = pd.DataFrame(rows)
    print(f"Gavel's traces (300 jobs, 8 V100 + 8 P100 + 8 K80), LP method {args.lp_method}, "
          f"best of {args.repeat} on {os.cpu_count()} CPUs")
    print(frame.to_string(index=False))
    seed0 = frame[frame.trace == "seed0"]
    print(f"\nseed-0 trace: raysim {seed0.wall_s.sum():.2f} s, Gavel {seed0.gavel_wall_s.sum():.2f} s "
          f"({seed0.gavel_wall_s.sum() / seed0.wall_s.sum():.1f}x)")
    if args.second_trace:
        print(f"twenty runs: raysim {frame.wall_s.sum():.2f} s, Gavel {GAVEL_TWENTY_S:.0f} s "
              f"({GAVEL_TWENTY_S / frame.wall_s.sum():.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
