"""Gavel's round-based policies against Tiresias, SRTF and Lucid, per VC and cluster-wide, on Ray:
queueing delay, JCT, utilisation and wall time per run (the study of docs/rounds_study.md).

    python benchmarks/rounds_study.py [--traces venus helios] [--policies max_min_fairness ...]
        [--modes none global] [--runtime ray|local] [--out DIR] [--venus-path DIR]
        [--profiles-path DIR] [--helios-days 30] [--helios-lucid-nodes 2 12] [--timeout 1200]
        [--set KEY=VALUE ...] [--dry-run] [--json]

Every run is one `python -m raysim ...` subprocess, one after another (never two at once), with its
own run folder under --out (<trace>/<policy>[_pool<N>]_<mode>/, holding run.log, summary.csv and the
rest of raysim's outputs). From each run the script takes summary.csv's `all` row and the wall
times: `sim_s` and `total_s` from raysim's "simulated in X s (Y s total)" line (simulation; and
loading, simulation and writing the result files), `process_s` measured around the subprocess
(Python and Ray start-up included). A run that fails gets its one-line error in the table. The
results go to <out>/results.csv and <out>/results.md, and the markdown tables are printed.

Traces:
- `venus`: the real Venus trace (September 2020, 23,859 jobs, 15 VCs, 1,080 GPUs),
  `+experiment=venus_real` (reads `data:venus`: `raysim data fetch venus` first; Lucid also needs
  `raysim data fetch lucid_profiles`). `--venus-path DIR` reads a local copy instead (a folder with
  cluster_full_log.csv, vc_config.csv and lucid_artifacts/), `--profiles-path DIR` Lucid's
  colocate_info.csv and single_data.csv.
- `helios`: the Helios-like trace (`+experiment=helios_synth`, raysim's seeded generator), cut to
  `--helios-days` days (default 30: the full 183 days, 1.58M jobs, is too long for round-based
  runs on a 2-core machine).

Modes: `none` (each VC its own queue and GPUs; round-based policies run their rounds per VC) and
`global` (`quota=global`: one queue over the whole cluster). Lucid runs per VC only (it lends nodes
to its profiler itself) and refuses `global`; the refusal is recorded like any other failure.

Lucid's inputs: on Venus the artifact's (EBM duration estimates, throughput forecast, measured
pair speeds and share-score profiles; `+experiment=lucid sim.compat=clean`); on the Helios-like
trace oracle durations (`estimator.source=oracle`), no forecast (packing always on), the measured
profiles with the learned interference model for the pairs the table lacks
(`policy.profiles.interference=learned`: none of the synthetic workloads was measured) and a profiling
pool of each
`--helios-lucid-nodes` size (Lucid's default 2 nodes, sized for Venus's 1,080 GPUs, and 12, the
same share of Helios's 6,280). Everything runs in clean semantics.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POLICIES = ["max_min_fairness", "finish_time_fairness", "tiresias", "srtf", "lucid"]
MODES = ["none", "global"]
TRACES = ["venus", "helios"]
METRICS = ["jobs", "finished", "avg_queue", "p50_queue", "p99_queue", "avg_jct", "p99_jct", "gpu_utilization"]
FIELDS = ["trace", "policy", "mode", *METRICS, "sim_s", "total_s", "process_s", "status", "overrides", "run_dir"]
SIMULATED = re.compile(r"simulated in ([0-9.]+) s \(([0-9.]+) s total\)")


def trace_overrides(trace: str, args) -> list[str]:
    if trace == "venus":
        base = ["+experiment=venus_real", "ray.vcs_per_actor=auto"]
        if args.venus_path:
            base.append(f"trace.path={Path(args.venus_path)}")
        return base
    if trace == "helios":
        return ["+experiment=helios_synth", f"trace.synth.days={args.helios_days}"]  # vcs_per_actor=auto already
    raise SystemExit(f"unknown trace {trace!r} (venus, helios)")


def lucid_overrides(trace: str, args) -> list[str]:
    """What Lucid needs besides the trace (see the module docstring)."""
    if trace == "venus":
        if args.venus_path:
            v, p = Path(args.venus_path), Path(args.profiles_path) if args.profiles_path else None
            out = ["estimator.source=file", f"estimator.path={v / 'lucid_artifacts' / 'duration_estimates_ebm.csv'}",
                   "policy.forecast.source=file", f"policy.forecast.path={v / 'lucid_artifacts' / 'throughput_forecast.csv'}"]
            prof = (f"{p / 'colocate_info.csv'}", f"{p / 'single_data.csv'}") if p else \
                ("data:lucid_profiles/colocate_info.csv", "data:lucid_profiles/single_data.csv")
            return out + [f"policy.profiles.colocation={prof[0]}", f"policy.profiles.single={prof[1]}"]
        # +experiment=lucid = venus_real + policy=lucid + the artifact's inputs; clean semantics like every run here
        return ["estimator.source=file", "policy.forecast.source=file",
                "policy.forecast.path=data:venus/lucid_artifacts/throughput_forecast.csv",
                "policy.profiles.colocation=data:lucid_profiles/colocate_info.csv",
                "policy.profiles.single=data:lucid_profiles/single_data.csv"]
    p = Path(args.profiles_path) if args.profiles_path else None
    prof = (f"{p / 'colocate_info.csv'}", f"{p / 'single_data.csv'}") if p else \
        ("data:lucid_profiles/colocate_info.csv", "data:lucid_profiles/single_data.csv")
    # the synthetic workloads are not in the measured pair table: price their pairs with the learned model
    return ["estimator.source=oracle", f"policy.profiles.colocation={prof[0]}", f"policy.profiles.single={prof[1]}",
            "policy.profiles.interference=learned"]


def matrix(args) -> list[dict]:
    runs = []
    for trace in args.traces:
        for policy in args.policies:
            for mode in args.modes:
                variants = [None]
                if policy == "lucid" and trace == "helios":  # (one refusal is enough for quota=global)
                    variants = list(args.helios_lucid_nodes)[:1 if mode == "global" else None]
                for nodes in variants:
                    ov = trace_overrides(trace, args) + [f"policy={policy}", f"quota={mode}",
                                                         f"runtime={args.runtime}", "sim.compat=clean"]
                    label = policy
                    if policy == "lucid":
                        ov += lucid_overrides(trace, args)
                        if nodes is not None:
                            ov.append(f"policy.profiler.nodes={nodes}")
                            label = f"lucid (pool {nodes} nodes)"
                    ov += list(args.set)
                    name = policy + (f"_pool{nodes}" if nodes is not None else "") + f"_{mode}"
                    runs.append({"trace": trace, "policy": label, "mode": mode, "overrides": ov,
                                 "run_dir": str(Path(args.out) / trace / name)})
    return runs


def one_line_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("raysim: error:"):
            return ln
    return lines[-1] if lines else "no output"


def launch(overrides: list[str], folder: Path, timeout: int) -> tuple[int | None, str, str, float]:
    """`python -m raysim <overrides>` with its results in `folder` (its output in run.log there):
    (exit status or None after `timeout` s, stdout, stderr, seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "raysim", *overrides, f"hydra.run.dir={folder}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        rc = None
    seconds = round(time.perf_counter() - start, 1)
    (folder / "run.log").write_text(f"$ {' '.join(cmd)}\n{out}\n--- stderr ---\n{err}\n--- process_s {seconds}\n")
    return rc, out, err, seconds


def run_one(run: dict, timeout: int) -> dict:
    folder = Path(run["run_dir"])
    rc, out, err, seconds = launch(run["overrides"], folder, timeout)
    row = {**run, "process_s": seconds, "overrides": " ".join(run["overrides"])}
    if rc is None:
        row["status"] = f"timeout after {timeout} s"
        return row
    if rc != 0:
        row["status"] = f"exit {rc}: {one_line_error(err or out)}"
        return row
    m = SIMULATED.search(out) or SIMULATED.search(err)
    if m:
        row["sim_s"], row["total_s"] = float(m.group(1)), float(m.group(2))
    summary = folder / "summary.csv"
    with summary.open() as f:
        allrow = next((r for r in csv.DictReader(f) if r["vc"] == "all"), None)
    if allrow is None:
        row["status"] = f"no 'all' row in {summary}"
        return row
    for k in METRICS:
        row[k] = float(allrow[k]) if k in allrow and allrow[k] != "" else None
    row["status"] = "ok"
    return row


def fmt(v, nd=0) -> str:
    if v is None or v == "":
        return ""
    return f"{v:,.{nd}f}"


def markdown(rows: list[dict]) -> str:
    out = []
    for trace in dict.fromkeys(r["trace"] for r in rows):
        out.append(f"### {trace}\n")
        out.append("| policy | mode | avg queue (s) | p50 queue (s) | p99 queue (s) | avg JCT (s) | p99 JCT (s) "
                   "| GPU util | wall: sim (s) | wall: total (s) | wall: process (s) | status |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            if r["trace"] != trace:
                continue
            ok = r.get("status") == "ok"
            out.append("| " + " | ".join([
                r["policy"], "per VC" if r["mode"] == "none" else "cluster-wide",
                fmt(r.get("avg_queue")), fmt(r.get("p50_queue")), fmt(r.get("p99_queue")),
                fmt(r.get("avg_jct")), fmt(r.get("p99_jct")),
                fmt(r.get("gpu_utilization"), 3), fmt(r.get("sim_s"), 1), fmt(r.get("total_s"), 1),
                fmt(r.get("process_s"), 1), "ok" if ok else str(r.get("status", "")).replace("|", "\\|")]) + " |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="+", default=TRACES, choices=TRACES)
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    ap.add_argument("--runtime", default="ray", choices=["ray", "local"])
    ap.add_argument("--out", default=f"outputs/rounds_study/{dt.datetime.now():%Y-%m-%d_%H-%M-%S}")
    ap.add_argument("--venus-path", default=None,
                    help="a local copy of the Venus trace folder instead of data:venus")
    ap.add_argument("--profiles-path", default=None,
                    help="a folder with Lucid's colocate_info.csv and single_data.csv instead of data:lucid_profiles")
    ap.add_argument("--helios-days", type=int, default=30, help="days of the Helios-like trace (default 30)")
    ap.add_argument("--helios-lucid-nodes", nargs="+", type=int, default=[2, 12],
                    help="Lucid's profiling pool sizes on the Helios-like trace (one run each)")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per run before it is killed")
    ap.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                    help="extra Hydra overrides for every run (e.g. policy.round_s=60 policy.reset_min_s=1)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    ap.add_argument("--json", action="store_true", help="also print one JSON line per run as it finishes")
    args = ap.parse_args()

    runs = matrix(args)
    if args.dry_run:
        for r in runs:
            print("python -m raysim " + " ".join(r["overrides"]) + f" hydra.run.dir={r['run_dir']}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    header = (f"{dt.datetime.now():%Y-%m-%d %H:%M}, commit {commit}, {platform.node()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}, runtime={args.runtime}")
    print(header, flush=True)
    rows, t0 = [], time.perf_counter()
    for i, run in enumerate(runs, 1):
        print(f"[{i}/{len(runs)}] {run['trace']} {run['policy']} quota={run['mode']} ...", end=" ", flush=True)
        row = run_one(run, args.timeout)
        rows.append(row)
        print(row["status"] if row["status"] != "ok" else
              f"avg queue {row['avg_queue']:,.0f} s, avg JCT {row['avg_jct']:,.0f} s, "
              f"util {row['gpu_utilization']:.3f}, {row.get('sim_s', '?')} s sim / {row['process_s']} s process",
              flush=True)
        if args.json:
            print(json.dumps({k: row.get(k) for k in FIELDS}), flush=True)
        with (out / "results.csv").open("w", newline="") as f:  # rewritten after every run
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    total = time.perf_counter() - t0
    md = f"{header}; {len(rows)} runs in {total:,.0f} s\n\n" + markdown(rows)
    (out / "results.md").write_text(md)
    print()
    print(md)
    print(f"results: {out / 'results.csv'}, {out / 'results.md'}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
