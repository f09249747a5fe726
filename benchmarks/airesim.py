"""AIReSim's reliability model of one large training job, run on named scenarios over several seeds,
with each metric's mean and 95 % confidence interval (issue 50: the side-by-side with raysim).

    python benchmarks/airesim.py --airesim PATH [--python /tmp/airesim/venv/bin/python] \
        [--simulators airesim raysim] [--scenarios defaults spares_50 ...] [--seeds 3] [--first-seed 42] \
        [--processes 1] [--json]
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
seed, or `Skipped` with what it lacks. raysim's (`raysim_runs`) runs the same scenario in AIReSim's
semantics in this process (`raysim_overrides`: busy clocks, the repair pipeline, the spare pool,
checkpoints every second, warm standbys and the host-selection time; docs/airesim.md), same seeds;
metrics raysim does not count are NaN. Where both ran
a scenario, one line per metric of `TOLERANCE` says whether raysim's mean agrees with AIReSim's within
issue 50's tolerance.

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
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DAY_MIN = 24 * 60

#: name -> (what it varies, AIReSim Params fields changed from Table I's defaults, policies by name).
#: The one-knob points of issue 50's "Done when", plus a retirement and a host-selection policy.
SCENARIOS = {
    "defaults": ("Table I: 4,096-server job, 16 warm standbys, working pool 4,160, 200 spares", {}, {}),
    # (the same with 16 of its 256 days of work: the early weeks, when the pool runs short and spares are pulled)
    "defaults_16d": ("Table I with 16 days of work", {"job_length": 16 * DAY_MIN}, {}),
    "spares_50": ("spare pool of 50 servers", {"spare_pool_size": 50}, {}),
    "standbys_0": ("no warm standbys: every failure is a host selection", {"warm_standbys": 0}, {}),
    "recovery_10": ("recovery of 10 min", {"recovery_time": 10.0}, {}),
    "bad_30": ("30 % bad servers", {"systematic_failure_fraction": 0.30}, {}),
    "escalation_50": ("automated repair escalates with probability 0.5", {"prob_auto_to_manual": 0.5}, {}),
    "auto_false_10": ("automated repair's false success 0.1", {"auto_repair_fail_prob": 0.1}, {}),
    "regen_30d": ("bad servers regenerated every 30 days", {"bad_server_regeneration": True}, {}),
    "wrong_node_20": ("a diagnosed failure blames a wrong server with probability 0.2",
                      {"diagnosis_uncertainty": 0.2}, {}),
    # (not a shape < 1: AIReSim draws every server's time afresh after each failure, so the job's next failure
    # comes after mean x N^(-1/k): about a minute at k = 0.7 and 4,096 servers, and the job never ends)
    "weibull_15": ("Weibull times to failure, shape 1.5 (wear-out)",
                   {"failure_distribution": "weibull", "weibull_shape": 1.5}, {}),
    "job_512": ("a 512-server job (pools unchanged)", {"job_size": 512}, {}),
    "standbys_0_512": ("a 512-server job with no warm standbys (pools unchanged)",
                       {"job_size": 512, "warm_standbys": 0}, {}),
    # (the same with no bad servers: the random rate, recoveries and the repair pipeline without where the
    # bad servers sit, which AIReSim's pool order and raysim's placer decide differently, docs/airesim.md)
    "standbys_0_512_nobad": ("standbys_0_512 with no bad servers",
                             {"job_size": 512, "warm_standbys": 0, "systematic_failure_fraction": 0.0}, {}),
    # (and with a working pool of 560: AIReSim's job then comes back to the same servers too, as raysim's does)
    "standbys_0_512_pool_560": ("standbys_0_512 on a working pool of 560 servers",
                                {"job_size": 512, "warm_standbys": 0, "working_pool_size": 560}, {}),
    "retire_2_in_7d": ("retire a server at its 2nd failure within 7 days", {},
                       {"removal": ("threshold", {"max_failures": 2, "window_minutes": 7 * DAY_MIN})}),
    "fewest_failures": ("host selection: fewest failures first", {}, {"selection": ("fewest_failures", {})}),
    "fewest_failures_512": ("standbys_0_512 with host selection fewest failures first",
                            {"job_size": 512, "warm_standbys": 0}, {"selection": ("fewest_failures", {})}),
}

#: Retirement and host-selection policies by name -> AIReSim's class (airesim.policies).
REMOVALS = {"never": "NeverRemove", "threshold": "ThresholdRemoval", "scored": "ScoredRemoval"}
SELECTIONS = {"random": "DefaultHostSelection", "fewest_failures": "FewestFailuresFirst"}
#: AIReSim's host-selection policy by name -> raysim's overrides (host_selection=): AIReSim's default takes the
#: first idle servers of its working pool, where repaired ones join at the end; its FewestFailuresFirst breaks
#: ties by a draw at every host selection.
HOST_SELECTIONS = {"random": ("host_selection=returns_last",),
                   "fewest_failures": ("host_selection=fewest_failures", "host_selection.ties=random")}

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


#: AIReSim's Table I defaults (airesim.params.Params at commit 7b139c7; minutes, failures per minute): what a
#: scenario's raysim run starts from.
TABLE_I = {"random_failure_rate": 0.01 / DAY_MIN, "systematic_failure_rate_multiplier": 5.0,
           "systematic_failure_fraction": 0.15, "recovery_time": 20.0, "host_selection_time": 3.0,
           "job_size": 4096, "job_length": 256 * DAY_MIN, "warm_standbys": 16, "working_pool_size": 4160,
           "spare_pool_size": 200, "preemption_wait_time": 20.0, "auto_repair_time": 120.0,
           "manual_repair_time": 2 * DAY_MIN, "prob_auto_to_manual": 0.8, "auto_repair_fail_prob": 0.4,
           "manual_repair_fail_prob": 0.2, "failure_distribution": "exponential", "weibull_shape": 1.0,
           "lognormal_sigma": 1.0, "diagnosis_probability": 1.0, "diagnosis_uncertainty": 0.0,
           "bad_server_regeneration": False, "bad_server_regen_interval": 30 * DAY_MIN}
GPUS_PER_NODE = 8


class Skipped(Exception):
    """A scenario a simulator cannot run in AIReSim's semantics (the message says what it lacks)."""


