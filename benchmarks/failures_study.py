"""Failures and checkpoint-restart, the study of docs/failures_study.md.

    python benchmarks/failures_study.py bigjob [--intervals-min 5 10 ...] [--seeds 3] [--write-s 120]
        [--restart-s 600] [--spare-nodes 64] [--out DIR] [--json]
    python benchmarks/failures_study.py policies [--traces venus helios] [--policies fifo tiresias ...]
        [--venus-path DIR] [--profiles-path DIR] [--sia-profiles-path DIR] [--helios-days 30] [--interval-min 30]
        [--variants none checkpoints failures] [--out DIR] [--json]
    python benchmarks/failures_study.py speed [--policies fifo tiresias] [--days 183] [--repeat 2] [--out DIR]

`bigjob`: one job of 16,384 GPUs (2,048 8-GPU nodes) needing 54 days of work, as Llama 3 405B's
pre-training, on 2,048 + `--spare-nodes` nodes under `failures=llama3` (the report's rate and
category mix; repairs of 4 hours), checkpointing every interval of `--intervals-min`, each write
taking `--write-s` and each restore `--restart-s` (the report gives neither: assumptions). Per
interval, over `--seeds` seeds: interruptions, JCT and the effective training time ratio (work /
JCT), beside Daly's expected time for the job's MTBF (a node's / 2,048); the figure marks both
optima. Every run goes through raysim's Python entry points in this process (the same config as
`python -m raysim trace.path=<the job> failures=llama3 checkpoint.* runtime=local`).

`policies`: the traces under each policy (`--variants`) without failures, with the checkpoint model
alone, and with `failures=llama3` and the model (a checkpoint every `--interval-min` minutes of
work, writes 60 s, restores 300 s): average JCT and queueing,
interruptions, GPU-hours lost and spent on checkpoints, one `python -m raysim` subprocess per run.
Sia runs with failures but without the checkpoint model (its jobs pay their applications' own
restore, docs/failures.md), Lucid without its profiling pool. The traces and Lucid's inputs are
rounds_study.py's: `venus`, the real Venus trace (`+experiment=venus_real`, or local copies with
`--venus-path` and `--profiles-path`; Sia's profiles `data:sia_profiles` or `--sia-profiles-path`);
`helios`, the Helios-like trace, `--helios-days` days. Every run is in-process (`runtime=local`).

`speed`: the cost of failures, the Helios-like trace (`--days`, default the whole 183) under each
policy without failures, with `failures=llama3`, and with those and checkpoints, `--repeat` times
alternately.

Prints markdown tables (or JSON lines with --json) and writes <out>/bigjob.png or <out>/policies.csv.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rounds_study import SIMULATED, lucid_overrides, trace_overrides  # (benchmarks/: the same traces and Lucid inputs)

GPUS_PER_NODE = 8
JOB_GPUS = 16_384
WORK_S = 54 * 86_400
INTERVALS_MIN = (5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240)


# ------------------------------------------------------------------------------------------ bigjob
def bigjob_trace(folder: Path, spare_nodes: int) -> Path:
    """The one job in raysim's CSV schema, with vc_config.csv beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                     f"1,cluster,u,{JOB_GPUS},0,0,{WORK_S},COMPLETED\n")
    nodes = JOB_GPUS // GPUS_PER_NODE + spare_nodes
    (folder / "vc_config.csv").write_text(f",num\ncluster,{nodes}\n")
    return folder / "jobs.csv"


