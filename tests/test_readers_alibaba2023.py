"""Alibaba GPU trace v2023 ("openb", FGD): node lists, pod lists, their quirks and their errors."""

import csv
import time

import numpy as np
import pyarrow as pa
import pytest

from raysim.cluster.layout import Pool
from raysim.trace import alibaba2023 as ob
from raysim.errors import TraceError

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
NODES = [
    "n0,32000,262144,0,",
    "n1,96000,786432,8,G2",
    "n2,64000,262144,2,T4",
    "n3,96000,786432,8,G2",
    "n4,32000,131072,0,",
    "n5,64000,524288,2,T4",
    "n6,96000,393216,8,G2",
    "n7,94000,393216,4,T4",
]
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
              "deletion_time,scheduled_time")
PODS = [
    "p0,12000,16384,1,1000,,LS,Running,100,500,100",
    "p1,6000,12288,1,460,V100M16|V100M32|V100M32,BE,Running,50,600,60",  # repeated model; unsorted
    "p2,3152,0,1,500,,Burstable,Pending,50,700,",  # memory 0; Pending without scheduled_time
    "p3,4000,8192,0,0,,,,0,0,0",  # CPU-only; no qos, no phase; deleted when created
    "p4,32000,65536,8,1000,A10| T4 ,Guaranteed,Succeeded,10,20,15",
    "p5,8710,1024,2,1000,P100,LS,Failed,20,30,25",
]
MULTI_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"
MULTI = ["p0,12000,16384,1,1000", "p1,6000,0,4,1000", "p2,1000,2048,0,0"]


def write(folder, name, header, rows):
    path = folder / name
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def replace(rows, index, **cells):
    """`rows` with row `index` (0-based) changed in the named columns of the pod header."""
    columns = POD_HEADER.split(",")
    values = rows[index].split(",")
    for column, value in cells.items():
        values[columns.index(column)] = value
    return rows[:index] + [",".join(values)] + rows[index + 1:]


def assert_names(err, path, row, column):
    text = str(err)
    assert "\n" not in text
    assert text.startswith(str(path)) and f"row {row} (line {row + 1})" in text
    assert err.row == row and err.column == column
    if column is not None:
        assert f"column {column!r}" in text


# ------------------------------------------------------------------------------------ nodes

def test_nodes_read_in_file_order(tmp_path):
    nodes = ob.read_openb_nodes(write(tmp_path, "nodes.csv", NODE_HEADER, NODES))
    assert nodes.schema.equals(ob.NODE_SCHEMA)
    assert nodes.column("node").to_pylist() == [f"n{i}" for i in range(8)]
    assert nodes.column("model").to_pylist() == [None, "G2", "T4", "G2", None, "T4", "G2", "T4"]
    assert nodes.column("num_gpu").to_pylist() == [0, 8, 2, 8, 0, 2, 8, 4]
    assert nodes.column("memory_mib").to_pylist()[1] == 786432


def test_node_pools_cpu_only_nodes_and_arrays(tmp_path):
    nodes = ob.read_openb_nodes(write(tmp_path, "nodes.csv", NODE_HEADER, NODES))
    # one pool per (model, num_gpu), in order of first appearance; CPU-only nodes are not pools
    assert ob.node_pools(nodes) == (Pool("G2", 8, 3), Pool("T4", 2, 2), Pool("T4", 4, 1))
    assert ob.cpu_only_nodes(nodes) == [(32000, 262144), (32000, 131072)]
    arrays = ob.node_arrays(nodes)
    cpu, mem, gpus, model, models = arrays
    assert models == ("G2", "T4")
    assert model.tolist() == [-1, 0, 1, 0, -1, 1, 0, 1] and model.dtype == np.int32
    assert gpus.tolist() == [0, 8, 2, 8, 0, 2, 8, 4] and gpus.dtype == np.int32
    assert cpu.dtype == np.int64 and cpu[7] == 94000 and mem[4] == 131072


def test_nodes_header_only_file(tmp_path):
    nodes = ob.read_openb_nodes(write(tmp_path, "nodes.csv", NODE_HEADER, []))
    assert nodes.num_rows == 0 and nodes.schema.equals(ob.NODE_SCHEMA)
    assert ob.node_pools(nodes) == () and ob.cpu_only_nodes(nodes) == []


