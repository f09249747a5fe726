"""Gavel's trace format, and round-based runs through the Hydra config (own small data only)."""

import json
import re

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import NO_PAGES

from raysim import cli  # noqa: F401  (the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run import run
from raysim.errors import ConfigError, TraceError
from raysim.trace.gavel import read_gavel_trace, write_gavel_trace

LINE = "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t{steps}\t{scale}\t1\t-1.000000\t{arrival}"
MODELS = ["ResNet-18 (batch size 64)", "LM (batch size 10)"]


def write_trace(path, rows):
    path.write_text("\n".join(LINE.format(steps=s, scale=g, arrival=a) for s, g, a in rows) + "\n")
    return path


def gavel_table(path):
    """A small made-up table in Gavel's JSON layout (isolated 'null' and pair entries)."""
    rates = {"v100": 4.0, "p100": 2.0, "k80": 1.0}
    data = {gpu: {} for gpu in rates}
    for gpu, base in rates.items():
        for m, model in enumerate(MODELS):
            for scale in (1, 2, 4, 8):
                entry = {"null": base * scale * (1 + m)}
                for other in MODELS:
                    entry[str((other, scale))] = [0.6 * base * scale, 0.6 * base * scale]
                data[gpu][str((model, scale))] = entry
    path.write_text(json.dumps(data))
    return path


def test_reader_reads_jobs_in_line_order(tmp_path):
    table = read_gavel_trace(write_trace(tmp_path / "t.trace", [(1000, 1, 0.0), (2000, 4, 10.5)]))
    assert table.column("job_id").to_pylist() == [0, 1]
    assert table.column("scale_factor").to_pylist() == [1, 4]
    assert table.column("arrival_time").to_pylist() == [0.0, 10.5]
    again = read_gavel_trace(write_gavel_trace(table, tmp_path / "again.trace"))
    assert again.drop(["slo"]).equals(table.drop(["slo"]))


@pytest.mark.parametrize("rows, message, where", [
    ([(1000, 1, 0.0), (-5, 1, 1.0)], "positive number of steps", "row 2 (line 2), column 'total_steps'"),
    ([(1000, 0, 0.0)], "whole number of GPUs from 1", "column 'scale_factor'"),
    ([(1000, 1, 5.0), (1000, 1, 1.0)], "arrivals must be in time order", "row 2 (line 2), column 'arrival_time'"),
    ([(1000, 1, "soon")], "not a number", "column 'arrival_time'"),
    ([(1000, 1, -1.0)], "must be from 0 to 1e+12 s", "column 'arrival_time'"),
    ([(1000, 1, 1e300)], "must be from 0 to 1e+12 s", "row 1 (line 1), column 'arrival_time'"),  # (int64 overflow)
    ([(1000, 10**12, 0.0)], "whole number of GPUs from 1 to 2,147,483,647", "column 'scale_factor'"),
])
def test_reader_names_file_row_and_field(tmp_path, rows, message, where):
    path = write_trace(tmp_path / "bad.trace", rows)
    with pytest.raises(TraceError, match=re.escape(message)) as info:
        read_gavel_trace(path)
    assert where in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("weight, message", [
    ("1e300", "must be from 1e-06 to 1e+06"), ("1e-300", "must be from 1e-06 to 1e+06"),
    ("-2", "must be from 1e-06 to 1e+06"), ("0", "must be from 1e-06 to 1e+06"),
    ("inf", "must be a finite number"), ("nan", "must be a finite number"), ("heavy", "not a number")])
def test_a_bad_priority_weight_is_one_line_naming_file_row_and_field(tmp_path, weight, message):
    """A weight the max-min LPs cannot divide by (1e300 passed before, as every positive number did)."""
    good = LINE.format(steps=1000, scale=1, arrival=0.0)
    bad = LINE.format(steps=1000, scale=1, arrival=1.0).split("\t")
    bad[7] = weight
    path = tmp_path / "bad.trace"
    path.write_text(good + "\n" + "\t".join(bad) + "\n")
    with pytest.raises(TraceError) as info:
        read_gavel_trace(path)
    assert str(info.value) == f"{path}, row 2 (line 2), column 'priority_weight': {message} (value {weight!r})"


