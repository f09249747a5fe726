"""Traces already in raysim's schema: CSV with integer submit seconds, and Parquet."""

import pyarrow.parquet as pq
import pytest

from raysim.errors import TraceError
from raysim.trace.load import load_trace
from raysim.trace.presets import VENUS
from raysim.trace.synth import generate, write_trace

CSV = """job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state
1,vcA,u1,1,4,0,120,COMPLETED
2,vcA,u2,8,8,30,3600,FAILED
3,vcB,u1,2,2,15,60,CANCELLED
"""


def test_csv_in_raysim_schema_with_integer_seconds(tmp_path):
    (tmp_path / "jobs.csv").write_text(CSV)
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,1\n")
    trace = load_trace(tmp_path / "jobs.csv", cache=False)
    assert trace.table.column("job_id").to_pylist() == [1, 3, 2]
    assert trace.table.column("submit_time").to_pylist() == [0, 15, 30]
    assert trace.origin == "0" and trace.vc_nodes == {"vcA": 1, "vcB": 1}
    origin = load_trace(tmp_path / "jobs.csv", cache=False, origin="2020-04-01T00:00:00").origin
    assert origin == "2020-04-01T00:00:00"


def test_csv_errors_name_row_and_column(tmp_path):
    (tmp_path / "jobs.csv").write_text(CSV.replace("30,3600", "30.5,3600"))
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,1\nvcB,1\n")
    with pytest.raises(TraceError, match=r"row 2 \(line 3\), column 'submit_time': submit_time is not whole"):
        load_trace(tmp_path / "jobs.csv", cache=False)


def test_parquet_written_by_raysim_round_trips(tmp_path):
    table, nodes = generate(VENUS, days=1, seed=4)
    write_trace(tmp_path, table, nodes)
    trace = load_trace(tmp_path, cache=False)
    written = pq.read_table(tmp_path / "jobs.parquet")
    for column in ("job_id", "vc", "user", "gpu_num", "submit_time", "duration", "state", "model", "speed"):
        assert trace.table.column(column).to_pylist() == written.column(column).to_pylist(), column
    assert trace.vc_nodes == nodes and trace.origin == "2020-09-01T00:00:00"
