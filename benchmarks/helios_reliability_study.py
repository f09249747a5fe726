"""Spares, warm standbys and retirement on the Helios-like cluster, the study of docs/reliability_study.md.

    python benchmarks/helios_reliability_study.py [--arms baseline spares standbys retire]
        [--policies fifo srtf tiresias] [--seeds 3] [--days 3] [--mtbf-h 500] [--spares 32]
        [--standbys 1] [--quota global] [--out /tmp/helios_reliability] [--report-only] [--json]

Each arm is one multirun as a user runs it, a `python -m raysim -m` subprocess over the policies and
seeds 0 .. seeds-1 (one run at a time, in-process: `hydra.launcher.processes=1 runtime=local`), on the
first `--days` days of the Helios-like trace (`+experiment=helios_synth`, every VC and job) with
AIReSim's failure semantics: exponential failures on busy clocks (`--mtbf-h` per node), 15 % bad nodes
failing 6 times as often, AIReSim's repair pipeline, checkpoints every 30 minutes of work and restores of
10 minutes. The arms add, each alone: a spare pool (`--spares` nodes, pulled after a 20-minute
preemption wait), warm standbys (`--standbys` per multi-node job, a 3-minute host selection otherwise),
or retirement (2 failures in 7 days). Every arm runs under `quota=global` (one queue for the whole
cluster): a spare pool is per VC, and the Helios-like layout has VCs of one node, which a pool of even
one spare would leave with no working node (refused). `--quota none` runs the per-VC queues instead,
where only the baseline and retirement can run.

The sweep's own sweep_replicas.csv gives each metric's mean and 95 % Student-t interval over the seeds;
the script prints them per arm and policy (markdown, or JSON lines with --json).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

#: What every arm runs with (docs/reliability_study.md says why each number).
COMMON = ("+experiment=helios_synth", "runtime=local", "hydra.launcher.processes=1",
          "failures=exponential", "failures.clock=busy", "failures.bad_fraction=0.15", "failures.bad_multiplier=6",
          "repair=pipeline", "checkpoint.interval_s=1800", "checkpoint.restart_s=600",
          "report.html=false", "report.plots=none", "report.out_jobs=false")
#: The table's columns: summary metric -> heading (and the scale it is shown at).
COLUMNS = {"avg_jct": ("JCT (s)", 1), "avg_queue": ("queue (s)", 1), "ettr": ("ETTR", 1),
           "interruptions": ("interruptions", 1), "auto_repairs": ("repairs", 1),
           "lost_gpu_h": ("lost GPU-h", 1), "down_gpu_h": ("down GPU-h", 1), "spares_pulled": ("spares pulled", 1),
           "standby_swaps": ("standby swaps", 1), "host_selections": ("host selections", 1),
           "stalls": ("stalls", 1), "retired_nodes": ("retired", 1)}


def arms(spares: int, standbys: int) -> dict[str, tuple[str, ...]]:
    """Arm name -> its overrides beyond COMMON."""
    return {"baseline": (),
            "spares": (f"spares.nodes={spares}", "spares.wait_s=1200"),
            "standbys": (f"spares.standbys={standbys}", "spares.host_selection_s=180"),
            "retire": ("retire=threshold", "retire.max_failures=2", "retire.window_h=168")}


def overrides(arm: tuple[str, ...], days: float, mtbf_h: float, quota: str = "global") -> list[str]:
    """One arm's overrides, the policies and seeds aside."""
    return [*COMMON, f"quota={quota}", f"trace.synth.days={days:g}", f"failures.node_mtbf_h={mtbf_h:g}", *arm]


def run_arm(name: str, arm_overrides: list[str], policies: list[str], seeds: int, out: Path) -> float:
    """Run one arm's multirun into out/name; its wall time in seconds."""
    cmd = [sys.executable, "-m", "raysim", "-m", *arm_overrides, f"policy={','.join(policies)}",
           f"seed={','.join(str(s) for s in range(seeds))}", f"hydra.sweep.dir={out / name}"]
    print("$ " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def arm_rows(name: str, folder: Path) -> list[dict]:
    """Per policy (the sweep's groups), the cluster's mean and 95 % half-width of each COLUMNS metric."""
    replicas = pd.read_csv(folder / "sweep_replicas.csv")
    replicas = replicas[replicas["vc"] == "all"] if "vc" in replicas.columns else replicas
    rows = []
    for group, part in replicas.groupby("group", sort=False):
        by = part.set_index("metric")
        row = {"arm": name, "group": group, "runs": int(by["runs"].max())}
        for metric, (_, scale) in COLUMNS.items():
            if metric in by.index:
                row[metric] = float(by.at[metric, "mean"]) * scale
                row[f"{metric}_ci95"] = float(by.at[metric, "ci95"]) * scale
        rows.append(row)
    return rows


def cell(row: dict, metric: str) -> str:
    if metric not in row:
        return "-"
    mean, hw = row[metric], row[f"{metric}_ci95"]
    digits = 4 if metric == "ettr" else 1 if metric == "avg_queue" else 0
    return f"{mean:,.{digits}f} ± {hw:,.{digits}f}" if hw == hw else f"{mean:,.{digits}f}"


def markdown(rows: list[dict]) -> str:
    shown = [m for m in COLUMNS if any(m in r for r in rows)]
    lines = ["| arm | policy | runs | " + " | ".join(COLUMNS[m][0] for m in shown) + " |",
             "|---|---|---|" + "---|" * len(shown)]
    for r in rows:
        lines.append(f"| {r['arm']} | {r['group'].removeprefix('policy=')} | {r['runs']} | "
                     + " | ".join(cell(r, m) for m in shown) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", nargs="+", default=["baseline", "spares", "standbys", "retire"])
    p.add_argument("--policies", nargs="+", default=["fifo", "srtf", "tiresias"])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--days", type=float, default=3)
    p.add_argument("--mtbf-h", type=float, default=500)
    p.add_argument("--spares", type=int, default=32)
    p.add_argument("--standbys", type=int, default=1)
    p.add_argument("--quota", default="global", choices=["global", "none"],
                   help="none: per-VC queues (only baseline and retire run: spares and standbys are refused there)")
    p.add_argument("--out", type=Path, default=Path("/tmp/helios_reliability"))
    p.add_argument("--json", action="store_true")
    p.add_argument("--report-only", action="store_true", help="read the arms' folders under --out, run nothing")
    a = p.parse_args(argv)
    every = arms(a.spares, a.standbys)
    rows = []
    for name in a.arms:
        if not a.report_only:
            wall = run_arm(name, overrides(every[name], a.days, a.mtbf_h, a.quota), a.policies, a.seeds, a.out)
            print(f"{name}: {wall:.0f} s", file=sys.stderr, flush=True)
        rows += arm_rows(name, a.out / name)
    if a.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(markdown(rows))


if __name__ == "__main__":
    main()
