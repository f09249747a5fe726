"""Replications: a sweep over seeds reports every metric's mean and 95 % confidence interval, and
replicate.* adds seeds until the interval of a metric is narrow enough (raysim.report.replicas,
raysim.report.replicate)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import scipy.stats
import yaml
from omegaconf import OmegaConf

from raysim.errors import ConfigError
from raysim.paths import CONF_DIR
from raysim.report.replicas import half_width, replica_table, seed_groups
from raysim.report.replicate import ReplicateSettings, SeedRounds, cluster_value, replicate_settings
from raysim.settings import defaults

REPO = Path(__file__).resolve().parent.parent
#: t(0.975, n - 1) for n = 2, 3, 4 runs (printed tables; n = 3 also in closed form below; more runs: scipy's)
T975 = {2: 12.706204736174698, 3: 4.302652729749464, 4: 3.182446305284263}


def hand_half_width(values) -> float:
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return (T975[n] if n in T975 else float(scipy.stats.t.ppf(0.975, n - 1))) * s / math.sqrt(n)


def test_t_quantiles_of_the_hand_computation():
    p = 0.975  # t with 2 degrees of freedom in closed form: (2p - 1) / sqrt(2 p (1 - p))
    assert T975[3] == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-12)
    for n, values in ((2, [1.0, 2.0]), (3, [1.0, 2.0, 4.0]), (4, [3.0, 1.0, 4.0, 1.5])):
        assert half_width(values) == pytest.approx(hand_half_width(values), rel=1e-9)
    assert math.isnan(half_width([5.0]))


@pytest.fixture
def tiny_trace(tmp_path) -> Path:
    """40 jobs on a VC of two nodes that fail every 10 hours on average: each seed its own failures."""
    rows = ["job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state"]
    rows += [f"{i + 1},vcA,u{i % 3},{1 + i % 4},4,{i * 600},{3600 + (i * 977) % 7200},COMPLETED" for i in range(40)]
    (tmp_path / "jobs.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,2\n")
    return tmp_path / "jobs.csv"


def raysim(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    return subprocess.run([sys.executable, "-m", "raysim", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def run_args(trace: Path) -> list[str]:
    return ["runtime=local", f"trace.path={trace}", "failures=exponential", "failures.node_mtbf_h=10",
            "failures.repair_h=1", "report.plots=none", "report.out_jobs=false"]


def test_an_adaptive_sweep_stops_at_max_seeds_and_reports_every_metrics_interval(tiny_trace, tmp_path):
    """A target no four seeds reach: the sweep runs seeds 0-3 (min 3, then one more) and stops at
    replicate.max_seeds; its intervals are the hand computation's from the runs' own summaries."""
    sweep = tmp_path / "sweep"
    res = raysim("-m", *run_args(tiny_trace), "replicate.metric=avg_jct", "replicate.target=0.0001",
                 "replicate.max_seeds=4", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    seeds = [yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())[-1] for run in sorted(sweep.glob("[0-9]"))]
    assert seeds == ["seed=0", "seed=1", "seed=2", "seed=3"]
    summaries = [pd.read_csv(sweep / str(i) / "summary.csv").set_index("vc") for i in range(4)]
    table = pd.read_csv(sweep / "sweep_summary.csv")  # (the per-cause columns: from each run's lost_by_cause.csv)
    rows = [table[table["run"] == f"seed={i}"].set_index("vc") for i in range(4)]
    replicas = pd.read_csv(sweep / "sweep_replicas.csv")
    assert set(replicas["group"]) == {"every run"} and set(replicas["vc"]) == {"vcA", "all"}
    assert {"avg_jct", "makespan", "interruptions", "gpu_utilization"} <= set(replicas["metric"])
    assert set(replicas["metric"]) == set(table.columns) - {"run", "vc"}
    for row in replicas.itertuples():
        values = [s.at[row.vc, row.metric] for s in (summaries if row.metric in summaries[0].columns else rows)]
        assert row.runs == 4 and row.mean == pytest.approx(sum(values) / 4, rel=1e-12)
        assert row.ci95 == pytest.approx(hand_half_width(values), rel=1e-9, abs=1e-12)
    jct = replicas.set_index(["vc", "metric"]).loc[("all", "avg_jct")]
    assert jct.ci95 > 0 and jct.ci95_share > 0.0001
    md = (sweep / "sweep_summary.md").read_text()
    assert "## Mean and 95 % confidence interval over seeds (whole cluster)" in md
    assert "not within 0.01% at 4 runs (replicate.max_seeds)" in md
    html = (sweep / "report.html").read_text()
    assert 'id="replicas"' in html and "not within 0.01% at 4 runs" in html


def test_a_metric_the_summary_lacks_is_one_line_listing_its_numeric_columns(tmp_path):
    fake_runs(tmp_path, {(): [100.0]})
    with pytest.raises(ConfigError) as err:
        cluster_value(tmp_path / "0", "avg_jtc")
    assert str(err.value) == ("replicate.metric: not a numeric column of the runs' summary.csv (one of: jobs, avg_jct, "
                              "avg_queue) (value 'avg_jtc')")


@pytest.mark.slow
def test_unknown_metric_is_one_line_listing_the_summarys_metrics(tiny_trace, tmp_path):
    """The sweep stops after its first round (the runs' summary says which metrics there are)."""
    res = raysim("-m", *run_args(tiny_trace), "report.html=false", "replicate.metric=avg_jtc", "replicate.min_seeds=2",
                 f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert res.returncode == 2
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("raysim: error: replicate.metric: not a numeric column of the runs' summary.csv (one of: "
                           "jobs, finished, avg_jct, avg_queue,") and line.endswith("(value 'avg_jtc')")


@pytest.mark.parametrize("args, line", [
    (["-m", "replicate.metric=avg_jct", "seed=0,1"],
     "seed: swept while replicate.metric chooses the seeds (seed, seed + 1, ...): give one seed or none (value '0,1')"),
    (["replicate.metric=avg_jct"],
     "replicate.metric: only a multirun (-m) replicates: add -m (seeds seed, seed + 1, ... per combination of the "
     "other overrides) (value 'avg_jct')"),
], ids=["swept_seed", "single_run"])
def test_bad_replicate_settings_are_one_line(tiny_trace, tmp_path, args, line):
    """Refused before any run: by the sweeper (a multirun) or the run (a single run)."""
    res = raysim(*args, *run_args(tiny_trace), f"hydra.sweep.dir={tmp_path / 'sweep'}",
                 f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert res.returncode == 2 and res.stderr == f"raysim: error: {line}\n"
    assert not (tmp_path / "sweep" / "0").exists()


@pytest.mark.parametrize("section, line", [
    ({"metric": "avg_jct", "target": 1}, "replicate.target: must be below 1 (a share of the mean) (value 1.0)"),
    ({"metric": "avg_jct", "target": 0}, "replicate.target: "),
    ({"metric": "avg_jct", "target": -0.1}, "replicate.target: "),
    ({"metric": "avg_jct", "min_seeds": 1}, "replicate.min_seeds: "),
    ({"metric": "avg_jct", "min_seeds": 5, "max_seeds": 4},
     "replicate.min_seeds: must be at most replicate.max_seeds (4) (value 5)"),
    ({"metric": "avg_jct", "max_seeds": 10_001}, "replicate.max_seeds: "),
    ({"metric": "avg_jct", "step": 0}, "replicate.step: "),
    ({"target": 0.1}, "replicate.target: set with replicate.metric null: without a metric nothing is replicated"),
    ({"metric": "avg_jct", "seeds": 3}, "replicate.seeds: not a setting of replicate"),
])
def test_every_replicate_setting_is_bounded(section, line):
    with pytest.raises(ConfigError) as err:
        replicate_settings(section)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_the_root_config_holds_the_declared_defaults():
    root = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)
    assert root["replicate"] == defaults(ReplicateSettings)


def fake_runs(sweep: Path, jct: dict[tuple, list[float]]) -> None:
    """Run folders as a sweep leaves them: each group's runs (its overrides and a seed) with a summary
    whose cluster avg_jct is the given value, numbered in the order given."""
    number = len(list(sweep.glob("[0-9]*")))
    for group, values in jct.items():
        for seed, value in enumerate(values):
            run = sweep / str(number)
            (run / ".hydra").mkdir(parents=True, exist_ok=True)
            (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([*group, f"seed={seed}"]))
            pd.DataFrame({"vc": ["all"], "jobs": [10], "avg_jct": [value], "avg_queue": [0.0]}).to_csv(
                run / "summary.csv", index=False)
            number += 1


def test_rounds_add_seeds_to_the_groups_short_of_the_target_until_they_meet_it_or_max_seeds(tmp_path):
    """Group a meets 5 % at its third run (100, 102, 101: half-width 2.5 %); group b, wide, gets one
    seed a round until max_seeds; the rounds' seeds follow on from `seed`."""
    settings = replicate_settings({"metric": "avg_jct", "target": 0.05, "min_seeds": 2, "max_seeds": 4})
    a, b = ("policy=fifo",), ("policy=srtf",)
    rounds = SeedRounds(settings, [[*a, "seed=7"], [*b, "seed=7"]], 7, tmp_path)
    assert rounds.first() == [[*a, "seed=7"], [*a, "seed=8"], [*b, "seed=7"], [*b, "seed=8"]]
    fake_runs(tmp_path, {a: [100, 102], b: [50, 150]})
    assert hand_half_width([100, 102]) / 101 > 0.05
    assert rounds.next() == [[*a, "seed=9"], [*b, "seed=9"]]
    fake_runs(tmp_path, {a: [101], b: [60]})
    assert hand_half_width([100, 102, 101]) / 101 < 0.05
    assert rounds.next() == [[*b, "seed=10"]]
    fake_runs(tmp_path, {b: [140]})
    assert rounds.next() == []  # b at max_seeds, not within the target
    wide = replicate_settings({"metric": "avg_jct", "min_seeds": 2, "max_seeds": 5, "step": 2})
    (tmp_path / "other").mkdir()
    rounds = SeedRounds(wide, [list(a)], 0, tmp_path / "other")
    assert len(rounds.first()) == 2 and len(rounds.next()) == 2 and len(rounds.next()) == 1  # step, up to max_seeds


def test_groups_are_the_runs_that_differ_only_in_seed(tmp_path):
    fake_runs(tmp_path, {("policy=fifo", "quota=none"): [1, 2, 4], ("policy=srtf", "quota=none"): [3]})
    runs = sorted(tmp_path.glob("[0-9]*"), key=lambda p: int(p.name))
    labels = [f"r{i}" for i in range(4)]
    groups = seed_groups(runs, labels)
    assert groups == {"policy=fifo": ["r0", "r1", "r2"], "policy=srtf": ["r3"]}
    table = pd.DataFrame({"run": labels, "vc": "all", "avg_jct": [1.0, 2.0, 4.0, 3.0], "name": "x"})
    replicas = replica_table(table, groups).set_index("group")
    assert list(replicas["metric"]) == ["avg_jct", "avg_jct"]  # numbers only
    assert replicas.at["policy=fifo", "ci95"] == pytest.approx(hand_half_width([1, 2, 4]))
    assert replicas.at["policy=srtf", "runs"] == 1 and math.isnan(replicas.at["policy=srtf", "ci95"])
    assert seed_groups(runs[2:], labels[2:]) == {}  # no two runs differ only in seed
    for run in runs:
        (run / ".hydra" / "overrides.yaml").unlink()
    assert seed_groups(runs, labels) == {}  # runs with no seed= (made without a command line): none



@pytest.mark.slow
def test_an_adaptive_sweep_stops_at_the_first_count_within_the_target(tiny_trace, tmp_path):
    """With step 1, the sweep ends at the first number of seeds (from min_seeds on) whose interval of
    the metric, by hand from the runs' summaries, is within the target; the summary says it met it."""
    sweep = tmp_path / "sweep"
    res = raysim("-m", *run_args(tiny_trace), "report.html=false", "replicate.metric=gpu_utilization",
                 "replicate.target=0.03", "replicate.max_seeds=12", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    runs = len(list(sweep.glob("[0-9]*")))
    values = [pd.read_csv(sweep / str(i) / "summary.csv").set_index("vc").at["all", "gpu_utilization"]
              for i in range(runs)]
    shares = [hand_half_width(values[:n]) / (sum(values[:n]) / n) for n in range(3, runs + 1)]
    assert runs < 12 and shares[-1] <= 0.03 and all(share > 0.03 for share in shares[:-1])
    assert "within the target of 3.00%" in (sweep / "sweep_summary.md").read_text()
