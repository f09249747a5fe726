"""Heterogeneous layouts (raysim.cluster.layout): node pools per VC from CSV, Hydra lists, vc_config."""

from __future__ import annotations

import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from raysim.cluster.layout import (
    DEFAULT_GPU_TYPE,
    Pool,
    gpu_types,
    layout_from_config,
    layout_from_vc_nodes,
    read_layout_csv,
    restrict,
    total_gpus,
    write_layout_csv,
)
from raysim.paths import TRACES_DIR
from raysim.trace.cluster import read_vc_config
from raysim.errors import TraceError

GOOD = """\
# two VCs, three GPU types, 4- and 8-GPU nodes
gpu_type,vc,nodes,gpus_per_node
V100,vcA,3,8
P100, vcA ,2,4

K80,vcB,4,4
V100,vcB,1,8
V100,vcA,2,4
"""

HEADER = "vc,gpu_type,gpus_per_node,nodes\n"


def _write(tmp_path, text: str | bytes):
    path = tmp_path / "layout.csv"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    return path


def test_csv_with_several_pools_per_vc_and_mixed_node_shapes(tmp_path):
    layout = read_layout_csv(_write(tmp_path, GOOD))
    assert layout == {
        "vcA": (Pool("V100", 8, 3), Pool("P100", 4, 2), Pool("V100", 4, 2)),
        "vcB": (Pool("K80", 4, 4), Pool("V100", 8, 1)),
    }
    assert list(layout) == ["vcA", "vcB"]
    assert total_gpus(layout) == 24 + 8 + 8 + 16 + 8
    assert gpu_types(layout) == ["V100", "P100", "K80"]


def test_restrict_keeps_layout_order_and_rejects_unknown_vcs(tmp_path):
    layout = read_layout_csv(_write(tmp_path, GOOD))
    assert list(restrict(layout, ["vcB", "vcA"])) == ["vcA", "vcB"]
    assert restrict(layout, {"vcB"}) == {"vcB": layout["vcB"]}
    with pytest.raises(ValueError, match=r"\['vcX'\] not in the layout"):
        restrict(layout, ["vcA", "vcX"])


def test_a_vc_config_of_two_billion_nodes_or_not_utf_8_is_one_line(tmp_path):
    (tmp_path / "vc_config.csv").write_text(",num\nvcA,5\nvcB,2000000000\n")
    with pytest.raises(TraceError, match=r"row 2 \(line 3\), column 'num': the VCs' nodes add up to more than 1,000,000"):
        read_vc_config(tmp_path / "vc_config.csv")
    (tmp_path / "vc_config.csv").write_bytes(b",num\nvc\xffA,5\n")  # (a UnicodeDecodeError)
    with pytest.raises(TraceError, match=r"vc_config.csv: not a readable CSV file \(UTF-8\)"):
        read_vc_config(tmp_path / "vc_config.csv")


def test_vc_config_is_the_one_pool_special_case():
    vc_nodes = read_vc_config(TRACES_DIR / "venus_synth" / "vc_config.csv")
    layout = layout_from_vc_nodes(vc_nodes, 8)
    assert list(layout) == list(vc_nodes)
    assert all(pools == (Pool(DEFAULT_GPU_TYPE, 8, vc_nodes[vc]),) for vc, pools in layout.items())
    assert DEFAULT_GPU_TYPE == "gpu" and total_gpus(layout) == 8 * sum(vc_nodes.values())
    assert layout_from_vc_nodes({"a": 2}, 4, "K80") == {"a": (Pool("K80", 4, 2),)}


@pytest.mark.parametrize("args", [("", 8, 1), (" ", 8, 1), ("V100", 0, 1), ("V100", 8, -1),
                                  ("V100", 8.0, 1), ("V100", True, 1), (7, 8, 1)])
def test_pool_validates_its_fields(args):
    with pytest.raises(ValueError, match="Pool"):
        Pool(*args)


# (file text, row, column, fragment of the message)
CSV_ERRORS = {
    "gpus_per_node not an integer": (HEADER + "a,V100,8,2\na,P100,4.5,2\n", 2, "gpus_per_node",
                                     "not an integer (value '4.5')"),
    "nodes not positive": (HEADER + "a,V100,8,0\n", 1, "nodes", "must be positive (value '0')"),
    "nodes negative": (HEADER + "a,V100,8,-2\n", 1, "nodes", "must be positive"),
    "nodes empty": (HEADER + "a,V100,8,\n", 1, "nodes", "not an integer"),
    "empty vc": (HEADER + "a,V100,8,1\n ,V100,8,1\n", 2, "vc", "empty value"),
    "empty gpu_type": (HEADER + "a,,8,1\n", 1, "gpu_type", "empty value"),
    "rows count comments and blank lines": (HEADER + "# c\n\na,V100,8,x\n", 3, "nodes", "not an integer"),
    # (two billion nodes were allocated: memory ran out, or the run never started)
    "two billion nodes": (HEADER + "a,V100,8,2000000000\n", 1, "nodes", "must be at most 1,000,000"),
    "nodes adding up": (HEADER + "a,V100,8,600000\nb,V100,8,600000\n", 2, "nodes", "add up to more than 1,000,000"),
    "gpus_per_node": (HEADER + "a,V100,2000000000,1\n", 1, "gpus_per_node", "must be at most 1,024"),
}