def unmatched(scenario: str) -> str | None:
    """What raysim lacks to run `scenario` in AIReSim's semantics, or None when it can."""
    _, params, chosen = SCENARIOS[scenario]
    p = {**TABLE_I, **params}
    lacks = [what for what, missing in [
        ("scored retirement with AIReSim's parameters", (chosen.get("removal") or ("never",))[0] == "scored"),
    ] if missing]
    return "needs " + " and ".join(lacks) if lacks else None


def raysim_overrides(scenario: str, trace: Path, seed: int) -> list[str]:
    """raysim's command-line overrides that run `scenario` in AIReSim's semantics (docs/airesim.md): one
    FIFO job on a VC of working pool + spares nodes (`trace`, from raysim_trace), failing only while it
    computes (failures.clock=busy), at the node rate 1 / random_failure_rate, bad nodes failing 1 + AIReSim's
    multiplier times as often, AIReSim's repair pipeline and spare pool, its host selection (HOST_SELECTIONS:
    by default host_selection=returns_last, nodes back from repair joining the end of the placers' scan
    order, as AIReSim's default takes the first idle servers in pool order, repaired ones last), and
    checkpoints every second with no write, so that a failure costs only its restart: the recovery, and
    the host selection where no warm standby is left (spares.standbys, spares.host_selection_s; with no
    warm standbys every failure needs one, priced as part of the restart)."""
    _, params, chosen = SCENARIOS[scenario]
    p = {**TABLE_I, **params}
    dist = p["failure_distribution"]
    out = [f"trace.path={trace}", "trace.cache=false", "runtime=local", "policy=fifo", f"seed={seed}",
           f"failures={dist}", f"failures.node_mtbf_h={1 / (p['random_failure_rate'] * 60)!r}",
           "failures.clock=busy", f"failures.diagnosis={p['diagnosis_probability']!r}",
           f"failures.wrong_node={p['diagnosis_uncertainty']!r}",
           *HOST_SELECTIONS[(chosen.get("selection") or ("random",))[0]]]
    if dist == "weibull":
        out.append(f"failures.shape={p['weibull_shape']!r}")
    elif dist == "lognormal":
        out.append(f"failures.sigma={p['lognormal_sigma']!r}")
    if p["systematic_failure_fraction"] > 0:
        out += [f"failures.bad_fraction={p['systematic_failure_fraction']!r}",
                f"failures.bad_multiplier={1 + p['systematic_failure_rate_multiplier']!r}"]
    if p["bad_server_regeneration"]:  # (AIReSim turns int(good x fraction x 0.1) good servers bad each interval)
        out.append(f"failures.bad_regen_h={p['bad_server_regen_interval'] / 60!r}")
    out += ["repair=pipeline", f"repair.auto_h={p['auto_repair_time'] / 60!r}",
            f"repair.manual_h={p['manual_repair_time'] / 60!r}", f"repair.escalate={p['prob_auto_to_manual']!r}",
            f"repair.auto_false={p['auto_repair_fail_prob']!r}", f"repair.manual_false={p['manual_repair_fail_prob']!r}",
            "checkpoint.interval_s=1", "checkpoint.write_s=0"]
    if p["warm_standbys"] > 0:
        out += [f"checkpoint.restart_s={p['recovery_time'] * 60!r}", f"spares.standbys={p['warm_standbys']}",
                f"spares.host_selection_s={p['host_selection_time'] * 60!r}"]
    else:
        out.append(f"checkpoint.restart_s={(p['recovery_time'] + p['host_selection_time']) * 60!r}")
    if p["spare_pool_size"] > 0:
        out += [f"spares.nodes={p['spare_pool_size']}", f"spares.wait_s={p['preemption_wait_time'] * 60!r}"]
    removal = chosen.get("removal")
    if removal is not None and removal[0] == "threshold":
        out += ["retire=threshold", f"retire.max_failures={removal[1]['max_failures']}",
                f"retire.window_h={removal[1]['window_minutes'] / 60!r}"]
    return out


