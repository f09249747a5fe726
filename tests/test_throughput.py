"""Throughput tables (raysim.cluster.throughput): CSV, Gavel's JSON, ratios and the unknown default."""

from __future__ import annotations

import json

import pytest

from raysim.cluster import throughput
from raysim.cluster.throughput import (
    UNKNOWN_RATIO,
    ThroughputTable,
    read_gavel_throughputs,
    read_throughput_csv,
    read_throughput_table,
)
from raysim.errors import TraceError

GOOD = """\
# illustrative numbers
gpu_type,throughput,job_type
V100,6.0,resnet50
K80, 1.5 ,resnet50

V100,4,bert
P100,2,bert
"""

HEADER = "job_type,gpu_type,throughput\n"


def _csv(tmp_path, text: str):
    path = tmp_path / "throughputs.csv"
    path.write_text(text)
    return path


def test_csv_table(tmp_path):
    table = read_throughput_csv(_csv(tmp_path, GOOD))
    assert len(table) == 4
    assert table.job_types() == ["resnet50", "bert"]
    assert table.gpu_types() == ["V100", "K80", "P100"]
    assert table.get("resnet50", "K80") == 1.5 and table.get("resnet50", "P100") is None
    assert table.ratio("resnet50", "V100", "K80") == 4.0
    assert table.ratio("bert", "P100", "V100") == 0.5
    assert table.pair("resnet50", "bert", "V100") is None
    assert table.missing() == []


def test_unknown_pairs_default_to_the_reference_speed_and_are_listed(tmp_path):
    table = read_throughput_csv(_csv(tmp_path, GOOD))
    assert UNKNOWN_RATIO == 1.0
    assert table.ratio("resnet50", "P100", "V100") == UNKNOWN_RATIO  # type not measured for the job
    assert table.ratio("gpt2", "V100", "K80") == UNKNOWN_RATIO  # job type not in the table
    assert table.ratio("bert", "V100", "K80") == UNKNOWN_RATIO  # reference not measured
    assert table.ratio("gpt2", "H100", "H100") == 1.0  # same type: no lookup, no miss
    assert table.missing() == [("bert", "K80"), ("gpt2", "K80"), ("gpt2", "V100"), ("resnet50", "P100")]


def test_ratio_uses_the_scale_factor_when_known_else_single_gpu_figures():
    table = ThroughputTable({("r", "V100"): 8.0, ("r", "K80"): 2.0,
                             ("r", "V100", 4): 24.0, ("r", "K80", 4): 4.0, ("r", "P100", 4): 12.0})
    assert table.ratio("r", "V100", "K80", scale_factor=4) == 6.0
    assert table.ratio("r", "V100", "K80", scale_factor=8) == 4.0  # no scale-8 entries
    assert table.ratio("r", "P100", "K80", scale_factor=4) == 3.0
    assert table.ratio("r", "P100", "K80") == UNKNOWN_RATIO
    assert table.missing() == [("r", "P100")]
    assert table.get("r", "V100", 4) == 24.0 and table.get("r", "V100", 2) is None


def test_zero_throughput_means_the_job_cannot_run_there():
    table = ThroughputTable({("big", "V100"): 3.0, ("big", "K80"): 0.0})
    assert table.get("big", "K80") == 0.0 and table.get("big", "V100") == 3.0 and table.get("other", "K80") is None
    assert table.ratio("big", "K80", "V100") == 0.0
    assert table.ratio("big", "V100", "K80") == UNKNOWN_RATIO  # recorded on a type it cannot use
    assert table.missing() == [("big", "K80")]


@pytest.mark.parametrize("rates, fragment", [
    ({("a", "V100"): -1.0}, "finite number >= 0"),
    ({("a", "V100"): float("nan")}, "finite number >= 0"),
    ({("a", "V100"): True}, "finite number >= 0"),
    ({("a", "V100"): 1.0, ("a", "V100", 1): 2.0}, "given twice"),
    ({("a", ""): 1.0}, "non-empty strings"),
    ({("a", "V100", 0): 1.0}, "scale factor"),
    ({("a",): 1.0}, "throughput key must be"),
])
def test_table_validates_its_input(rates, fragment):
    with pytest.raises(ValueError, match=fragment):
        ThroughputTable(rates)


