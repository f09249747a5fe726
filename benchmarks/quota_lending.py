"""Cost of quota lending: wall time of the Helios-like run with quota=borrow against quota=none,
in-process and on Ray, each in a fresh process on this machine.

    python benchmarks/quota_lending.py [--days 183] [--policy fifo] [--runtimes local ray]
                                       [--period-s 300] [--vcs-per-actor auto] [--json]

Each run simulates the whole trace and writes its result files (as `python -m raysim
+experiment=helios_synth` does, without summary and plots), with the experiment's packing
(`ray.vcs_per_actor=auto`: with quota=borrow every cohort in one VC actor, whose loans it decides
itself) and each runtime's default window. `--vcs-per-actor N` packs N VCs to an actor instead,
which splits the one cohort over actors: the coordinator then decides its loans, at windows of the
epoch period. Prints one line per run and the ratio borrow / none per runtime (with --json, one
JSON row per run, the borrow row carrying `borrow_over_none`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

WINDOW_S = {"local": 604_800, "ray": 86_400}  # conf/runtime/*.yaml


def one(days: int, policy: str, runtime: str, quota: str, period_s: int, vcs_per_actor="auto") -> dict:
    import dataclasses

    from raysim.cluster.layout import layout_from_vc_nodes
    from raysim.quota import merged_layout
    from raysim.quota.settings import quota_settings
    from raysim.run.simulate import simulate_to
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams
    from raysim.trace.synth import load_synth

    trace = load_synth({"preset": "helios", "days": days, "seed": 0})
    layout = layout_from_vc_nodes(trace.vc_nodes, 8)
    settings = quota_settings({"mode": quota, "period_s": period_s}, list(layout))
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), layout, quota=settings)
    if quota == "global":
        merged, homes = merged_layout(layout)
        spec = dataclasses.replace(spec, layout=merged, pool_homes=homes)
    if runtime == "ray":
        from raysim.runtime.ray_backend import ensure_ray

        ensure_ray()
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="raysim-quota-") as out:
        stats = simulate_to(out, trace, spec, None, runtime=runtime, vcs_per_actor=vcs_per_actor,
                            window_s=WINDOW_S[runtime])
    wall = time.perf_counter() - t
    return {"days": days, "jobs": trace.table.num_rows, "policy": policy, "runtime": runtime, "quota": quota,
            "period_s": period_s if quota == "borrow" else None, "vcs_per_actor": vcs_per_actor,
            "wall_s": round(wall, 2), **stats}


def _packing(value: str):
    """`--vcs-per-actor`: "auto" or a whole number of at least 1."""
    if value == "auto":
        return value
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be auto or a whole number of at least 1, not {value!r}")
    return int(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=183)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--runtimes", nargs="+", default=["local", "ray"])
    ap.add_argument("--period-s", type=int, default=300)
    ap.add_argument("--vcs-per-actor", default="auto", type=_packing, help="auto (default) or VCs per actor")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=3, metavar=("RUNTIME", "QUOTA", "PERIOD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        runtime, quota, period = args.one
        print(json.dumps(one(args.days, args.policy, runtime, quota, int(period), args.vcs_per_actor)))
        return
    for runtime in args.runtimes:
        walls = {}
        for quota in ("none", "borrow"):
            res = subprocess.run([sys.executable, __file__, "--days", str(args.days), "--policy", args.policy,
                                  "--vcs-per-actor", str(args.vcs_per_actor), "--one", runtime, quota,
                                  str(args.period_s)], capture_output=True, text=True)
            if res.returncode != 0:
                print(json.dumps({"runtime": runtime, "quota": quota, "error": res.stderr.strip().splitlines()[-1:]}))
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            walls[quota] = row["wall_s"]
            if quota == "borrow" and "none" in walls:
                row["borrow_over_none"] = round(walls["borrow"] / walls["none"], 2)
            print(json.dumps(row) if args.json else
                  f"{runtime:5s} quota={quota:6s} {row['jobs']:>9,} jobs  {row['wall_s']:7.1f} s  "
                  f"{row['windows']:>7,} windows  {row['events']:>10,} events")
        if len(walls) == 2 and not args.json:
            print(f"{runtime:5s} borrow / none: x{round(walls['borrow'] / walls['none'], 2)}")


if __name__ == "__main__":
    main()
