"""GFS's simulator (ASPLOS'26, github Xu-Sheng-lin/GFS-asplos-26) and raysim side by side on HP/spot
workloads generated in GFS's input format (issue 51): per seed and priority class, the jobs, the
evictions and the mean queueing and JCT of both, and raysim's difference from GFS.

    python benchmarks/gfs_side_by_side.py --gfs PATH --python GFS_PYTHON --node-list NODE_LIST \
        [--nodes 40] [--jobs 2000] [--days 3] [--load 0.5] [--seeds 0 1] [--work DIR] [--reuse] [--json] \
        [-- raysim overrides ...]

GFS's simulator is not part of raysim: this script runs a checkout the user points it to (`--gfs`),
with its own `simulator.py` and `fifo_spot` policy, in a process of `--python` (a Python with
GFS's requirements: pandas, scipy, torch, chinese_calendar; any CPU build of torch will do).
Its code is not changed; the driver this script writes replaces three things from outside, before
`simulator.py` runs:

- **the spot quota is fixed** (`--quota`, GPUs per VC; default: no bound) instead of forecast:
  `FifoWithSpot.update_spot_quota` sets it, at the same instants GFS would (every 5 simulated minutes
  of its log range), and the HP-demand forecaster (`GPURequestEstimator`) is neither built nor
  trained, so no torch model runs (issue 51: "with the spot quota fixed so that no forecast is
  involved");
- **its clock starts a minute before August 2024** (`--start-s`, default 13,219,140 s from its trace
  origin) rather than at 0: GFS ticks every simulated second and keeps spot jobs only in August, so
  the generated workload starts on August 1 and the five idle months before it (about 50 minutes of
  its ticks on this machine) are skipped. No job arrives before; the minute left lets its recorder
  take a sample before the first quota update reads it.

The workload is `raysim trace spot` (raysim/trace/spot_synth.py) with `--start-s 13219200`: both
simulators read the same two files. raysim runs `+experiment=spot_alibaba` (FIFO, one VC per GPU
model, as GFS) with GFS's placement of HP jobs, eviction choice and eviction cost (`spot.victims=gfs
spot.evict=always`, `checkpoint.interval_s=3600 checkpoint.write_s=0 checkpoint.restart_s=40`, GFS's `ckpt_interval`
and its preemption overhead for jobs of up to 8 GPUs), an evicted job waiting again at the back of
its queue as GFS appends it to its spot queue (`spot.requeue=back`) and no guarantee; overrides after `--` are
added. With `--durations gfs` (the default) raysim reads a copy of the job table in GFS's timing:
GFS adds its preemption overhead (`Policy.preempt_overhead`: 40 s, 60 s above 8 GPUs a worker) to
every HP job it places, evictions or none (`FifoWithSpot.preempt` runs for each), and its tick loop
ends every job a second after its work is done, so each HP job's duration is its own plus the
overhead plus 1 s, each spot job's plus 1 s; `--durations trace` runs raysim on the table as
generated. What still differs on purpose is in docs/spot.md ("What GFS does, and where raysim
differs").

GFS's per-job results are its `fifo_spot_log.csv` (`type`, `queue`, `jct`, `preempt_times`); raysim's
its `jobs.parquet` (`priority_class`, `queue`, `jct`, `evictions`). Measured numbers:
benchmarks/README.md, "gfs_side_by_side.py".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

#: GFS's trace origin is 2024-03-01; August 1 is this many seconds after it.
AUGUST_S = 13_219_200
#: How raysim's copy of the job table is timed (`--durations`): in GFS's timing, or as generated.
DURATIONS = ("gfs", "trace")
#: What raysim runs with on top of `+experiment=spot_alibaba`: GFS's eviction choice and cost.
RAYSIM_GFS = ["runtime=local", "spot.victims=gfs", "spot.evict=always", "spot.requeue=back", "checkpoint.interval_s=3600",
              "checkpoint.write_s=0", "checkpoint.restart_s=40"]

DRIVER = '''\
"""Runs GFS's simulator.py unchanged, with a fixed spot quota and its clock started at START
(written by raysim's benchmarks/gfs_side_by_side.py)."""
import os, runpy, sys

gfs, trace, logs, quota, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, gfs)
os.chdir(gfs)
import estimator.gpu_request_estimator as estimator
import policy.fifo_spot as fifo_spot

estimator.GPURequestEstimator.__init__ = lambda self, args: None   # no forecaster is built ...
estimator.GPURequestEstimator.train = lambda self, *a, **k: None   # ... or trained


def fixed_quota(self, record, now):
    for vc in self.spot_quota:
        self.spot_quota[vc]["quota"] = {h: quota for h in self.args.guarantee_hour}


fifo_spot.FifoWithSpot.update_spot_quota = fixed_quota
built = fifo_spot.FifoWithSpot.__init__


def starting_at(self, *args, **kwargs):
    built(self, *args, **kwargs)
    self.time = start


