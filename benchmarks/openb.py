"""The Alibaba GPU 2023 pods in time on the VC engine (`+experiment=openb`): policies x placers.

    python benchmarks/openb.py [--policies fifo fifo_backfill srtf tiresias] [--placers fgd_random bestfit fgd]
                               [--speedup 100000] [--workload default] [--busy-s 900] [--sample-s 10]
                               [--plots DIR] [--json]

Each (policy, placer) run replays the pod list in this process (runtime local, seed 42) with its
arrivals divided by --speedup, and reports per run: wall time of the simulation (loading the trace
is timed apart, as load_s), pods that queued, average and p99 queueing delay, average JCT,
preemptions, and over the first --busy-s seconds (while the compressed arrivals fill the cluster)
the time-averaged GPU allocation (allocated GPU milli / the cluster's) and fragmentation ratio
(FGD's fragment amount / free GPU milli, against the pod list's target workload), from the time
series sampled every --sample-s seconds. With --plots,
DIR/openb_time.png shows allocation and fragmentation over those seconds per run, and
DIR/openb_queue.png the queueing delay CDF. `--speedup 1` replays the trace's own times.

Data: the public openb CSVs, as +experiment=openb finds them (the dataset `openb`: `raysim data
fetch openb`, docs/data.md), or --data DIR.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hydra import compose, initialize_config_dir  # noqa: E402

import raysim.cli  # noqa: E402,F401  (registers the config resolvers)
from raysim.data import resolve  # noqa: E402
from raysim.paths import CONF_DIR  # noqa: E402
from raysim.run.config import spec_from_config  # noqa: E402
from raysim.run.simulate import simulate  # noqa: E402
from raysim.trace.load import load_trace  # noqa: E402


def run_one(trace, folder: Path, policy: str, placer: str, busy_s: int, sample_s: int) -> dict:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["+experiment=openb", f"trace.path={folder}", "runtime=local",
                                           f"policy={policy}", f"placer={placer}", f"sim.sample_interval={sample_s}"])
    spec, extra = spec_from_config(cfg, trace)
    t0 = time.perf_counter()
    jobs, series = simulate(trace, spec, None, job_extra=extra)
    wall = time.perf_counter() - t0
    queue = jobs.column("queue").to_numpy()
    jct = jobs.column("jct").to_numpy(zero_copy_only=False).astype(float)
    cluster = series.to_pandas().query("vc == 'all'")
    t, used, frag = (cluster[c].to_numpy() for c in ("time", "used_gpu_milli", "frag_gpu_milli"))
    total = int(cluster["total_gpu_num"].iloc[0]) * 1000
    busy = t <= busy_s
    free = total - used
    ratio = np.where(free > 0, frag / np.maximum(free, 1), np.nan)
    return {"policy": policy, "placer": placer, "pods": jobs.num_rows, "wall_s": round(wall, 3),
            "queued": int((queue > 0).sum()), "avg_queue_s": round(float(queue.mean()), 2),
            "p99_queue_s": round(float(np.percentile(queue, 99)), 1), "avg_jct_s": round(float(np.nanmean(jct)), 1),
            "preemptions": int(jobs.column("preemptions").to_numpy().sum()),
            "busy_alloc_pct": round(100 * float(used[busy].mean()) / total, 2),
            "busy_frag_pct": round(100 * float(np.nanmean(ratio[busy])), 2),
            "_curve": (t[busy], 100 * used[busy] / total, 100 * ratio[busy]), "_queue": queue}


def style(rows: list[dict]) -> tuple[dict, dict]:
    """A colour per placer and a line style per policy."""
    placers = list(dict.fromkeys(r["placer"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    dashes = ["-", "--", ":", "-."]
    return ({p: f"C{i}" for i, p in enumerate(placers)}, {p: dashes[i % len(dashes)] for i, p in enumerate(policies)})


def plots(rows: list[dict], out: Path, speedup: float, busy_s: int) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(12, 4.5))
    FigureCanvasAgg(fig)
    ax_a, ax_f = fig.subplots(1, 2)
    colour, dash = style(rows)
    for r in rows:
        t, alloc, frag = r["_curve"]
        how = {"label": f"{r['policy']} / {r['placer']}", "color": colour[r["placer"]], "linestyle": dash[r["policy"]]}
        ax_a.step(t / 60, alloc, where="post", linewidth=1, **how)
        ax_f.step(t / 60, frag, where="post", linewidth=1, **how)
    ax_a.set_xlabel("simulated time (minutes)")
    ax_a.set_ylabel("GPU allocation (% of the cluster's GPU milli)")
    ax_f.set_xlabel("simulated time (minutes)")
    ax_f.set_ylabel("fragmentation ratio (% of free GPU milli)")
    ax_a.legend(fontsize=6, ncol=2)
    fig.suptitle(f"openb default pod list, arrivals / {speedup:g}: the first {busy_s // 60} minutes")
    fig.tight_layout()
    fig.savefig(out / "openb_time.png", dpi=110)

    fig = Figure(figsize=(6, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for r in rows:
        q = np.sort(r["_queue"])
        ax.step(q, np.arange(1, len(q) + 1) / len(q), where="post", linewidth=1, label=f"{r['policy']} / {r['placer']}",
                color=colour[r["placer"]], linestyle=dash[r["policy"]])
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("queueing delay (s)")
    ax.set_ylabel("fraction of pods")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "openb_queue.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--policies", nargs="+", default=["fifo", "fifo_backfill", "srtf", "tiresias"])
    ap.add_argument("--placers", nargs="+", default=["fgd_random", "bestfit", "fgd"])
    ap.add_argument("--speedup", type=float, default=100_000)
    ap.add_argument("--workload", default="default")
    ap.add_argument("--busy-s", type=int, default=900)
    ap.add_argument("--sample-s", type=int, default=10)
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--plots", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    folder = args.data or Path(resolve("data:openb"))
    t0 = time.perf_counter()
    trace = load_trace(folder, fmt="alibaba2023", cache=False,
                       reader_options={"workload": args.workload, "speedup": args.speedup})
    load_s = round(time.perf_counter() - t0, 3)
    rows = []
    for policy in args.policies:
        for placer in args.placers:
            row = run_one(trace, folder, policy, placer, args.busy_s, args.sample_s)
            rows.append(row)
            shown = {k: v for k, v in row.items() if not k.startswith("_")}
            shown.update(speedup=args.speedup, workload=args.workload, load_s=load_s)
            print(json.dumps(shown) if args.json else
                  " ".join(f"{k}={v}" for k, v in shown.items()), flush=True)
    if args.plots:
        plots(rows, args.plots, args.speedup, args.busy_s)


if __name__ == "__main__":
    main()
