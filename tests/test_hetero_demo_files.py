"""The shipped heterogeneous demo (traces/hetero_demo) is what raysim.cluster.demo writes, and sane."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from raysim.cluster.demo import DAY, DAYS, TARGET_LOAD, main, write_hetero_demo
from raysim.cluster.layout import gpu_types, read_layout_csv, total_gpus
from raysim.cluster.throughput import read_throughput_csv
from raysim.paths import TRACES_DIR
from raysim.trace.readers import read_csv_trace

DEMO = TRACES_DIR / "hetero_demo"
FILES = ("layout.csv", "throughputs.csv", "jobs.csv")


@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    return pd.read_csv(DEMO / "jobs.csv", dtype={"gpu_type": str, "gpu_constraint": str},
                       keep_default_na=False)


def test_shipped_files_are_exactly_what_the_generator_writes(tmp_path):
    written = write_hetero_demo(tmp_path / "demo", seed=0)
    assert [p.name for p in written] == list(FILES)
    for name in FILES:
        assert (tmp_path / "demo" / name).read_bytes() == (DEMO / name).read_bytes(), name
    assert sum(p.stat().st_size for p in DEMO.iterdir()) < 200_000


def test_command_line_and_other_seeds(tmp_path, capsys):
    main([str(tmp_path), "--seed", "1"])
    assert capsys.readouterr().out.count("wrote ") == 3
    assert (tmp_path / "layout.csv").read_bytes() == (DEMO / "layout.csv").read_bytes()
    assert (tmp_path / "jobs.csv").read_bytes() != (DEMO / "jobs.csv").read_bytes()


def test_layout_has_three_types_and_mixed_node_shapes():
    layout = read_layout_csv(DEMO / "layout.csv")
    assert gpu_types(layout) == ["V100", "P100", "K80"]
    assert 64 <= total_gpus(layout) <= 96
    assert {p.gpus_per_node for pools in layout.values() for p in pools} == {4, 8}


def test_throughputs_rank_the_types_with_per_job_speedups():
    table = read_throughput_csv(DEMO / "throughputs.csv")
    assert len(table.job_types()) == 8 and len(table) == 8 * 3
    speedups = set()
    for job in table.job_types():
        v100, p100, k80 = (table.get(job, gpu) for gpu in ("V100", "P100", "K80"))
        assert v100 > p100 > k80
        speedups.add(round(table.ratio(job, "V100", "K80"), 3))
    assert len(speedups) == 8 and table.missing() == []
    assert "illustrative" in (DEMO / "README.md").read_text().lower()


def test_jobs_pass_the_trace_reader(jobs):
    layout = read_layout_csv(DEMO / "layout.csv")
    vc_gpus = {vc: sum(p.gpus for p in pools) for vc, pools in layout.items()}
    table, report = read_csv_trace(DEMO / "jobs.csv", vc_nodes=vc_gpus, gpus_per_node=1)
    assert table.num_rows == len(jobs) == 1500 and report.total == 0
    assert list(jobs.columns[-3:]) == ["job_type", "gpu_type", "gpu_constraint"]
    assert jobs["job_id"].tolist() == list(range(1, 1501))
    assert jobs["submit_time"].is_monotonic_increasing
    assert 0 <= jobs["submit_time"].min() and jobs["submit_time"].max() < DAYS * DAY


def test_jobs_shape_and_load(jobs):
    assert set(jobs["gpu_num"]) == {1, 2, 4, 8} and (jobs["gpu_num"] == 1).mean() > 0.5
    assert 60 <= jobs["duration"].min() and jobs["duration"].median() < 3600 < jobs["duration"].max()
    layout = read_layout_csv(DEMO / "layout.csv")
    for vc, pools in layout.items():
        mine = jobs[jobs["vc"] == vc]
        load = (mine["gpu_num"] * mine["duration"]).sum() / (sum(p.gpus for p in pools) * DAYS * DAY)
        assert abs(load - TARGET_LOAD) < 0.01, vc


def test_job_types_and_gpu_types_are_consistent(jobs):
    table = read_throughput_csv(DEMO / "throughputs.csv")
    layout = read_layout_csv(DEMO / "layout.csv")
    assert set(jobs["job_type"]) == set(table.job_types())
    constrained = jobs["gpu_constraint"] != ""
    assert 0.1 <= constrained.mean() <= 0.2
    assert {"V100|P100", "V100", "K80"} <= set(jobs["gpu_constraint"])
    for job in jobs.itertuples():
        capacity = {p.gpu_type: p.gpus for p in layout[job.vc]}
        allowed = job.gpu_constraint.split("|") if job.gpu_constraint else list(capacity)
        assert job.gpu_type in allowed, job.job_id
        assert max(capacity.get(t, 0) for t in allowed) >= job.gpu_num, job.job_id
    assert np.isin(jobs["gpu_type"], gpu_types(layout)).all()