def run_bigjob(trace: Path, interval_s: int, write_s: int, restart_s: int, seed: int) -> dict:
    """One run: the job's JCT, interruptions, lost and overhead GPU-seconds."""
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run.config import load_from_config, spec_from_config
    from raysim.run.simulate import simulate

    overrides = [f"trace.path={trace}", "failures=llama3", f"checkpoint.interval_s={interval_s}",
                 f"checkpoint.write_s={write_s}", f"checkpoint.restart_s={restart_s}", "runtime=local",
                 f"seed={seed}", "trace.cache=false"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    trace_ = load_from_config(cfg)
    spec, extra = spec_from_config(cfg, trace_)
    jobs, _ = simulate(trace_, spec, None, job_extra=extra)
    row = {c: jobs.column(c)[0].as_py() for c in ("jct", "interruptions", "lost_gpu_s", "overhead_gpu_s")}
    row["node_mtbf_h"] = node_mtbf_h(cfg)
    return row


def node_mtbf_h(cfg) -> float:
    """A node's mean time between failures under the config's failure preset (hours)."""
    f = cfg.failures
    if f.get("node_mtbf_h") is not None:
        return float(f.node_mtbf_h)
    return float(f.gpu_mtbf_h) / GPUS_PER_NODE


def bigjob(args) -> list[dict]:
    from raysim.sim.checkpoint import Checkpointing, daly_time

    trace = bigjob_trace(Path(args.out) / "bigjob", args.spare_nodes)
    rows = []
    for minutes in args.intervals_min:
        tau = int(minutes * 60)
        runs = [run_bigjob(trace, tau, args.write_s, args.restart_s, seed) for seed in range(args.seeds)]
        job_mtbf_s = runs[0]["node_mtbf_h"] * 3600 / (JOB_GPUS // GPUS_PER_NODE)
        jct = float(np.mean([r["jct"] for r in runs]))
        row = {"interval_min": minutes, "seeds": args.seeds, "jct_h": jct / 3600,
               "ettr": WORK_S / jct, "interruptions": float(np.mean([r["interruptions"] for r in runs])),
               "lost_gpu_h": float(np.mean([r["lost_gpu_s"] for r in runs])) / 3600,
               "overhead_gpu_h": float(np.mean([r["overhead_gpu_s"] for r in runs])) / 3600,
               "daly_ettr": WORK_S / daly_time(WORK_S, Checkpointing(tau, args.write_s, args.restart_s), job_mtbf_s),
               "job_mtbf_h": job_mtbf_s / 3600}
        rows.append(row)
        print(json.dumps(row) if args.json else
              f"{minutes:>5} min: ETTR {row['ettr']:.4f} (Daly {row['daly_ettr']:.4f}), "
              f"{row['interruptions']:.0f} interruptions, JCT {row['jct_h']:.1f} h", file=sys.stderr, flush=True)
    bigjob_plot(rows, Path(args.out) / "bigjob.png", args)
    return rows


def bigjob_plot(rows: list[dict], out: Path, args) -> Path:
    from raysim.report.plots import plt, save_figure

    x = [r["interval_min"] for r in rows]
    sim, daly = [r["ettr"] for r in rows], [r["daly_ettr"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(x, sim, "o-", label=f"simulated (mean of {args.seeds} seeds)")
    ax.plot(x, daly, "s--", label="Daly's expected time")
    best_sim, best_daly = int(np.argmax(sim)), int(np.argmax(daly))
    ax.plot(x[best_sim], sim[best_sim], "*", markersize=16, color="C0", label=f"best simulated: {x[best_sim]} min")
    ax.plot(x[best_daly], daly[best_daly], "*", markersize=16, color="C1", label=f"Daly's best: {x[best_daly]} min")
    ax.set_xscale("log")
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_xlabel("checkpoint interval (minutes of work, log scale)")
    ax.set_ylabel("effective training time ratio (work / JCT)")
    ax.set_title(f"one {JOB_GPUS:,}-GPU job, 54 days of work, failures=llama3 "
                 f"(write {args.write_s} s, restore {args.restart_s} s)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out)


# ---------------------------------------------------------------------------------------- policies
def policy_overrides(policy: str, trace: str, args) -> list[str]:
    """The policy and its inputs (Lucid's as in rounds_study.py, without its profiling pool, whose
    runs outside the VCs keep no checkpoint)."""
    if policy == "lucid":
        return ["policy=lucid", "policy.profiler.nodes=0", *lucid_overrides(trace, args)]
    return [f"policy={policy}"]


def run_overrides(trace: str, policy: str, args) -> list[str]:
    """The trace, the policy and its inputs; Sia on Venus maps the jobs to Sia's applications
    (`+experiment=venus_elastic`, on the real trace)."""
    if policy == "sia" and trace == "venus":
        return ["+experiment=venus_elastic", "policy=sia", f"trace.path={args.venus_path or 'data:venus'}",
                f"policy.profiles={args.sia_profiles_path or 'data:sia_profiles'}"]
    in_process = [o for o in trace_overrides(trace, args) if not o.startswith("ray.")]  # (runtime=local)
    return in_process + policy_overrides(policy, trace, args)


#: What a policies run adds: nothing; the checkpoint model alone; llama3 failures and the model.
VARIANTS = ("none", "checkpoints", "failures")


def run_policy(trace: str, policy: str, variant: str, args) -> dict:
    folder = Path(args.out) / trace / f"{policy}_{variant}"
    overrides = run_overrides(trace, policy, args) + ["runtime=local", f"hydra.run.dir={folder}"]
    if variant == "failures":
        overrides.append("failures=llama3")
    if variant != "none" and policy != "sia":
        overrides += [f"checkpoint.interval_s={int(args.interval_min * 60)}", "checkpoint.write_s=60",
                      "checkpoint.restart_s=300"]
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "raysim", *overrides], capture_output=True, text=True)
    row = {"trace": trace, "policy": policy, "variant": variant, "process_s": time.perf_counter() - begin}
    if done.returncode:
        row["error"] = (done.stderr.strip().splitlines() or ["?"])[-1]
        return row
    import pandas as pd
    import pyarrow.parquet as pq

    summary = pd.read_csv(folder / "summary.csv").set_index("vc").loc["all"]
    jobs = pq.read_table(folder / "jobs.parquet").to_pandas()
    row.update(avg_jct_h=summary["avg_jct"] / 3600, avg_queue_h=summary["avg_queue"] / 3600,
               interruptions=int(jobs.get("interruptions", pd.Series([0])).sum()),
               lost_gpu_h=float(jobs.get("lost_gpu_s", pd.Series([0])).sum()) / 3600,
               overhead_gpu_h=float(jobs.get("overhead_gpu_s", pd.Series([0])).sum()) / 3600,
               down_gpu_h=float(summary.get("down_gpu_h", 0.0)))
    found = SIMULATED.search(done.stdout + done.stderr)
    if found:
        row["sim_s"] = float(found.group(1))
    return row


def policies(args) -> list[dict]:
    rows = []
    for trace in args.traces:
        for policy in args.policies:
            for variant in args.variants:
                if variant == "checkpoints" and policy == "sia":
                    continue  # (Sia's jobs keep their own restore costs: the same as none)
                row = run_policy(trace, policy, variant, args)
                rows.append(row)
                print(json.dumps(row) if args.json else row, file=sys.stderr, flush=True)
    import pandas as pd

    pd.DataFrame(rows).to_csv(Path(args.out) / "policies.csv", index=False)
    return rows


# ------------------------------------------------------------------------------------------- speed
#: What a speed run adds: nothing; llama3 failures; those failures and the checkpoint model.
SPEED_VARIANTS = {
    "none": [],
    "failures": ["failures=llama3"],
    "checkpoints": ["failures=llama3", "checkpoint.interval_s=1800", "checkpoint.write_s=60", "checkpoint.restart_s=300"],
}


def speed(args) -> list[dict]:
    """The Helios-like trace (`--days`) per policy without failures, with `failures=llama3`, and with
    those failures and checkpoints every 30 minutes (SPEED_VARIANTS), `--repeat` times alternately:
    the `python -m raysim` process's wall time and raysim's own simulation time."""
    rows = []
    for rep in range(args.repeat):
        for policy in args.policies:
            for variant, extra in SPEED_VARIANTS.items():
                folder = Path(args.out) / "speed" / f"{policy}_{variant}_{rep}"
                begin = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "raysim", "+experiment=helios_synth",
                                       f"trace.synth.days={args.days}", f"policy={policy}", "runtime=local",
                                       f"hydra.run.dir={folder}", *extra], capture_output=True, text=True)
                row = {"policy": policy, "variant": variant, "repeat": rep,
                       "process_s": time.perf_counter() - begin}
                found = SIMULATED.search(done.stdout)
                if done.returncode or not found:
                    row["error"] = (done.stderr.strip().splitlines() or ["?"])[-1]
                else:
                    row["sim_s"], row["total_s"] = float(found.group(1)), float(found.group(2))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r.get(k, ''):.4g}" if isinstance(r.get(k), float) else str(r.get(k, ""))
                                       for k in keys) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="study", required=True)
    big = sub.add_parser("bigjob")
    big.add_argument("--intervals-min", type=float, nargs="+", default=list(INTERVALS_MIN))
    big.add_argument("--seeds", type=int, default=3)
    big.add_argument("--write-s", type=int, default=120)
    big.add_argument("--restart-s", type=int, default=600)
    big.add_argument("--spare-nodes", type=int, default=64)
    pol = sub.add_parser("policies")
    pol.add_argument("--traces", nargs="+", default=["venus", "helios"], choices=["venus", "helios"])
    pol.add_argument("--policies", nargs="+", default=["fifo", "tiresias", "srtf", "lucid", "sia"])
    pol.add_argument("--venus-path", default=None)
    pol.add_argument("--profiles-path", default=None)
    pol.add_argument("--sia-profiles-path", default=None)
    pol.add_argument("--helios-days", type=int, default=30)
    pol.add_argument("--interval-min", type=float, default=30)
    pol.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    fast = sub.add_parser("speed")
    fast.add_argument("--policies", nargs="+", default=["fifo", "tiresias"])
    fast.add_argument("--days", type=int, default=183)
    fast.add_argument("--repeat", type=int, default=2)
    for p in (big, pol, fast):
        p.add_argument("--out", default="outputs/failures_study")
        p.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    rows = {"bigjob": bigjob, "policies": policies, "speed": speed}[args.study](args)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(markdown(rows))


if __name__ == "__main__":
    main()
