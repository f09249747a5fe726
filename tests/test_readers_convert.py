"""`raysim trace convert`: public formats to raysim's schema (jobs.parquet + vc_config.csv)."""

import pandas as pd
from reader_samples import bad_helios, write_helios, write_pai, write_philly

from raysim.trace.cli import main
from raysim.trace.load import load_trace


def test_convert_helios_writes_a_trace_raysim_reads_back(tmp_path, capsys):
    src = write_helios(tmp_path / "Earth")
    assert main(["convert", str(src), "--format", "helios", "--out", str(tmp_path / "out")]) == 0
    assert "wrote 3 jobs, 2 VCs" in capsys.readouterr().out
    original, converted = load_trace(src, cache=False), load_trace(tmp_path / "out", cache=False)
    assert pd.read_csv(tmp_path / "out" / "vc_config.csv", index_col=0)["num"].to_dict() == original.vc_nodes
    assert converted.vc_nodes == original.vc_nodes and converted.origin == original.origin
    for column in ("job_id", "vc", "user", "gpu_num", "submit_time", "duration", "state"):
        assert converted.table.column(column).to_pylist() == original.table.column(column).to_pylist()


def test_convert_passes_reader_options(tmp_path):
    src = write_philly(tmp_path / "philly")
    out = str(tmp_path / "a")
    assert main(["convert", str(src), "--format", "philly", "-o", "duration=span", "--out", out]) == 0
    assert load_trace(tmp_path / "a", cache=False).table.column("duration").to_pylist() == [3681, 600, 30]
    src = write_pai(tmp_path / "pai")
    assert main(["convert", str(src), "-o", 'vc_groups={"T4": "V100"}', "--out", str(tmp_path / "b")]) == 0
    assert load_trace(tmp_path / "b", cache=False).vc_nodes == {"V100": 1}


def test_convert_reports_bad_rows(tmp_path, capsys):
    src = write_helios(tmp_path / "Venus", bad_helios(4, "vc", "vcZ"))
    assert main(["convert", str(src), "--out", str(tmp_path / "out")]) == 2
    assert "row 5 (line 6), column 'vc': unknown VC" in capsys.readouterr().err
    assert main(["convert", str(src), "--on-error", "skip", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "skipped 1 row(s): unknown VC" in out and "wrote 2 jobs" in out
