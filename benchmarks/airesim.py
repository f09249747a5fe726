"""AIReSim's reliability model of one large training job, run on named scenarios over several seeds,
with each metric's mean and 95 % confidence interval (issue 50: the side-by-side with raysim).

    python benchmarks/airesim.py --airesim PATH [--python /tmp/airesim/venv/bin/python] \
        [--scenarios defaults spares_50 ...] [--seeds 3] [--first-seed 42] [--processes 1] [--json]
    python benchmarks/airesim.py --list

AIReSim (arXiv 2603.07041, DSN'26; github karthikp-ubc/airesim, MIT, SimPy) is not part of raysim:
this script only runs a checkout the user points it to, unmodified, through its own Python API
(`airesim.params.Params`, `airesim.simulator.Simulator(params, host_selection_policy=...,
removal_policy=..., seed=s).run()`, the calls its sweeps make), in a process of `--python` (a Python
with simpy; default: this one) with the checkout first on PYTHONPATH. Each replication is one seed
(AIReSim's own runs use seeds 42, 43, ...); a replication's wall and CPU time is that of its `run()`
call alone, timed inside the process. `--processes N` runs the seeds in N processes at a time.

A scenario is AIReSim's Table I defaults with a few `Params` fields changed (`SCENARIOS`, in AIReSim's
names and units: minutes, failures per minute), and optionally its retirement and host-selection
policy by name (`REMOVALS`, `SELECTIONS`). The metrics (`METRICS`) are read from AIReSim's
`StatsCollector` after each run, times in hours. The summary per scenario and metric is the mean
over seeds and the half-width of its 95 % Student-t interval (AIReSim's AdaptiveRunner's interval),
printed as each scenario finishes: rows of a table, or with --json one JSON object a line (simulator,
scenario, wall_s, summary, replications).

Each simulator is one function of `SIMULATORS`: (args, scenario, seeds) -> one dict of METRICS per
seed. AIReSim's is the only one so far; raysim's side of issue 50 joins it with the same signature,
running the same scenarios in AIReSim's semantics, its rows printed beside AIReSim's.

Setting AIReSim up:
    git clone https://github.com/karthikp-ubc/airesim PATH
    python -m venv /tmp/airesim/venv && /tmp/airesim/venv/bin/pip install simpy
Measured numbers: benchmarks/README.md, "airesim.py".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DAY_MIN = 24 * 60

#: name -> (what it varies, AIReSim Params fields changed from Table I's defaults, policies by name).
#: The one-knob points of issue 50's "Done when", plus a retirement and a host-selection policy.
SCENARIOS = {
    "defaults": ("Table I: 4,096-server job, 16 warm standbys, working pool 4,160, 200 spares", {}, {}),
    "spares_50": ("spare pool of 50 servers", {"spare_pool_size": 50}, {}),
    "standbys_0": ("no warm standbys: every failure is a host selection", {"warm_standbys": 0}, {}),
    "recovery_10": ("recovery of 10 min", {"recovery_time": 10.0}, {}),
    "bad_30": ("30 % bad servers", {"systematic_failure_fraction": 0.30}, {}),
    "escalation_50": ("automated repair escalates with probability 0.5", {"prob_auto_to_manual": 0.5}, {}),
    "auto_false_10": ("automated repair's false success 0.1", {"auto_repair_fail_prob": 0.1}, {}),
    # (not a shape < 1: AIReSim draws every server's time afresh after each failure, so the job's next failure
    # comes after mean x N^(-1/k): about a minute at k = 0.7 and 4,096 servers, and the job never ends)
    "weibull_15": ("Weibull times to failure, shape 1.5 (wear-out)",
                   {"failure_distribution": "weibull", "weibull_shape": 1.5}, {}),
    "job_512": ("a 512-server job (pools unchanged)", {"job_size": 512}, {}),
    "retire_2_in_7d": ("retire a server at its 2nd failure within 7 days", {},
                       {"removal": ("threshold", {"max_failures": 2, "window_minutes": 7 * DAY_MIN})}),
    "fewest_failures": ("host selection: fewest failures first", {}, {"selection": ("fewest_failures", {})}),
}

#: Retirement and host-selection policies by name -> AIReSim's class (airesim.policies).
REMOVALS = {"never": "NeverRemove", "threshold": "ThresholdRemoval", "scored": "ScoredRemoval"}
SELECTIONS = {"random": "DefaultHostSelection", "fewest_failures": "FewestFailuresFirst"}

#: metric -> (AIReSim StatsCollector attribute, scale to our unit). Minutes become hours.
METRICS = {
    "training_h": ("total_training_time", 1 / 60),
    "compute_h": ("total_compute_time", 1 / 60),
    "recovery_h": ("total_recovery_time", 1 / 60),
    "host_selection_h": ("total_host_selection_time", 1 / 60),
    "spare_wait_h": ("total_wait_time", 1 / 60),
    "failures": ("total_failures", 1),
    "random_failures": ("random_failures", 1),
    "bad_node_failures": ("systematic_failures", 1),
    "auto_repairs": ("auto_repairs", 1),
    "manual_repairs": ("manual_repairs", 1),
    "repairs_fixed": ("successful_repairs", 1),
    "false_successes": ("failed_repairs", 1),
    "retired": ("servers_retired", 1),
    "preemptions": ("preemption_count", 1),
    "host_selections": ("host_selection_count", 1),
    "stalls": ("job_stall_count", 1),
}

#: Run by AIReSim's Python: reads {params, removal, selection, seeds, metrics} as JSON on stdin, runs one
#: Simulator per seed and prints one JSON line per seed (the metrics, wall_s and cpu_s of run()).
DRIVER = r"""
import json, sys, time
from airesim import policies
from airesim.params import Params
from airesim.simulator import Simulator
job = json.load(sys.stdin)
def policy(spec):
    return None if spec is None else getattr(policies, spec[0])(**spec[1])
