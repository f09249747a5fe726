"""Elastic jobs on the Venus month: Sia, Pollux and Gavel's rigid baseline against Tiresias and Lucid,
per VC, on Ray: JCT and queueing per policy and per VC (the study of docs/elastic_study.md).

    python benchmarks/elastic_study.py [--policies sia pollux gavel_elastic tiresias lucid]
        [--days N] [--cap-gpus auto|N|none] [--round-s S] [--share 0.5] [--runtime ray|local]
        [--out DIR] [--figures DIR] [--venus-path DIR] [--sia-profiles-path DIR]
        [--lucid-profiles-path DIR] [--timeout 3600] [--set KEY=VALUE ...] [--dry-run] [--report-only]

Every policy runs `python -m raysim +experiment=venus_elastic ...` on the same trace file, one run
after another (never two at once), each in its own run folder under --out (<policy>/, holding
run.log, summary.csv and the rest of raysim's outputs). `+experiment=venus_elastic` runs the Venus
VCs as Sia's `rtx` profiles (8-GPU RTX 2080Ti nodes), gives each job the application Sia's workload
generator gives jobs of its GPU-hours (cifar10 < 1, deepspeech2 < 10, yolov3 < 100, imagenet
above), makes a share of them elastic (`--share`, drawn per job from the seed) and scales each
job's training speed so that on its own GPU count, rigidly, it takes its trace duration; Tiresias
and Lucid replay those durations.

The trace. The real Venus month (`data:venus`: `raysim data fetch venus sia_profiles
lucid_profiles` first; `--venus-path DIR` reads a local copy, a folder with cluster_full_log.csv,
vc_config.csv and lucid_artifacts/). The script writes the trace every policy reads into
<out>/trace/ (outside the data cache), changed in two ways only:
- `--days N` keeps the jobs submitted in the first N days (from midnight of the first submit day);
  default: all 26 days.
- `--cap-gpus` (default `auto`: the largest GPU count the applications' rtx profiles allow, 24 with
  Sia's profiles) lowers larger GPU counts to it. Elastic policies cap a mapped job's GPUs there
  anyway (raysim.elastic.inputs) while Tiresias and Lucid would run the trace's count, so without
  the cap the five policies would not run the same jobs (`--cap-gpus none` runs the trace as it is).

Round lengths: `--round-s S` sets Sia's and Pollux's rounds (their default is 60 s, Sia's artifact);
Gavel's baseline keeps 360 s (Sia's setting for it). Lucid gets the artifact's inputs on Venus (EBM
duration estimates, throughput forecast, measured pair speeds and share-score profiles), as in
benchmarks/rounds_study.py; everything runs in clean semantics, per VC (`quota=none`).

From each run the script takes summary.csv (the `all` row and one row per VC) and the wall times
(`sim_s`, `total_s` from raysim's "simulated in X s (Y s total)" line; `process_s` around the
subprocess). It writes <out>/results.csv (one row per policy and VC), <out>/results.md (the tables,
also printed), <out>/applications.md (jobs, elastic jobs and GPU-hours per application) and the
figures (into --figures, default <out>/plots): avg_jct_per_vc.png, avg_queue_per_vc.png and
jct_cdf.png. results.md also has average JCT and queue per application and per elastic / rigid job,
and the GPU-hours the elastic policies' jobs held (jobs.parquet's `gpu_seconds`) against the trace's.
`--report-only` rebuilds the tables and figures from the run folders under --out.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rounds_study import launch, one_line_error  # noqa: E402  (this folder: the run launcher they share)

POLICIES = ["sia", "pollux", "gavel_elastic", "tiresias", "lucid"]
ELASTIC = {"sia", "pollux", "gavel_elastic"}
ROUNDED = {"sia", "pollux"}  # --round-s applies to these
METRICS = ["jobs", "finished", "avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_queue", "p50_queue", "p95_queue",
           "p99_queue", "makespan", "gpu_utilization"]
FIELDS = ["policy", "vc", *METRICS, "restarts_per_job", "gpu_hours", "sim_s", "total_s", "process_s", "status", "overrides", "run_dir"]
SIMULATED = re.compile(r"simulated in ([0-9.]+) s(?:; [^(]*)? \(([0-9.]+) s total\)")  # (Ray: "; Ray start-up X s")
#: the application map of +experiment=venus_elastic (Sia's workload generator), for the counts
APP_RULES = [{"below_gpu_hours": 1, "application": "cifar10"}, {"below_gpu_hours": 10, "application": "deepspeech2"},
             {"below_gpu_hours": 100, "application": "yolov3"}, {"below_gpu_hours": None, "application": "imagenet"}]
APP_EPOCHS = {"cifar10": (100, 50), "deepspeech2": (80, 25), "yolov3": (50, 80), "imagenet": (90, 250)}


# -- inputs ------------------------------------------------------------------------------------------
def venus_folder(args) -> Path:
    if args.venus_path:
        return Path(args.venus_path).expanduser().resolve()
    from raysim.data.resolve import resolve

    return Path(resolve("data:venus", key="--venus-path"))


def sia_profiles(args) -> Path:
    if args.sia_profiles_path:
        return Path(args.sia_profiles_path).expanduser().resolve()
    from raysim.data.resolve import resolve

    return Path(resolve("data:sia_profiles", key="--sia-profiles-path"))


def gpu_cap(args, profiles: Path) -> int | None:
    """--cap-gpus: None (no cap), a number, or the profiles' limit (what raysim.elastic.inputs caps
    a mapped job's GPUs at: the smallest over applications of min(max batch / min per-GPU batch,
    most GPUs profiled))."""
    if args.cap_gpus == "none":
        return None
    if args.cap_gpus != "auto":
        return int(args.cap_gpus)
    from raysim.elastic.profiles import load_profile

    limits = []
    for app, (epochs, restart) in APP_EPOCHS.items():
        p = load_profile(profiles, app, "rtx", max_epochs=epochs, restart_s=restart)
        limits.append(min(p.max_batch_size // p.min_local_bsz, p.max_replicas))
    return min(limits)


def prepare_trace(venus: Path, out: Path, days: float | None, cap: int | None) -> tuple[Path, dict]:
    """The trace every policy reads: <out>/trace/ (cut to `days`, GPU counts capped at `cap`), or
    the original folder when neither applies. Returns (folder, facts)."""
    import pandas as pd

    src = venus / "cluster_full_log.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    facts = {"source": str(src), "jobs_in_source": len(df)}
    if days is None and cap is None:
        return venus, {**facts, "jobs": len(df), "capped": 0}
    if days is not None:
        submit = pd.to_datetime(df["submit_time"])
        origin = submit.min().normalize()
        df = df[submit < origin + pd.Timedelta(days=days)]
    gpus = df["gpu_num"].astype(int)
    facts["capped"] = int((gpus > cap).sum()) if cap is not None else 0
    if cap is not None:
        df = df.assign(gpu_num=gpus.clip(upper=cap).astype(str))
    folder = out / "trace"
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(folder / "cluster_full_log.csv", index=False)
    shutil.copy(venus / "vc_config.csv", folder / "vc_config.csv")
    return folder, {**facts, "jobs": len(df)}


def applications(trace: Path, share: float, seed: int) -> list[dict]:
    """Per application (the experiment's GPU-hours rule on the trace the runs read): jobs, elastic
    jobs, GPU-hours (trace duration x GPUs) and the GPU counts."""
    import numpy as np
    import pandas as pd

    from raysim.elastic.mapping import applications_by_gpu_hours, elastic_mask

    df = pd.read_csv(trace / "cluster_full_log.csv", usecols=["job_id", "gpu_num", "duration"])
    apps = np.array(applications_by_gpu_hours(df.duration.to_numpy(float), df.gpu_num.to_numpy(float), APP_RULES))
    elastic = elastic_mask([str(j) for j in df.job_id], share, seed)
    hours = df.duration.to_numpy(float) * df.gpu_num.to_numpy(float) / 3600
    rows = []
    for rule in APP_RULES:
        a = rule["application"]
        m = apps == a
        rows.append({"application": a, "gpu_hours_rule": (f"< {rule['below_gpu_hours']}" if rule["below_gpu_hours"]
                                                          else f">= {APP_RULES[-2]['below_gpu_hours']}"),
                     "jobs": int(m.sum()), "elastic": int((m & elastic).sum()), "gpu_hours": float(hours[m].sum()),
                     "median_gpus": float(np.median(df.gpu_num[m])) if m.any() else 0.0,
                     "multi_node": int((df.gpu_num[m] > 8).sum())})
    rows.append({"application": "all", "gpu_hours_rule": "", "jobs": len(df), "elastic": int(elastic.sum()),
                 "gpu_hours": float(hours.sum()), "median_gpus": float(np.median(df.gpu_num)),
                 "multi_node": int((df.gpu_num > 8).sum())})
    return rows


def job_groups(trace: Path, share: float, seed: int):
    """Per trace job id: application and elastic or rigid (as +experiment=venus_elastic assigns
    them) and GPU-hours (trace GPUs x duration)."""
    import numpy as np
    import pandas as pd

    from raysim.elastic.mapping import applications_by_gpu_hours, elastic_mask

    df = pd.read_csv(trace / "cluster_full_log.csv", usecols=["job_id", "gpu_num", "duration"])
    apps = applications_by_gpu_hours(df.duration.to_numpy(float), df.gpu_num.to_numpy(float), APP_RULES)
    elastic = elastic_mask([str(j) for j in df.job_id], share, seed)
    return pd.DataFrame({"job_id": df.job_id.to_numpy(np.int64), "application": apps,
                         "kind": np.where(elastic, "elastic", "rigid"),
                         "gpu_hours": df.duration.to_numpy(float) * df.gpu_num.to_numpy(float) / 3600})


def groups_md(rows: list[dict], groups) -> str:
    """Average JCT and queue per application and per elastic/rigid job, one column per policy."""
    import pyarrow.parquet as pq

    runs = [r for r in rows if r["vc"] == "all" and r.get("status") == "ok"]
    if not runs:
        return ""
    tables = {}
    for r in runs:
        path = Path(r["run_dir"]) / "jobs.parquet"
        cols = ["job_id", "jct", "queue"] + (["gpu_seconds"] if "gpu_seconds" in pq.read_schema(path).names else [])
        tables[r["policy"]] = pq.read_table(path, columns=cols).to_pandas().merge(groups, on="job_id", how="left")
    out = []
    for metric, name in (("jct", "average JCT (s)"), ("queue", "average queueing delay (s)")):
        out += ["", f"**{name} per application and per elastic / rigid job**", "",
                "| jobs | count | " + " | ".join(tables) + " |", "|---|---:|" + "---:|" * len(tables)]
        first = next(iter(tables.values()))
        apps = [r["application"] for r in APP_RULES]
        for col, values in (("application", apps), ("kind", ["elastic", "rigid"])):
            for value in values:
                n = int((first[col] == value).sum())
                out.append(f"| {value} | {n:,} | " + " | ".join(
                    fmt(t.loc[t[col] == value, metric].mean()) for t in tables.values()) + " |")
        for app in apps:
            for kind in ("elastic", "rigid"):
                m = (first.application == app) & (first.kind == kind)
                out.append(f"| {app}, {kind} | {int(m.sum()):,} | " + " | ".join(
                    fmt(t.loc[(t.application == app) & (t.kind == kind), metric].mean()) for t in tables.values())
                    + " |")
    held = {p: t for p, t in tables.items() if "gpu_seconds" in t}
    if held:  # what the elastic policies' jobs held against what they take rigidly (trace GPUs x duration)
        out += ["", "**GPU-hours held per application and per elastic / rigid job (elastic policies)**", "",
                "| jobs | trace GPU-hours | " + " | ".join(held) + " |", "|---|---:|" + "---:|" * len(held)]
        for app in apps:
            for kind in ("elastic", "rigid"):
                m = (groups.application == app) & (groups.kind == kind)
                out.append(f"| {app}, {kind} | {fmt(groups.loc[m, 'gpu_hours'].sum())} | " + " | ".join(
                    fmt(t.loc[(t.application == app) & (t.kind == kind), "gpu_seconds"].sum() / 3600)
                    for t in held.values()) + " |")
        for kind in ("elastic", "rigid"):
            out.append(f"| {kind} | {fmt(groups.loc[groups.kind == kind, 'gpu_hours'].sum())} | " + " | ".join(
                fmt(t.loc[t.kind == kind, "gpu_seconds"].sum() / 3600) for t in held.values()) + " |")
    return "\n".join(out) + "\n"


def applications_md(rows: list[dict]) -> str:
    out = [("| application | GPU-hours of the job | jobs | elastic | rigid | GPU-hours (trace) | share of GPU-hours "
            "| median GPUs | jobs > 8 GPUs |"), "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    total = rows[-1]["gpu_hours"] or 1.0
    for r in rows:
        out.append(f"| {r['application']} | {r['gpu_hours_rule']} | {r['jobs']:,} | {r['elastic']:,} | "
                   f"{r['jobs'] - r['elastic']:,} | {r['gpu_hours']:,.0f} | {r['gpu_hours'] / total:.1%} | "
                   f"{r['median_gpus']:g} | {r['multi_node']:,} |")
    return "\n".join(out) + "\n"


# -- runs --------------------------------------------------------------------------------------------
def overrides(policy: str, trace: Path, venus: Path, args) -> list[str]:
    experiment = ["+experiment=venus_elastic"]  # (the others never read, nor fetch, its elastic inputs)
    ov = [*experiment, f"trace.path={trace}", f"policy={policy}", f"runtime={args.runtime}",
          "ray.vcs_per_actor=auto", "quota=none", "sim.compat=clean", f"seed={args.seed}"]
    if policy in ELASTIC:  # (the others have no policy.profiles, policy.share: they read none of it)
        ov += [f"policy.share={args.share}", f"policy.profiles={args.sia_profiles_path}" if args.sia_profiles_path
               else "policy.profiles=data:sia_profiles"]
    if policy in ROUNDED and args.round_s:
        ov.append(f"policy.round_s={args.round_s}")
    if policy == "lucid":  # the artifact's inputs, as +experiment=lucid (rounds_study.py does the same)
        arts = venus / "lucid_artifacts"
        p = Path(args.lucid_profiles_path) if args.lucid_profiles_path else None
        ov += ["estimator.source=file", f"estimator.path={arts / 'duration_estimates_ebm.csv'}",
               "policy.forecast.source=file", f"policy.forecast.path={arts / 'throughput_forecast.csv'}",
               f"policy.profiles.colocation={p / 'colocate_info.csv' if p else 'data:lucid_profiles/colocate_info.csv'}",
               f"policy.profiles.single={p / 'single_data.csv' if p else 'data:lucid_profiles/single_data.csv'}"]
    return ov + list(args.set)


def run_one(policy: str, ov: list[str], folder: Path, timeout: int) -> list[dict]:
    """One run; its summary rows (the `all` row first), or one row saying why there are none."""
    rc, out, err, process_s = launch(ov, folder, timeout)
    if rc is None:
        return [{"policy": policy, "vc": "all", "process_s": process_s, "overrides": " ".join(ov),
                 "run_dir": str(folder), "status": f"timeout after {timeout} s"}]
    if rc != 0:
        return [{"policy": policy, "vc": "all", "process_s": process_s, "overrides": " ".join(ov),
                 "run_dir": str(folder), "status": f"exit {rc}: {one_line_error(err or out)}"}]
    return read_run(policy, ov, folder, process_s)


def read_run(policy: str, ov: list[str], folder: Path, process_s: float | None = None) -> list[dict]:
    """A finished run's summary rows (the `all` row first) and wall times, from its folder."""
    base = {"policy": policy, "vc": "all", "process_s": process_s, "overrides": " ".join(ov), "run_dir": str(folder)}
    log = (folder / "run.log").read_text() if (folder / "run.log").exists() else ""
    m = SIMULATED.search(log)
    if m:
        base["sim_s"], base["total_s"] = float(m.group(1)), float(m.group(2))
    p = re.search(r"--- process_s ([0-9.]+)", log)
    if process_s is None and p:
        base["process_s"] = float(p.group(1))
    if not (folder / "summary.csv").exists():
        return [{**base, "status": f"failed: {one_line_error(log.split('--- stderr ---')[-1].split('--- process_s')[0])}" if log else
                 f"no summary.csv in {folder}"}]
    with (folder / "summary.csv").open() as f:
        summary = list(csv.DictReader(f))
    rows = []
    for r in sorted(summary, key=lambda r: r["vc"] != "all"):
        row = {**base, "vc": r["vc"], "status": "ok"}
        for k in METRICS:
            row[k] = float(r[k]) if r.get(k) not in (None, "") else None
        rows.append(row)
    rows[0].update(job_totals(folder / "jobs.parquet"))
    return rows


def job_totals(path: Path) -> dict:
    """From jobs.parquet: restarts per job (elastic policies' `restarts` column, else preemptions)
    and the GPU-hours the jobs held (elastic policies' `gpu_seconds`; else GPUs x time running,
    end - start - queue after the first start)."""
    import numpy as np
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    cols = [c for c in ("gpu_num", "start_time", "end_time", "queue", "submit_time", "preemptions", "restarts",
                        "gpu_seconds") if c in names]
    t = pq.read_table(path, columns=cols).to_pandas()
    if "restarts" in t:
        restarts, gpu_s = t["restarts"].to_numpy(float), t["gpu_seconds"].to_numpy(float)
    else:
        restarts = t["preemptions"].to_numpy(float)
        running = t.end_time - t.submit_time - t.queue  # JCT minus time without GPUs
        gpu_s = (t.gpu_num * running).to_numpy(float)
    return {"restarts_per_job": float(np.nanmean(restarts)), "gpu_hours": float(np.nansum(gpu_s)) / 3600}


# -- tables and figures ------------------------------------------------------------------------------
def fmt(v, nd=0) -> str:
    return "" if v is None or v == "" else f"{v:,.{nd}f}"


def markdown(rows: list[dict], vc_gpus: dict) -> str:
    overall = [r for r in rows if r["vc"] == "all"]
    out = [("| policy | avg JCT (s) | p50 JCT (s) | p95 JCT (s) | avg queue (s) | p50 queue (s) | p95 queue (s) "
            "| makespan (days) | GPU util | GPU-hours held | restarts per job | wall: sim (s) | wall: process (s) | status |"),
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in overall:
        ok = r.get("status") == "ok"
        mk = r.get("makespan")
        out.append("| " + " | ".join([
            r["policy"], fmt(r.get("avg_jct")), fmt(r.get("p50_jct")), fmt(r.get("p95_jct")),
            fmt(r.get("avg_queue")), fmt(r.get("p50_queue")), fmt(r.get("p95_queue")),
            fmt(mk / 86400 if mk is not None else None, 1), fmt(r.get("gpu_utilization"), 3),
            fmt(r.get("gpu_hours")), fmt(r.get("restarts_per_job"), 2),
            fmt(r.get("sim_s"), 1), fmt(r.get("process_s"), 1),
            "ok" if ok else str(r.get("status", "")).replace("|", "\\|")]) + " |")
    policies = [r["policy"] for r in overall if r.get("status") == "ok"]
    by = {(r["policy"], r["vc"]): r for r in rows}
    vcs = [vc for vc in vc_gpus if any((p, vc) in by for p in policies)]
    for metric, name in (("avg_jct", "average JCT (s) per VC"), ("avg_queue", "average queueing delay (s) per VC")):
        out += ["", f"**{name}**", "",
                "| VC | GPUs | jobs | " + " | ".join(policies) + " |",
                "|---|---:|---:|" + "---:|" * len(policies)]
        for vc in vcs:
            jobs = next((by[p, vc].get("jobs") for p in policies if (p, vc) in by), None)
            out.append(f"| {vc} | {vc_gpus[vc]} | {fmt(jobs)} | " +
                       " | ".join(fmt(by[p, vc].get(metric)) if (p, vc) in by else "" for p in policies) + " |")
    return "\n".join(out) + "\n"


def per_vc_figure(rows: list[dict], metric: str, xlabel: str, title: str, path: Path, vc_gpus: dict,
                  per: float = 1.0) -> Path:
    """Horizontal bars, one row per VC (labelled with its GPUs), one bar per policy (the style of
    raysim.report.plots' queue per VC); values divided by `per` (the unit's seconds); a log scale
    when they span orders of magnitude."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    policies = [r["policy"] for r in rows if r["vc"] == "all" and r.get("status") == "ok"]
    by = {(r["policy"], r["vc"]): r.get(metric) for r in rows}
    vcs = [vc for vc in vc_gpus if any((p, vc) in by for p in policies)]
    height = 0.8 / max(1, len(policies))
    fig, ax = plt.subplots(figsize=(7.5, 0.8 + len(vcs) * 0.42))
    y = np.arange(len(vcs))
    values_all = []
    for i, p in enumerate(policies):
        values = np.array([by.get((p, vc)) or 0.0 for vc in vcs], dtype=float) / per
        values_all += [v for v in values if v > 0]
        ax.barh(y + i * height, values, height=height, label=p)
    ax.set_yticks(y + height * (len(policies) - 1) / 2, [f"{vc} ({vc_gpus[vc]} GPUs)" for vc in vcs], fontsize=8)
    ax.invert_yaxis()
    if values_all and max(values_all) / min(values_all) > 100:
        ax.set_xscale("log")
        xlabel += ", log scale"
    ax.set_xlabel(xlabel)
    ax.set_ylabel("VC")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, title="policy")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figures(rows: list[dict], folder: Path, vc_gpus: dict, what: str) -> list[Path]:
    import pyarrow.parquet as pq

    from raysim.report.plots import jct_cdf

    paths = [per_vc_figure(rows, "avg_jct", "average JCT (hours)", f"{what}: average JCT per VC",
                           folder / "avg_jct_per_vc.png", vc_gpus, per=3600.0),
             per_vc_figure(rows, "avg_queue", "average queueing delay (s)", f"{what}: average queueing delay per VC",
                           folder / "avg_queue_per_vc.png", vc_gpus)]
    jcts = {r["policy"]: pq.read_table(Path(r["run_dir"]) / "jobs.parquet", columns=["jct"]).column("jct").to_numpy()
            for r in rows if r["vc"] == "all" and r.get("status") == "ok"}
    if jcts:
        paths.append(jct_cdf(jcts, folder / "jct_cdf.png", title=f"{what}: JCT distribution"))
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--days", type=float, default=None, help="keep the jobs of the first N days (default: all)")
    ap.add_argument("--cap-gpus", default="auto",
                    help="auto (the profiles' limit, 24), a number, or none: cap the trace's GPU counts")
    ap.add_argument("--round-s", type=float, default=None,
                    help="seconds per round of sia and pollux (default: theirs, 60 s)")
    ap.add_argument("--share", type=float, default=0.5, help="fraction of jobs that are elastic (default 0.5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runtime", default="ray", choices=["ray", "local"])
    ap.add_argument("--out", default=f"outputs/elastic_study/{dt.datetime.now():%Y-%m-%d_%H-%M-%S}")
    ap.add_argument("--figures", default=None, help="folder for the figures (default <out>/plots)")
    ap.add_argument("--venus-path", default=None, help="a local copy of the Venus trace folder instead of data:venus")
    ap.add_argument("--sia-profiles-path", default=None, help="a local copy of Sia's profiles instead of "
                    "data:sia_profiles")
    ap.add_argument("--lucid-profiles-path", default=None,
                    help="a folder with Lucid's colocate_info.csv and single_data.csv instead of data:lucid_profiles")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run before it is killed")
    ap.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="extra Hydra overrides for every run")
    ap.add_argument("--dry-run", action="store_true", help="prepare the trace and print the commands only")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: tables and figures from the run folders already under --out")
    args = ap.parse_args()

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    from raysim.data.registry import DataError

    try:
        venus = venus_folder(args)
        cap = gpu_cap(args, sia_profiles(args))
    except DataError as exc:
        print(f"elastic_study: {exc}", file=sys.stderr)
        return 2
    trace, facts = prepare_trace(venus, out, args.days, cap)
    apps = applications(trace, args.share, args.seed)
    vc_gpus = {}
    with (venus / "vc_config.csv").open() as f:
        for r in csv.DictReader(f):
            vc_gpus[r[""] if "" in r else next(iter(r.values()))] = int(r["num"]) * 8
    what = (f"Venus, {'first ' + format(args.days, 'g') + ' days' if args.days else 'September 2020'}, "
            f"{args.share:.0%} elastic" + (f", sia/pollux rounds {args.round_s:g} s" if args.round_s else ""))
    capped = f", GPU counts above {cap} lowered to {cap} ({facts['capped']:,} jobs)" if cap else ""
    app_md = f"{what}: {facts['jobs']:,} jobs from {facts['source']}{capped}\n\n" + applications_md(apps)
    (out / "applications.md").write_text(app_md)
    print(app_md)
    runs = [(p, overrides(p, trace, venus, args), out / p) for p in args.policies]
    if args.dry_run:
        for _, ov, folder in runs:
            print("python -m raysim " + " ".join(ov) + f" hydra.run.dir={folder}")
        return 0
    if args.report_only:
        rows = [r for policy, ov, folder in runs for r in read_run(policy, ov, folder)]
        md = markdown(rows, vc_gpus) + groups_md(rows, job_groups(trace, args.share, args.seed))
        (out / "results.md").write_text(md)
        print(md)
        for p in figures(rows, Path(args.figures) if args.figures else out / "plots", vc_gpus, what):
            print(f"figure: {p}")
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    header = (f"{dt.datetime.now():%Y-%m-%d %H:%M}, commit {commit}, {platform.node()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}, runtime={args.runtime}, "
              f"sia/pollux rounds {args.round_s or 60:g} s")
    print(header, flush=True)
    rows, t0 = [], time.perf_counter()
    for i, (policy, ov, folder) in enumerate(runs, 1):
        print(f"[{i}/{len(runs)}] {policy} ...", end=" ", flush=True)
        got = run_one(policy, ov, folder, args.timeout)
        rows += got
        r = got[0]
        print(r["status"] if r["status"] != "ok" else
              f"avg JCT {r['avg_jct']:,.0f} s, avg queue {r['avg_queue']:,.0f} s, "
              f"{r.get('sim_s', '?')} s sim / {r['process_s']} s process", flush=True)
        with (out / "results.csv").open("w", newline="") as f:  # rewritten after every run
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    total = time.perf_counter() - t0
    md = (f"{header}; {len(runs)} runs in {total:,.0f} s\n\n" + markdown(rows, vc_gpus)
          + groups_md(rows, job_groups(trace, args.share, args.seed)))
    (out / "results.md").write_text(md)
    print()
    print(md)
    if any(r["vc"] == "all" and r.get("status") == "ok" for r in rows):
        for p in figures(rows, Path(args.figures) if args.figures else out / "plots", vc_gpus, what):
            print(f"figure: {p}")
    print(f"results: {out / 'results.csv'}, {out / 'results.md'}, {out / 'applications.md'}")
    return 0 if all(r["status"] == "ok" for r in rows if r["vc"] == "all") else 1


if __name__ == "__main__":
    sys.exit(main())
