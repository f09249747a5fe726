"""Benchmark: replay the whole machine (all 4,734 Summit nodes) with the 1,001-task ImageNet set.

Runs `conf/experiment/harvest_summit_full.yaml` end to end through `run_harvest` (load the node log
and tasks, slice, replay, write tables and plots) and prints the wall time. Needs the shared data
(RAYSIM_SHARED, default ../shared). Usage:

    python benchmarks/harvest_full.py [--max-jobs 10] [--allocator exact] [--out DIR] [--json]
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

from raysim.harvest.run import run_harvest  # noqa: E402
from raysim.paths import CONF_DIR  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-jobs", type=int, default=10)
    ap.add_argument("--allocator", default="exact")
    ap.add_argument("--tfwd", type=float, default=10)
    ap.add_argument("--precise", action="store_true")
    ap.add_argument("--out", type=Path, help="run folder to keep (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    shared = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared")).resolve()
    overrides = ["+experiment=harvest_summit_full", f"harvest.data_dir={shared / 'harvest'}",
                 f"harvest.max_jobs={args.max_jobs}", f"harvest.allocator={args.allocator}",
                 f"harvest.tfwd={args.tfwd}", f"harvest.precise={args.precise}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    with tempfile.TemporaryDirectory() as tmp:
        tic = time.perf_counter()
        summary = run_harvest(cfg, args.out or Path(tmp))
        wall = time.perf_counter() - tic
    keys = ("nodes", "jobs_total", "jobs_finished", "events", "decisions", "allocator_seconds", "makespan_h",
            "efficiency", "total_samples", "precost", "rescost", "busy_node_hours", "harvested_fraction")
    record = {"benchmark": "harvest_full", "wall_seconds": wall, "max_jobs": args.max_jobs,
              "allocator": args.allocator, "tfwd": args.tfwd, "precise": args.precise,
              **{k: summary[k] for k in keys}}
    if args.json:
        print(json.dumps(record))
        return
    print(f"harvest_full: {record['nodes']} nodes, {record['jobs_total']} tasks "
          f"({record['jobs_finished']} finished), {record['events']} events, allocator={args.allocator}, "
          f"max_jobs={args.max_jobs}")
    print(f"  wall time {wall:.1f} s (allocator {record['allocator_seconds']:.1f} s over "
          f"{record['decisions']} decisions)")
    print(f"  makespan {record['makespan_h']:.2f} h, efficiency {record['efficiency']:.3f}, "
          f"harvested {record['harvested_fraction']:.1%} of idle node-hours")


if __name__ == "__main__":
    main()
