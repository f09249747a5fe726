"""Round-based runs (``mode: rounds``; ``+experiment=gavel_trace`` or ``gavel_continuous``): config ->
jobs -> one :class:`~raysim.rounds.engine.RoundEngine` run -> run folder.

Jobs come from a Gavel trace (``trace.format=gavel``), from Gavel's continuous generator
(``rounds.generate``), or from any raysim-schema trace whose ``job_type`` column names (directly or
through ``rounds.job_type_map``) a job type of the throughput table; its duration, recorded on
``gpu_type`` (else ``rounds.reference_type``), becomes steps. The cluster is every pool of the
configured layout, pooled by GPU type.

The run folder gets ``jobs.parquet`` (one row per job, the trace's ids), ``summary.csv`` (one row:
average JCT over all jobs and over the ``rounds.window`` id window, makespan, utilisation, LP solve
time) and ``plots/jct_cdf.png``. :func:`summarize_rounds_sweep` combines a multirun.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from raysim.cluster.throughput import ThroughputTable, read_throughput_table
from raysim.errors import ConfigError, UserError
from raysim.run.unused import refuse_overrides
from raysim.rounds import lp
from raysim.rounds.cluster import RoundCluster, RoundJobs, pair_throughputs, throughput_matrix, whole_job_rate
from raysim.rounds.engine import RoundEngine, RoundResult
from raysim.rounds.policies import round_policy
from raysim.trace.errors import TraceError

log = logging.getLogger("raysim")

TABLE_HELP = ("Gavel's throughput table is public: github.com/stanford-futuredata/gavel, file "
              "scheduler/simulation_throughputs.json (MIT). Set rounds.throughputs to it, or RAYSIM_SHARED "
              "to the folder holding references/gavel/ (docs/gavel.md).")


def run_rounds(cfg: DictConfig, run_dir: Path) -> dict:
    """Run one round-based simulation as configured; returns its summary row."""
    refuse_overrides(("placer",), "round-based runs place by Gavel's mechanism, not by a placer")
    r = cfg.rounds
    if cfg.policy.get("kind") != "round" and cfg.policy.name != "fifo":
        raise ConfigError("policy", f"{cfg.policy.name} is not round-based; round-based policies: "
                          f"{', '.join(sorted(_round_policies()))}")
    table = read_table(r.throughputs)
    cluster = RoundCluster.from_layout(_layout(cfg))
    jobs_table, source = _jobs(cfg, table)
    jobs = RoundJobs.from_table(jobs_table)
    try:
        thr = throughput_matrix(jobs, cluster, table)
        cluster.index(r.type_order or [])   # both GPU-type settings name types of the cluster
        cluster.index([r.reference_type])
    except ValueError as exc:
        raise UserError(f"{source}: {exc}") from None
    constants = cfg.policy.get("round")
    constants = OmegaConf.to_container(constants, resolve=True) if constants else {}
    try:
        policy = round_policy(cfg.policy.name, seed=int(cfg.seed), **constants)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"policy ({cfg.policy.name})", str(exc)) from None
    if r.lp_method not in ("ipm", "simplex"):
        raise ConfigError("rounds.lp_method", "must be ipm or simplex", r.lp_method)
    lp.SOLVER["method"] = str(r.lp_method)
    lp.reset_solve_time()
    engine = RoundEngine(jobs, cluster, thr, policy, round_s=float(r.round_s), reset_min_s=float(r.reset_min_s),
                         type_order=list(r.type_order) if r.type_order else None,
                         reference_type=r.reference_type, seed=int(cfg.seed),
                         pair_throughputs=pair_throughputs(jobs, cluster, table) if policy.packing else None)
    log.info("%s: %d jobs on %s; policy=%s, %g s rounds", source, len(jobs),
             ", ".join(f"{n} {t}" for t, n in zip(cluster.types, cluster.gpus)), policy.name, engine.round_s)
    wall = time.perf_counter()
    result = engine.run(progress=_progress())
    wall = time.perf_counter() - wall
    window = tuple(int(v) for v in r.window) if r.window is not None else None
    run_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(jobs_parquet(jobs, cluster, result, window), run_dir / "jobs.parquet")
    row = summary_row(policy.name, jobs, result, window, wall, rate=float(r.get("rate_jobs_per_hour") or 0))
    row["seed"] = int(cfg.seed)
    pd.DataFrame([row]).to_csv(run_dir / "summary.csv", index=False)
    if cfg.rounds.get("plots", True):
        from raysim.report.plots import jct_cdf

        (run_dir / "plots").mkdir(exist_ok=True)
        jct_cdf({policy.name: result.completion - jobs.arrival_time}, run_dir / "plots" / "jct_cdf.png",
                title=f"{source}: {policy.name}")
    if result.dropped:
        log.warning("%d job(s) were dropped after %d failed micro-tasks each (fewer steps left than GPUs): "
                    "ids %s", len(result.dropped), 5, [int(jobs.job_id[j]) for j in result.dropped[:10]])
    window_text = f", window {window[0]}-{window[1]} {row['avg_jct_window']:.1f} s" if window else ""
    print(f"{policy.name}: avg JCT {row['avg_jct']:.1f} s over {row['jobs_finished']} jobs{window_text}; makespan "
          f"{row['makespan']:.0f} s, utilisation {row['utilization']:.3f}; {row['rounds']} rounds, "
          f"{row['lp_solves']} LPs ({row['lp_seconds']:.2f} s); simulated in {wall:.2f} s")
    print(f"results: {run_dir}")
    return row


def read_table(path) -> ThroughputTable:
    """Gavel's JSON (``.json``) or a throughput CSV; a missing file says where to get Gavel's."""
    if not path:
        raise ConfigError("rounds.throughputs", f"not set. {TABLE_HELP}")
    from raysim.paths import original_cwd

    p = (original_cwd() / str(path)).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"rounds.throughputs: no file {p}. {TABLE_HELP}")
    return read_throughput_table(p)


def jobs_parquet(jobs: RoundJobs, cluster: RoundCluster, result: RoundResult, window) -> pa.Table:
    """One row per job: its trace columns, arrival, first start, completion, JCT, window flag and
    the seconds it ran on each GPU type (``run_s_<type>``)."""
    jct = result.completion - jobs.arrival_time
    in_window = np.zeros(len(jobs), dtype=bool) if window is None else \
        (jobs.job_id >= window[0]) & (jobs.job_id <= window[1])
    columns = {"job_id": jobs.job_id, "job_type": jobs.job_type, "scale_factor": jobs.scale_factor,
               "total_steps": jobs.total_steps, "priority_weight": jobs.priority_weight,
               "arrival_time": jobs.arrival_time, "start_time": result.first_start,
               "completion_time": result.completion, "jct": jct, "queue": result.first_start - jobs.arrival_time,
               "in_window": in_window, "dropped": np.isin(np.arange(len(jobs)), result.dropped)}
    for k, t in enumerate(cluster.types):
        columns[f"run_s_{t}"] = result.type_seconds[:, k]
    order = np.argsort(jobs.job_id, kind="stable")
    return pa.table({name: pa.array(np.asarray(v)[order] if not isinstance(v, list) else [v[i] for i in order])
                     for name, v in columns.items()})


def summary_row(policy: str, jobs: RoundJobs, result: RoundResult, window, wall: float, rate: float = 0.0) -> dict:
    """The summary.csv row; `rate` (jobs per hour, 0: not a rate sweep) labels continuous runs."""
    jct = result.completion - jobs.arrival_time
    done = ~np.isnan(jct)
    row = {"policy": policy, "jobs": len(jobs), "jobs_finished": int(done.sum()), "dropped": len(result.dropped),
           "avg_jct": float(jct[done].mean()) if done.any() else float("nan")}
    if window is not None:
        mask = done & (jobs.job_id >= window[0]) & (jobs.job_id <= window[1])
        row["window"] = f"{window[0]}-{window[1]}"
        row["avg_jct_window"] = float(jct[mask].mean()) if mask.any() else float("nan")
    row.update(makespan=result.makespan, utilization=result.utilization, rounds=result.rounds,
               allocations=result.allocations, lp_solves=lp.SOLVE_TIME["lps"], lp_seconds=lp.SOLVE_TIME["seconds"],
               lp_ms_per_round=1e3 * lp.SOLVE_TIME["seconds"] / max(result.rounds, 1), wall_s=wall)
    if rate:
        row["rate_jobs_per_hour"] = rate
    return row


def summarize_rounds_sweep(sweep_dir) -> pd.DataFrame:
    """Combine the summary.csv of every run under a multirun folder: `rounds_sweep.csv` (every run),
    `rounds_sweep.md` (mean over seeds per policy and rate) and, when several rates were run,
    `plots/avg_jct_vs_rate.png` (Gavel's "average JCT vs input job rate" figure)."""
    from raysim.report.summary import markdown_table

    sweep_dir = Path(sweep_dir)
    rows = [pd.read_csv(p) for p in sorted(sweep_dir.glob("*/summary.csv"))]
    rows = [r for r in rows if "allocations" in r.columns]
    if not rows:
        return pd.DataFrame()
    runs = pd.concat(rows, ignore_index=True)
    runs.to_csv(sweep_dir / "rounds_sweep.csv", index=False)
    keys = ["policy"] + (["rate_jobs_per_hour"] if "rate_jobs_per_hour" in runs.columns else [])
    metric = "avg_jct_window" if "avg_jct_window" in runs.columns else "avg_jct"
    table = runs.groupby(keys, as_index=False).agg(seeds=("seed", "nunique"), avg_jct=("avg_jct", "mean"),
                                                    **{metric + "_mean": (metric, "mean")},
                                                    utilization=("utilization", "mean"), wall_s=("wall_s", "mean"))
    shown = table.copy()
    for column, form in (("rate_jobs_per_hour", "{:g}"), ("avg_jct", "{:,.0f}"), (metric + "_mean", "{:,.0f}"),
                         ("utilization", "{:.3f}"), ("wall_s", "{:.2f}")):
        if column in shown.columns:
            shown[column] = shown[column].map(form.format)
    (sweep_dir / "rounds_sweep.md").write_text("# Round-based policies: mean over seeds (JCT in seconds)\n\n"
                                               + markdown_table(shown) + "\n")
    if "rate_jobs_per_hour" in runs.columns and runs["rate_jobs_per_hour"].nunique() > 1:
        _rate_plot(table, metric + "_mean", sweep_dir / "plots" / "avg_jct_vs_rate.png")
    return table


def _rate_plot(table: pd.DataFrame, metric: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy, part in table.groupby("policy"):
        part = part.sort_values("rate_jobs_per_hour")
        ax.plot(part["rate_jobs_per_hour"], part[metric] / 3600, marker="o", label=policy)
    ax.set_xlabel("input job rate (jobs/hour)")
    ax.set_ylabel("average JCT of the measured window (hours)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- inputs ------------------------------------------------------------------------------------
def _layout(cfg: DictConfig) -> dict:
    from raysim.run.config import configured_layout

    layout = configured_layout(cfg)
    if layout is None:
        raise ConfigError("cluster.layout", "mode rounds needs a typed cluster layout: cluster=gavel_24, "
                          "cluster=hetero_demo or cluster.layout=<layout CSV>")
    return layout


def _jobs(cfg: DictConfig, table: ThroughputTable) -> tuple[pa.Table, str]:
    """The job table (raysim.trace.gavel.SCHEMA) and a label for its source."""
    r, t = cfg.rounds, cfg.trace
    if r.get("generate"):
        from raysim.rounds.generate import generate_jobs

        g = r.generate
        templates = [(str(e["model"]), bool(e["distributed"])) for e in g.templates]
        lam_s = 3600.0 / float(r.rate_jobs_per_hour) if r.get("rate_jobs_per_hour") else float(g.lam_s)
        try:
            jobs = generate_jobs(table, templates, jobs=int(g.jobs), lam_s=lam_s, seed=int(cfg.seed),
                                 reference_type=str(r.reference_type), multi_gpu=bool(g.multi_gpu))
        except ValueError as exc:
            raise ConfigError("rounds.generate", str(exc)) from None
        return jobs, f"generated (Gavel continuous, lam {lam_s:.0f} s, seed {int(cfg.seed)})"
    if not t.path:
        raise ConfigError("trace.path", "not set: give a Gavel trace (trace.format=gavel) or set rounds.generate")
    from raysim.paths import original_cwd

    path = original_cwd() / str(t.path)
    if t.format == "gavel" or (t.format == "auto" and path.suffix == ".trace"):
        from raysim.trace.gavel import read_gavel_trace

        return read_gavel_trace(path), str(t.path)
    return _from_raysim_trace(cfg, table), str(t.path)


def _from_raysim_trace(cfg: DictConfig, table: ThroughputTable) -> pa.Table:
    """A raysim-schema trace as round jobs: the `rounds.job_type_column` value (default job_type) ->
    table job type (rounds.job_type_map, else the value itself), steps = duration x throughput on
    the GPU type the duration was recorded on."""
    from raysim.run.config import load_from_config
    from raysim.trace.gavel import SCHEMA

    trace = load_from_config(cfg)
    df = trace.table.to_pandas()
    column = str(cfg.rounds.get("job_type_column") or "job_type")
    if column not in df.columns:
        raise TraceError(trace.source, "round-based policies need this column naming a job type of the "
                         "throughput table (or mapped to one with rounds.job_type_map; another column: "
                         "rounds.job_type_column)", column=column)
    mapping = cfg.rounds.get("job_type_map")
    mapping = OmegaConf.to_container(mapping, resolve=True) if mapping else {}
    reference = str(cfg.rounds.reference_type)
    steps = np.empty(len(df))
    models = []
    rates: dict[tuple, float | None] = {}   # (job type, GPU type, GPUs) -> throughput: few distinct keys
    for i, (job_type, gpus, duration, recorded) in enumerate(zip(
            df[column].astype(str), df["gpu_num"], df["duration"],
            df["gpu_type"] if "gpu_type" in df.columns else [None] * len(df))):
        model = mapping.get(job_type, job_type)
        key = (model, str(recorded or reference), int(gpus))
        if key not in rates:
            rates[key] = whole_job_rate(table, *key)
        rate = rates[key]
        if not rate:
            raise TraceError(trace.source, f"no throughput for job type {model!r} on {recorded or reference} "
                             "(map trace job types with rounds.job_type_map)", row=i + 1, column=column, value=job_type)
        steps[i] = max(float(duration), 1.0) * rate
        models.append(model)
    submit = df["submit_time"].to_numpy(dtype=float)
    order = np.argsort(submit, kind="stable")
    return pa.table({"job_id": df["job_id"].to_numpy(dtype=np.int64)[order], "job_type": [models[i] for i in order],
                     "scale_factor": df["gpu_num"].to_numpy(dtype=np.int64)[order], "total_steps": steps[order],
                     "priority_weight": np.ones(len(df)), "slo": np.full(len(df), -1.0),
                     "arrival_time": submit[order] - submit.min()}, schema=SCHEMA)


def _round_policies() -> list[str]:
    from raysim.rounds.policies import POLICIES

    return list(POLICIES)


def _progress():
    """A progress callback printing jobs done and simulated days to stderr (a terminal only)."""
    if not sys.stderr.isatty():
        return None
    last = [0.0]

    def report(now: float, done: int, total: int) -> None:
        wall = time.perf_counter()
        if wall - last[0] >= 0.5 or done == total:
            last[0] = wall
            sys.stderr.write(f"\r  {done}/{total} jobs done, simulated {now / 86400:.1f} days")
            if done == total:
                sys.stderr.write("\n")

    return report
