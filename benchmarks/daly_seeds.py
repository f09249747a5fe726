"""Daly's check over several seeds, with 95 % confidence intervals (docs/failures.md, "Daly's check").

    python benchmarks/daly_seeds.py [--seeds 5] [--jobs 1000] [--families fifo rounds60 rounds360]
        [--out DIR] [--json]

Identical jobs of 8 h of work, one 8-GPU node each, all submitted at 0 on a VC with a node for each,
under `failures=exponential failures.repair_h=0` and checkpoint-restart: their mean JCT against
Daly's expected time (raysim.sim.checkpoint.daly_time) at tests/test_daly.py's points, once per seed.
Families: `fifo` (event-driven: a failed job restarts in the second of its failure, so the mean is
Daly's), `rounds60` and `rounds360` (`policy=max_min_fairness` with 60-s rounds and with Gavel's
360-s ones: a job stopped mid-round waits for its round's end before it restores, about half a round
per failure, which the formula has no term for; the last column takes half a round per stop off
each run's mean JCT).

Per point it prints the formula, the mean of the per-seed means, the error of that mean in % and its
95 % confidence interval (Student's t over the seeds), and whether the formula lies inside the
interval. Every run goes through raysim's Python entry points in this process, as
`python -m raysim trace.path=<jobs.csv> failures=exponential failures.node_mtbf_h=H failures.repair_h=0
checkpoint.interval_s=.. checkpoint.write_s=.. checkpoint.restart_s=.. seed=S runtime=local` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

WORK_S = 8 * 3600
#: (interval, write, restore, MTBF as a multiple of the interval)
POINTS = [(3600, 120, 300, 1), (3600, 120, 300, 4), (1800, 300, 600, 1), (7200, 60, 60, 0.5)]
#: family: (overrides, round length in s or 0)
FAMILIES = {"fifo": (("policy=fifo",), 0),
            "rounds60": (("policy=max_min_fairness", "policy.round_s=60"), 60),
            "rounds360": (("policy=max_min_fairness",), 360)}


def mean_jct(trace: Path, family: tuple, point: tuple, seed: int) -> tuple[float, float]:
    """The mean JCT and the mean number of stops per job of one run (every job must finish)."""
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    interval, write, restart, m = point
    overrides = [f"trace.path={trace}", *family, "failures=exponential",
                 f"failures.node_mtbf_h={m * interval / 3600!r}", "failures.repair_h=0",
                 f"checkpoint.interval_s={interval}", f"checkpoint.write_s={write}",
                 f"checkpoint.restart_s={restart}", "runtime=local", f"seed={seed}", "trace.cache=false"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    check_cluster_config(cfg)
    trace_ = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace_)
    jobs, _ = simulate(trace_, spec, None, job_extra=extra)
    if not jobs.column("finished").to_numpy().all():
        raise SystemExit(f"daly_seeds: a job did not finish ({family}, {point}, seed {seed})")
    return float(jobs.column("jct").to_numpy().mean()), float(jobs.column("interruptions").to_numpy().mean())


def summarise(formula: float, means: list[float]) -> dict:
    """The error of the mean over seeds and its 95 % interval (t over the seeds), in % of the formula."""
    x = np.asarray(means, dtype=float) / formula - 1
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
    mean = float(x.mean())
    return {"error_pct": 100 * mean, "ci95_pct": 100 * half, "formula_inside": bool(abs(mean) <= half),
            "per_seed_pct": [round(100 * v, 3) for v in x]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--families", nargs="+", choices=tuple(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--out", type=Path, default=Path("/tmp/raysim-daly-seeds"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from raysim.sim.checkpoint import Checkpointing, daly_time
    from raysim.trace.lone import write_lone_jobs

    trace = write_lone_jobs(args.out, args.jobs, WORK_S)
    if not args.json:
        print(f"{args.jobs} one-node jobs of {WORK_S} s, seeds 0-{args.seeds - 1}\n")
        print("| family | tau (s) | delta (s) | R (s) | M (s) | formula (s) | mean over seeds (s) | error % "
              "| 95 % CI % | formula in CI | per seed % | stops per job | error less half a round per stop % |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.families:
        for point in POINTS:
            interval, write, restart, m = point
            formula = daly_time(WORK_S, Checkpointing(interval, write, restart), m * interval)
            began = time.perf_counter()
            overrides, round_s = FAMILIES[name]
            runs = [mean_jct(trace, overrides, point, seed) for seed in range(args.seeds)]
            means = [jct for jct, _ in runs]
            waited = [jct - stops * round_s / 2 for jct, stops in runs]  # (half a round per stop)
            row = {"family": name, "interval_s": interval, "write_s": write, "restart_s": restart,
                   "mtbf_s": m * interval, "formula_s": formula, "mean_s": float(np.mean(means)),
                   "stops_per_job": float(np.mean([stops for _, stops in runs])),
                   **summarise(formula, means),
                   "less_round_waits_error_pct": float(100 * (np.mean(waited) / formula - 1)),
                   "wall_s": round(time.perf_counter() - began, 1)}
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"| {name} | {interval} | {write} | {restart} | {m * interval:g} | {formula:.0f} | "
                      f"{row['mean_s']:.0f} | {row['error_pct']:+.2f} | ±{row['ci95_pct']:.2f} | "
                      f"{'yes' if row['formula_inside'] else 'no'} | "
                      f"{', '.join(f'{v:+.2f}' for v in row['per_seed_pct'])} | {row['stops_per_job']:.1f} | "
                      f"{row['less_round_waits_error_pct']:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