@pytest.mark.parametrize("case", list(CSV_ERRORS))
def test_csv_errors_name_file_row_and_column(tmp_path, case):
    text, row, column, fragment = CSV_ERRORS[case]
    path = _write(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_layout_csv(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert f"row {row} (line {row + 1})" in message and f"column {column!r}" in message
    assert fragment in message


def test_repeated_pool_names_both_rows(tmp_path):
    path = _write(tmp_path, HEADER + "a,V100,8,2\na,V100,4,2\nb,V100,8,1\na,V100,8,5\n")
    with pytest.raises(TraceError) as err:
        read_layout_csv(path)
    assert str(err.value).startswith(f"{path}, row 4 (line 5): repeats the pool")
    assert "gpu_type 'V100', gpus_per_node 8) of row 1" in str(err.value)


@pytest.mark.parametrize("text, fragment", [
    ("vc,gpu_type,nodes\na,V100,1\n", "column 'gpus_per_node': missing column"),
    (HEADER.strip() + ",owner\na,V100,8,1,me\n", "unexpected column(s) ['owner']"),
    ("vc,gpu_type,gpus_per_node,nodes,vc\n", "column 'vc': column given twice"),
    (HEADER + "a,V100,8\n", "row 1 (line 2): expected 4 values, found 3"),
    (HEADER, "no pools listed"),
    ("# only a comment\n\n", "empty layout file"),
    ("", "empty layout file"),
    (HEADER.encode() + b"cl\xffuster,V100,8,2\n", "not a readable CSV file (UTF-8)"),  # (a UnicodeDecodeError)
])
def test_csv_structure_errors(tmp_path, text, fragment):
    path = _write(tmp_path, text)
    with pytest.raises(TraceError) as err:
        read_layout_csv(path)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="layout file not found"):
        read_layout_csv(tmp_path / "nope.csv")


ENTRIES = [
    {"vc": "a", "gpu_type": "V100", "gpus_per_node": 8, "nodes": 4},
    {"vc": "a", "gpu_type": "K80", "gpus_per_node": 4, "nodes": 2},
    {"vc": "b", "gpu_type": 3090, "gpus_per_node": "8", "nodes": 1},
]


@pytest.mark.parametrize("wrap", [list, lambda e: OmegaConf.create({"pools": e}).pools])
def test_config_list(wrap):
    layout = layout_from_config(wrap(ENTRIES))
    assert layout == {"a": (Pool("V100", 8, 4), Pool("K80", 4, 2)), "b": (Pool("3090", 8, 1),)}


@pytest.mark.parametrize("index, change, fragment", [
    (1, {"nodes": 0}, "entry 1, key 'nodes': must be positive (value 0)"),
    (1, {"nodes": 2_000_000_000}, "entry 1, key 'nodes': must be at most 1,000,000 (value 2000000000)"),
    (2, {"gpus_per_node": 2.5}, "entry 2, key 'gpus_per_node': not an integer (value 2.5)"),
    (0, {"vc": ""}, "entry 0, key 'vc': empty value"),
    (0, {"gpu_type": None}, "entry 0, key 'gpu_type': expected a name"),
    (1, {"owner": "me"}, "entry 1, key 'owner': unknown key"),
    (2, {"vc": "a", "gpu_type": "K80", "gpus_per_node": 4}, "entry 2: repeats the pool"),
])
def test_config_errors_name_entry_and_key(index, change, fragment):
    entries = [dict(e) for e in ENTRIES]
    entries[index].update(change)
    with pytest.raises(ValueError) as err:
        layout_from_config(entries, name="cluster.pools")
    assert str(err.value).startswith("cluster.pools entry") and fragment in str(err.value)


def test_config_structure_errors():
    with pytest.raises(ValueError, match=r"layout entry 0, key 'nodes': missing key"):
        layout_from_config([{"vc": "a", "gpu_type": "V100", "gpus_per_node": 8}])
    with pytest.raises(ValueError, match="entry 1: expected a mapping"):
        layout_from_config([ENTRIES[0], "a,V100,8,1"])
    with pytest.raises(ValueError, match="no pools listed"):
        layout_from_config([])
    with pytest.raises(ValueError, match="expected a list of pools"):
        layout_from_config("a,V100,8,1")


def test_cluster_package_imports_no_simulator_code():
    prefixes = ("ray.", "raysim.sim.", "raysim.runtime.", "raysim.policy.", "raysim.placement.")
    code = ("import sys, raysim.cluster.layout, raysim.cluster.throughput, raysim.cluster.demo; "
            f"print(sorted(m for m in sys.modules if (m + '.').startswith({prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_layout_csv_may_give_each_pool_cpu_and_memory(tmp_path):
    layout = {"a": (Pool("A", 2, 3, 64000, 262144), Pool("B", 1, 1), Pool("A", 2, 1, 64000, 262144))}
    path = write_layout_csv(tmp_path / "layout.csv", layout)
    assert path.read_text().splitlines()[:3] == ["vc,gpu_type,gpus_per_node,nodes,cpu_milli,memory_mib",
                                                 "a,A,2,3,64000,262144", "a,B,1,1,,"]
    assert read_layout_csv(path) == layout  # with CPU and memory, rows may repeat a shape (nodes in order)
    assert not Pool("B", 1, 1).limits_resources and Pool("A", 2, 1, 64000, None).limits_resources
    bad = tmp_path / "bad.csv"
    bad.write_text("vc,gpu_type,gpus_per_node,nodes,cpu_milli\na,A,2,3,-5\n")
    with pytest.raises(TraceError, match=r"row 1 \(line 2\), column 'cpu_milli': must not be negative"):
        read_layout_csv(bad)
    bad.write_text("vc,gpu_type,gpus_per_node,nodes,memory_mib\na,A,2,3,lots\n")
    with pytest.raises(TraceError, match=r"column 'memory_mib': not an integer"):
        read_layout_csv(bad)