def raysim_trace(scenario: str, folder: Path) -> Path:
    """The scenario's job in raysim's CSV schema (job_size 8-GPU nodes, job_length of work, submitted at 0) and
    vc_config.csv beside it: one VC of working pool + spare pool nodes (spares.nodes takes the last ones)."""
    p = {**TABLE_I, **SCENARIOS[scenario][1]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n"
                                     f"1,cluster,u,{p['job_size'] * GPUS_PER_NODE},0,0,"
                                     f"{round(p['job_length'] * 60)},COMPLETED\n")
    (folder / "vc_config.csv").write_text(f",num\ncluster,{p['working_pool_size'] + p['spare_pool_size']}\n")
    return folder / "jobs.csv"


def raysim_runs(args, scenario: str, seeds: list[int]) -> list[dict]:
    """raysim's replications of `scenario` in AIReSim's semantics (raysim_overrides), one dict per seed, run
    in this process one after the other (`runtime=local`). What raysim does not count is NaN: failures by
    cause (random, bad node), and without warm standbys host selections and stalls. Its restart time
    (`overhead_gpu_s` over the job's GPUs) is the recovery, and without warm standbys the recovery and the
    host selection, split in the ratio of their settings; with them, host selection time is the host
    selections after the first (raysim's job pays none at its first start) times its setting; spare waits
    are the pulls times the preemption wait, as AIReSim counts them."""
    reason = unmatched(scenario)
    if reason:
        raise Skipped(reason)
    import pyarrow.parquet as pq
    from hydra import compose, initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.report.summary import summarize as raysim_summary
    from raysim.run.config import check_cluster_config, load_from_config, spec_from_config
    from raysim.run.simulate import simulate_to

    p = {**TABLE_I, **SCENARIOS[scenario][1]}
    standbys = p["warm_standbys"] > 0
    recovery_share = 1.0 if standbys else p["recovery_time"] / (p["recovery_time"] + p["host_selection_time"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="raysim-airesim-") as tmp:
        trace = raysim_trace(scenario, Path(tmp) / "trace")
        for seed in seeds:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
                cfg = compose(config_name="config", overrides=raysim_overrides(scenario, trace, seed))
            m = check_cluster_config(cfg)
            run_dir = Path(tmp) / f"seed{seed}"
            wall, cpu = time.perf_counter(), time.process_time()
            trace_ = load_from_config(cfg)
            spec, extra = spec_from_config(cfg, trace_, m)
            simulate_to(run_dir, trace_, spec, None, runtime="local", job_extra=extra)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            jobs = pq.read_table(run_dir / "jobs.parquet")
            job = jobs.to_pylist()[0]
            s = raysim_summary(jobs, run_dir / "timeseries.parquet").set_index("vc").loc["all"]
            restart_h = job["overhead_gpu_s"] / job["gpu_num"] / 3600
            pulled = float(s.get("spares_pulled", 0))
            selections = float(s["host_selections"]) if standbys else math.nan
            rows.append({"training_h": job["jct"] / 3600 if job["finished"] else math.nan,
                         "compute_h": job["duration"] / 3600,
                         "recovery_h": restart_h * recovery_share,
                         "host_selection_h": (selections - 1) * p["host_selection_time"] / 60 if standbys
                         else restart_h * (1 - recovery_share),
                         "spare_wait_h": pulled * p["preemption_wait_time"] / 60,
                         "failures": float(job["interruptions"]),
                         "random_failures": float(job["interruptions"] - job.get("interruptions_bad_node", 0)),
                         "bad_node_failures": float(job.get("interruptions_bad_node", 0)),
                         "auto_repairs": float(s["auto_repairs"]), "manual_repairs": float(s["manual_repairs"]),
                         "repairs_fixed": float(s["auto_repairs"] - s["false_successes"]),
                         "false_successes": float(s["false_successes"]),
                         "retired": float(s.get("retired_nodes", 0)), "preemptions": pulled,
                         "host_selections": selections,
                         "stalls": float(s["stalls"]) if standbys else math.nan,
                         "seed": seed, "wall_s": wall, "cpu_s": cpu, "depleted": not job["finished"]})
    return rows


#: simulator -> its runner: (args, scenario, seeds) -> one dict of METRICS per seed, or Skipped.
SIMULATORS = {"airesim": airesim_runs, "raysim": raysim_runs}


def t_quantile(df: int, p: float = 0.975) -> float:
    """Student-t quantile (scipy's), the 95 % interval's factor for df degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def interval(values: list[float]) -> dict:
    """Mean and the half-width of its 95 % Student-t interval (0 for one value; NaN where a value is NaN)."""
    n = len(values)
    if any(math.isnan(v) for v in values):  # (a metric the simulator does not count)
        return {"mean": math.nan, "ci95": math.nan, "n": n}
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

#: metric -> issue 50's tolerance: the share of AIReSim's mean two simulators' means may differ by, or (training
#: time) their combined 95 % half-width, sqrt(a^2 + b^2), when that is wider.
TOLERANCE = {"training_h": 0.015, "failures": 0.03, "auto_repairs": 0.03, "manual_repairs": 0.03, "retired": 0.03}


def table_rows(sim: str, scenario: str, summary: dict) -> str:
    """One scenario's summary as rows of the text table (HEADER): one per metric."""
    return "\n".join(f"{sim:<9} {scenario:<16} {metric:<17} {s['mean']:>12.4g} {s['ci95']:>10.3g}"
                     for metric, s in summary.items())


def agreement(ref: dict, other: dict) -> dict:
    """Per metric of TOLERANCE: the other simulator's mean against the reference's (AIReSim's), in % of it,
    the combined 95 % half-width in % and whether they agree within issue 50's tolerance."""
    out = {}
    for metric, share in TOLERANCE.items():
        a, b = ref[metric], other[metric]
        diff = b["mean"] - a["mean"]
        combined = math.hypot(a["ci95"], b["ci95"])
        within = abs(diff) <= share * abs(a["mean"]) or (metric == "training_h" and abs(diff) <= combined)
        scale = 100 / a["mean"] if a["mean"] else math.nan
        out[metric] = {"diff_pct": diff * scale, "combined_ci95_pct": combined * scale, "tolerance_pct": 100 * share,
                       "agree": bool(within)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--airesim", type=Path, help="an AIReSim checkout (its folder holding airesim/)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs AIReSim (with simpy)")
    parser.add_argument("--simulators", nargs="+", default=list(SIMULATORS), choices=list(SIMULATORS),
                        help="which simulators run (default: all)")
    parser.add_argument("--scenarios", nargs="+", default=["defaults"], choices=list(SCENARIOS), metavar="NAME")
    parser.add_argument("--seeds", type=int, default=3, help="replications per scenario (default 3)")
    parser.add_argument("--first-seed", type=int, default=42, help="the first seed (AIReSim's default 42)")
    parser.add_argument("--processes", type=int, default=1, help="AIReSim's processes at a time (default 1)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.list:
        for name, (doc, params, chosen) in SCENARIOS.items():
            lacks = unmatched(name)
            print(f"{name:<16} {doc}  {json.dumps({**params, **chosen})}"
                  + (f"  (raysim: {lacks})" if lacks else ""))
        return
    if "airesim" in args.simulators and (args.airesim is None
                                         or not (args.airesim / "airesim" / "simulator.py").is_file()):
        parser.error("--airesim must be an AIReSim checkout (a folder holding airesim/simulator.py)")
    if args.seeds < 1 or args.processes < 1:
        parser.error("--seeds and --processes must be at least 1")
    if args.airesim is not None:
        args.airesim = args.airesim.resolve()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if not args.json:
        print(HEADER, flush=True)
    for scenario in args.scenarios:  # (each printed once done: a long sitting keeps what it finished)
        summaries = {}
        for sim in args.simulators:
            start = time.perf_counter()
            try:
                rows = [with_etr(r) for r in SIMULATORS[sim](args, scenario, seeds)]
            except Skipped as why:
                print(json.dumps({"simulator": sim, "scenario": scenario, "skipped": str(why)}) if args.json
                      else f"{sim:<9} {scenario:<16} skipped: {why}", flush=True)
                continue
            wall, summaries[sim] = time.perf_counter() - start, summarize(rows)
            print(f"{sim} {scenario}: {len(rows)} replications in {wall:.1f} s", file=sys.stderr, flush=True)
            print(json.dumps({"simulator": sim, "scenario": scenario, "wall_s": wall, "summary": summaries[sim],
                              "replications": rows}) if args.json else table_rows(sim, scenario, summaries[sim]),
                  flush=True)
        if "airesim" in summaries:
            for sim in [s for s in summaries if s != "airesim"]:
                agree = agreement(summaries["airesim"], summaries[sim])
                print(json.dumps({"compare": [sim, "airesim"], "scenario": scenario, "agreement": agree})
                      if args.json else "\n".join(
                          f"{sim} vs airesim {scenario}: {m} {a['diff_pct']:+.2f} % (combined 95 % ±"
                          f"{a['combined_ci95_pct']:.2f} %, tolerance {a['tolerance_pct']:g} %): "
                          + ("agree" if a["agree"] else "DISAGREE") for m, a in agree.items()), flush=True)


if __name__ == "__main__":
    main()
