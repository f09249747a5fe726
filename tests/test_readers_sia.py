"""Sia reader (trace.format=sia): Sia's simulator workloads, name,time,application,num_replicas,batch_size."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from raysim.cluster.layout import Pool, gpu_types, layout_from_config, total_gpus
from raysim.paths import CONF_DIR
from raysim.errors import TraceError
from raysim.trace.load import READERS, auto_format, load_trace
from raysim.trace.readers import Bounds
from raysim.trace.schema import JOB_SCHEMA, metadata
from raysim.trace.sia import PLACEHOLDER, ROUNDED, placeholder_duration

HEADER = "name,time,application,num_replicas,batch_size\n"
GOOD = HEADER + """\
cifar10-0,401.0,cifar10,12,4096
yolov3-1,528,yolov3,4,64
bert-2,723.5,bert,16,384
deepspeech2-3,723.0,deepspeech2,6,320
"""
#: cluster=sia_default's layout
SIA = [{"vc": "cluster", "gpu_type": "aws", "gpus_per_node": 4, "nodes": 6},
       {"vc": "cluster", "gpu_type": "dgx-ext", "gpus_per_node": 8, "nodes": 2},
       {"vc": "cluster", "gpu_type": "rtx", "gpus_per_node": 8, "nodes": 3}]


def write(tmp_path, text: str, name: str = "workload-1.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def load(path, **kw):
    kw.setdefault("fmt", "sia")
    return load_trace(path, cache=False, **kw)


def test_rows_become_jobs_with_name_application_replicas_and_batch_size(tmp_path):
    trace = load(write(tmp_path, GOOD), layout=layout_from_config(SIA))
    t = trace.table
    assert t.schema.names[:len(JOB_SCHEMA)] == JOB_SCHEMA.names
    assert t.schema.field("job_name").type == pa.string() and t.schema.field("batchsize").type == pa.int32()
    rows = t.select(["job_id", "job_name", "model", "gpu_num", "batchsize", "submit_time"]).to_pylist()
    # sorted by submit time (stable): bert-2 at 723.5 -> 724 comes after deepspeech2-3 at 723
    assert [(r["job_id"], r["job_name"], r["model"], r["gpu_num"], r["batchsize"], r["submit_time"]) for r in rows] == [
        (0, "cifar10-0", "cifar10", 12, 4096, 401),
        (1, "yolov3-1", "yolov3", 4, 64, 528),
        (3, "deepspeech2-3", "deepspeech2", 6, 320, 723),
        (2, "bert-2", "bert", 16, 384, 724),
    ]
    assert set(t.column("vc").to_pylist()) == {"cluster"} and set(t.column("user").to_pylist()) == {"sia"}
    assert set(t.column("cpu_num").to_pylist()) == {0} and set(t.column("state").to_pylist()) == {"COMPLETED"}
    assert set(t.column("duration").to_pylist()) == {placeholder_duration()} == {365 * 86400}
    assert set(t.column("duration_source").to_pylist()) == {PLACEHOLDER}
    assert trace.vc_nodes == {"cluster": 11} and trace.origin == "0"
    assert trace.report.converted == {ROUNDED: 1} and not trace.report.counts


def test_registered_and_detected_by_header(tmp_path):
    assert "sia" in READERS
    path = write(tmp_path, GOOD, name="anything.csv")
    assert auto_format(path) == "sia"
    assert load_trace(path, cache=False).table.num_rows == 4  # format=auto, own layout
    lucid = write(tmp_path, "job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state\n", name="jobs.csv")
    assert auto_format(lucid) == "csv"
    extra = write(tmp_path, "name,time,application,num_replicas,batch_size,category\nx-0,0,ncf,1,8,\n", "w.csv")
    assert auto_format(extra) == "sia"
    assert load_trace(extra, cache=False).table.column("job_name").to_pylist() == ["x-0"]  # other columns ignored


def test_without_a_layout_one_vc_big_enough_for_the_largest_job(tmp_path):
    trace = load(write(tmp_path, GOOD))
    assert trace.vc_nodes == {"cluster": 2}  # 16 GPUs, 8 per node
    assert metadata(trace.table)["vc_nodes"] == {"cluster": 2}


def test_vc_option_and_clusters_of_several_vcs(tmp_path):
    path = write(tmp_path, GOOD)
    two = layout_from_config([{"vc": "a", "gpu_type": "aws", "gpus_per_node": 4, "nodes": 6},
                              {"vc": "b", "gpu_type": "rtx", "gpus_per_node": 8, "nodes": 3}])
    with pytest.raises(TraceError, match="names no VC and the cluster has 2 .*reader_options.vc"):
        load(path, layout=two)
    trace = load(path, layout=two, reader_options={"vc": "b"})
    assert set(trace.table.column("vc").to_pylist()) == {"b"}
    with pytest.raises(TraceError, match="'c' is not a VC of the cluster"):
        load(path, layout=two, reader_options={"vc": "c"})


def test_placeholder_follows_the_duration_bound(tmp_path):
    trace = load(write(tmp_path, GOOD), max_duration_s=86400)
    assert set(trace.table.column("duration").to_pylist()) == {86400}
    assert placeholder_duration(Bounds(max_duration_s=0.5)) == 1


@pytest.mark.parametrize("row, column, fragment", [
    (",1,cifar10,1,64", "name", "empty name"),
    ("cifar10-0,1,cifar10,1,64", "name", "duplicate name"),
    ("x,soon,cifar10,1,64", "time", "time is not a number"),
    ("x,-5,cifar10,1,64", "time", "must not be negative"),
    ("x,inf,cifar10,1,64", "time", "must be finite"),
    ("x,1e300,cifar10,1,64", "time", "too large"),
    ("x,1,,1,64", "application", "empty application"),
    ("x,1,cifar10,0,64", "num_replicas", "at least 1"),
    ("x,1,cifar10,2.5,64", "num_replicas", "whole number"),
    ("x,1,cifar10,four,64", "num_replicas", "not a number"),
    ("x,1,cifar10,2,", "batch_size", "batch_size is not a number"),
    ("x,1,cifar10,2,99999999999", "batch_size", "too large"),
    ("x,1,cifar10,65,64", "num_replicas", "larger than its VC can ever hold"),
])
def test_bad_values_name_file_row_and_column(tmp_path, row, column, fragment):
    path = write(tmp_path, GOOD + row + "\n")
    with pytest.raises(TraceError) as err:
        load(path, layout=layout_from_config(SIA))
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}, row 5 (line 6), column {column!r}: "), text
    assert fragment in text and "trace.on_error=skip" in text
    assert err.value.row == 5 and err.value.column == column
    trace = load(path, layout=layout_from_config(SIA), on_error="skip")  # skipped and counted instead
    assert trace.table.num_rows == 4 and trace.report.total == 1


def test_ragged_rows_missing_columns_and_empty_files(tmp_path):
    path = write(tmp_path, GOOD.replace("yolov3-1,528,yolov3,4,64", "yolov3-1,528,yolov3,4"))
    with pytest.raises(TraceError, match=r"row 2 \(line 3\): wrong number of values"):
        load(path)
    path = write(tmp_path, "name,time,application,num_replicas\nx,1,ncf,1\n")
    with pytest.raises(TraceError, match="column 'batch_size': missing column"):
        load(path)
    with pytest.raises(TraceError, match="no jobs"):
        load(write(tmp_path, HEADER))
    with pytest.raises(TraceError, match="trace file not found"):
        load(tmp_path / "nope.csv")


def test_the_cache_keeps_the_extra_columns(tmp_path):
    path = write(tmp_path, GOOD)
    first = load_trace(path, fmt="sia")
    again = load_trace(path, fmt="sia")
    assert again.from_cache and again.table.equals(first.table)
    assert again.table.column("job_name").to_pylist() == first.table.column("job_name").to_pylist()
    assert again.report.converted == {ROUNDED: 1}


def test_cluster_sia_default_is_sias_cluster():
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["cluster=sia_default"])
    layout = layout_from_config(OmegaConf.to_container(cfg.cluster.layout, resolve=True), name="cluster.layout")
    assert cfg.cluster.reference_gpu_type is None
    assert layout == {"cluster": (Pool("aws", 4, 6), Pool("dgx-ext", 8, 2), Pool("rtx", 8, 3))}
    assert gpu_types(layout) == ["aws", "dgx-ext", "rtx"] and total_gpus(layout) == 64


@pytest.mark.shared
def test_sias_saturn_workload_1(shared_dir):
    path = shared_dir / "references" / "sia" / "workloads" / "saturn" / "workload-1.csv"
    if not path.exists():
        pytest.skip(f"{path} not found")
    trace = load_trace(path, cache=False, layout=layout_from_config(SIA))  # format=auto
    t = trace.table
    assert t.num_rows == 160 and not trace.report.counts and not trace.report.converted
    assert t.column("job_id").to_pylist() == list(range(160))
    assert t.column("job_name").to_pylist()[:2] == ["cifar10-0", "cifar10-1"]
    assert set(t.column("model").to_pylist()) == {"bert", "cifar10", "deepspeech2", "imagenet", "yolov3"}
    first = t.slice(0, 1).to_pylist()[0]
    assert (first["submit_time"], first["gpu_num"], first["batchsize"]) == (401, 12, 4096)
    assert t.column("submit_time").to_pylist()[-1] == 28098
    assert all(f"{m}-{i}" == n for i, (m, n) in enumerate(zip(t.column("model").to_pylist(),
                                                               t.column("job_name").to_pylist())))


def test_an_optional_max_replicas_column_is_kept_and_checked(tmp_path):
    text = "name,time,application,num_replicas,batch_size,max_replicas\na-0,0,cifar10,2,512,8\na-1,5,cifar10,1,128,\n"
    t = load(write(tmp_path, text), layout=layout_from_config(SIA)).table
    assert t.schema.field("max_replicas").type == pa.int32()
    assert t.column("max_replicas").to_pylist() == [8, None]
    bad = "name,time,application,num_replicas,batch_size,max_replicas\na-0,0,cifar10,4,512,2\n"
    with pytest.raises(TraceError, match="row 1.*max_replicas.*below num_replicas"):
        load(write(tmp_path, bad, "bad.csv"), layout=layout_from_config(SIA))
