"""Gavel's own simulator and raysim side by side, end to end, as processes (issue 36): the ten Gavel
policies on two traces (Gavel's seed-0 trace and the seed-1 trace of Gavel's generator), each side
timed from process start to exit, wall and CPU (user + sys of the process and its children).

    python benchmarks/gavel_side_by_side.py --gavel PATH --gavel-python /work/gavel_venv/bin/python \
        [--repeat 2] [--policies fifo_perf gandiva ...] [--traces A.trace B.trace] [--keep DIR] [--json]
        [--gavel-processes N] [--raysim-processes N]

One sitting alternates the sides, Gavel first: Gavel, raysim, Gavel, raysim (--repeat times each).
- Gavel's side is twenty processes, one per policy and trace, of Gavel's trace-replay driver,
  unmodified: `scheduler/scripts/drivers/simulate_scheduler_with_trace.py -t TRACE -p POLICY
  --throughputs_file JSON -c 8:8:8 --num_gpus_per_server 4:4:4 --seed 0 --solver ECOS
  --time_per_iteration 360`, run in Gavel's scheduler/ folder, stdout and stderr (its DEBUG log) to
  files. This is the configuration of ../shared/references/gavel/README.md (no measurement window:
  every job runs to completion). The processes run one after another, or --gavel-processes at a
  time (as a user runs a sweep of them on several cores).
- raysim's side is what a user types (benchmarks/README.md, "The ten policies as a user runs
  them"): two multiruns, one per trace, `python -m raysim -m +experiment=gavel_trace runtime=local
  trace.path=TRACE cluster.throughput=JSON policy=<the ten>`, from the repository root, plus only
  `hydra.sweep.dir=` so the outputs land in the scratch folder rather than multirun/. Its runs go
  one per CPU at a time (raysim's default launcher); --raysim-processes N adds
  `hydra.launcher.processes=N` (1: one after another).
A side's wall time per repetition is from its first process's start to its last one's exit; its
CPU time is the sum over its processes.

Every process is timed with os.wait4 (wall from just before the fork to its exit; CPU = ru_utime +
ru_stime of the process and the descendants it waited for). A run only counts if it produced
results: Gavel's printed "Average job completion time", "Total duration" and one "Job N: JCT" line
per job of the trace; raysim's summary.csv for each of the ten runs. Otherwise the script stops
with the run's output tail, so a broken run is never timed as a fast one. On Gavel's seed-0 trace
the script checks Gavel's average JCT (all jobs and window 100-199) and makespan against
results_seed0.csv, the reference run's numbers, and prints Gavel's and raysim's average JCTs.
The seed-1 trace is written (untimed) by `benchmarks/gavel.py --write-second-trace` unless
--traces is given.

Setting Gavel up (Gavel is not part of raysim; this script only runs it):
    # Gavel at commit c4fa400 (github stanford-futuredata/gavel) in PATH
    python -m venv /work/gavel_venv
    /work/gavel_venv/bin/pip install cvxpy ecos numpy scipy psutil scikit-learn matrix-completion \
        grpcio protobuf grpcio-tools
    cd PATH/scheduler && PATH=/work/gavel_venv/bin:$PATH make rpc_stubs   # Gavel's gRPC stubs
Gavel's scheduler.py imports matrix_completion (which needs scikit-learn) and its runtime's gRPC
stubs even when it simulates; nothing of Gavel is patched. Measured with cvxpy 1.9.3, ECOS, Python
3.11 (see benchmarks/README.md, "Side by side with Gavel's simulator").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RAYSIM_SHARED", REPO.parent / "shared"))
GAVEL_REF = SHARED / "references" / "gavel"
#: Gavel's name (its driver's -p) -> raysim's (conf/policy/)
POLICIES = {"fifo": "gavel_fifo", "fifo_perf": "fifo_perf", "isolated": "isolated",
            "max_min_fairness": "max_min_fairness", "max_min_fairness_perf": "max_min_fairness_perf",
            "finish_time_fairness": "finish_time_fairness", "finish_time_fairness_perf": "finish_time_fairness_perf",
            "max_sum_throughput_perf": "max_sum_throughput_perf", "min_total_duration_perf": "min_total_duration_perf",
            "gandiva": "gandiva"}
WINDOW = range(100, 200)  # job ids of the reference's measured window
GAVEL_ARGS = ["-c", "8:8:8", "--num_gpus_per_server", "4:4:4", "--seed", "0", "--solver", "ECOS",
              "--time_per_iteration", "360"]


class RunFailed(RuntimeError):
    pass


def timed(cmd: list[str], cwd: Path, out: Path, err: Path, env: dict | None = None) -> tuple[float, float, int]:
    """Runs cmd as one process; returns (wall s, CPU s of it and its children, exit code)."""
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=fout, stderr=ferr, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: keep Popen from waiting again
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def trace_jobs(trace: Path) -> int:
    return sum(1 for line in trace.read_text().splitlines() if line.strip())


def parse_gavel(out: Path, jobs: int) -> dict:
    """Gavel's printed results, or RunFailed if it did not print them for every job."""
    text = out.read_text(errors="replace")
    avg = re.search(r"^Average job completion time: ([0-9.]+) seconds", text, re.MULTILINE)
    total = re.search(r"^Total duration: ([0-9.]+) seconds", text, re.MULTILINE)
    jct = {int(m[1]): float(m[2]) for m in re.finditer(r"^Job (\d+): ([0-9.]+)$", text, re.MULTILINE)}
    if not (avg and total) or len(jct) != jobs:
        raise RunFailed(f"no results from Gavel ({len(jct)} of {jobs} job lines)")
    window = [jct[i] for i in WINDOW if i in jct]
    return {"avg_jct_all": float(avg[1]), "makespan": float(total[1]),
            "avg_jct_window": sum(window) / len(window) if window else None}