def test_reader_rejects_wrong_field_counts_and_empty_files(tmp_path):
    bad = tmp_path / "short.trace"
    bad.write_text("ResNet-18 (batch size 64)\t1000\t1\t0\n")
    with pytest.raises(TraceError, match="expected 10 tab-separated fields"):
        read_gavel_trace(bad)
    empty = tmp_path / "empty.trace"
    empty.write_text("\n")
    with pytest.raises(TraceError, match="no jobs"):
        read_gavel_trace(empty)


def test_a_job_whose_steps_outlast_trace_max_duration_s_is_one_line(tmp_path):
    """10^12 steps at 4 steps/s: 8,000 years of rounds, a run that never ended."""
    trace = write_trace(tmp_path / "t.trace", [(1000, 1, 0.0), (10**12, 1, 1.0)])
    cfg = composed("+experiment=gavel_trace", f"trace.path={trace}", f"cluster.throughput={gavel_table(tmp_path / 't.json')}",
                   "runtime=local")
    with pytest.raises(TraceError) as err:
        run(cfg, tmp_path / "run")
    assert str(err.value) == (f"{trace}, row 2 (line 2), column 'total_steps': its steps take 2.5e+11 s on the "
                              "reference type V100, longer than trace.max_duration_s (31,536,000 s) (value 1000000000000.0)")


