"""Alibaba's spot GPU trace: the two-file reader (raysim.trace.spot_gpu), the HP/spot workload
generator (raysim.trace.spot_synth) and a run on them where HP jobs evict spot jobs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from raysim.cluster.layout import Pool
from raysim.data.registry import dataset
from raysim.errors import TraceError
from raysim.paths import CONF_DIR
from raysim.trace.cli import main as trace_main
from raysim.trace.load import load_trace
from raysim.trace.spot_gpu import read_spot_nodes
from raysim.trace.spot_synth import generate_spot, mix, slice_nodes

NODES = ("gpu_model,gpu_capacity_num,cpu_num,node_name\n"
         "A10,1,128,0\nH800,8,128,1\nA10,1,128,2\nH800,8,128,3\nA10,1,128,4\n")
HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"
JOBS = HEADER + ("7,a,A10,8,1,1,0,100,HP\n"           # 100 A10 GPU-s for a
                 "8,b,H800,15,2,4,5,200,Spot\n"       # 4 workers of 2 GPUs
                 "9,b,A10,2.5,0.5,1,7,600,spot\n"     # half a GPU: 300 A10 GPU-s for b
                 "10,b,H800,4,0,1,8,10,HP\n")         # no GPU: filtered


def folder(tmp_path: Path, jobs: str = JOBS, nodes: str = NODES) -> Path:
    (tmp_path / "node_info_df.csv").write_text(nodes)
    (tmp_path / "job_info_df.csv").write_text(jobs)
    return tmp_path


def read(path: Path, **options):
    return load_trace(path, cache=False, reader_options=options)


def test_jobs_become_raysim_rows(tmp_path):
    trace = read(folder(tmp_path))
    df = trace.table.to_pandas()
    assert df.job_id.tolist() == [1, 2, 3] and df.job_name.tolist() == ["7", "8", "9"]
    assert df.vc.astype(str).tolist() == ["a", "b", "b"] and df.user.astype(str).tolist() == ["a", "b", "b"]
    assert df.gpu_num.tolist() == [1, 8, 1] and df.gpu_milli.tolist() == [1000, 1000, 500]
    assert df.cpu_num.tolist() == [8, 60, 3]  # worker_num x cpu_request, rounded up
    assert df.submit_time.tolist() == [0, 5, 7] and df.duration.tolist() == [100, 200, 600]
    assert df.gpu_constraint.astype(str).tolist() == ["A10", "H800", "A10"]
    assert df.priority_class.astype(str).tolist() == ["hp", "spot", "spot"]
    assert trace.report.counts["filtered: gpu_request 0 (CPU-only job)"] == 1


def test_organizations_are_dealt_each_models_nodes_by_demand(tmp_path):
    # A10 (3 GPUs): a asks 100 GPU-s, b 300: shares 0.75 and 2.25; node 0 -> b, 2 -> b, 4 -> a
    trace = read(folder(tmp_path))
    assert trace.layout == {"a": (Pool("A10", 1, 1),), "b": (Pool("A10", 1, 2), Pool("H800", 8, 2))}


def test_gpu_models_as_vcs_like_gfs(tmp_path):
    trace = read(folder(tmp_path), vc_from="gpu_model")
    assert trace.layout == {"A10": (Pool("A10", 1, 3),), "H800": (Pool("H800", 8, 2),)}
    assert trace.table.column("vc").to_pylist() == ["A10", "H800", "A10"]


def test_whole_gpu_jobs_carry_no_shares(tmp_path):
    trace = read(folder(tmp_path, HEADER + "1,a,H800,4,8,1,0,10,HP\n"))
    assert "gpu_milli" not in trace.table.column_names


@pytest.mark.parametrize("row, message", [
    ("1,a,V100,8,1,1,0,10,HP", "row 2 (line 3), column 'gpu_model': gpu_model not in the node list"),
    ("1,a,A10,8,0.5,2,0,10,HP", "row 2 (line 3), column 'gpu_request': a share of one GPU (gpu_request < 1) "
                                "needs worker_num 1"),
    ("1,a,H800,8,1.5,1,0,10,HP", "row 2 (line 3), column 'gpu_request': gpu_request above 1 must be whole GPUs"),
    ("1,a,A10,8,x,1,0,10,HP", "row 2 (line 3), column 'gpu_request': gpu_request is not a number"),
    ("1,a,A10,-1,1,1,0,10,HP", "row 2 (line 3), column 'cpu_request': cpu_request is negative"),
    ("1,a,A10,8,1,0,0,10,HP", "row 2 (line 3), column 'worker_num': worker_num must be positive"),
    ("1,,A10,8,1,1,0,10,HP", "row 2 (line 3), column 'organization': organization is empty"),
    ("7,a,A10,8,1,1,0,10,HP", "row 2 (line 3), column 'job_name': job_name repeats an earlier row"),
    ("1,a,A10,8,1,1,0,10,Batch", "row 2 (line 3), column 'job_type': unknown priority class"),
    ("1,a,A10,8,1,1,0,-5,HP", "row 2 (line 3), column 'duration': duration must be positive"),
    ("1,a,H800,8,8,3,0,10,HP", "row 2 (line 3), column 'gpu_request': the job asks more GPUs than its VC has of "
                               "its gpu_model"),
    ("1,a,A10,8,1,1,0,10", "row 2 (line 3): wrong number of values"),
    ("1,a,H800,8,8,999999999,0,10,HP", "row 2 (line 3), column 'gpu_request': worker_num x gpu_request does not fit"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_field(tmp_path, row, message):
    path = folder(tmp_path, HEADER + "7,a,A10,8,1,1,0,10,HP\n" + row + "\n")
    with pytest.raises(TraceError) as err:
        read(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(path / "job_info_df.csv") + ", " + message), text


def test_bad_rows_are_skipped_and_counted(tmp_path):
    jobs = HEADER + "1,a,A10,8,1,1,0,10,HP\n2,a,V100,8,1,1,0,10,HP\n3,a,A10,8,1,1,0,10,Batch\n4,a,A10,8,x,1,0,1,HP\n"
    trace = load_trace(folder(tmp_path, jobs), cache=False, on_error="skip")
    assert trace.table.column("job_id").to_pylist() == [1]
    assert trace.report.total == 3 and sum(trace.report.counts.values()) == 3


@pytest.mark.parametrize("nodes, message", [
    ("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,0,128,0\n", "row 1 (line 2), column 'gpu_capacity_num': "
                                                                    "gpu_capacity_num must be positive"),
    ("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\n,1,128,1\n", "row 2 (line 3), column 'gpu_model': "
                                                                              "gpu_model is empty"),
    ("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nA10,1,128,0\n", "row 2 (line 3), column "
                                                                                 "'node_name': node_name repeats"),
    ("gpu_model,cpu_num,node_name\nA10,128,0\n", "column 'gpu_capacity_num': missing column"),
])
def test_a_bad_node_list_row_is_one_line(tmp_path, nodes, message):
    path = tmp_path / "node_info_df.csv"
    path.write_text(nodes)
    with pytest.raises(TraceError) as err:
        read_spot_nodes(path)
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)


def node_list(n: int = 40) -> pd.DataFrame:
    shapes = [("A10", 1, 128), ("H800", 8, 192), ("GPU-series-1", 4, 192), ("A100-SXM4-80GB", 8, 128)]
    return pd.DataFrame([{"node_name": str(i), "gpu_model": shapes[i % 4][0], "gpu_capacity_num": shapes[i % 4][1],
                          "cpu_num": shapes[i % 4][2]} for i in range(n)])


def test_a_slice_keeps_every_kth_node_in_file_order():
    assert slice_nodes(node_list(40), 10).node_name.tolist() == [str(4 * i) for i in range(10)]
    assert len(slice_nodes(node_list(40), 99)) == 40


@pytest.mark.parametrize("seed", [0, 1])
def test_the_generator_has_the_published_mix(seed):
    jobs = generate_spot(node_list(), jobs=4000, days=7, seed=seed)
    share = mix(jobs)
    assert share["spot_jobs"] == 0.25
    assert share["spot_gpu_hours"] == pytest.approx(0.05, abs=0.005)
    hp = jobs[jobs.job_type == "HP"]
    assert (hp.worker_num == 1).all() and jobs.submit_time.min() == 0 and jobs.submit_time.is_monotonic_increasing
    gpu_s = (hp.gpu_request * hp.duration).sum()
    assert gpu_s / (7 * 86400 * node_list().gpu_capacity_num.sum()) == pytest.approx(0.8, rel=0.02)


def test_the_generator_starts_where_asked():
    jobs = generate_spot(node_list(), jobs=50, days=1, seed=0, start_s=13219200)
    assert jobs.submit_time.min() == 13219200 and jobs.submit_time.max() < 13219200 + 86400


def test_the_generator_is_seeded(tmp_path):
    args = ["spot", "--node-list", str(tmp_path / "n.csv"), "--nodes", "20", "--jobs", "300", "--days", "2"]
    node_list().to_csv(tmp_path / "n.csv", index=False)
    for out, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert trace_main([*args, "--seed", str(seed), "--out", str(tmp_path / out)]) == 0
    text = {out: (tmp_path / out / "job_info_df.csv").read_bytes() for out in "abc"}
    assert text["a"] == text["b"] != text["c"]
    assert len(read_spot_nodes(tmp_path / "a" / "node_info_df.csv")) == 20
    trace = read(tmp_path / "a", vc_from="gpu_model")  # the reader takes what it writes
    assert trace.table.num_rows == 300


def run(trace: Path, out: Path, *overrides) -> Path:
    from raysim.run import run as run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"trace.path={trace}", "runtime=local", "trace.cache=false",
                                                       "report.plots=none", "policy=fifo", *overrides])
    run_config(cfg, out)
    return out


def test_an_hp_job_evicts_a_spot_job_under_fifo(tmp_path):
    # one 8-GPU node: the spot job runs 0-100, is evicted by the HP job (100-300), then runs its 900 s left
    jobs = HEADER + "1,a,H800,8,8,1,0,1000,Spot\n2,a,H800,8,8,1,100,200,HP\n"
    nodes = "gpu_model,gpu_capacity_num,cpu_num,node_name\nH800,8,128,0\n"
    out = run(folder(tmp_path, jobs, nodes), tmp_path / "out")
    done = pq.read_table(out / "jobs.parquet").to_pandas()
    assert done.evictions.tolist() == [1, 0] and done.end_time.tolist() == [1200, 300]
    assert done.priority_class.astype(str).tolist() == ["spot", "hp"]


def test_a_generated_workload_runs_with_evictions(tmp_path):
    node_list().to_csv(tmp_path / "n.csv", index=False)
    assert trace_main(["spot", "--node-list", str(tmp_path / "n.csv"), "--nodes", "12", "--jobs", "400", "--days", "2",
                       "--load", "1.2", "--seed", "0", "--out", str(tmp_path / "w")]) == 0
    out = run(tmp_path / "w", tmp_path / "out", "+trace.reader_options.vc_from=gpu_model")
    summary = pd.read_csv(out / "summary.csv").set_index("vc").loc["all"]
    assert summary.jobs_hp == 300 and summary.jobs_spot == 100 and summary.evictions > 0


def test_the_dataset_pins_the_node_list_and_trusts_the_job_table_on_first_use():
    files = {f.path: f for f in dataset("alibaba_spot").files}
    assert files["node_info_df.csv"].pinned and files["node_info_df.csv"].size == 78330
    assert not files["job_info_df.csv"].pinned