@pytest.mark.parametrize("index, row, column, words", [
    (2, "n2,64k,262144,2,T4", "cpu_milli", "not an integer"),
    (2, "n2,64000,2.5,2,T4", "memory_mib", "not an integer"),
    (3, "n3,96000,-786432,8,G2", "memory_mib", "negative"),
    (1, "n1,96000,786432,,G2", "gpu", "empty"),
    (5, "n5,64000,524288,2,", "model", "model is empty for a node with GPUs"),
    (4, "n4,32000,131072,0,T4", "model", "model given for a node without GPUs"),
    (6, "n3,96000,393216,8,G2", "sn", "sn repeats an earlier row"),
    (0, ",32000,262144,0,", "sn", "sn is empty"),
    (3, "n3,96000,786432,8", None, "wrong number of values"),
    (3, "n3,96000,786432,8,G2,extra", None, "wrong number of values"),
])
def test_node_errors_name_file_row_and_column(tmp_path, index, row, column, words):
    rows = NODES[:index] + [row] + NODES[index + 1:]
    path = write(tmp_path, "nodes.csv", NODE_HEADER, rows)
    with pytest.raises(TraceError) as info:
        ob.read_openb_nodes(path)
    assert_names(info.value, path, index + 1, column)
    assert words in str(info.value) and "on_error" not in str(info.value)