fifo_spot.FifoWithSpot.__init__ = starting_at
sys.argv = ["simulator.py", "-t", trace, "-s", "fifo_spot", "-l", logs, "-e", "run"]
runpy.run_path("simulator.py", run_name="__main__")
'''


def generate(args, seed: int, folder: Path) -> None:
    subprocess.run([sys.executable, "-m", "raysim", "trace", "spot", "--node-list", args.node_list,
                    "--nodes", str(args.nodes), "--jobs", str(args.jobs), "--days", str(args.days),
                    "--load", str(args.load), "--seed", str(seed), "--start-s", str(AUGUST_S),
                    "--out", str(folder)], check=True, stdout=subprocess.DEVNULL)


def run_gfs(args, trace: Path, logs: Path) -> tuple[dict, float]:
    """GFS's per-class figures on `trace` and its wall time (NaN where `--reuse` read an earlier run's log)."""
    import pandas as pd

    log = logs / "run" / "cluster" / "fifo_spot_log.csv"
    wall = float("nan")
    if not (args.reuse and log.exists()):
        if not (args.gfs and args.python):
            sys.exit(f"no GFS log in {log.parent} to reuse: name GFS's checkout and Python (--gfs, --python)")
        driver = logs.parent / "gfs_driver.py"
        driver.write_text(DRIVER)
        t0 = time.perf_counter()
        done = subprocess.run([args.python, str(driver), str(Path(args.gfs).resolve()), str(trace.resolve()),
                               str(logs.resolve()), str(args.quota), str(args.start_s)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if done.returncode:
            sys.exit(f"GFS's simulator failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    jobs = pd.read_csv(log)
    return {cls: _row(part["queue"], part["jct"], part["preempt_times"])
            for cls, part in (("hp", jobs[jobs["type"] == "HP"]), ("spot", jobs[jobs["type"] == "Spot"]))}, wall


def gfs_timed(trace: Path, folder: Path) -> Path:
    """`folder`: a copy of the workload `trace` whose job durations are as GFS's simulator runs them
    (the module docs): an HP job's plus GFS's preemption overhead plus 1 s, a spot job's plus 1 s."""
    import shutil

    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(trace / "node_info_df.csv", folder / "node_info_df.csv")
    jobs = pd.read_csv(trace / "job_info_df.csv")
    hp = jobs["job_type"].str.lower() == "hp"
    overhead = jobs["gpu_request"].le(8).map({True: 40, False: 60})
    jobs["duration"] = jobs["duration"] + 1 + overhead.where(hp, 0)
    jobs.to_csv(folder / "job_info_df.csv", index=False)
    return folder


def run_raysim(args, trace: Path, out: Path) -> tuple[dict, float]:
    import pyarrow.parquet as pq

    if args.durations == "gfs":
        trace = gfs_timed(trace, out.parent / "raysim_trace")

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "raysim", "+experiment=spot_alibaba", f"trace.path={trace}",
                    f"hydra.run.dir={out}", *RAYSIM_GFS, *args.overrides], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    jobs = pq.read_table(out / "jobs.parquet", columns=["priority_class", "queue", "jct", "evictions"]).to_pandas()
    return {cls: _row(part["queue"], part["jct"], part["evictions"])
            for cls, part in jobs.groupby("priority_class")}, wall


def _row(queue, jct, evictions) -> dict:
    return {"jobs": int(len(queue)), "evictions": int(evictions.sum()), "queue_s": float(queue.mean()),
            "jct_s": float(jct.mean())}


def _diff(ours: float, theirs: float) -> str:
    return "n/a" if theirs == 0 else f"{100 * (ours - theirs) / theirs:+.1f} %"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gfs", help="a checkout of github Xu-Sheng-lin/GFS-asplos-26")
    parser.add_argument("--python", help="a Python with GFS's requirements")
    parser.add_argument("--node-list", required=True, help="node_info_df.csv, or data:alibaba_spot_nodes/node_info_df.csv")
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--days", type=float, default=3)
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--quota", type=float, default=1e9, help="GFS's fixed spot quota, GPUs per VC (default: none)")
    parser.add_argument("--start-s", type=int, default=AUGUST_S - 60)
    parser.add_argument("--work", default="/tmp/gfs_side_by_side")
    parser.add_argument("--reuse", action="store_true", help="read GFS's log where an earlier run in --work left one "
                                                             "(its simulator takes minutes per simulated day)")
    parser.add_argument("--durations", choices=DURATIONS, default="gfs",
                        help="raysim's job durations: in GFS's timing (default; the module docs) or as generated")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="raysim overrides (after --)")
    args = parser.parse_args(argv)
    if not args.reuse and not (args.gfs and args.python):
        parser.error("--gfs and --python name GFS's checkout and its Python (or --reuse an earlier run's logs)")

    work = Path(args.work)
    if not args.json:
        print("| seed | class | jobs | evictions GFS | raysim | diff | mean queue s GFS | raysim | diff "
              "| mean JCT s GFS | raysim | diff |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        folder = work / f"seed{seed}"
        trace = folder / "trace"
        if not trace.exists():
            generate(args, seed, trace)
        gfs, gfs_wall = run_gfs(args, trace, folder / "gfs")
        ours, our_wall = run_raysim(args, trace, folder / "raysim")
        if args.json:
            print(json.dumps({"seed": seed, "gfs": gfs, "raysim": ours, "gfs_wall_s": round(gfs_wall, 1),
                              "raysim_wall_s": round(our_wall, 1)}), flush=True)
            continue
        for cls in ("hp", "spot"):
            g, r = gfs[cls], ours[cls]
            print(f"| {seed} | {cls} | {r['jobs']} | {g['evictions']} | {r['evictions']} | "
                  f"{_diff(r['evictions'], g['evictions'])} | {g['queue_s']:,.0f} | {r['queue_s']:,.0f} | "
                  f"{_diff(r['queue_s'], g['queue_s'])} | {g['jct_s']:,.0f} | {r['jct_s']:,.0f} | "
                  f"{_diff(r['jct_s'], g['jct_s'])} |", flush=True)
        gfs_time = "its log reused" if gfs_wall != gfs_wall else f"{gfs_wall:.0f} s"
        print(f"<!-- seed {seed}: GFS {gfs_time}, raysim {our_wall:.1f} s of wall time -->", flush=True)


if __name__ == "__main__":
    main()