def composed(*overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def test_trace_run_writes_jobs_summary_and_plot(tmp_path):
    trace = write_trace(tmp_path / "t.trace", [(20000, 1, 0.0), (40000, 2, 100.0), (10000, 8, 200.0),
                                               (5000, 1, 3000.0)])
    cfg = composed("+experiment=gavel_trace", f"trace.path={trace}", f"cluster.throughput={gavel_table(tmp_path / 't.json')}",
                   "policy=max_min_fairness_perf", "policy.window=[1,2]", "runtime=local")
    row = run(cfg, tmp_path / "run")
    jobs = pq.read_table(tmp_path / "run" / "jobs.parquet").to_pandas()
    assert jobs.job_id.tolist() == [0, 1, 2, 3] and jobs.finished.all()
    assert (jobs.start_time >= jobs.submit_time).all() and (jobs.end_time > jobs.start_time).all()
    assert jobs.submit_time.tolist() == [0.0, 100.0, 200.0, 3000.0]  # Gavel's arrival times, exact
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    assert summary.avg_jct_window.iloc[-1] == pytest.approx(jobs.jct[1:3].mean())
    assert row["avg_jct"] == pytest.approx(jobs.jct.mean(), rel=1e-3)
    assert (tmp_path / "run" / "plots").is_dir() and (tmp_path / "run" / "timeseries.parquet").exists()


def test_continuous_run_generates_gavels_jobs(tmp_path):
    cfg = composed("+experiment=gavel_continuous", f"cluster.throughput={gavel_table(tmp_path / 't.json')}",
                   "policy=fifo_perf", "rounds.rate_jobs_per_hour=4", "rounds.generate.jobs=30",
                   "policy.window=[10,19]", "runtime=local",
                   "rounds.generate.templates=[{model: 'ResNet-18 (batch size 64)', distributed: true},"
                   "{model: 'LM (batch size 10)', distributed: true}]")
    row = run(cfg, tmp_path / "run")
    jobs = pq.read_table(tmp_path / "run" / "jobs.parquet").to_pandas()
    assert jobs.job_id.tolist() == list(range(30)) and jobs.finished.all()
    assert jobs.submit_time.iloc[0] == 0.0 and jobs.submit_time.is_monotonic_increasing
    assert row["avg_jct_window"] == pytest.approx(jobs.jct[10:20].mean())


@pytest.mark.parametrize("override, line", [
    ("rounds.generate.lam_s=1e300", "rounds.generate.lam_s: must be at most 1,000,000,000 (value 1e+300)"),
    ("rounds.rate_jobs_per_hour=1e-300", "rounds.rate_jobs_per_hour: must be at least 3.6e-06 (value 1e-300)")])
def test_arrivals_too_far_apart_for_int64_seconds_are_one_line(tmp_path, override, line):
    """The generator's submit times overflowed int64 (a traceback) at these; 32 years apart is the most."""
    cfg = composed("+experiment=gavel_continuous", f"cluster.throughput={gavel_table(tmp_path / 't.json')}",
                   "runtime=local", override)
    with pytest.raises(ConfigError) as err:
        run(cfg, tmp_path / "run")
    assert str(err.value) == line and not (tmp_path / "run").exists()


def test_event_driven_policies_run_on_gavel_traces_and_round_ones_on_raysim_traces(tmp_path, venus_first_day):
    """One name per policy and every policy on every trace: Tiresias on Gavel's jobs (a job's
    duration is its steps' time on the reference V100), Gavel's LAS on the Venus-like trace (its
    first day: tests/conftest.py's venus_first_day)."""
    trace = write_trace(tmp_path / "t.trace", [(20000, 1, 0.0), (40000, 2, 100.0), (10000, 8, 200.0)])
    table = gavel_table(tmp_path / "t.json")
    run(composed("+experiment=gavel_trace", f"trace.path={trace}", f"cluster.throughput={table}",
                 "policy=tiresias", "runtime=local"), tmp_path / "a")
    jobs = pq.read_table(tmp_path / "a" / "jobs.parquet").to_pandas()
    assert jobs.finished.all() and jobs.duration.tolist() == [20000 // 4, 40000 // 8, 10000 // 32 + 1]
    run(composed("+experiment=venus", "policy=max_min_fairness", "runtime=local", f"trace.path={venus_first_day}"),
        tmp_path / "b")
    assert pq.read_table(tmp_path / "b" / "jobs.parquet").column("finished").to_pandas().all()
    with pytest.raises(Exception, match="packing policies need a throughput table"):
        run(composed("+experiment=venus", "policy=gandiva", "runtime=local"), tmp_path / "c")


def test_raysim_trace_runs_with_a_job_type_mapping(tmp_path):
    """A raysim-schema CSV whose `model` column maps to table job types: a duration of d seconds
    on the reference V100 becomes d x throughput steps (the made-up table: 4 x scale x (1 + m)/s).
    Job 9 arrives at 600 s, mid-round: it joins at the next round boundary, 720 s."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state,model\n"
                     "7,cluster,u1,1,1,0,3600,COMPLETED,resnet\n"
                     "9,cluster,u2,2,1,600,1800,COMPLETED,lm\n")
    cfg = composed("+experiment=gavel_trace", f"trace.path={trace}", "trace.format=csv", "trace.cache=false",
                   f"cluster.throughput={gavel_table(tmp_path / 't.json')}", "policy=fifo_perf", "policy.window=null",
                   "policy.job_type_column=model", "runtime=local",
                   "policy.job_type_map={resnet: 'ResNet-18 (batch size 64)', lm: 'LM (batch size 10)'}")
    run(cfg, tmp_path / "run")
    jobs = pq.read_table(tmp_path / "run" / "jobs.parquet").to_pandas()
    assert jobs.job_id.tolist() == [7, 9]
    assert jobs.jct.tolist() == pytest.approx([3600.0, 120.0 + 1800.0])


@pytest.mark.slow  # 6 s multirun; the other Gavel experiment tests stay in the main suite
def test_continuous_sweep_gives_the_rate_figure(tmp_path):
    """A sweep over policies x rates (Gavel's continuous workload): the sweep summary and Gavel's
    "average JCT vs input job rate" figure."""
    from raysim.report.sweep import summarize_sweep

    table = gavel_table(tmp_path / "t.json")
    sweep = tmp_path / "sweep"
    for i, (policy, rate) in enumerate([("fifo_perf", 2.0), ("fifo_perf", 4.0), ("isolated", 2.0), ("isolated", 4.0)]):
        overrides = [f"policy={policy}", f"rounds.rate_jobs_per_hour={rate}"]
        cfg = composed("+experiment=gavel_continuous", f"cluster.throughput={table}", *overrides,
                       "rounds.generate.jobs=30", "policy.window=[10,19]", "runtime=local", *NO_PAGES,
                       "rounds.generate.templates=[{model: 'ResNet-18 (batch size 64)', distributed: true},"
                       "{model: 'LM (batch size 10)', distributed: true}]")
        run(cfg, sweep / str(i))
        (sweep / str(i) / ".hydra").mkdir()
        (sweep / str(i) / ".hydra" / "overrides.yaml").write_text("\n".join(f"- {o}" for o in overrides) + "\n")
    summary = summarize_sweep(sweep)
    assert len(summary[summary.vc == "all"]) == 4 and "avg_jct_window" in summary.columns
    assert (sweep / "plots" / "avg_jct_vs_rate.png").exists() and (sweep / "sweep_summary.md").exists()