def test_node_file_problems(tmp_path):
    path = write(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,model", ["n0,1,2,"])
    with pytest.raises(TraceError, match=r"nodes\.csv, column 'gpu': missing column"):
        ob.read_openb_nodes(path)
    with pytest.raises(TraceError, match="node list not found"):
        ob.read_openb_nodes(tmp_path / "absent.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(TraceError, match="empty file"):
        ob.read_openb_nodes(tmp_path / "empty.csv")


# ------------------------------------------------------------------------------------- pods

def test_pods_keep_file_order_and_quirks(tmp_path):
    pods, report = ob.read_openb_pods(write(tmp_path, "pods.csv", POD_HEADER, PODS))
    assert report.total == 0
    assert pods.schema.equals(ob.POD_SCHEMA)
    assert pods.column("name").to_pylist() == [f"p{i}" for i in range(6)]  # not sorted by time
    assert pods.column("row").to_pylist() == [1, 2, 3, 4, 5, 6]
    assert pods.column("gpu_spec").to_pylist() == [None, "V100M16|V100M32", None, None, "A10|T4", "P100"]
    assert pods.column("memory_mib").to_pylist()[2] == 0  # real data: allowed
    assert pods.column("cpu_milli").to_pylist()[2] == 3152
    assert pods.column("scheduled_time").to_pylist() == [100, 60, None, 0, 15, 25]  # Pending: null
    assert pods.column("qos").to_pylist() == ["LS", "BE", "Burstable", None, "Guaranteed", "LS"]
    assert pods.column("pod_phase").to_pylist() == ["Running", "Running", "Pending", None, "Succeeded",
                                                    "Failed"]
    assert pa.types.is_dictionary(pods.schema.field("qos").type)
    assert pods.column("deletion_time").to_pylist() == [500, 600, 700, 0, 20, 30]


def test_by_creation_sorts_by_time_then_row(tmp_path):
    pods, _ = ob.read_openb_pods(write(tmp_path, "pods.csv", POD_HEADER, PODS))
    ordered = ob.by_creation(pods)
    assert ordered.column("row").to_pylist() == [4, 5, 6, 2, 3, 1]  # p1 and p2 tie at 50: row order
    assert ordered.column("creation_time").to_pylist() == [0, 10, 20, 50, 50, 100]


def test_five_column_multigpu_files_have_null_extras(tmp_path):
    pods, report = ob.read_openb_pods(write(tmp_path, "multi.csv", MULTI_HEADER, MULTI))
    assert report.total == 0 and pods.schema.equals(ob.POD_SCHEMA)
    assert pods.num_rows == 3 and pods.column("memory_mib").to_pylist() == [16384, 0, 2048]
    for column in ob.POD_EXTRA_COLUMNS:
        assert pods.column(column).null_count == 3, column
    with pytest.raises(ValueError, match="no times"):
        ob.by_creation(pods)


def test_some_but_not_all_extra_columns_is_an_error(tmp_path):
    path = write(tmp_path, "pods.csv", MULTI_HEADER + ",qos", [r + ",LS" for r in MULTI])
    with pytest.raises(TraceError, match=r"pods\.csv, column 'gpu_spec': missing column"):
        ob.read_openb_pods(path)
    path = write(tmp_path, "pods2.csv", "name,cpu_milli,num_gpu,gpu_milli", ["p0,1,0,0"])
    with pytest.raises(TraceError, match="column 'memory_mib': missing column"):
        ob.read_openb_pods(path)


def test_trailing_blank_lines_are_not_rows(tmp_path):
    pods, report = ob.read_openb_pods(write(tmp_path, "pods.csv", POD_HEADER, PODS + ["", " ", ""]))
    assert pods.num_rows == 6 and report.total == 0


def test_header_only_pod_file(tmp_path):
    pods, report = ob.read_openb_pods(write(tmp_path, "pods.csv", POD_HEADER, []))
    assert pods.num_rows == 0 and report.total == 0 and pods.schema.equals(ob.POD_SCHEMA)


BAD_PODS = [  # (0-based row, changed cells, column named, words in the message)
    (1, {"cpu_milli": "6 cores"}, "cpu_milli", "cpu_milli is not an integer"),
    (1, {"cpu_milli": "-6000"}, "cpu_milli", "cpu_milli is negative"),
    (2, {"memory_mib": "1.5"}, "memory_mib", "memory_mib is not an integer"),
    (0, {"memory_mib": ""}, "memory_mib", "memory_mib is empty"),
    (3, {"num_gpu": "x"}, "num_gpu", "num_gpu is not an integer"),
    (0, {"gpu_milli": "1001"}, "gpu_milli", "above 1000"),
    (0, {"gpu_milli": "-5"}, "gpu_milli", "gpu_milli is negative"),
    (5, {"gpu_milli": "500"}, "gpu_milli", "gpu_milli must be 1000 when num_gpu > 1"),
    (3, {"gpu_milli": "100"}, "gpu_milli", "gpu_milli must be 0 when num_gpu is 0"),
    (0, {"gpu_milli": "0"}, "gpu_milli", "gpu_milli must be 1..1000 when num_gpu is 1"),
    (1, {"gpu_spec": "V100M16||V100M32"}, "gpu_spec", "empty model name"),
    (3, {"gpu_spec": "T4"}, "gpu_spec", "gpu_spec given for a pod without GPUs"),
    (4, {"qos": "Gold"}, "qos", "unknown qos"),
    (4, {"pod_phase": "Unknown"}, "pod_phase", "unknown pod_phase"),
    (0, {"scheduled_time": ""}, "scheduled_time", "scheduled_time is empty but pod_phase"),
    (3, {"scheduled_time": ""}, "scheduled_time", "scheduled_time is empty but pod_phase"),  # phase empty
    (2, {"scheduled_time": "60"}, "scheduled_time", "scheduled_time given for a Pending pod"),
    (5, {"deletion_time": "19"}, "deletion_time", "deletion_time before creation_time"),
    (5, {"scheduled_time": "19"}, "scheduled_time", "scheduled_time before creation_time"),
    (1, {"creation_time": ""}, "creation_time", "creation_time is empty"),
    (1, {"deletion_time": ""}, "deletion_time", "deletion_time is empty"),
    (1, {"creation_time": "5e3"}, "creation_time", "creation_time is not an integer"),
    (4, {"name": "p1"}, "name", "name repeats an earlier row"),
    (4, {"name": ""}, "name", "name is empty"),
]


@pytest.mark.parametrize("index, cells, column, words", BAD_PODS)
def test_pod_errors_raise_or_skip(tmp_path, index, cells, column, words):
    path = write(tmp_path, "pods.csv", POD_HEADER, replace(PODS, index, **cells))
    with pytest.raises(TraceError) as info:
        ob.read_openb_pods(path)
    assert_names(info.value, path, index + 1, column)
    assert words in str(info.value) and 'on_error="skip"' in str(info.value)

    pods, report = ob.read_openb_pods(path, on_error="skip")
    assert report.total == 1 and pods.num_rows + report.total == len(PODS)
    assert pods.column("row").to_pylist() == [r for r in range(1, 7) if r != index + 1]
    (reason,) = report.counts
    assert words in reason
    (example,) = report.examples[reason]
    assert f"row {index + 1} (line {index + 2})" in example and f"column {column!r}" in example


@pytest.mark.parametrize("line", ["p9,1000,1024,0,0,,LS,Running,0,1", "p9," * 11 + "0", ""])
def test_rows_with_the_wrong_number_of_values(tmp_path, line):
    path = write(tmp_path, "pods.csv", POD_HEADER, PODS[:2] + [line] + PODS[2:])
    with pytest.raises(TraceError) as info:
        ob.read_openb_pods(path)
    assert_names(info.value, path, 3, "name" if line == "" else None)  # a blank line: empty values
    pods, report = ob.read_openb_pods(path, on_error="skip")
    assert report.total == 1 and pods.num_rows == 6
    assert pods.column("row").to_pylist() == [1, 2, 4, 5, 6, 7]  # later rows keep their numbers


def test_skip_counts_every_bad_row_once_and_raise_reports_the_first(tmp_path):
    rows = list(PODS)
    rows = replace(rows, 5, gpu_milli="500", qos="Gold")  # two problems, counted once
    rows = replace(rows, 1, memory_mib="-1")
    rows = replace(rows, 4, pod_phase="Lost")
    rows = rows[:3] + ["p9,1,2"] + rows[3:]  # wrong number of values at row 4
    path = write(tmp_path, "pods.csv", POD_HEADER, rows)
    with pytest.raises(TraceError) as info:
        ob.read_openb_pods(path)
    assert_names(info.value, path, 2, "memory_mib")
    pods, report = ob.read_openb_pods(path, on_error="skip")
    assert pods.column("row").to_pylist() == [1, 3, 5]
    assert pods.num_rows + report.total == len(rows)  # conservation
    assert report.total == 4 and len(report.counts) == 4
    assert report.counts["memory_mib is negative"] == 1
    assert report.counts["gpu_milli must be 1000 when num_gpu > 1"] == 1
    assert any(reason.startswith("wrong number of values") for reason in report.counts)
    assert all(line.startswith(("skipped", "    e.g.")) for line in report.lines())


def test_pod_file_problems(tmp_path):
    with pytest.raises(ValueError, match="on_error"):
        ob.read_openb_pods(tmp_path / "x.csv", on_error="ignore")
    with pytest.raises(TraceError, match="pod list not found"):
        ob.read_openb_pods(tmp_path / "absent.csv")
    path = write(tmp_path, "dup.csv", MULTI_HEADER + ",name", [r + ",x" for r in MULTI])
    with pytest.raises(TraceError, match="column 'name': column given twice"):
        ob.read_openb_pods(path)


def test_pod_list_path(tmp_path):
    write(tmp_path, "openb_pod_list_cpu050.csv", POD_HEADER, PODS)
    for name in ("cpu050", "openb_pod_list_cpu050", "openb_pod_list_cpu050.csv", "cpu050.csv"):
        assert ob.pod_list_path(tmp_path, name) == tmp_path / "openb_pod_list_cpu050.csv"
    with pytest.raises(ValueError, match="unknown openb pod list 'cpu051'.*default, gpuspec05"):
        ob.pod_list_path(tmp_path, "cpu051")
    with pytest.raises(TraceError, match="openb_pod_list_default.csv: pod list not found"):
        ob.pod_list_path(tmp_path, "default")
    assert len(ob.WORKLOADS) == len(set(ob.WORKLOADS)) == 24


# ---------------------------------------------------------------------------- the real files

@pytest.fixture(scope="module")
def openb(shared_dir):
    folder = shared_dir / "traces" / "alibaba_gpu_2023"
    if not folder.is_dir():
        pytest.skip(f"no openb trace at {folder}")
    return folder


@pytest.mark.shared
def test_workloads_are_the_public_pod_lists(openb):
    assert sorted(ob.WORKLOADS) == sorted(p.stem for p in openb.glob("openb_pod_list*.csv"))
    assert sorted(ob.NODE_LISTS) == sorted(p.stem for p in openb.glob("openb_node_list*.csv"))


@pytest.mark.shared
def test_every_file_reads_cleanly_and_fast(openb):
    start = time.perf_counter()
    for name in ob.NODE_LISTS:
        ob.read_openb_nodes(openb / f"{name}.csv")
    for name in ob.WORKLOADS:
        pods, report = ob.read_openb_pods(ob.pod_list_path(openb, name))
        assert report.total == 0, (name, report.lines())
        if "multigpu" not in name:  # scheduled_time is empty exactly for the Pending pods
            pending = pods.column("pod_phase").to_numpy(zero_copy_only=False) == "Pending"
            assert (pods.column("scheduled_time").is_null().to_numpy(zero_copy_only=False) == pending).all()
    assert time.perf_counter() - start < 5.0


@pytest.mark.shared
def test_default_pod_list(openb):
    pods, _ = ob.read_openb_pods(ob.pod_list_path(openb, "default"))
    assert pods.num_rows == 8152
    assert pods.column("pod_phase").to_pylist().count("Pending") == 897
    assert pods.column("scheduled_time").null_count == 897
    assert pods.column("memory_mib").to_pylist().count(0) == 1
    assert pods.column("gpu_spec").null_count == 8152
    assert set(pods.column("qos").to_pylist()) == set(ob.QOS)
    assert pods.column("deletion_time").to_numpy().max() == 12902960


@pytest.mark.shared
def test_node_lists(openb):
    everything = ob.read_openb_nodes(openb / "openb_node_list_all_node.csv")
    gpu_only = ob.read_openb_nodes(openb / "openb_node_list_gpu_node.csv")
    assert everything.num_rows == 1523 and len(ob.cpu_only_nodes(everything)) == 310
    assert everything.column("num_gpu").to_numpy().sum() == 6212
    # renumbered: sn is not the same machine in both files, but the GPU nodes are the same
    assert gpu_only.num_rows == 1213 and ob.cpu_only_nodes(gpu_only) == []
    assert gpu_only.column("node").to_pylist() == [f"openb-node-{i:04d}" for i in range(1213)]
    assert gpu_only.column("num_gpu").to_numpy().sum() == 6212
    pools = ob.node_pools(gpu_only)
    assert pools == ob.node_pools(everything)
    assert sum(p.gpus for p in pools) == 6212
    assert {p.gpu_type for p in pools} == set(ob.MODELS) and len(ob.MODELS) == 7
    arrays = ob.node_arrays(everything)
    assert set(arrays.models) == set(ob.MODELS) and (arrays.model == -1).sum() == 310


@pytest.mark.shared
def test_multigpu_has_no_times_and_extends_default(openb):
    multi, _ = ob.read_openb_pods(ob.pod_list_path(openb, "multigpu20"))
    default, _ = ob.read_openb_pods(ob.pod_list_path(openb, "default"))
    assert multi.num_rows == 8324
    for column in ob.POD_EXTRA_COLUMNS:
        assert multi.column(column).null_count == 8324
    head = multi.slice(0, 8152)
    for column in ob.POD_COLUMNS:
        assert head.column(column).equals(default.column(column)), column


@pytest.mark.shared
def test_gpuspec_models_are_deduplicated(openb):
    path = ob.pod_list_path(openb, "gpuspec10")
    with path.open() as f:
        raw = [r["gpu_spec"] for r in csv.DictReader(f)]
    repeated = [i for i, spec in enumerate(raw) if spec == "V100M16|V100M32|V100M32"]
    assert repeated
    pods, _ = ob.read_openb_pods(path)
    specs = pods.column("gpu_spec").to_pylist()
    assert all(specs[i] == "V100M16|V100M32" for i in repeated)
    assert sum(s is not None for s in specs) == sum(s != "" for s in raw)


@pytest.mark.shared
def test_resampled_files_stay_in_file_order(openb):
    pods, _ = ob.read_openb_pods(ob.pod_list_path(openb, "cpu300"))
    assert pods.num_rows == 10094
    created = pods.column("creation_time").to_numpy()
    assert (np.diff(created) < 0).any()  # the file is not sorted by time, and neither is the table
    assert pods.column("row").to_pylist() == list(range(1, 10095))
    ordered = ob.by_creation(pods)
    assert (np.diff(ordered.column("creation_time").to_numpy()) >= 0).all()
