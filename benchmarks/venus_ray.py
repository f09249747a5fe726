"""Five-policy Venus sweep: runtime=local vs runtime=ray in one driver, Ray start-up timed apart.

    python benchmarks/venus_ray.py [--trace <venus folder>] [--vcs-per-actor 1] [--window-s 86400] [--json]

The Ray part starts one local Ray instance and runs the five policies on it in sequence (as a Hydra
multirun does): the first run also pays for starting the actors, later runs reuse them.
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


def sweep(trace, est, runtime, **kw) -> tuple[float, dict]:
    t = time.perf_counter()
    per_policy = {}
    for policy in POLICIES:
        spec = RunSpec(policy, "consolidate", SimParams.for_mode("lucid"), layout_from_vc_nodes(trace.vc_nodes, 8))
        t1 = time.perf_counter()
        jobs, _ = simulate(trace, spec, est, runtime=runtime, **kw)
        per_policy[policy] = (round(time.perf_counter() - t1, 2), int(jobs.column("jct").to_numpy().mean()))
    return time.perf_counter() - t, per_policy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--vcs-per-actor", type=int, default=1)
    ap.add_argument("--window-s", type=int, default=86_400)
    ap.add_argument("--num-cpus", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    trace = load_trace(args.trace, cache_dir=Path.home() / ".cache" / "raysim")  # (not beside ../shared's copy)
    est_path = Path(trace.source).parent / "lucid_artifacts" / "duration_estimates_ebm.csv"
    est = (estimates_for(trace.table, source="file", path=est_path) if est_path.exists()
           else estimates_for(trace.table, source="oracle"))
    kw = dict(window_s=args.window_s, vcs_per_actor=args.vcs_per_actor)

    local_s, local = sweep(trace, est, "local", **kw)
    t = time.perf_counter()
    import ray

    from raysim.runtime.ray_backend import ensure_ray

    ensure_ray(num_cpus=args.num_cpus)
    startup_s = time.perf_counter() - t
    ray_s, on_ray = sweep(trace, est, "ray", ray_options={}, **kw)
    ray.shutdown()
    row = {"jobs": trace.table.num_rows, "vcs_per_actor": args.vcs_per_actor, "window_s": args.window_s,
           "local_sweep_s": round(local_s, 2), "ray_startup_s": round(startup_s, 2),
           "ray_sweep_s": round(ray_s, 2), "ray_total_s": round(startup_s + ray_s, 2),
           "local_per_policy": local, "ray_per_policy": on_ray,
           "identical_avg_jct": all(local[p][1] == on_ray[p][1] for p in POLICIES)}
    if args.json:
        print(json.dumps(row))
        return
    print(f"{row['jobs']} jobs, vcs_per_actor={args.vcs_per_actor}, window {args.window_s} s")
    print(f"runtime=local: five policies in {local_s:.2f} s  {local}")
    print(f"runtime=ray:   Ray start-up {startup_s:.2f} s + five policies {ray_s:.2f} s "
          f"= {startup_s + ray_s:.2f} s  {on_ray}")
    print(f"same average JCT on both runtimes: {row['identical_avg_jct']}")


if __name__ == "__main__":
    main()