# (file text, row, column, fragment of the message)
CSV_ERRORS = {
    "not a number": (HEADER + "a,V100,1\na,K80,fast\n", 2, "throughput", "not a number (value 'fast')"),
    "zero": (HEADER + "a,V100,0\n", 1, "throughput", "must be a positive number (value '0')"),
    "negative": (HEADER + "a,V100,-2.5\n", 1, "throughput", "must be a positive number"),
    "infinite": (HEADER + "a,V100,inf\n", 1, "throughput", "must be a positive number"),
    "huge": (HEADER + "a,V100,1e308\n", 1, "throughput", "must be at most 1e+12"),  # (a round's steps overflowed)
    "empty throughput": (HEADER + "a,V100,\n", 1, "throughput", "not a number"),
    "empty job_type": (HEADER + "a,V100,1\n,K80,1\n", 2, "job_type", "empty value"),
    "empty gpu_type": (HEADER + "a, ,1\n", 1, "gpu_type", "empty value"),
}


@pytest.mark.parametrize("case", list(CSV_ERRORS))
def test_csv_errors_name_file_row_and_column(tmp_path, case):
    text, row, column, fragment = CSV_ERRORS[case]
    path = _csv(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_throughput_csv(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path))
    assert f"row {row} (line {row + 1})" in message and f"column {column!r}" in message
    assert fragment in message


@pytest.mark.parametrize("text, fragment", [
    (HEADER + "a,V100,1\nb,V100,2\na,V100,3\n",
     "row 3 (line 4): repeats (job_type 'a', gpu_type 'V100') of row 1"),
    ("job_type,throughput\na,1\n", "column 'gpu_type': missing column"),
    ("job_type,gpu_type,throughput,source\na,V100,1,x\n", "unexpected column(s) ['source']"),
    (HEADER, "no throughputs listed"),
    ("", "empty throughput table"),
])
def test_csv_structure_errors(tmp_path, text, fragment):
    path = _csv(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_throughput_csv(path)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value)


def test_csv_missing_file(tmp_path):
    with pytest.raises(TraceError, match="throughput table not found"):
        read_throughput_csv(tmp_path / "nope.csv")


R18, R50 = "('ResNet-18 (batch size 16)', 1)", "('ResNet-50 (batch size 64)', 1)"
R18_2 = "('ResNet-18 (batch size 16)', 2)"


def _gavel() -> dict:
    """A small table with the structure of Gavel's simulation_throughputs.json."""
    return {
        "k80": {R18: {"null": 4.0, R18: [2.0, 2.0], R50: [1.5, 0.5]},
                R50: {"null": 1.0, R18: [0.5, 1.5], R50: [0.4, 0.4]},
                R18_2: {"null": 0.0, R18_2: [0.0, 0.0]}},
        "v100": {R18: {"null": 32.0, R50: [20.0, 9.0]},
                 R50: {"null": 12.0},
                 R18_2: {"null": 60.0}},
        "v100_unconsolidated": {R18: {"null": 30.0}},
    }


