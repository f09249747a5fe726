"""Datacenter scale: simulation cost of 1, 3 and 6 months of the Saturn-like trace (and the whole
Helios-like datacenter) under FIFO and Tiresias, in-process and on Ray.

    python benchmarks/scale.py [--months 1 3 6] [--policies fifo tiresias] [--runtimes local ray]
                               [--helios] [--packing cost|count] [--json]

Each configuration runs in a fresh process, so peak memory (max RSS) is its own. Each trace is
generated once per length by raysim's generator (timed from scratch: `generate_s`) and cached as Parquet.
`peak_rss_mib` is the driver's; `peak_all_mib` is the largest sum of RSS over the driver and every
process it started (on Ray: the GCS, raylet, dashboard and actor processes), sampled every 0.2 s;
shared pages (Ray's object store) count once per process that maps them, so it is an upper bound.
`groups` is the VCs per group (`--vcs-per-actor`, packed by `--packing` as ray.packing packs them).
`speedup_bound` is the run's predicted bound for k CPUs (raysim.runtime.timing: VCs packed as
ray.vcs_per_actor=auto packs them for k), `serial_work_s` what one process would do, from its records,
`split_s` where the simulation's time went (trace_report.json's `timing` totals, docs/results.md).
`load_avg` is the machine's load average (1, 5, 15 minutes) when the run ended: on a shared machine,
how much other work its wall time competed with.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MONTH_DAYS = 30.5
PAGE = os.sysconf("SC_PAGE_SIZE")


class TreeMemory:
    """Samples the summed RSS of this process and all its descendants (Linux /proc) in a thread."""

    def __init__(self, every_s: float = 0.2):
        self.every_s, self.peak = every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self._stop.wait(self.every_s)

    def stop(self) -> int:
        """Stop sampling; the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return round(self.peak / 2**20)


def tree_rss(root: int) -> int:
    """Bytes of RSS of process `root` and its descendants (shared pages count once per process)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except OSError:  # a process that just ended
            pass
        stack += children.get(pid, [])
    return total


def one(preset: str, months: float, policy: str, runtime: str, vcs_per_actor: int, window_s: int,
        packing: str) -> dict:
    import pyarrow.parquet as pq

    from raysim.cluster.layout import layout_from_vc_nodes

    from raysim.run.simulate import simulate_to
    from raysim.runtime.spec import RunSpec
    from raysim.sim import SimParams
    from raysim.trace.synth import load_synth

    t = time.perf_counter()
    trace = load_synth({"preset": preset, "days": round(months * MONTH_DAYS), "seed": 0})
    load_s = time.perf_counter() - t
    spec = RunSpec(policy, "consolidate", SimParams.for_mode("clean"), layout_from_vc_nodes(trace.vc_nodes, 8))
    startup_s = 0.0
    memory = TreeMemory()
    if runtime == "ray":
        from raysim.runtime.ray_backend import ensure_ray

        t = time.perf_counter()
        ensure_ray()
        startup_s = time.perf_counter() - t
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="raysim-scale-") as out:
        stats = simulate_to(out, trace, spec, None, runtime=runtime, vcs_per_actor=vcs_per_actor, packing=packing,
                            window_s=window_s)
        wall = time.perf_counter() - t
        jobs = pq.read_table(f"{out}/jobs.parquet", columns=["jct"])
    return {"trace": preset, "months": months, "jobs": trace.table.num_rows, "policy": policy, "runtime": runtime,
            "wall_s": round(wall, 2), "events_per_s": round(stats["events"] / wall), "events": stats["events"],
            "load_s": round(load_s, 2), "ray_startup_s": round(startup_s, 2),
            "avg_jct": round(float(jobs.column("jct").to_numpy().mean()), 1),
            "window_s": window_s, "packing": packing, "groups": [len(g) for g in stats["timing"]["groups"]["vcs"]],
            "speedup_bound": stats["timing"]["speedup_bound"],
            "serial_work_s": stats["timing"]["serial_work_s"],
            "split_s": {**stats["timing"]["totals"], "outside_s": stats["timing"]["outside_s"]}, "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "peak_all_mib": memory.stop(), "load_avg": [round(v, 2) for v in os.getloadavg()]}


def generate(preset: str, months: float) -> float:
    """Seconds to generate the trace from scratch (the cache is filled afterwards for the runs)."""
    from raysim.trace.synth import generate_named, load_synth

    days = round(months * MONTH_DAYS)
    t = time.perf_counter()
    generate_named(preset, days=days, seed=0)
    took = time.perf_counter() - t
    load_synth({"preset": preset, "days": days, "seed": 0})
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", type=float, nargs="*", default=[1, 3, 6], help="Saturn-like lengths (none: skip)")
    ap.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    ap.add_argument("--runtimes", nargs="+", default=["local", "ray"])
    ap.add_argument("--vcs-per-actor", type=int, default=8)
    ap.add_argument("--packing", choices=("cost", "count"), default="cost",
                    help="how VCs are packed into groups (ray.packing; count: layout order, as before issue 52)")
    ap.add_argument("--window-s", type=int, default=604_800, help="coordinator window (simulated seconds)")
    ap.add_argument("--helios", action="store_true", help="also the whole Helios-like datacenter (6 months)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=4, metavar=("PRESET", "MONTHS", "POLICY", "RUNTIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        preset, months, policy, runtime = args.one
        print(json.dumps(one(preset, float(months), policy, runtime, args.vcs_per_actor, args.window_s, args.packing)))
        return
    runs = [("saturn", m) for m in args.months] + ([("helios", 6)] if args.helios else [])
    for preset, months in runs:
        gen = generate(preset, months)
        if not args.json:
            print(f"{preset} {months:g} months: generated in {gen:.1f} s")
        for runtime in args.runtimes:
            for policy in args.policies:
                res = subprocess.run([sys.executable, __file__, "--vcs-per-actor", str(args.vcs_per_actor),
                                      "--window-s", str(args.window_s), "--packing", args.packing,
                                      "--one", preset, str(months), policy, runtime],
                                     capture_output=True, text=True)
                if res.returncode != 0:
                    print(json.dumps({"trace": preset, "months": months, "policy": policy, "runtime": runtime,
                                      "error": res.stderr.strip().splitlines()[-1:]}))
                    continue
                row = {**json.loads(res.stdout.strip().splitlines()[-1]), "generate_s": round(gen, 2)}
                print(json.dumps(row) if args.json else
                      f"  {runtime:5s} {policy:9s} {row['jobs']:>9,} jobs  {row['wall_s']:7.1f} s  "
                      f"{row['events_per_s']:>9,} events/s  peak {row['peak_rss_mib']:>6,} MiB "
                      f"(all processes {row['peak_all_mib']:,} MiB); bound on 2 CPUs "
                      f"{row['speedup_bound']['2']:.2f}x")


if __name__ == "__main__":
    main()
