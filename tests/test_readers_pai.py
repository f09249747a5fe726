"""PAI reader: headerless pai_job_table.csv + pai_task_table.csv (Alibaba cluster-trace-gpu-v2020)."""

import pytest

from raysim.errors import TraceError
from raysim.trace.load import load_trace
from raysim.trace.schema import JOB_SCHEMA
from reader_samples import DAY1, PAI_JOBS as JOBS, PAI_TASKS as TASKS, write_pai as write

@pytest.mark.parametrize("header", [False, True])
def test_jobs_from_job_and_task_tables(tmp_path, header):
    trace = load_trace(write(tmp_path, header=header), cache=False)
    t = trace.table
    assert t.schema.equals(JOB_SCHEMA)
    assert t.column("job_id").to_pylist() == [1, 2, 5]
    assert t.column("gpu_num").to_pylist() == [1, 3, 5]
    assert t.column("cpu_num").to_pylist() == [14, 8, 25]
    assert t.column("vc").to_pylist() == ["V100", "T4", "V100"]  # jE: most GPUs on V100
    assert t.column("submit_time").to_pylist() == [3600, 7200, 90000]  # from 00:00 UTC+8 of day one
    assert t.column("duration").to_pylist() == [5150, 600, 8000]  # GPU tasks' first start .. last end
    assert t.column("state").to_pylist() == ["COMPLETED", "FAILED", "COMPLETED"]
    assert trace.origin == "1970-01-02T00:00:00"
    assert trace.vc_nodes == {"T4": 1, "V100": 1}
    counts = trace.report.counts
    assert counts["filtered: CPU-only job (gpu_num = 0)"] == 1
    assert counts["filtered: unfinished (status Running or Waiting)"] == 1


def test_vc_groups_merge_gpu_types(tmp_path):
    trace = load_trace(write(tmp_path), cache=False, reader_options={"vc_groups": {"T4": "V100"}})
    assert set(trace.table.column("vc").to_pylist()) == {"V100"} and trace.vc_nodes == {"V100": 1}


def bad(lines, index, field, value):
    out = [line.split(",") for line in lines]
    out[index][field] = value
    return [",".join(line) for line in out]


def test_bad_task_row_names_task_file_line_and_column(tmp_path):
    folder = write(tmp_path, tasks=bad(TASKS, 2, 8, "lots"))
    message = r"pai_task_table.csv, line 3, column 'plan_gpu': .*not a number"
    with pytest.raises(TraceError, match=message) as exc:
        load_trace(folder, cache=False)
    assert exc.value.row == 3
    trace = load_trace(folder, on_error="skip", cache=False)
    assert trace.table.column("job_id").to_pylist() == [1, 5]
    assert trace.report.counts["skipped: job has an invalid row in pai_task_table.csv"] == 1
    assert any("pai_task_table.csv, line 3" in line for line in trace.report.lines())


@pytest.mark.parametrize("index,field,value,message", [
    (1, 4, "noon", r"pai_job_table.csv, line 2, column 'start_time': start_time is not a number"),
    (4, 3, "Lost", r"pai_job_table.csv, line 5, column 'status': unknown status"),
    (4, 0, "jA", r"pai_job_table.csv, line 5, column 'job_name': duplicate job_name"),
])
def test_bad_job_row_names_line_and_column(tmp_path, index, field, value, message):
    folder = write(tmp_path, jobs=bad(JOBS, index, field, value))
    with pytest.raises(TraceError, match=message) as exc:
        load_trace(folder, cache=False)
    assert exc.value.row == index + 1
    assert load_trace(folder, on_error="skip", cache=False).report.total >= 1


def test_with_a_header_rows_are_counted_after_it(tmp_path):
    folder = write(tmp_path, jobs=bad(JOBS, 4, 3, "Lost"), header=True)
    with pytest.raises(TraceError, match=r"row 5 \(line 6\), column 'status'"):
        load_trace(folder, cache=False)


def test_negative_duration_names_the_task_columns(tmp_path):
    folder = write(tmp_path, tasks=bad(TASKS, 2, 5, str(DAY1 + 7000)))
    with pytest.raises(TraceError, match=r"line 2, column 'end_time - start_time \(pai_task_table.csv\)'"):
        load_trace(folder, cache=False)


def test_missing_task_table(tmp_path):
    write(tmp_path)
    (tmp_path / "pai_task_table.csv").unlink()
    with pytest.raises(TraceError, match="task table not found"):
        load_trace(tmp_path, cache=False)
