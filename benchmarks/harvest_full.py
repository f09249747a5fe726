"""Benchmark: harvest the whole machine (all 4,734 Summit nodes) with the 1,001-task ImageNet set.

Runs `conf/experiment/harvest_summit_full.yaml` end to end as a cluster run under policy=bftrainer
(load the node log and tasks, build the capacity plan, simulate, write jobs.parquet, the time series,
summary and plots) and prints the wall time. Needs the shared data (RAYSIM_SHARED, default
../shared). Usage:

    python benchmarks/harvest_full.py [--max-jobs 10] [--allocator exact] [--runtime local|ray] [--out DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hydra import compose, initialize_config_dir  # noqa: E402

from raysim.paths import CONF_DIR  # noqa: E402
from raysim.run import run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-jobs", type=int, default=10)
    ap.add_argument("--allocator", default="exact")
    ap.add_argument("--tfwd", type=float, default=10)
    ap.add_argument("--precise", action="store_true")
    ap.add_argument("--runtime", default="local", choices=("local", "ray"),
                    help="local (in-process, the default here) or ray (the experiment's default)")
    ap.add_argument("--out", type=Path, help="run folder to keep (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    shared = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared")).resolve()
    overrides = ["+experiment=harvest_summit_full", f"harvest.data_dir={shared / 'harvest'}",
                 f"harvest.max_jobs={args.max_jobs}", f"harvest.allocator={args.allocator}",
                 f"harvest.tfwd={args.tfwd}", f"harvest.precise={args.precise}", f"runtime={args.runtime}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    with tempfile.TemporaryDirectory() as tmp:
        tic = time.perf_counter()
        summary = run(cfg, args.out or Path(tmp))
        wall = time.perf_counter() - tic
    keys = ("jobs", "finished", "makespan_h", "efficiency", "total_samples", "precost", "rescost", "rescales",
            "busy_node_hours", "harvested_fraction")
    record = {"benchmark": "harvest_full", "wall_seconds": wall, "runtime": args.runtime, "max_jobs": args.max_jobs,
              "allocator": args.allocator, "tfwd": args.tfwd, "precise": args.precise,
              **{k: summary[k] for k in keys}}
    if args.json:
        print(json.dumps(record, default=float))
        return
    print(f"harvest_full: {record['jobs']} tasks ({record['finished']} finished), allocator={args.allocator}, "
          f"max_jobs={args.max_jobs}, runtime={args.runtime}")
    print(f"  wall time {wall:.1f} s")
    print(f"  makespan {record['makespan_h']:.2f} h, efficiency {record['efficiency']:.3f}, "
          f"harvested {record['harvested_fraction']:.1%} of idle node-hours")


if __name__ == "__main__":
    main()
