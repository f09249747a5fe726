"""FIFO with and without evicting spot jobs, and under a fixed spot quota: the study of
docs/spot_study.md (issue 51, item 5).

    python benchmarks/spot_study.py [--node-list PATH] [--nodes 200] [--jobs 3000] [--days 7]
        [--seeds 0 1 2 3 4] [--spot-gpu-hours 0.05] [--arms one_class no_eviction eviction quota [forecast]]
        [--quota-gpus 32 | --quota-share 0.25] [--forecast estimate|oracle] [--forecast-scale 1.0]
        [--baseline no_eviction] [--out DIR] [--json]

Per seed, `raysim trace spot` (raysim.trace.spot_synth) writes an HP/spot workload with the published
mix (spot: a quarter of the jobs, `--spot-gpu-hours` of the GPU-hours) on `--nodes` nodes sliced from the spot trace's node list (`--node-list`: the dataset
`alibaba_spot_nodes` by default, or a copy of its node_info_df.csv), and each arm replays it under
FIFO with GFS's VCs (one per GPU model, `+experiment=spot_alibaba`), in this process through the
config path of a replay (runtime=local, no page), each evicted spot job costing what GFS's simulator
charges (a checkpoint every hour of its run at no write cost, a restore of 40 s):

- `one_class`: every job high-priority (the trace's job_type rewritten to HP): plain FIFO, nobody
  ranked first, nobody evicted; the classes below are the generated ones;
- `no_eviction`: the classes ranked (HP jobs first) but no spot job ever evicted (a guarantee longer
  than any run: spot.guarantee_s=10^12);
- `eviction`: HP jobs that cannot start evict spot jobs, GFS's choice (spot.victims=gfs);
- `quota`: the same under a fixed spot quota: `--quota-gpus` GPUs in every VC (spot.quota_gpus), or
  `--quota-share` of each VC's GPUs (spot.quota_share). raysim refuses a quota below a VC's largest
  spot job (it would never start): the generator's spot jobs reach 32 GPUs, so on a slice of the
  node list, whose smallest VC has one node, only a quota in GPUs applies;
- `forecast` (only when `--arms` names it): `eviction` under a quota that follows HP demand, each
  VC's GPUs less the peak HP demand forecast over the next hour, updated every 5 minutes
  (spot.quota_from=`--forecast`: raysim's estimator, or the oracle; times `--forecast-scale`, GFS's
  safety factor: spot.quota_scale).

Per arm and class (hp, spot): mean, median and p95 queueing and JCT (hours), and evictions, GPU-hours
lost to evictions and the spot jobs' share of the GPU time held (GPUs x (JCT - queueing), as
summary.csv's spot_gpu_share); each the mean over seeds with the half-width of its 95 % Student-t
interval (scipy.stats.t); then each arm's difference from `--baseline` on the same workloads (per
seed, then its mean and interval: the arms share each seed's jobs, so these intervals are the
narrower ones). Prints two markdown tables (or with --json one JSON object).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from hydra import compose, initialize_config_dir
from scipy import stats

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
from raysim.run.simulate import simulate_to
from raysim.data.resolve import resolve
from raysim.trace.spot_gpu import read_spot_nodes
from raysim.trace.spot_synth import generate_spot, slice_nodes, write_spot

#: What an eviction costs in every arm: GFS's simulator's checkpoint every hour and 40 s restore.
COSTS = ["checkpoint.interval_s=3600", "checkpoint.write_s=0", "checkpoint.restart_s=40"]
#: arm -> (overrides, whether every job runs as high-priority)
ARMS = {
    "one_class": ([], True),
    "no_eviction": (["spot.guarantee_s=1000000000000"], False),
    "eviction": (["spot.victims=gfs"], False),
    "quota": (["spot.victims=gfs"], False),  # (+ the quota of --quota-gpus or --quota-share)
    "forecast": (["spot.victims=gfs"], False),  # (+ spot.quota_from=--forecast, spot.quota_scale=--forecast-scale)
}
#: The arms run unless --arms names others.
DEFAULT_ARMS = ("one_class", "no_eviction", "eviction", "quota")
CLASSES = ("hp", "spot")


def replay(workload: Path, overrides: list[str], out: Path) -> tuple[pd.DataFrame, float]:
    """jobs.parquet of one replay of `workload` and its simulation's wall time."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=spot_alibaba", f"trace.path={workload}",
                                                        "runtime=local", "trace.cache=false", "report.plots=none",
                                                        *COSTS, *overrides])
    check_cluster_config(cfg)
    loaded = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, loaded)
    t = time.perf_counter()
    simulate_to(out, loaded, spec, None, runtime="local", job_extra=extra)
    return pq.read_table(out / "jobs.parquet").to_pandas(), time.perf_counter() - t


