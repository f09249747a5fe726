"""Helios reader: cluster_log.csv + cluster_gpu_number.csv in HeliosData's public schema."""

import pytest

from raysim.errors import TraceError
from raysim.trace.helios import read_gpu_numbers
from raysim.trace.load import load_trace
from raysim.trace.schema import JOB_SCHEMA, metadata
from reader_samples import HELIOS_GPU_NUMBERS as GPU_NUMBERS, HELIOS_HEADER as HEADER, HELIOS_ROWS as ROWS
from reader_samples import bad_helios as bad, write_helios as write

def test_folder_is_detected_and_read_with_gpu_number_layout(tmp_path):
    trace = load_trace(write(tmp_path / "Venus"), cache=False)
    t = trace.table
    assert t.schema.equals(JOB_SCHEMA)
    assert t.column("job_id").to_pylist() == [101, 103, 105]
    assert t.column("submit_time").to_pylist() == [600, 3600, 86400 + 9 * 3600]
    assert t.column("duration").to_pylist() == [600, 7200, 60]
    assert trace.origin == "2020-04-01T00:00:00"
    assert trace.vc_nodes == {"vcA": 2, "vcB": 2}  # mode: 16 GPUs each, vcZ never had GPUs
    assert metadata(t)["vc_nodes"] == trace.vc_nodes and metadata(t)["cluster"] == "Venus"
    assert trace.report.counts["filtered: CPU-only job (gpu_num = 0)"] == 1
    assert trace.report.counts["filtered: never ran (duration 0 or no start_time)"] == 1
    assert any("row 4 (line 5)" in line for line in trace.report.lines())


@pytest.mark.parametrize("rule,expected", [("mode", {"vcA": 2, "vcB": 2}), ("last", {"vcA": 3, "vcB": 1}),
                                           ("max", {"vcA": 3, "vcB": 2})])
def test_vc_size_rules(tmp_path, rule, expected):
    write(tmp_path)
    assert read_gpu_numbers(tmp_path / "cluster_gpu_number.csv", rule=rule) == expected
    trace = load_trace(tmp_path, cache=False, on_error="skip", reader_options={"vc_size": rule})
    assert trace.vc_nodes == expected  # with "last", vcB (1 node) cannot hold job 103 (16 GPUs)
    assert trace.table.num_rows == (2 if rule == "last" else 3)


def test_vc_config_beside_the_trace_takes_precedence(tmp_path):
    trace = load_trace(write(tmp_path, vc_config=",num\nvcA,5\nvcB,4\n"), cache=False)
    assert trace.vc_nodes == {"vcA": 5, "vcB": 4}


def test_gpu_counts_round_up_to_whole_nodes(tmp_path):
    write(tmp_path, gpu_numbers="date,vcA,vcB,total\n2020-04-01,12,17,29\n")
    assert read_gpu_numbers(tmp_path / "cluster_gpu_number.csv") == {"vcA": 2, "vcB": 3}


def test_missing_layout_is_a_clear_error(tmp_path):
    with pytest.raises(TraceError, match="cluster_gpu_number.csv.*VC sizes not found"):
        load_trace(write(tmp_path, gpu_numbers=None), cache=False)


def test_bad_gpu_number_file_names_row_and_column(tmp_path):
    write(tmp_path, gpu_numbers="date,vcA,vcB,total\n2020-04-01,16,16,32\n2020-04-02,16,x,16\n")
    with pytest.raises(TraceError, match=r"cluster_gpu_number.csv, row 2 \(line 3\), column 'vcB'") as exc:
        load_trace(tmp_path, cache=False)
    assert exc.value.row == 2 and exc.value.column == "vcB"


@pytest.mark.parametrize("row_index,column,value,message", [
    (2, "gpu_num", "sixteen", r"row 3 \(line 4\), column 'gpu_num': value is not a number"),
    (4, "submit_time", "soon", r"row 5 \(line 6\), column 'submit_time': submit_time is not a datetime"),
    (4, "vc", "vcZ", r"row 5 \(line 6\), column 'vc': unknown VC"),
    (2, "gpu_num", "32", r"row 3 \(line 4\), column 'gpu_num': gpu_num larger than its VC"),
    (4, "duration", "-3", r"row 5 \(line 6\), column 'duration': duration must be positive"),
])
def test_malformed_rows_name_the_original_row_and_column(tmp_path, row_index, column, value, message):
    path = write(tmp_path, bad(row_index, column, value)) / "cluster_log.csv"
    with pytest.raises(TraceError, match=message) as exc:
        load_trace(path, cache=False)
    assert str(path) in str(exc.value)
    assert exc.value.row == row_index + 1 and exc.value.column == column
    trace = load_trace(path, on_error="skip", cache=False)
    assert trace.table.num_rows == 2
    assert any(f"row {row_index + 1} (line {row_index + 2})" in line for line in trace.report.lines())


def test_missing_column(tmp_path):
    rows = [",".join(r.split(",")[:-2] + r.split(",")[-1:]) for r in ROWS]
    (tmp_path / "cluster_log.csv").write_text(HEADER.replace("duration,", "") + "\n".join(rows) + "\n")
    (tmp_path / "cluster_gpu_number.csv").write_text(GPU_NUMBERS)
    with pytest.raises(TraceError, match=r"column 'duration': missing column"):
        load_trace(tmp_path, cache=False)


def test_cache_follows_the_gpu_number_file(tmp_path):
    write(tmp_path)
    assert load_trace(tmp_path).vc_nodes == {"vcA": 2, "vcB": 2}
    again = load_trace(tmp_path)
    assert again.from_cache and again.vc_nodes == {"vcA": 2, "vcB": 2}
    (tmp_path / "cluster_gpu_number.csv").write_text("date,vcA,vcB,total\n2020-04-01,40,16,56\n")
    changed = load_trace(tmp_path)
    assert not changed.from_cache and changed.vc_nodes == {"vcA": 5, "vcB": 2}
