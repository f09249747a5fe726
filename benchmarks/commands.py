"""Time raysim as a user runs it: whole commands, each a fresh process timed from start to exit.

    python benchmarks/commands.py [--cases quick_ray quick_local ...] [--repeat 1] [--json]
        [--gavel-trace ../shared/references/gavel/gavel_seed0_lam8000_n300.trace]
        [--gavel-second-trace /tmp/gavel_seed1_lam8000_n300.trace]
        [--gavel-throughput ../shared/references/gavel/simulation_throughputs.json]

Cases (issue 36's before/after table):
  quick_ray, quick_local  `python -m raysim +experiment=venus` on Ray (the default) and with
                          runtime=local: the quick start
  gavel_seed0, gavel_seed1  the ten Gavel policies as one multirun on Gavel's seed-0 trace and on the
                          seed-1 trace (`python benchmarks/gavel.py --write-second-trace FILE`)
  helios_fifo, helios_tiresias  `+experiment=helios_synth` (six months, 1.58M jobs) under FIFO and
                          Tiresias, default runtime (Ray)
  sia_saturn              `+experiment=sia_saturn` (Sia on Saturn workload 1; its data by name,
                          `raysim data fetch sia_workloads sia_profiles` first, or from `--sia DIR`,
                          a folder with Sia's workloads/ and profiles/)
  ray_floor               not raysim: a Python process that only starts a local Ray as raysim does,
                          starts one idle actor per CPU, calls each once and stops Ray: the least any
                          run on a local Ray takes on this machine (compare it with quick_local)

Each run writes into a temporary folder that is removed afterwards (kept, with the run's output,
when it fails). Each process is timed as gavel_side_by_side.py times it: wall time, and CPU time =
user + system of the process and the children it waited for (Ray's own processes are not its
children: a Ray run's CPU time undercounts). Cases repeat in turn (all cases once,
then again), so that machine noise hits each alike. With `--json` each run is one JSON line,
which `benchmarks/before_after.py` compares between two source trees:

    python benchmarks/before_after.py --ref 324105d --repeat 3 -- benchmarks/commands.py --json \\
        --cases quick_ray quick_local
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gavel_side_by_side import POLICIES, tail, timed  # noqa: E402  (the ten Gavel policies; a process timed)

GAVEL_POLICIES = ",".join(POLICIES.values())
SHARED_GAVEL = Path("../shared/references/gavel")


def case_args(name: str, opts) -> list[str]:
    """The raysim command line of case `name` (after `python -m raysim`), output folder aside."""
    if name == "quick_ray":
        return ["+experiment=venus"]
    if name == "quick_local":
        return ["+experiment=venus", "runtime=local"]
    if name in ("gavel_seed0", "gavel_seed1"):
        trace = opts.gavel_trace if name == "gavel_seed0" else opts.gavel_second_trace
        if trace is None or not Path(trace).exists():
            raise SystemExit(f"{name}: no trace file {trace} (gavel_seed1: write it with "
                             "`python benchmarks/gavel.py --write-second-trace FILE` and pass --gavel-second-trace)")
        return ["-m", "+experiment=gavel_trace", "runtime=local", f"trace.path={Path(trace).resolve()}",
                f"cluster.throughput={Path(opts.gavel_throughput).resolve()}", f"policy={GAVEL_POLICIES}"]
    if name in ("helios_fifo", "helios_tiresias"):
        return ["+experiment=helios_synth", f"policy={name.split('_')[1]}"]
    if name == "sia_saturn":
        sia = None if opts.sia is None else Path(opts.sia).resolve()
        local = [] if sia is None else [f"trace.path={sia / 'workloads/saturn/workload-1.csv'}", "trace.cache=false",
                                        f"policy.profiles={sia / 'profiles'}"]  # (no cache file written beside it)
        return ["+experiment=sia_saturn", *local]
    raise SystemExit(f"unknown case {name!r}")


#: The ray_floor case: Ray started with raysim.runtime.ray_backend.ensure_ray's settings, one idle
#: actor per CPU (a quick start on this machine starts as many), one call each, Ray stopped.
RAY_FLOOR = """
import logging, os, ray
ray.init(include_dashboard=False, namespace="raysim", logging_level=logging.WARNING, log_to_driver=True)
Idle = ray.remote(num_cpus=0.1)(type("Idle", (), {"ping": lambda self: os.getpid()}))
ray.get([actor.ping.remote() for actor in [Idle.remote() for _ in range(os.cpu_count() or 1)]])
ray.shutdown()
"""

CASES = ("quick_ray", "quick_local", "gavel_seed0", "gavel_seed1", "helios_fifo", "helios_tiresias", "sia_saturn",
         "ray_floor")


def command(name: str, opts, out: Path) -> list[str]:
    """The process of case `name`, writing into folder `out`."""
    if name == "ray_floor":
        return [sys.executable, "-c", RAY_FLOOR]
    args = case_args(name, opts)
    where = "hydra.sweep.dir" if "-m" in args else "hydra.run.dir"
    return [sys.executable, "-m", "raysim", *args, f"{where}={out / 'run'}"]


def run_once(name: str, opts) -> dict:
    """Run case `name` once as a process; its wall and CPU seconds."""
    out = Path(tempfile.mkdtemp(prefix=f"raysim_bench_{name}_"))
    wall, cpu, rc = timed(command(name, opts, out), Path.cwd(), out / "stdout", out / "stderr", dict(os.environ))
    if rc != 0:
        raise SystemExit(f"{name} failed (exit {rc}):\n{tail(out / 'stderr', 40)}")
    shutil.rmtree(out, ignore_errors=True)
    return {"case": name, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["quick_ray", "quick_local"], choices=CASES)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--gavel-trace", default=str(SHARED_GAVEL / "gavel_seed0_lam8000_n300.trace"))
    parser.add_argument("--gavel-second-trace", default=None)
    parser.add_argument("--gavel-throughput", default=str(SHARED_GAVEL / "simulation_throughputs.json"))
    parser.add_argument("--sia", default=None, help="folder with Sia's workloads/ and profiles/ (default: data: names)")
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    opts = parser.parse_args(argv)
    if opts.repeat < 1:
        parser.error(f"--repeat must be at least 1 (not {opts.repeat})")
    runs: dict[str, list[dict]] = {name: [] for name in opts.cases}
    for _ in range(opts.repeat):
        for name in opts.cases:
            row = run_once(name, opts)
            runs[name].append(row)
            print(json.dumps(row) if opts.json else f"{name}: {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} s CPU",
                  flush=True)
    if not opts.json and opts.repeat > 1:
        for name, rows in runs.items():
            print(f"{name}: median {statistics.median(r['wall_s'] for r in rows):.2f} s wall, "
                  f"{statistics.median(r['cpu_s'] for r in rows):.2f} s CPU over {len(rows)} runs")
    print(f"(load average {os.getloadavg()[0]:.2f} at the end)", file=sys.stderr)


if __name__ == "__main__":
    main()