def measures(jobs: pd.DataFrame, classes: pd.Series) -> dict[str, float]:
    """One replay's figures: per class queueing and JCT (hours), evictions, GPU-hours lost to them,
    the spot GPU share and unfinished jobs; `classes`: job_id -> hp or spot (the generated ones)."""
    cls = jobs.job_id.map(classes)
    held = jobs.gpu_num * (jobs.jct - jobs.queue)
    out = {}
    for c in CLASSES:
        mine = jobs[cls == c]
        for what in ("queue", "jct"):
            hours = mine[what] / 3600
            out[f"{c} {what} mean (h)"] = hours.mean()
            out[f"{c} {what} p50 (h)"] = hours.quantile(0.5)
            out[f"{c} {what} p95 (h)"] = hours.quantile(0.95)
    out["evictions"] = float(jobs.evictions.sum()) if "evictions" in jobs else 0.0
    out["spot jobs evicted"] = float(((cls == "spot") & (jobs.evictions > 0)).sum())
    lost = jobs.get("lost_gpu_s_evictions")
    out["GPU-hours lost to evictions"] = float(lost.sum()) / 3600 if lost is not None else 0.0
    out["spot GPU share"] = float(held[cls == "spot"].sum() / held.sum())
    out["unfinished"] = float((~jobs.finished.astype(bool)).sum())
    return out


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % Student-t interval (0 for one value)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--node-list", default="data:alibaba_spot_nodes/node_info_df.csv")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--spot-gpu-hours", type=float, default=0.05, help="the spot jobs' share of the GPU-hours")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--arms", nargs="+", default=list(DEFAULT_ARMS), choices=list(ARMS))
    ap.add_argument("--quota-gpus", type=int, default=32)
    ap.add_argument("--quota-share", type=float, default=None, help="instead of --quota-gpus")
    ap.add_argument("--forecast", default="estimate", choices=["estimate", "oracle"],
                    help="where the forecast arm's quota comes from (spot.quota_from)")
    ap.add_argument("--forecast-scale", type=float, default=1.0, help="the forecast arm's spot.quota_scale")
    ap.add_argument("--baseline", default="no_eviction", choices=list(ARMS))
    ap.add_argument("--out", type=Path, default=None, help="keep the workloads and jobs.parquet files there")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    scratch = args.out or Path(tempfile.mkdtemp(prefix="spot_study_"))
    rows: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    wall = 0.0
    quota = (f"spot.quota_gpus={args.quota_gpus}" if args.quota_share is None
             else f"spot.quota_share={args.quota_share}")
    forecast = f"spot.quota_from={args.forecast} spot.quota_scale={args.forecast_scale}"
    nodes = slice_nodes(read_spot_nodes(resolve(args.node_list, "--node-list")), args.nodes)
    try:
        for seed in args.seeds:
            workload = scratch / f"workload_{seed}"
            generated = generate_spot(nodes, jobs=args.jobs, days=args.days, seed=seed,
                                      spot_gpu_hours=args.spot_gpu_hours)
            write_spot(workload, nodes, generated)
            classes = pd.Series(generated.job_type.str.lower().values, index=generated.job_name.values)
            for arm in args.arms:
                overrides, one_class = ARMS[arm]
                if arm == "quota":
                    overrides = [*overrides, quota]
                elif arm == "forecast":
                    overrides = [*overrides, *forecast.split()]
                trace = workload
                if one_class:  # the same jobs, every one high-priority
                    trace = scratch / f"workload_{seed}_one_class"
                    trace.mkdir(exist_ok=True)
                    shutil.copy(workload / "node_info_df.csv", trace / "node_info_df.csv")
                    generated.assign(job_type="HP").to_csv(trace / "job_info_df.csv", index=False)
                jobs, s = replay(trace, overrides, scratch / f"{arm}_{seed}")
                wall += s
                rows[arm].append(measures(jobs, classes))
    finally:
        if args.out is None:
            shutil.rmtree(scratch, ignore_errors=True)
    table = {arm: {k: interval([r[k] for r in rs]) for k in rs[0]} for arm, rs in rows.items()}
    base = rows.get(args.baseline)
    others = [a for a in args.arms if a != args.baseline] if base else []
    diffs = {arm: {k: interval([r[k] - b[k] for r, b in zip(rows[arm], base)]) for k in base[0]} for arm in others}
    if args.json:
        print(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "simulated_s": wall, "table": table,
                          "minus_baseline": diffs}))
        return
    print(f"{args.nodes} nodes of {args.node_list}, {args.jobs} jobs over {args.days} days, spot "
          f"{args.spot_gpu_hours:.0%} of the GPU-hours, seeds {args.seeds}; {quota}"
          f"{'; ' + forecast if 'forecast' in args.arms else ''}; "
          f"mean over seeds ± 95 % CI half-width; {wall:.1f} s simulated\n")
    print_table(table, args.arms)
    if diffs:
        print(f"\nMinus {args.baseline}, paired by seed:\n")
        print_table(diffs, others)


def print_table(table: dict, arms: list[str]) -> None:
    print("| | " + " | ".join(arms) + " |")
    print("|---|" + "---:|" * len(arms))
    for key in next(iter(table.values())):
        print(f"| {key} | " + " | ".join(f"{m:,.3f} ± {h:,.3f}" if "share" in key else f"{m:,.1f} ± {h:,.1f}"
                                         for m, h in (table[a][key] for a in arms)) + " |")


if __name__ == "__main__":
    main()
