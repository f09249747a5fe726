"""Bad input gives a clear error naming file, row and column, or a counted skip with on_error=skip."""

import pytest

from raysim.errors import TraceError
from raysim.trace.load import load_trace

HEADER = "job_id,user,vc,jobname,gpu_num,cpu_num,state,submit_time,duration,model,gpu_util,gmem\n"
GOOD = [
    "1,u1,vcA,,1,2,COMPLETED,2020-09-01 00:00:03,97,ResNet18,62.0,3642",
    "2,u1,vcA,,8,8,FAILED,2020-09-01 00:01:40,92,NeuMF,10.5,2050",
    "3,u2,vcB,,16,16,CANCELLED,2020-09-01 00:02:12,261,BERT,33.5,2358",
]


def write(tmp_path, rows, header=HEADER):
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,2\n")
    path = tmp_path / "cluster_full_log.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def with_row(row_index, column, value):
    rows = [r.split(",") for r in GOOD]
    rows[row_index][HEADER.strip().split(",").index(column)] = value
    return [",".join(r) for r in rows]


def test_good_trace_loads(tmp_path):
    trace = load_trace(write(tmp_path, GOOD), cache=False)
    assert trace.table.column("submit_time").to_pylist() == [3, 100, 132]
    assert trace.origin == "2020-09-01T00:00:00"
    assert trace.vc_nodes == {"vcA": 1, "vcB": 2}


def test_missing_column(tmp_path):
    header = HEADER.replace("duration,", "")
    rows = [",".join(r.split(",")[:8] + r.split(",")[9:]) for r in GOOD]
    with pytest.raises(TraceError, match=r"column 'duration': missing column"):
        load_trace(write(tmp_path, rows, header), cache=False)


CASES = [
    ("gpu_num", "two", r"row 2 \(line 3\), column 'gpu_num': value is not a number"),
    ("duration", "0", r"row 2 \(line 3\), column 'duration': duration must be positive"),
    ("duration", "-5", r"row 2 \(line 3\), column 'duration': duration must be positive"),
    ("gpu_num", "9", r"row 2 \(line 3\), column 'gpu_num': gpu_num larger than its VC can ever hold"),
    ("vc", "vcZ", r"row 2 \(line 3\), column 'vc': unknown VC"),
    ("job_id", "1", r"row 2 \(line 3\), column 'job_id': duplicate job_id"),
    ("submit_time", "yesterday", r"row 2 \(line 3\), column 'submit_time': submit_time is not a datetime"),
    ("gpu_util", "high", r"row 2 \(line 3\), column 'gpu_util': value is not a number"),
]


@pytest.mark.parametrize("column,value,message", CASES)
def test_bad_value_names_file_row_and_column(tmp_path, column, value, message):
    path = write(tmp_path, with_row(1, column, value))
    with pytest.raises(TraceError, match=message) as exc:
        load_trace(path, cache=False)
    assert str(path) in str(exc.value)
    assert exc.value.row == 2 and exc.value.column == column


@pytest.mark.parametrize("column,value,message", CASES)
def test_skip_mode_counts_and_reports(tmp_path, column, value, message):
    trace = load_trace(write(tmp_path, with_row(1, column, value)), on_error="skip", cache=False)
    assert trace.table.num_rows == 2
    assert trace.report.total == 1
    assert any("row 2" in line for line in trace.report.lines())


def test_cpu_only_jobs_are_filtered_and_counted(tmp_path):
    trace = load_trace(write(tmp_path, with_row(0, "gpu_num", "0")), cache=False)
    assert trace.table.num_rows == 2
    assert "filtered: CPU-only job (gpu_num = 0)" in trace.report.counts


def test_state_filter_is_optional_and_reported(tmp_path):
    path = write(tmp_path, GOOD)
    assert load_trace(path, cache=False).table.num_rows == 3  # default keeps every state
    trace = load_trace(path, state_filter=["COMPLETED"], cache=False)
    assert trace.table.column("job_id").to_pylist() == [1]
    assert trace.report.total == 2


def test_integer_submit_times_and_stable_order(tmp_path):
    rows = [r.split(",") for r in GOOD]
    for r, t in zip(rows, ["50", "10", "10"]):
        r[7] = t
    trace = load_trace(write(tmp_path, [",".join(r) for r in rows]), cache=False)
    assert trace.table.column("job_id").to_pylist() == [2, 3, 1]  # ties keep row order
    assert trace.origin == "0"


def test_vc_config_errors_name_row_and_column(tmp_path):
    path = write(tmp_path, GOOD)
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,two\n")
    with pytest.raises(TraceError, match=r"vc_config.csv, row 2 \(line 3\), column 'num'"):
        load_trace(path, cache=False)


def test_cache_is_used_and_invalidated_when_the_source_changes(tmp_path):
    path = write(tmp_path, GOOD)
    first = load_trace(path)
    assert not first.from_cache and (tmp_path / "cluster_full_log.csv.raysim-cache.parquet").exists()
    second = load_trace(path)
    assert second.from_cache and second.table.equals(first.table)
    path.write_text(HEADER + "\n".join(GOOD[:2]) + "\n")
    third = load_trace(path)
    assert not third.from_cache and third.table.num_rows == 2


def test_cache_goes_to_cache_dir_when_asked(tmp_path):
    path = write(tmp_path, GOOD)
    load_trace(path, cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").glob("*.parquet"))
    assert load_trace(path, cache_dir=tmp_path / "cache").from_cache
