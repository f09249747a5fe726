"""Philly reader: cluster_job_log (JSON) in msr-fiddle/philly-traces' public schema."""

import copy

import pytest

from raysim.errors import TraceError
from raysim.trace.load import load_trace
from raysim.trace.schema import JOB_SCHEMA
from reader_samples import PHILLY_JOBS as JOBS, write_philly as write


def test_jobs_gpus_durations_and_derived_layout(tmp_path):
    trace = load_trace(write(tmp_path), cache=False)
    t = trace.table
    assert t.drop_columns(["attempts_s"]).schema.equals(JOB_SCHEMA)
    assert t.column("attempts_s").to_pylist() == ["74 7 3600", None, None]  # runs and gaps (trace.failed=replay)
    assert t.column("job_id").to_pylist() == [1, 2, 5]
    assert t.column("gpu_num").to_pylist() == [8, 2, 4]  # first attempt's GPUs
    assert t.column("duration").to_pylist() == [74 + 3600, 600, 30]  # sum of attempts
    assert t.column("state").to_pylist() == ["COMPLETED", "CANCELLED", "FAILED"]
    assert t.column("submit_time").to_pylist() == [4299, 5400, 86400 + 43200]
    assert trace.origin == "2017-10-07T00:00:00"
    # ee9e8c peaks at 16 (second attempt) + 2 GPUs -> 3 nodes; 0e4a51 runs 4 GPUs -> 1 node
    assert trace.vc_nodes == {"0e4a51": 1, "ee9e8c": 3}
    counts = trace.report.counts
    assert counts["filtered: unfinished when the trace was taken (last attempt has no end_time)"] == 1
    assert counts["filtered: never started (no attempts)"] == 1


def test_span_rule(tmp_path):
    trace = load_trace(write(tmp_path), cache=False, reader_options={"duration": "span"})
    assert trace.table.column("duration").to_pylist() == [3681, 600, 30]  # 01:12:09 .. 02:13:30
    assert "attempts_s" not in trace.table.column_names  # the runs add up to the sum rule's duration only


def test_vc_config_takes_precedence(tmp_path):
    write(tmp_path)
    (tmp_path / "vc_config.csv").write_text(",num\nee9e8c,4\n0e4a51,2\n")
    assert load_trace(tmp_path, cache=False).vc_nodes == {"ee9e8c": 4, "0e4a51": 2}


def broken(job, path, value):
    jobs = copy.deepcopy(JOBS)
    target = jobs[job]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return jobs


@pytest.mark.parametrize("job,path,value,message", [
    (1, ("attempts", 0, "end_time"), "yesterday",
     r"job 2, column 'attempts\[0\].end_time': attempt end_time is not"),
    (0, ("attempts", 1, "end_time"), "2017-10-07 01:00:00",
     r"job 1, column 'attempts\[1\].end_time': attempt ends before"),
    (4, ("status",), "Lost", r"job 5, column 'status': unknown status"),
    (1, ("jobid",), "application_1_0001", r"job 2, column 'jobid': duplicate jobid"),
    (4, ("submitted_time",), "None", r"job 5, column 'submitted_time': submit_time is not a datetime"),
    (1, ("attempts", 0, "detail"), {"ip": "m1"},
     r"job 2, column 'attempts\[0\].detail': detail is not a list"),
])
def test_malformed_jobs_name_the_job_and_key(tmp_path, job, path, value, message):
    source = write(tmp_path, broken(job, path, value)) / "cluster_job_log"
    with pytest.raises(TraceError, match=message) as exc:
        load_trace(source, cache=False)
    assert str(source) in str(exc.value) and exc.value.row == job + 1
    trace = load_trace(source, on_error="skip", cache=False)
    assert trace.table.num_rows == 2
    assert any(f"job {job + 1}," in line for line in trace.report.lines())


def test_missing_key_and_not_json(tmp_path):
    jobs = copy.deepcopy(JOBS)
    del jobs[2]["vc"]
    with pytest.raises(TraceError, match=r"job 3, column 'vc': missing key"):
        load_trace(write(tmp_path / "a", jobs), cache=False)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "cluster_job_log").write_text('[{"jobid": ')
    with pytest.raises(TraceError, match="not a readable JSON file"):
        load_trace(tmp_path / "b", cache=False)


def test_validation_errors_name_the_job(tmp_path):
    write(tmp_path)
    (tmp_path / "vc_config.csv").write_text(",num\nee9e8c,4\n")
    with pytest.raises(TraceError, match=r"cluster_job_log, job 5, column 'vc': unknown VC") as exc:
        load_trace(tmp_path, cache=False)
    assert exc.value.row == 5
