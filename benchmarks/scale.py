"""Datacenter scale: simulation cost of 1, 3 and 6 months of the Saturn-like trace (and the whole
Helios-like datacenter) under FIFO and Tiresias, in-process and on Ray.

    python benchmarks/scale.py [--months 1 3 6] [--policies fifo tiresias] [--runtimes local ray]
                               [--helios] [--json]

Each configuration runs in a fresh process, so peak memory (max RSS) is its own. The trace is
generated once per length by raysim's generator (timed separately) and cached as Parquet.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

MONTH_DAYS = 30.5


def one(preset: str, months: float, policy: str, runtime: str, vcs_per_actor: int) -> dict:
    import pyarrow.parquet as pq

    from raysim.cluster_run import simulate_to
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams
    from raysim.trace.synth import load_synth

    t = time.perf_counter()
    trace = load_synth({"preset": preset, "days": round(months * MONTH_DAYS), "seed": 0})
    load_s = time.perf_counter() - t
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), trace.vc_nodes)
    startup_s = 0.0
    if runtime == "ray":
        from raysim.runtime.ray_backend import ensure_ray

        t = time.perf_counter()
        ensure_ray()
        startup_s = time.perf_counter() - t
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="raysim-scale-") as out:
        stats = simulate_to(out, trace, spec, None, runtime=runtime, vcs_per_actor=vcs_per_actor)
        wall = time.perf_counter() - t
        jobs = pq.read_table(f"{out}/jobs.parquet", columns=["jct"])
    return {"trace": preset, "months": months, "jobs": trace.table.num_rows, "policy": policy, "runtime": runtime,
            "wall_s": round(wall, 2), "events_per_s": round(stats["events"] / wall), "events": stats["events"],
            "load_s": round(load_s, 2), "ray_startup_s": round(startup_s, 2),
            "avg_jct": round(float(jobs.column("jct").to_numpy().mean()), 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def generate(preset: str, months: float) -> float:
    from raysim.trace.synth import load_synth

    t = time.perf_counter()
    load_synth({"preset": preset, "days": round(months * MONTH_DAYS), "seed": 0})
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", type=float, nargs="*", default=[1, 3, 6], help="Saturn-like lengths (none: skip)")
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--runtimes", nargs="+", default=["local", "ray"])
    ap.add_argument("--vcs-per-actor", type=int, default=8)
    ap.add_argument("--helios", action="store_true", help="also the whole Helios-like datacenter (6 months)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=4, metavar=("PRESET", "MONTHS", "POLICY", "RUNTIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        preset, months, policy, runtime = args.one
        print(json.dumps(one(preset, float(months), policy, runtime, args.vcs_per_actor)))
        return
    runs = [("saturn", m) for m in args.months] + ([("helios", 6)] if args.helios else [])
    for preset, months in runs:
        gen = generate(preset, months)
        if not args.json:
            print(f"{preset} {months:g} months: generated (or read from cache) in {gen:.1f} s")
        for runtime in args.runtimes:
            for policy in args.policies:
                res = subprocess.run([sys.executable, __file__, "--vcs-per-actor", str(args.vcs_per_actor),
                                      "--one", preset, str(months), policy, runtime],
                                     capture_output=True, text=True)
                if res.returncode != 0:
                    print(json.dumps({"trace": preset, "months": months, "policy": policy, "runtime": runtime,
                                      "error": res.stderr.strip().splitlines()[-1:]}))
                    continue
                row = json.loads(res.stdout.strip().splitlines()[-1])
                print(json.dumps(row) if args.json else
                      f"  {runtime:5s} {policy:9s} {row['jobs']:>9,} jobs  {row['wall_s']:7.1f} s  "
                      f"{row['events_per_s']:>9,} events/s  peak {row['peak_rss_mib']:>6,} MiB")


if __name__ == "__main__":
    main()