def parse_raysim(sweep: Path, policies: list[str]) -> dict:
    """Each run's summary ("all" row) by raysim policy name, or RunFailed if any is missing."""
    found = {}
    for run in sorted(p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit()):
        overrides = (run / ".hydra" / "overrides.yaml").read_text() if (run / ".hydra" / "overrides.yaml").exists() else ""
        name = re.search(r"policy=(\w+)", overrides)
        summary = run / "summary.csv"
        if not (name and summary.exists()):
            continue
        rows = summary.read_text().splitlines()
        header = rows[0].split(",")
        values = next((r.split(",") for r in rows[1:] if r.startswith("all,")), None)
        if values:
            row = dict(zip(header, values))
            found[name[1]] = {"avg_jct_all": float(row["avg_jct"]), "makespan": float(row["makespan"]),
                              "avg_jct_window": float(row["avg_jct_window"]) if row.get("avg_jct_window") else None}
    missing = [p for p in policies if p not in found]
    if missing:
        raise RunFailed(f"raysim's multirun left no summary for {', '.join(missing)}")
    return found


def gavel_side(args, scheduler: Path, traces: dict, work: Path, rep: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    def run(label: str, trace: Path, name: str) -> dict:
        out, err = work / f"gavel_{label}_{name}.out", work / f"gavel_{label}_{name}.err"
        cmd = [args.gavel_python, "scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(trace),
               "-p", name, "--throughputs_file", str(args.throughputs), *GAVEL_ARGS]
        w, c, rc = timed(cmd, scheduler, out, err)
        try:
            if rc != 0:
                raise RunFailed(f"exit code {rc}")
            result = {**parse_gavel(out, trace_jobs(trace)), "wall_s": w, "cpu_s": c}
        except RunFailed as exc:
            raise RunFailed(f"Gavel {name} on {label} (repetition {rep}): {exc}\n"
                            f"--- stdout tail ---\n{tail(out)}\n--- stderr tail ---\n{tail(err)}") from None
        if not args.keep:
            err.unlink()  # Gavel's DEBUG log, ~15 MB a run
        log(args, f"  gavel {label} {name}: {w:.2f} s wall, {c:.2f} s CPU")
        return result

    runs = [(label, trace, name) for label, trace in traces.items() for name in args.policies]
    start = time.perf_counter()
    with ThreadPoolExecutor(args.gavel_processes) as pool:  # (each thread waits for its own process)
        done = list(pool.map(lambda r: run(*r), runs))
    results = {(label, name): result for (label, _, name), result in zip(runs, done)}
    return {"wall_s": time.perf_counter() - start, "cpu_s": sum(r["cpu_s"] for r in done), "runs": results}


def raysim_side(args, traces: dict, work: Path, rep: int) -> dict:
    wall = cpu = 0.0
    results = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    names = [POLICIES[p] for p in args.policies]
    for label, trace in traces.items():
        sweep = work / f"raysim_{rep}_{label}"
        out, err = work / f"raysim_{rep}_{label}.out", work / f"raysim_{rep}_{label}.err"
        cmd = [args.python, "-m", "raysim", "-m", "+experiment=gavel_trace", "runtime=local",
               f"trace.path={trace}", f"cluster.throughput={args.throughputs}", f"policy={','.join(names)}",
               f"hydra.sweep.dir={sweep}"]
        if args.raysim_processes is not None:
            cmd.append(f"hydra.launcher.processes={args.raysim_processes}")
        w, c, rc = timed(cmd, REPO, out, err, env)
        try:
            if rc != 0:
                raise RunFailed(f"exit code {rc}")
            per_policy = parse_raysim(sweep, names)
        except RunFailed as exc:
            raise RunFailed(f"raysim multirun on {label} (repetition {rep}): {exc}\n"
                            f"--- stdout tail ---\n{tail(out)}\n--- stderr tail ---\n{tail(err)}") from None
        results[label] = {"wall_s": w, "cpu_s": c, "policies": per_policy}
        if not args.keep:
            shutil.rmtree(sweep, ignore_errors=True)
        wall += w
        cpu += c
        log(args, f"  raysim {label} multirun: {w:.2f} s wall, {c:.2f} s CPU")
    return {"wall_s": wall, "cpu_s": cpu, "runs": results}


def log(args, message: str) -> None:
    print(message, file=sys.stderr if args.json else sys.stdout, flush=True)


def reference_check(gavel_runs: dict, label: str, reference: Path, policies: list[str]) -> list[dict]:
    """Gavel's results on the seed-0 trace against the reference run's (results_seed0.csv)."""
    import csv

    with open(reference, newline="") as f:
        ref = {row["policy"]: row for row in csv.DictReader(f)}
    rows = []
    for name in policies:
        mine, theirs = gavel_runs[(label, name)], ref.get(name)
        if theirs is None:
            continue
        diff = {k: mine[k] - float(theirs[k]) for k in ("avg_jct_all", "avg_jct_window", "makespan")}
        # Gavel prints JCTs and the makespan to 3 decimals: means of rounded values are within 0.0005 s
        rows.append({"policy": name, **{f"{k}_diff_s": round(v, 4) for k, v in diff.items()},
                     "match": all(abs(v) < 0.01 for v in diff.values())})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gavel", type=Path, required=True, help="Gavel checkout (or its scheduler/ folder)")
    parser.add_argument("--gavel-python", default=sys.executable, help="interpreter with Gavel's dependencies")
    parser.add_argument("--python", default=sys.executable, help="raysim's interpreter")
    parser.add_argument("--traces", nargs="+", type=Path,
                        help="trace files (default: Gavel's seed-0 trace and the seed-1 trace of its generator)")
    parser.add_argument("--throughputs", type=Path, default=GAVEL_REF / "simulation_throughputs.json")
    parser.add_argument("--reference", type=Path, default=GAVEL_REF / "results_seed0.csv")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES),
                        help="Gavel's policy names (default: all ten)")
    parser.add_argument("--repeat", type=int, default=2, help="repetitions per side, alternating")
    parser.add_argument("--keep", type=Path, help="keep every run's output in this folder")
    parser.add_argument("--gavel-processes", type=int, default=1, help="Gavel's processes run this many at a time")
    parser.add_argument("--raysim-processes", type=int,
                        help="raysim's hydra.launcher.processes (default: the launcher's, one per CPU)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args()
    if args.gavel_processes < 1 or args.raysim_processes is not None and args.raysim_processes < 1:
        parser.error("--gavel-processes and --raysim-processes must be at least 1")
    scheduler = args.gavel / "scheduler" if (args.gavel / "scheduler").is_dir() else args.gavel
    if not (scheduler / "scripts" / "drivers" / "simulate_scheduler_with_trace.py").exists():
        parser.error(f"no Gavel driver under {scheduler}")
    args.throughputs = args.throughputs.resolve()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gavel_side_by_side_"))
    work.mkdir(parents=True, exist_ok=True)
    seed0 = (GAVEL_REF / "gavel_seed0_lam8000_n300.trace").resolve()
    if args.traces:
        traces = {t.stem: t.resolve() for t in args.traces}
    else:
        seed1 = work / "gavel_seed1_lam8000_n300.trace"
        subprocess.run([args.python, str(REPO / "benchmarks" / "gavel.py"), "--write-second-trace", str(seed1)],
                       check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        traces = {"seed0": seed0, "seed1": seed1}
    started = datetime.datetime.now().astimezone()
    load_before = os.getloadavg()
    reps = []
    try:
        for rep in range(1, args.repeat + 1):
            log(args, f"repetition {rep}: Gavel ({len(args.policies) * len(traces)} processes)")
            gavel = gavel_side(args, scheduler, traces, work, rep)
            log(args, f"repetition {rep}: raysim ({len(traces)} multiruns)")
            raysim = raysim_side(args, traces, work, rep)
            reps.append({"gavel": gavel, "raysim": raysim})
    except RunFailed as exc:
        print(f"run failed, nothing timed: {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    med = {side: {k: statistics.median(r[side][k] for r in reps) for k in ("wall_s", "cpu_s")}
           for side in ("gavel", "raysim")}
    ratio = {k: med["gavel"][k] / med["raysim"][k] for k in ("wall_s", "cpu_s")}
    last = reps[-1]
    deterministic = all(r["gavel"]["runs"][key]["avg_jct_all"] == last["gavel"]["runs"][key]["avg_jct_all"]
                        for r in reps for key in last["gavel"]["runs"])
    ref_label = next((label for label, t in traces.items() if t == seed0), None)
    checks = reference_check(last["gavel"]["runs"], ref_label, args.reference, args.policies) \
        if ref_label and args.reference.exists() else []
    jcts = [{"trace": label, "policy": name,
             "gavel_avg_jct": last["gavel"]["runs"][(label, name)]["avg_jct_all"],
             "raysim_avg_jct": last["raysim"]["runs"][label]["policies"][POLICIES[name]]["avg_jct_all"]}
            for label in traces for name in args.policies]
    for row in jcts:
        row["diff_pct"] = round(100 * (row["raysim_avg_jct"] / row["gavel_avg_jct"] - 1), 3)

    if args.json:
        print(json.dumps({
            "date": started.isoformat(timespec="seconds"), "machine": platform.node(), "cpus": os.cpu_count(),
            "load_before": load_before, "load_after": load_after, "gavel_processes": args.gavel_processes,
            "raysim_processes": args.raysim_processes, "traces": {k: str(v) for k, v in traces.items()},
            "policies": args.policies, "repetitions": [
                {side: {"wall_s": r[side]["wall_s"], "cpu_s": r[side]["cpu_s"]} for side in ("gavel", "raysim")}
                for r in reps],
            "gavel_runs": [{"trace": label, "policy": name, **v} for (label, name), v in last["gavel"]["runs"].items()],
            "raysim_runs": [{"trace": label, "wall_s": v["wall_s"], "cpu_s": v["cpu_s"]}
                            for label, v in last["raysim"]["runs"].items()],
            "median": med, "ratio_gavel_over_raysim": ratio, "gavel_deterministic": deterministic,
            "reference_check": checks, "avg_jct": jcts}, indent=1))
        return 0

    print(f"\n{started:%Y-%m-%d %H:%M %Z}, {platform.node()}, {os.cpu_count()} CPUs, "
          f"load {load_before[0]:.2f} before, {load_after[0]:.2f} after; {len(args.policies)} policies x "
          f"{len(traces)} traces ({', '.join(traces)}); Gavel's processes {args.gavel_processes} at a time, "
          f"raysim's hydra.launcher.processes={args.raysim_processes or 'default (one per CPU)'}")
    print("\n| repetition | Gavel wall | Gavel CPU | raysim wall | raysim CPU |\n|---|---|---|---|---|")
    for i, r in enumerate(reps, 1):
        print(f"| {i} | {r['gavel']['wall_s']:.1f} s | {r['gavel']['cpu_s']:.1f} s | "
              f"{r['raysim']['wall_s']:.1f} s | {r['raysim']['cpu_s']:.1f} s |")
    print(f"| median | {med['gavel']['wall_s']:.1f} s | {med['gavel']['cpu_s']:.1f} s | "
          f"{med['raysim']['wall_s']:.1f} s | {med['raysim']['cpu_s']:.1f} s |")
    print(f"\nGavel / raysim (medians): wall {ratio['wall_s']:.2f}x, CPU {ratio['cpu_s']:.2f}x")
    print("\nper trace, last repetition (sums over its processes, wall / CPU):")
    for label in traces:
        g = [v for (l, _), v in last["gavel"]["runs"].items() if l == label]
        rs = last["raysim"]["runs"][label]
        print(f"  {label}: Gavel {sum(v['wall_s'] for v in g):.1f} / {sum(v['cpu_s'] for v in g):.1f} s, "
              f"raysim {rs['wall_s']:.1f} / {rs['cpu_s']:.1f} s")
    print(f"\nGavel's runs gave the same average JCTs every repetition: {'yes' if deterministic else 'NO'}")
    if checks:
        print(f"Gavel on {ref_label} against {args.reference.name} (difference, s):")
        for c in checks:
            print(f"  {c['policy']:26s} all {c['avg_jct_all_diff_s']:+.4f}  window {c['avg_jct_window_diff_s']:+.4f}  "
                  f"makespan {c['makespan_diff_s']:+.4f}  {'match' if c['match'] else 'MISMATCH'}")
    print("\naverage JCT, Gavel vs raysim (all jobs):")
    for row in jcts:
        print(f"  {row['trace']:6s} {row['policy']:26s} {row['gavel_avg_jct']:12.1f} {row['raysim_avg_jct']:12.1f} "
              f"{row['diff_pct']:+.3f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
