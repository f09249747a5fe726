"""Capacity events' cost: the shipped Venus-like week in-process, with no node log, with the shipped
maintenance log, and with a seeded random log of many failures and repairs.

    python benchmarks/capacity.py [--policies fifo tiresias] [--failures 2000] [--repeat 3] [--json]
    python benchmarks/capacity.py --logs none --json     # the only case an older tree can run

Each case is simulated `--repeat` times (the median wall time is printed): `none` (no node log),
`maintenance` (traces/venus_synth/maintenance.csv, 37 events) and `failures` (`--failures` down/up
pairs on random nodes, seeded, repairs of 1-12 hours). Loading the trace and the node log is timed
apart; wall_s is the simulation and the result files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from raysim.cluster.layout import layout_from_vc_nodes
from raysim.paths import TRACES_DIR
from raysim.run.simulate import simulate
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import load_trace

LOGS = ("none", "maintenance", "failures")


def failure_log(path: Path, vc_nodes: dict, pairs: int, horizon: int, seed: int) -> Path:
    """`pairs` failures (down, then up 1-12 h later) on random nodes, none overlapping on a node."""
    rng = np.random.default_rng(seed)
    names = list(vc_nodes)
    busy: dict = {}
    rows = []
    while len(rows) < 2 * pairs:
        vc = names[int(rng.integers(len(names)))]
        node = int(rng.integers(vc_nodes[vc]))
        down = int(rng.integers(1, horizon))
        up = down + int(rng.integers(3_600, 43_200))
        spans = busy.setdefault((vc, node), [])
        if any(a <= up and down <= b for a, b in spans):
            continue
        spans.append((down, up))
        rows += [(down, vc, node, "down"), (up, vc, node, "up")]
    rows.sort()
    path.write_text("time,vc,node,event,cause\n" + "".join(f"{t},{v},{n},{e},failure\n" for t, v, n, e in rows))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--logs", nargs="+", default=list(LOGS), choices=LOGS)
    ap.add_argument("--failures", type=int, default=2000, help="down/up pairs of the random log")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object per case")
    args = ap.parse_args()

    trace = load_trace(TRACES_DIR / "venus_synth")
    layout = layout_from_vc_nodes(trace.vc_nodes, 8)
    horizon = int(trace.table.column("submit_time").to_numpy().max())
    with tempfile.TemporaryDirectory() as tmp:
        logs = {"none": None, "maintenance": TRACES_DIR / "venus_synth" / "maintenance.csv",
                "failures": failure_log(Path(tmp) / "failures.csv", dict(trace.vc_nodes), args.failures, horizon, 0)}
        for log in args.logs:
            plan, load_s = None, 0.0
            if logs[log] is not None:
                from raysim.sim.capacity import plan_from_node_log

                t = time.perf_counter()
                vcs = trace.table.column("vc").to_pylist()
                plan = plan_from_node_log(logs[log], layout, {vc: vcs.count(vc) for vc in layout})
                load_s = time.perf_counter() - t
            for policy in args.policies:
                spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), layout,
                               **({"capacity": plan} if plan is not None else {}))
                walls = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    jobs, _ = simulate(trace, spec, None)
                    walls.append(time.perf_counter() - t)
                cols = jobs.column_names
                row = {"policy": policy, "log": log, "events": plan.num_events if plan else 0,
                       "jobs": jobs.num_rows, "wall_s": round(statistics.median(walls), 3),
                       "log_load_s": round(load_s, 3),
                       "avg_jct": round(float(jobs.column("jct").to_numpy().mean()), 1),
                       "interruptions": int(jobs.column("interruptions").to_numpy().sum()) if "interruptions" in cols else 0}
                print(json.dumps(row) if args.json else
                      f"{policy:9s} {log:12s} {row['events']:6d} events  {row['wall_s']:6.2f} s  "
                      f"avg JCT {row['avg_jct']:>9,.1f}  interruptions {row['interruptions']:,}")


if __name__ == "__main__":
    main()
