"""Duration estimates from a file: negatives replaced, every job covered, clear errors otherwise."""

import numpy as np
import pytest
from test_trace_validation import GOOD, write

from raysim.models.estimates import estimates_for
from raysim.errors import TraceError
from raysim.trace.load import load_trace


def test_file_estimates_align_and_replace_negatives(tmp_path):
    trace = load_trace(write(tmp_path, GOOD), cache=False)
    est = tmp_path / "est.csv"
    est.write_text("job_id,priority\n3,300\n1,-20\n2,200\n99,1\n")
    got = estimates_for(trace.table, source="file", path=est)
    assert got.tolist() == [1000.0, 200.0, 300.0]


def test_missing_estimate_is_an_error_naming_jobs(tmp_path):
    trace = load_trace(write(tmp_path, GOOD), cache=False)
    est = tmp_path / "est.csv"
    est.write_text("job_id,priority\n1,10\n")
    with pytest.raises(TraceError, match=r"no estimate for 2 trace job\(s\), e.g. job_id \[2, 3\]"):
        estimates_for(trace.table, source="file", path=est)


def test_bad_estimate_value(tmp_path):
    trace = load_trace(write(tmp_path, GOOD), cache=False)
    est = tmp_path / "est.csv"
    est.write_text("job_id,priority\n1,10\n2,soon\n3,1\n")
    with pytest.raises(TraceError, match=r"row 2 \(line 3\), column 'priority'"):
        estimates_for(trace.table, source="file", path=est)


def test_oracle_and_none(tmp_path):
    trace = load_trace(write(tmp_path, GOOD), cache=False)
    assert estimates_for(trace.table, source="none") is None
    assert np.array_equal(estimates_for(trace.table, source="oracle"), [97, 92, 261])