def _json(tmp_path, data) -> str:
    path = tmp_path / "simulation_throughputs.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_gavel_table(tmp_path):
    table = read_gavel_throughputs(_json(tmp_path, _gavel()))
    r18 = "ResNet-18 (batch size 16)"
    assert table.gpu_types() == ["k80", "v100"]  # the _unconsolidated variant is skipped
    assert table.job_types() == [r18, "ResNet-50 (batch size 64)"] and len(table) == 6
    assert table.get(r18, "v100") == 32.0 and table.get(r18, "v100", scale_factor=2) == 60.0
    assert table.ratio(r18, "v100", "k80") == 8.0
    assert table.get(r18, "k80", scale_factor=2) == 0.0
    assert table.pair(r18, "ResNet-50 (batch size 64)", "k80") == (1.5, 0.5)
    assert table.pair("ResNet-50 (batch size 64)", r18, "v100") == (9.0, 20.0)  # stored one way only
    assert table.pair("ResNet-50 (batch size 64)", r18, "v100", scale_factor=2) is None


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: d["k80"].update({"ResNet": {"null": 1.0}}),
     "job key is not a ('job type', scale factor > 0) tuple"),
    (lambda d: d["k80"].update({"('x', 0)": {"null": 1.0}}), "job key is not a"),
    (lambda d: d["k80"].update({"(1, 'x')": {"null": 1.0}}), "job key is not a"),
    (lambda d: d["k80"].update({"__import__('os').getcwd()": {"null": 1.0}}), "job key is not a"),
    (lambda d: d["k80"][R18].pop("null"), "expected an object with the isolated throughput 'null'"),
    (lambda d: d["k80"][R18].update({"null": "fast"}), "['null']: throughput must be a finite number >= 0"),
    (lambda d: d["v100"][R50].update({"null": -1}), "throughput must be a finite number >= 0"),
    (lambda d: d["v100"][R50].update({"null": 1e308}), "throughput must be a finite number >= 0 and at most 1e+12"),
    (lambda d: d["k80"][R18].update({R18_2: [1.0, 1.0]}), "a pair of jobs with different scale factors"),
    (lambda d: d["k80"][R18].update({R50: [1.0]}), "expected [throughput, other's throughput]"),
    (lambda d: d.update({"p100": [1, 2]}), "['p100']: expected an object of job types"),
])
def test_gavel_errors_name_file_and_entry(tmp_path, edit, fragment):
    data = _gavel()
    edit(data)
    path = _json(tmp_path, data)
    with pytest.raises(TraceError) as err:
        read_gavel_throughputs(path)
    assert str(err.value).startswith(path) and fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not a readable JSON file"),
    ("[1, 2]", "expected an object of GPU types"),
    ('{"v100_unconsolidated": {}}', "no GPU type with throughputs"),
    pytest.param("[" * 100_000 + "]" * 100_000, "nested too deeply", id="deep"),  # (a RecursionError traceback)
    ('{"v100": {}, "v100": {}}', "a key appears twice in one object"),  # (the last one won)
])
def test_gavel_file_errors(tmp_path, text, fragment):
    with pytest.raises(TraceError, match="simulation_throughputs.json: " + fragment):
        read_gavel_throughputs(_json(tmp_path, text))
    with pytest.raises(TraceError, match="Gavel throughput file not found"):
        read_gavel_throughputs(tmp_path / "nope.json")


def test_a_content_is_parsed_once_and_each_reader_records_its_own_misses(tmp_path, monkeypatch):
    monkeypatch.setattr(throughput, "_PARSED", type(throughput._PARSED)())  # (none parsed by other tests)
    parsed, parse = [], throughput._gavel_table
    monkeypatch.setattr(throughput, "_gavel_table", lambda name, data: parsed.append(name) or parse(name, data))
    first = read_throughput_table(_json(tmp_path, _gavel()))
    copy = tmp_path / "elsewhere.json"
    copy.write_text(json.dumps(_gavel()))
    second = read_throughput_table(copy)  # same content, another file: not parsed again
    assert len(parsed) == 1 and second.get("ResNet-50 (batch size 64)", "v100") == 12.0
    assert first.ratio("gpt2", "v100", "k80") == UNKNOWN_RATIO
    assert first.missing() == [("gpt2", "k80"), ("gpt2", "v100")] and second.missing() == []
    data = _gavel()
    data["v100"][R50]["null"] = 13.0
    assert read_throughput_table(_json(tmp_path, data)).get("ResNet-50 (batch size 64)", "v100") == 13.0
    assert len(parsed) == 2
    with pytest.raises(TraceError, match="Gavel throughput file not found"):
        read_throughput_table(tmp_path / "nope.json")


@pytest.mark.shared
def test_gavel_reference_table(shared_dir):
    path = shared_dir / "references" / "gavel" / "simulation_throughputs.json"
    if not path.exists():
        pytest.skip(f"{path} not found")
    table = read_gavel_throughputs(path)
    assert set(table.gpu_types()) == {"k80", "p100", "v100"}
    assert len(table.job_types()) == 26 and len(table) == 3 * 83
    r18 = "ResNet-18 (batch size 16)"
    assert table.ratio(r18, "v100", "k80") > 1
    assert table.ratio("Transformer (batch size 64)", "v100", "k80", scale_factor=4) > 1
    assert table.pair(r18, "ResNet-18 (batch size 32)", "k80") is not None
    assert table.get("ResNet-50 (batch size 128)", "k80", scale_factor=2) == 0.0
    assert table.missing() == []
