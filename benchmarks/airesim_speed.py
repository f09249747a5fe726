"""Issue 50's speed check: N replications of AIReSim's default scenario (its Table I) as each simulator's
user runs them, timed alternately in one sitting.

    python benchmarks/airesim_speed.py --airesim PATH [--python /tmp/airesim/venv/bin/python] \
        [--replications 30] [--rounds 1] [--first-seed 42] [--work DIR] [--json]

AIReSim (arXiv 2603.07041; github karthikp-ubc/airesim, MIT) runs unmodified from the checkout PATH
points to, through its own command line, which runs its replications one after another (seeds
first-seed, first-seed + 1, ...):

    python -m airesim.run --sweep job_size --values 4096 --replications N --params P

(P: a JSON file of one field, {"seed": S}; job_size 4096 is Table I's, so the sweep has one point.)

raysim runs the same N replications as a sweep over seeds, with its defaults (in-process runs, one
per CPU at a time, each writing its results, summary and page, and the sweep its comparison page):

    python -m raysim -m +experiment=airesim 'seed=range(S, S + N)' hydra.sweep.dir=DIR

Each round times both, in an order that alternates from round to round (AIReSim first in odd
rounds), as whole commands (start-up included), and reports the wall times, their ratio and the
load average as each command ended: on a machine others share, the load says how far the numbers
can be trusted. Issue 50 asks raysim's wall time to be at most a fifth of AIReSim's.
Measured numbers: benchmarks/README.md, "airesim_speed.py".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> float:
    """Wall seconds of `cmd` run to its end in `cwd` (its output to `log`); a failure raises, naming the log."""
    start = time.perf_counter()
    with open(log, "w") as out:
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed with status {rc}: see {log}")
    return time.perf_counter() - start


def airesim_command(args, work: Path) -> tuple[list[str], Path, dict]:
    env = {**os.environ, "PYTHONPATH": str(Path(args.airesim).resolve())}
    params = work / "airesim_seed.json"
    params.write_text(json.dumps({"seed": args.first_seed}))
    return ([args.python, "-m", "airesim.run", "--sweep", "job_size", "--values", "4096",
             "--replications", str(args.replications), "--params", str(params)], Path(args.airesim), env)


def raysim_command(args, sweep_dir: Path) -> tuple[list[str], Path, dict]:
    last = args.first_seed + args.replications
    return ([sys.executable, "-m", "raysim", "-m", "+experiment=airesim", f"seed=range({args.first_seed},{last})",
             f"hydra.sweep.dir={sweep_dir}"], REPO, dict(os.environ))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--airesim", required=True, help="an AIReSim checkout (its folder holding airesim/)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs AIReSim (with simpy)")
    parser.add_argument("--replications", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (each runs both)")
    parser.add_argument("--first-seed", type=int, default=42)
    parser.add_argument("--work", help="where the logs and raysim's sweeps go (default: a temporary folder)")
    parser.add_argument("--json", action="store_true", help="one JSON object per round")
    args = parser.parse_args()
    if not (Path(args.airesim) / "airesim").is_dir():
        raise SystemExit(f"--airesim {args.airesim}: not an AIReSim checkout (no airesim/ folder in it)")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="raysim-airesim-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    for r in range(1, args.rounds + 1):
        sweep = work / f"raysim_round{r}"
        shutil.rmtree(sweep, ignore_errors=True)
        runs = {"airesim": airesim_command(args, work), "raysim": raysim_command(args, sweep)}
        order = ["airesim", "raysim"] if r % 2 else ["raysim", "airesim"]
        wall, load = {}, {}
        for name in order:
            cmd, cwd, env = runs[name]
            wall[name] = timed(cmd, cwd, env, work / f"{name}_round{r}.log")
            load[name] = os.getloadavg()[0]
        done = len(list(sweep.glob("*/jobs.parquet")))
        if done != args.replications:
            raise SystemExit(f"raysim's sweep wrote {done} runs, not {args.replications}: see {work}")
        row = {"round": r, "order": order, "replications": args.replications, "wall_s": wall,
               "ratio": wall["airesim"] / wall["raysim"], "load_1min": load, "cpus": os.cpu_count()}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"round {r} ({' then '.join(order)}), {args.replications} replications: AIReSim "
                  f"{wall['airesim']:.1f} s, raysim {wall['raysim']:.1f} s: raysim {row['ratio']:.2f}x faster "
                  f"(load {load['airesim']:.1f} / {load['raysim']:.1f} as each ended; {os.cpu_count()} CPUs)",
                  flush=True)


if __name__ == "__main__":
    main()