for seed in job["seeds"]:
    sim = Simulator(Params(**job["params"]), removal_policy=policy(job["removal"]),
                    host_selection_policy=policy(job["selection"]), seed=seed)
    wall, cpu = time.perf_counter(), time.process_time()
    stats = sim.run()
    row = {name: getattr(stats, attr) * scale for name, (attr, scale) in job["metrics"].items()}
    row.update(seed=seed, wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
               depleted=bool(stats.cluster_depleted))
    print(json.dumps(row), flush=True)
"""


def airesim_runs(args, scenario: str, seeds: list[int]) -> list[dict]:
    """AIReSim's replications of `scenario`, one dict per seed (METRICS, wall_s, cpu_s, seed)."""
    _, params, chosen = SCENARIOS[scenario]
    job = {"params": params, "metrics": METRICS,
           "removal": _policy(chosen.get("removal"), REMOVALS),
           "selection": _policy(chosen.get("selection"), SELECTIONS)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(args.airesim), os.environ.get("PYTHONPATH")])))
    shares = [seeds[i::args.processes] for i in range(args.processes) if seeds[i::args.processes]]

    def run(part: list[int]) -> list[dict]:
        proc = subprocess.run([args.python, "-c", DRIVER], input=json.dumps({**job, "seeds": part}), text=True,
                              capture_output=True, env=env, cwd=args.airesim)
        if proc.returncode != 0:
            sys.exit(f"airesim.py: AIReSim failed on {scenario} (seeds {part}), exit code {proc.returncode}:\n"
                     + "\n".join(proc.stderr.splitlines()[-15:]))
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    with ThreadPoolExecutor(len(shares)) as pool:  # (each thread waits for its own process)
        rows = [row for part in pool.map(run, shares) for row in part]
    return sorted(rows, key=lambda r: r["seed"])


def _policy(spec, names: dict):
    """A policy (name, kwargs) as AIReSim's (class name, kwargs), or None for its default."""
    return None if spec is None else (names[spec[0]], spec[1])


#: simulator -> its runner: (args, scenario, seeds) -> one dict of METRICS per seed.
SIMULATORS = {"airesim": airesim_runs}


def t_quantile(df: int, p: float = 0.975) -> float:
    """Student-t quantile (scipy's), the 95 % interval's factor for df degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def interval(values: list[float]) -> dict:
    """Mean and the half-width of its 95 % Student-t interval (0 for one value)."""
    n = len(values)
    mean = statistics.fmean(values)
    half = t_quantile(n - 1) * statistics.stdev(values) / math.sqrt(n) if n > 1 else 0.0
    return {"mean": mean, "ci95": half, "n": n}


def summarize(rows: list[dict]) -> dict:
    """Per metric (and wall_s, cpu_s): mean and 95 % half-width over the replications."""
    return {m: interval([float(r[m]) for r in rows]) for m in [*METRICS, "etr", "wall_s", "cpu_s"]}


def with_etr(row: dict) -> dict:
    """A replication with its effective training ratio (compute time over training time, AIReSim's ETR)."""
    return {**row, "etr": row["compute_h"] / row["training_h"] if row["training_h"] else 0.0}


HEADER = f"{'simulator':<9} {'scenario':<16} {'metric':<17} {'mean':>12} {'± 95 %':>10}"


def table_rows(sim: str, scenario: str, summary: dict) -> str:
    """One scenario's summary as rows of the text table (HEADER): one per metric."""
    return "\n".join(f"{sim:<9} {scenario:<16} {metric:<17} {s['mean']:>12.4g} {s['ci95']:>10.3g}"
                     for metric, s in summary.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--airesim", type=Path, help="an AIReSim checkout (its folder holding airesim/)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs AIReSim (with simpy)")
    parser.add_argument("--scenarios", nargs="+", default=["defaults"], choices=list(SCENARIOS), metavar="NAME")
    parser.add_argument("--seeds", type=int, default=3, help="replications per scenario (default 3)")
    parser.add_argument("--first-seed", type=int, default=42, help="the first seed (AIReSim's default 42)")
    parser.add_argument("--processes", type=int, default=1, help="processes at a time (default 1)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.list:
        for name, (doc, params, chosen) in SCENARIOS.items():
            print(f"{name:<16} {doc}  {json.dumps({**params, **chosen})}")
        return
    if args.airesim is None or not (args.airesim / "airesim" / "simulator.py").is_file():
        parser.error("--airesim must be an AIReSim checkout (a folder holding airesim/simulator.py)")
    if args.seeds < 1 or args.processes < 1:
        parser.error("--seeds and --processes must be at least 1")
    args.airesim = args.airesim.resolve()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if not args.json:
        print(HEADER, flush=True)
    for sim, runner in SIMULATORS.items():
        for scenario in args.scenarios:  # (each printed once done: a long sitting keeps what it finished)
            start = time.perf_counter()
            rows = [with_etr(r) for r in runner(args, scenario, seeds)]
            wall, summary = time.perf_counter() - start, summarize(rows)
            print(f"{sim} {scenario}: {len(rows)} replications in {wall:.1f} s", file=sys.stderr, flush=True)
            print(json.dumps({"simulator": sim, "scenario": scenario, "wall_s": wall, "summary": summary,
                              "replications": rows}) if args.json else table_rows(sim, scenario, summary), flush=True)


if __name__ == "__main__":
    main()
