"""out_jobs.csv, Batsim's job table (raysim.report.batsim, docs/outputs.md): evalys reads a run's table
with `JobSet.from_csv`, its waiting and turnaround times are raysim's per job, its utilisation
counts each job's GPUs, and `raysim report <run folder>` rebuilds the table."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from simutil import NO_PAGES
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.report.batsim import COLUMNS, FILE, GpuIds, batsim_rows, gpu_ids
from raysim.run import run


def run_venus(out, *overrides):
    """The shipped Venus-like week (traces/venus_synth), in-process, into `out`."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "runtime=local", *NO_PAGES, *overrides])
    run(cfg, out)
    return out


@pytest.fixture(scope="module")
def fifo_run(tmp_path_factory):
    return run_venus(tmp_path_factory.mktemp("fifo") / "run")


@pytest.fixture(scope="module")
def tiresias_run(tmp_path_factory):
    return run_venus(tmp_path_factory.mktemp("tiresias") / "run", "policy=tiresias")


@pytest.fixture(scope="module")
def jobset():
    """evalys' JobSet (skips where evalys, a dev extra, is absent)."""
    return pytest.importorskip("evalys.jobset", reason="evalys is not installed (pip install -e '.[dev]')").JobSet


def check_against_jobs(run_dir, JobSet):
    """evalys reads out_jobs.csv: one row per job in trace order, its waiting and turnaround times are
    jobs.parquet's per job, and its utilisation is the jobs' GPU-seconds. Returns the JobSet."""
    js = JobSet.from_csv(str(run_dir / FILE))
    jobs = pq.read_table(run_dir / "jobs.parquet").to_pandas()
    df = js.df
    assert list(pd.read_csv(run_dir / FILE, nrows=0).columns) == list(COLUMNS)
    assert df.jobID.tolist() == jobs.job_id.astype(str).tolist()
    assert (df.success == jobs.finished.astype(int)).all()
    np.testing.assert_array_equal(df.waiting_time, jobs.start_time - jobs.submit_time)
    stops = [c for c in ("preemptions", "reclaims", "interruptions") if c in jobs.columns]
    unstopped = (jobs[stops] == 0).all(axis=1).to_numpy()
    np.testing.assert_array_equal(df.waiting_time[unstopped], jobs.queue[unstopped])  # raysim's queue, too
    np.testing.assert_array_equal(df.turnaround_time, jobs.jct)
    np.testing.assert_array_equal(df.proc_alloc, jobs.gpu_num)  # each job holds gpu_num GPU ids
    gpu_seconds = (jobs.gpu_num * (jobs.end_time - jobs.start_time)).sum()
    assert js.utilisation["area"].sum() == pytest.approx(gpu_seconds)
    return js


def test_evalys_reads_a_fifo_run_and_its_times_are_raysims(fifo_run, jobset):
    js = check_against_jobs(fifo_run, jobset)
    jobs = pq.read_table(fifo_run / "jobs.parquet").to_pandas()
    np.testing.assert_array_equal(js.df.waiting_time, jobs.queue)  # FIFO never stops a job
    assert js.MaxProcs == sum(p["gpus_per_node"] * p["nodes"] for pools in json.loads(
        (fifo_run / "trace_report.json").read_text())["layout"].values() for p in pools)


def test_a_preemptive_run_keeps_batsims_identities(tiresias_run, jobset):
    js = check_against_jobs(tiresias_run, jobset)
    df = js.df
    assert (pq.read_table(tiresias_run / "jobs.parquet", columns=["preemptions"]).column("preemptions")
            .to_numpy() > 0).any()
    np.testing.assert_array_equal(df.finish_time, df.starting_time + df.execution_time)
    np.testing.assert_array_equal(df.turnaround_time, df.waiting_time + df.execution_time)
    np.testing.assert_allclose(df.stretch, df.turnaround_time / df.execution_time, rtol=1e-6)
    meta = df.metadata.map(json.loads)
    jobs = pq.read_table(tiresias_run / "jobs.parquet").to_pandas()
    assert meta.map(lambda m: m["queue"]).tolist() == jobs.queue.tolist()  # raysim's queue, waits between runs too
    assert meta.map(lambda m: m["vc"]).tolist() == jobs.vc.astype(str).tolist()


def test_gpu_ids_stay_in_the_jobs_vc(fifo_run, jobset):
    from procset import ProcSet

    ids = gpu_ids(fifo_run / "jobs.parquet", json.loads((fifo_run / "trace_report.json").read_text())["layout"])
    out = pd.read_csv(fifo_run / FILE, converters={"allocated_resources": ProcSet.from_str})
    vcs = out.metadata.map(lambda m: json.loads(m)["vc"])
    first = pq.read_table(fifo_run / "jobs.parquet", columns=["first_node"]).column("first_node").to_numpy()
    for alloc, vc, node in zip(out.allocated_resources, vcs, first):
        begin, end, node_start, _, _ = ids.vcs[vc]
        assert begin <= alloc.min and alloc.max < end and alloc.min == node_start[node]


def test_nodes_on_loan_keep_the_ids_the_clusters_gpus(jobset, tmp_path):
    """quota=borrow: a job on borrowed nodes is numbered in its lender's GPUs, not in new ones."""
    out = run_venus(tmp_path / "run", "quota=borrow", "policy=tiresias")
    js = check_against_jobs(out, jobset)
    assert (pq.read_table(out / "jobs.parquet", columns=["ran_on_vc", "vc"]).to_pandas()
            .pipe(lambda t: (t.ran_on_vc != t.vc).any()))
    assert js.MaxProcs == sum(p["gpus_per_node"] * p["nodes"] for pools in json.loads(
        (out / "trace_report.json").read_text())["layout"].values() for p in pools)


