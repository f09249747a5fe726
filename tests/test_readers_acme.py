"""AcmeTrace reader: Seren's and Kalos' job tables in the repository's documented columns, on
small stand-ins (the rows of its README's examples, and more)."""

import pytest

from raysim.errors import TraceError
from raysim.trace.load import load_trace
from raysim.trace.schema import metadata

SEREN = """job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0
5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0
5778470,u1,0,0,16,Other,COMPLETED,2023-03-01 00:24:00+08:00,2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,11,0.0
5778471,u2,2,16,256,Pretrain,NODE_FAIL,2023-03-01 00:25:00+08:00,2023-03-01 00:26:00+08:00,2023-03-01 02:26:00+08:00,7200,60,115200.0
5778472,u2,1,8,128,SFT,CANCELLED,2023-03-01 00:26:00+08:00,,,0,0,0.0
"""
KALOS = """job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time
dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,2023-05-17 11:01:08+00:00,2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,1152.0
dlc1t2ypl09b8qtp,uf794,8,64,960,1000,100.0,Other,CANCELLED,2023-05-17 11:28:42+00:00,2023-05-17 11:28:54+00:00,2023-05-17 11:30:04+00:00,,2023-05-17 11:30:04+00:00,82,12.0,5248.0
"""


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_seren_is_one_vc_named_after_the_file_with_utc_times_and_its_filters_counted(tmp_path):
    trace = load_trace(write(tmp_path, "trace_seren.csv", SEREN), cache=False)
    t = trace.table.to_pydict()
    assert t["vc"] == ["seren"] * 3 and t["job_id"] == [1, 2, 4]  # row numbers
    assert t["job_name"] == ["5778432", "5778469", "5778471"]
    assert t["state"] == ["FAILED", "COMPLETED", "NODE_FAIL"]
    assert t["workload_type"] == ["Other", "Other", "Pretrain"]
    # 00:18:22+08:00 is 16:18:22 UTC the day before; the origin is midnight UTC of that day
    assert t["submit_time"] == [58_702, 59_038, 59_100] and metadata(trace.table)["origin"] == "2023-02-28T00:00:00"
    assert t["duration"] == [117, 2693, 7200] and t["gpu_num"] == [8, 8, 16]
    counts = trace.report.counts
    assert counts["filtered: CPU-only job (gpu_num = 0)"] == 1
    assert counts["filtered: never ran (duration 0 or no start_time)"] == 1
    # peak use: 8 + 16 GPUs at once (rows 2 and 4 overlap) -> three 8-GPU nodes
    assert trace.vc_nodes == {"seren": 3}


def test_kalos_string_ids_and_extra_columns(tmp_path):
    trace = load_trace(write(tmp_path, "trace_kalos.csv", KALOS), cache=False)
    t = trace.table.to_pydict()
    assert t["job_id"] == [1, 2] and t["job_name"] == ["dlctk696s0jbvitv", "dlc1t2ypl09b8qtp"]
    assert t["submit_time"] == [11 * 3600 + 58, 11 * 3600 + 28 * 60 + 42] and trace.vc_nodes == {"kalos": 8}


def test_a_vc_config_beside_the_file_wins_and_states_can_be_selected(tmp_path):
    path = write(tmp_path, "trace_seren.csv", SEREN)
    (tmp_path / "vc_config.csv").write_text(",num\nseren,286\n")
    trace = load_trace(path, cache=False, state_filter=["COMPLETED"])
    assert trace.vc_nodes == {"seren": 286} and trace.table.column("job_name").to_pylist() == ["5778469"]


@pytest.mark.parametrize("row,column,why", [
    ("9,u,3,8,1,Other,COMPLETED,2023-03-01 00:00:00+08:00,2023-03-01 00:00:00+08:00,2023-03-01 00:01:00+08:00,60,0,480",
     "node_num", "split evenly"),
    ("9,u,1,8,1,Other,DONE,2023-03-01 00:00:00+08:00,2023-03-01 00:00:00+08:00,2023-03-01 00:01:00+08:00,60,0,480",
     "state", "unknown state"),
    ("9,u,1,8,1,Other,COMPLETED,yesterday,2023-03-01 00:00:00+08:00,2023-03-01 00:01:00+08:00,60,0,480",
     "submit_time", "not a datetime"),
])
def test_a_bad_row_is_one_line_naming_file_row_and_column(tmp_path, row, column, why):
    path = write(tmp_path, "trace_seren.csv", SEREN + row + "\n")
    with pytest.raises(TraceError, match=why) as err:
        load_trace(path, cache=False)
    assert "row 6 (line 7)" in str(err.value) and f"column {column!r}" in str(err.value)


def test_a_file_without_acme_columns_names_the_missing_one(tmp_path):
    path = write(tmp_path, "trace_seren.csv", "job_id,user,gpu_num\n1,u,8\n")
    with pytest.raises(TraceError, match="column 'node_num'"):
        load_trace(path, cache=False)