def test_the_merged_vc_of_quota_global_numbers_the_clusters_gpus(tmp_path):
    """quota=global: `ran_on_vc` names the VC whose pool of the one merged VC held a job's first node,
    not a lender; `first_node` counts the merged VC's nodes, numbered VC by VC as the cluster's GPUs."""
    layout = {"global": [{"gpu_type": "gpu", "gpus_per_node": 8, "nodes": 2},
                         {"gpu_type": "gpu", "gpus_per_node": 4, "nodes": 1}]}
    jobs = pa.table({"job_id": [1, 2, 3], "vc": ["a", "b", "b"], "gpu_num": pa.array([2, 4, 8], pa.int32()),
                     "submit_time": [0, 0, 0], "duration": [5, 5, 5], "start_time": [0, 0, 0],
                     "end_time": [5, 5, 5], "queue": [0, 0, 0], "preemptions": pa.array([0, 0, 0], pa.int32()),
                     "first_node": pa.array([2, 0, 1], pa.int32()), "num_nodes": pa.array([1, 1, 1], pa.int32()),
                     "ran_on_vc": ["b", "a", "a"]})
    pq.write_table(jobs, tmp_path / "jobs.parquet")
    ids = gpu_ids(tmp_path / "jobs.parquet", layout)
    assert ids.pool == 20 and set(ids.vcs) == {"global"}
    assert batsim_rows(jobs, ids, "w").column("allocated_resources").to_pylist() == ["16-17", "0-3", "8-15"]
    # where each VC ran on its own, `ran_on_vc` is a lender, one the layout has
    lender = jobs.set_column(jobs.schema.get_field_index("ran_on_vc"), "ran_on_vc", pa.array(["a", "c", "b"]))
    pq.write_table(lender, tmp_path / "jobs.parquet")
    own = {"a": layout["global"][:1], "b": layout["global"][1:]}
    with pytest.raises(ValueError, match=r"ran on VC 'c' \(ran_on_vc\), which trace_report.json's layout lacks"):
        gpu_ids(tmp_path / "jobs.parquet", own)


def test_utilisation_plot_of_evalys(fifo_run, jobset, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from evalys.visu.series import plot_series

    js = jobset.from_csv(str(fifo_run / FILE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Agg cannot show the window evalys opens
        plot_series(js, name="utilization", legend_label="GPUs in use")
    path = tmp_path / "utilisation.png"
    plt.gcf().savefig(path)
    plt.close("all")
    assert path.stat().st_size > 10_000


def test_jobs_that_did_not_finish_are_rows_with_batsims_states(jobset, tmp_path):
    """A job that never started is REJECTED with no resources, one that started and did not finish
    (a round-based job Gavel dropped, a harvesting task at the log's end) COMPLETED_KILLED; the times
    they lack are -1, which evalys leaves out of its utilisation."""
    jobs = pa.table({"job_id": [1, 2, 3], "vc": ["a", "a", "a"], "gpu_num": pa.array([2, 4, 1], pa.int32()),
                     "submit_time": [0, 5, 7], "duration": [10, 10, None], "start_time": [0, 6, None],
                     "end_time": [10, None, None], "queue": [0, 1, 99], "preemptions": pa.array([0, 0, 0], pa.int32()),
                     "first_node": pa.array([0, 1, None], pa.int32()), "num_nodes": pa.array([1, 1, 0], pa.int32())})
    ids = GpuIds({"a": (0, 16, np.array([0, 8]), 16, 8)}, 16)
    table = batsim_rows(jobs, ids, "w")
    rows = table.to_pylist()
    assert [r["final_state"] for r in rows] == ["COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "REJECTED"]
    assert [r["success"] for r in rows] == [1, 0, 0]
    assert [r["allocated_resources"] for r in rows] == ["0-1", "8-11", ""]
    assert [r["finish_time"] for r in rows] == [10, -1, -1] and [r["waiting_time"] for r in rows] == [0, 1, -1]
    assert [r["stretch"] for r in rows] == [1.0, -1.0, -1.0] and [r["requested_time"] for r in rows] == [10, 10, -1]
    import pyarrow.csv as pacsv

    pacsv.write_csv(table, tmp_path / FILE)
    js = jobset.from_csv(str(tmp_path / FILE))
    assert js.utilisation["area"].sum() == 2 * 10


def test_report_rebuilds_an_absent_table_and_the_switch_turns_it_off(fifo_run, tmp_path):
    from raysim.report.cli import main

    off = run_venus(tmp_path / "off", "report.out_jobs=false")
    assert not (off / FILE).exists()
    assert main([str(off)]) == 0
    assert (off / FILE).read_bytes() == (fifo_run / FILE).read_bytes()


@pytest.mark.slow
@pytest.mark.shared
def test_evalys_reads_the_real_venus_run(venus_dir, jobset, tmp_path):
    out = run_venus(tmp_path / "run", f"trace.path={venus_dir}", f"trace.cache_dir={tmp_path / 'cache'}",
                    "policy=tiresias")
    js = check_against_jobs(out, jobset)
    assert len(js.df) == 23_859
