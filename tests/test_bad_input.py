"""Bad input ends a run with exit status 2 and one line on stderr naming what to fix.

Every case is a real command line (`raysim.cli.main`, what `python -m raysim` runs) in its own
process under a memory limit (tests/clirunner.py: a fork server, so dozens of commands stay fast;
they run two at a time). Each checks the exit status, that stderr is exactly one `raysim: error:`
line without a traceback, and that the line names the file, row (line) and column where the input
has them. Row-level trace defects are also run with trace.on_error=skip: every input row is then
either a job of the run or counted under its reason (exact conservation).

Left to the trace readers' own tests (raysim/trace/*, being extended): implausible dates and
durations, a truncated last line, boolean gpu_num, Parquet timestamp types, readers' zero-job errors.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirunner import CliRunner, request

HEADER = "job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state"
#: Six good jobs on vcA (one 8-GPU node) and vcB (two nodes).
GOOD = [
    "1,vcA,u1,1,4,0,100,COMPLETED",
    "2,vcA,u2,2,4,10,200,COMPLETED",
    "3,vcB,u1,8,4,20,50,FAILED",
    "4,vcB,u3,1,4,30,300,COMPLETED",
    "5,vcB,u2,16,4,40,120,COMPLETED",
    "6,vcA,u3,4,4,50,80,CANCELED",
]
VC_CONFIG = ",num\nvcA,1\nvcB,2\n"
LAYOUT = "vc,gpu_type,gpus_per_node,nodes\nvcA,V100,8,1\nvcB,V100,8,2\n"

#: (case, column, bad text put in row 3 (line 4) of GOOD, the reason the error and skip mode give)
ROW_DEFECTS = [
    ("gpu_num_text", "gpu_num", "two", "value is not a number"),
    ("gpu_num_fraction", "gpu_num", "1.5", "value is not an integer"),
    ("gpu_num_negative", "gpu_num", "-1", "gpu_num must not be negative"),
    ("gpu_num_larger_than_vc", "gpu_num", "64", "gpu_num larger than its VC can ever hold"),
    ("duration_negative", "duration", "-5", "duration must be positive"),
    ("duration_zero", "duration", "0", "duration must be positive"),
    ("duration_text", "duration", "long", "value is not a number"),
    ("cpu_num_negative", "cpu_num", "-4", "cpu_num must not be negative"),
    ("job_id_text", "job_id", "abc", "value is not a number"),
    ("job_id_duplicate", "job_id", "1", "duplicate job_id"),
    ("vc_unknown", "vc", "vcZ", "unknown VC"),
    ("submit_fraction", "submit_time", "20.5", "submit_time is not whole seconds"),
]


# --- building inputs --------------------------------------------------------------------------------


def with_cell(rows: list[str], index: int, column: str, text: str) -> list[str]:
    cols = HEADER.split(",")
    cells = rows[index].split(",")
    cells[cols.index(column)] = text
    return [*rows[:index], ",".join(cells), *rows[index + 1:]]


def folder(root: Path, name: str, files: dict[str, str | bytes]) -> Path:
    """A folder `name` under `root` holding `files` (name -> text or bytes)."""
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    for fname, content in files.items():
        (d / fname).write_bytes(content if isinstance(content, bytes) else content.encode())
    return d


def trace_csv(root: Path, name: str, lines: list[str], header: str = HEADER, vc_config: str | None = VC_CONFIG) -> Path:
    files = {"jobs.csv": "\n".join([header, *lines]) + "\n"}
    if vc_config is not None:
        files["vc_config.csv"] = vc_config
    return folder(root, name, files) / "jobs.csv"


def parquet_trace(root: Path, name: str, change: Callable[[dict], None]) -> Path:
    """GOOD as a Parquet trace (typed columns), changed by `change(columns)`."""
    cols = HEADER.split(",")
    rows = [r.split(",") for r in GOOD]
    columns = {c: [r[i] for r in rows] for i, c in enumerate(cols)}
    for c in ("job_id", "gpu_num", "cpu_num", "submit_time", "duration"):
        columns[c] = [int(v) for v in columns[c]]
    change(columns)
    d = folder(root, name, {"vc_config.csv": VC_CONFIG})
    pq.write_table(pa.table(columns), d / "jobs.parquet")
    return d / "jobs.parquet"


def where(path: Path, row: int | None = None, column: str | None = None) -> list[str]:
    """The parts of a TraceError naming file, row (line) and column."""
    parts = [str(path)]
    if row is not None:
        parts.append(f"row {row} (line {row + 1})")
    if column is not None:
        parts.append(f"column '{column}'")
    return parts


# --- checking results -------------------------------------------------------------------------------


def one_error_line(res, *parts: str, prefix: str = "raysim: error: ") -> str:
    """Exit status 2, stderr exactly one line starting with `prefix` and holding each of `parts`."""
    assert res.returncode == 2, f"exit {res.returncode}\n{res.stderr[-3000:]}"
    assert "Traceback" not in res.stderr + res.stdout, res.stderr[-3000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr[-3000:]
    line = lines[0]
    assert line.startswith(prefix), line
    for part in parts:
        assert part in line, f"{part!r} not in {line!r}"
    return line


def conserved(run_dir: Path, rows: int) -> dict:
    """The run's trace report, after checking jobs + skipped + filtered == `rows` input rows."""
    report = json.loads((run_dir / "trace_report.json").read_text())
    jobs = pq.read_metadata(run_dir / "jobs.parquet").num_rows
    assert jobs == report["jobs"]
    assert jobs + sum(report["counts"].values()) == rows, report
    return report


# --- the cases --------------------------------------------------------------------------------------


@dataclass
class Case:
    """A command line (run as `raysim <argv>` in `root`) and what to check of its result."""

    argv: list[str]
    parts: list[str] = field(default_factory=list)  # the error line must hold these ...
    prefix: str = "raysim: error: "  # ... and start with this
    check: Callable | None = None  # instead: check(result)
    setup: str = ""  # Python code the command's process runs first


CASES: dict[str, Callable[[Path], Case]] = {}


def case(name: str):
    def register(build):
        assert name not in CASES
        CASES[name] = build
        return build
    return register


def replay(root: Path, trace: Path | None, *overrides: str, name: str) -> list[str]:
    """`raysim runtime=local ...` on `trace` (default: the good trace), results in root/runs/<name>."""
    trace = trace or trace_csv(root, "good", GOOD)
    return ["runtime=local", f"trace.path={trace}", "trace.cache=false", f"hydra.run.dir={root / 'runs' / name}",
            *overrides]


# CSV traces: one bad cell each

for _name, _column, _text, _reason in ROW_DEFECTS:
    def _build(root, name=_name, column=_column, text=_text, reason=_reason):
        path = trace_csv(root, name, with_cell(GOOD, 2, column, text))
        return Case(replay(root, path, name=name), [*where(path, 3, column), reason, f"(value '{text}')"])
    case(f"csv_{_name}")(_build)


@case("csv_unknown_priority_class")
def _(root):
    classes = ["hp", "Spot", "HP", "preemptible", "spot", "hp"]
    path = trace_csv(root, "priority_class", [f"{line},{c}" for line, c in zip(GOOD, classes)],
                     header=HEADER + ",priority_class")
    return Case(replay(root, path, name="priority_class"), [*where(path, 4, "priority_class"),
                                                             "unknown priority class", "(value 'preemptible')"])


@case("csv_skip_mode_conserves_every_row")
def _(root):
    """All the row defects above in one file: skip mode keeps the good rows and counts each bad one
    under its reason (and a CPU-only job under its filter)."""
    bad = []
    for k, (_, column, text, _) in enumerate(ROW_DEFECTS):
        row = GOOD[k % len(GOOD)].split(",")
        row[0] = str(100 + k)  # distinct ids (the duplicate case sets its own)
        bad.append(with_cell([",".join(row)], 0, column, text)[0])
    lines = [*GOOD, *bad, "7,vcA,u1,0,4,60,10,COMPLETED"]
    path = trace_csv(root, "all_defects", lines)

    def check(res):
        assert res.returncode == 0, res.stderr[-3000:]
        report = conserved(root / "runs" / "all_defects", len(lines))
        assert report["jobs"] == len(GOOD)
        expected: dict[str, int] = {"filtered: CPU-only job (gpu_num = 0)": 1}
        for *_, reason in ROW_DEFECTS:
            expected[reason] = expected.get(reason, 0) + 1
        assert {re.sub(r" \(not in the VC layout.*", "", k): v for k, v in report["counts"].items()} == expected
    return Case(replay(root, path, "trace.on_error=skip", name="all_defects"), check=check)


def _datetimes(root):
    lines = [f"{k + 1},vcA,u1,1,4,2020-09-01 00:0{k}:00,100,COMPLETED" for k in range(4)]
    lines[2] = "3,vcA,u1,1,4,2020-13-45 99:00:00,100,COMPLETED"
    return trace_csv(root, "bad_datetime", lines)


@case("csv_bad_datetime")
def _(root):
    path = _datetimes(root)
    return Case(replay(root, path, name="bad_datetime"),
                [*where(path, 3, "submit_time"), "(value '2020-13-45 99:00:00')"])


@case("csv_bad_datetime_skipped")
def _(root):
    def check(res):
        assert res.returncode == 0, res.stderr[-3000:]
        assert conserved(root / "runs" / "bad_datetime_skip", 4)["jobs"] == 3
    return Case(replay(root, _datetimes(root), "trace.on_error=skip", name="bad_datetime_skip"), check=check)


@case("csv_missing_column")
def _(root):
    lines = [",".join(c for i, c in enumerate(r.split(",")) if i != 6) for r in GOOD]
    path = trace_csv(root, "missing_column", lines, header=HEADER.replace(",duration", ""))
    return Case(replay(root, path, name="missing_column"), [*where(path, column="duration"), "missing column"])


@case("csv_empty_file")
def _(root):
    path = folder(root, "empty_file", {"jobs.csv": "", "vc_config.csv": VC_CONFIG}) / "jobs.csv"
    return Case(replay(root, path, name="empty_file"), [str(path), "empty"])


@case("csv_header_only")
def _(root):
    path = trace_csv(root, "header_only", [])
    return Case(replay(root, path, name="header_only"), [str(path), "no jobs"])


@case("csv_every_row_skipped")
def _(root):
    """Skip mode that leaves no job is an error naming the file, not a run printing `avg JCT nan`."""
    path = trace_csv(root, "all_skipped", [with_cell(GOOD, 0, "gpu_num", "x")[0]])
    return Case(replay(root, path, "trace.on_error=skip", name="all_skipped"), [str(path), "no jobs"])


@case("csv_ragged_row")
def _(root):
    path = trace_csv(root, "ragged", [*GOOD[:2], GOOD[2] + ",extra", *GOOD[3:]])
    return Case(replay(root, path, name="ragged"), [str(path), "line 4"])


@case("csv_not_text")
def _(root):
    path = folder(root, "binary", {"jobs.csv": b"\xff\xfe\x00\x81" * 64, "vc_config.csv": VC_CONFIG}) / "jobs.csv"
    return Case(replay(root, path, name="binary"), [str(path)])


@case("trace_path_missing")
def _(root):
    path = root / "nowhere" / "jobs.csv"
    return Case(replay(root, path, name="nowhere"), [str(path), "trace file not found"])


@case("trace_folder_without_trace")
def _(root):
    d = folder(root, "no_trace_file", {"vc_config.csv": VC_CONFIG})
    return Case(replay(root, d, name="no_trace_file"), [str(d), "no trace file"])


@case("trace_path_not_set")
def _(root):
    return Case(["runtime=local", f"hydra.run.dir={root / 'runs' / 'no_path'}"], ["trace.path:", "not set"])


# Parquet traces


@case("parquet_text_in_a_number_column")
def _(root):
    def change(cols):
        cols["gpu_num"] = [str(v) for v in cols["gpu_num"]]
        cols["gpu_num"][1] = "x"
    path = parquet_trace(root, "pq_gpu_text", change)
    return Case(replay(root, path, name="pq_gpu_text"), [str(path), "row 2", "column 'gpu_num'", "not a number"])


@case("parquet_text_in_a_number_column_skipped")
def _(root):
    path = root / "pq_gpu_text" / "jobs.parquet"  # written by the case above (cases are built in order)

    def check(res):
        assert res.returncode == 0, res.stderr[-3000:]
        assert conserved(root / "runs" / "pq_gpu_text_skip", len(GOOD))["jobs"] == len(GOOD) - 1
    return Case(replay(root, path, "trace.on_error=skip", name="pq_gpu_text_skip"), check=check)


@case("parquet_fractional_duration")
def _(root):
    def change(cols):
        cols["duration"] = [float(v) for v in cols["duration"]]
        cols["duration"][3] = 12.5
    path = parquet_trace(root, "pq_duration_float", change)
    return Case(replay(root, path, name="pq_duration_float"), [str(path), "row 4", "column 'duration'",
                                                                 "not an integer"])


@case("parquet_missing_column")
def _(root):
    path = parquet_trace(root, "pq_missing_vc", lambda cols: cols.pop("vc"))
    return Case(replay(root, path, name="pq_missing_vc"), [str(path), "column 'vc'", "missing column"])


@case("parquet_vc_of_integers")
def _(root):
    path = parquet_trace(root, "pq_vc_int", lambda cols: cols.update(vc=list(range(len(GOOD)))))
    return Case(replay(root, path, name="pq_vc_int"), [str(path), "row 1", "column 'vc'", "unknown VC"])


@case("parquet_not_parquet")
def _(root):
    path = folder(root, "pq_text", {"jobs.parquet": HEADER + "\n", "vc_config.csv": VC_CONFIG}) / "jobs.parquet"
    return Case(replay(root, path, name="pq_text"), [str(path), "Parquet"])


# vc_config.csv beside the trace

for _name, _text, _row, _column, _reason in [
    ("missing_num", ",nodes\nvcA,1\nvcB,2\n", None, "num", "missing column"),
    ("nodes_text", ",num\nvcA,one\nvcB,2\n", 1, "num", "not an integer"),
    ("nodes_zero", ",num\nvcA,1\nvcB,0\n", 2, "num", "must be positive"),
    ("duplicate_vc", ",num\nvcA,1\nvcA,2\n", 2, None, "duplicate VC"),
]:
    def _build(root, name=f"vc_config_{_name}", text=_text, row=_row, column=_column, reason=_reason):
        path = trace_csv(root, name, GOOD, vc_config=text)
        return Case(replay(root, path, name=name), [*where(path.parent / "vc_config.csv", row, column), reason])
    case(f"vc_config_{_name}")(_build)


@case("vc_config_absent")
def _(root):
    path = trace_csv(root, "vc_absent", GOOD, vc_config=None)
    return Case(replay(root, path, name="vc_absent"), [str(path.parent / "vc_config.csv"), "not found"])


# cluster layout files (cluster.layout=<csv>) and lists

for _name, _text, _row, _column, _reason in [
    ("gpus_text", LAYOUT.replace("vcB,V100,8,2", "vcB,V100,eight,2"), 2, "gpus_per_node", "not an integer"),
    ("gpus_zero", LAYOUT.replace("vcA,V100,8,1", "vcA,V100,0,1"), 1, "gpus_per_node", "must be positive"),
    ("missing_nodes", "vc,gpu_type,gpus_per_node\nvcA,V100,8\n", None, "nodes", "missing column"),
    ("duplicate_pool", LAYOUT + "vcA,V100,8,3\n", 3, None, "repeats the pool"),
    ("extra_value", LAYOUT + "vcA,K80,4,1,9\n", 3, None, "expected 4 values"),
    ("no_pools", "vc,gpu_type,gpus_per_node,nodes\n", None, None, "no pools"),
]:
    def _build(root, name=f"layout_{_name}", text=_text, row=_row, column=_column, reason=_reason):
        path = folder(root, name, {"layout.csv": text}) / "layout.csv"
        return Case(replay(root, None, f"cluster.layout={path}", name=name), [*where(path, row, column), reason])
    case(f"layout_{_name}")(_build)


@case("layout_list_in_config")
def _(root):
    layout = "cluster.layout=[{vc:vcA,gpu_type:V100,gpus_per_node:0,nodes:1}]"
    return Case(replay(root, None, layout, name="layout_list"),
                ["cluster.layout entry 0", "'gpus_per_node'", "must be positive"])


# quotas between VCs (quota=...)

for _name, _overrides, _parts in [
    ("mode", ["quota.mode=lend"], ["quota.mode", "must be one of none, borrow, global", "(value 'lend')"]),
    ("period_not_multiple", ["quota=borrow", "quota.period_s=250", "runtime.window_s=100"],
     ["quota.period_s", "multiple of runtime.window_s (100 s)"]),
    ("unknown_vc", ["quota=borrow", "+quota.vcs={vcZ: {cohort: a}}"], ["quota.vcs", "vcZ"]),
    ("bad_reclaim", ["quota=borrow", "quota.reclaim=kill"], ["quota.reclaim", "preempt, drain"]),
    ("negative_limit", ["quota=borrow", "quota.borrow_limit=-8"], ["quota.borrow_limit", "at least 0"]),
    ("with_lucid", ["quota=borrow", "policy=lucid"], ["quota", "Lucid's profiler", "policy.profiler.nodes=0"]),
    # the group's name before it was quota
    ("old_name", ["sharing=borrow"], ["sharing=borrow: renamed to quota=borrow", "GPU sharing only"]),
    ("old_name_key", ["quota=borrow", "+sharing.period_s=600"], ["renamed to +quota.period_s=600"]),
]:
    def _build(root, name=f"quota_{_name}", overrides=_overrides, parts=_parts):
        return Case(replay(root, None, *overrides, name=name), parts)
    case(f"quota_{_name}")(_build)


@case("quota_old_name_in_an_experiment_file")
def _(root):
    conf = folder(root, "old_conf/experiment", {"old.yaml": "# @package _global_\nsharing:\n  mode: borrow\n"})
    return Case(replay(root, None, f"hydra.searchpath=[file://{conf.parent}]", "+experiment=old", name="old_file"),
                ["sharing: renamed to quota", "GPU sharing only"])


# throughput tables and estimate files

for _name, _text, _reason in [
    ("not_number", "job_type,gpu_type,throughput\nresnet,V100,fast\n", "not a number"),
    ("negative", "job_type,gpu_type,throughput\nresnet,V100,-3\n", "must be a positive number"),
]:
    def _build(root, name=f"throughput_{_name}", text=_text, reason=_reason):
        d = folder(root, name, {"tp.csv": text, "layout.csv": LAYOUT})
        return Case(replay(root, None, f"cluster.layout={d / 'layout.csv'}", f"cluster.throughput={d / 'tp.csv'}",
                           name=name), [*where(d / "tp.csv", 1, "throughput"), reason])
    case(f"throughput_{_name}")(_build)


@case("throughput_json_malformed")
def _(root):
    path = folder(root, "tp_json", {"tp.json": "{'V100': "}) / "tp.json"
    return Case(replay(root, None, f"cluster.throughput={path}", name="tp_json"), [str(path), "JSON"])


@case("throughput_json_nested_100000_deep")
def _(root):
    path = folder(root, "tp_deep", {"tp.json": "[" * 100_000 + "]" * 100_000}) / "tp.json"
    return Case(replay(root, None, f"cluster.throughput={path}", name="tp_deep"), [str(path), "nested too deeply"])


@case("layout_of_two_billion_nodes")
def _(root):
    path = folder(root, "layout_2e9", {"layout.csv": "vc,gpu_type,gpus_per_node,nodes\nvcA,V100,8,1\n"
                                                     "vcB,V100,8,2000000000\n"}) / "layout.csv"
    return Case(replay(root, None, f"cluster.layout={path}", name="layout_2e9"),
                [*where(path, 2, "nodes"), "at most 1,000,000"])


@case("failure_trace_without_rows")
def _(root):
    path = folder(root, "failures_empty", {"failures.csv": "time,vc,node,category,repair_s\n"}) / "failures.csv"
    return Case(replay(root, None, "failures=trace", f"failures.path={path}", name="failures_empty"),
                [str(path), "no failures"])


@case("node_log_parquet_boolean_time")
def _(root):
    path = root / "node_log_bool.parquet"
    pq.write_table(pa.table({"time": [True, False], "vc": ["vcA", "vcA"], "node": [0, 0], "event": ["down", "up"]}),
                   path)
    return Case(replay(root, None, f"cluster.capacity={path}", name="node_log_bool"),
                [*where(path, 1, "time"), "must be a whole number"])


for _name, _text, _parts in [
    ("not_number", "job_id,priority\n1,10\n2,soon\n", ["row 2 (line 3)", "column 'priority'", "'soon'"]),
    ("missing_column", "job_id,estimate\n1,10\n", ["column 'priority'", "missing column"]),
]:
    def _build(root, name=f"estimates_{_name}", text=_text, parts=_parts):
        path = folder(root, name, {"est.csv": text}) / "est.csv"
        return Case(replay(root, None, "policy=qssf", "estimator.source=file", f"estimator.path={path}", name=name),
                    [str(path), *parts])
    case(f"estimates_{_name}")(_build)


# config values and overrides on the command line (more values: test_config_value below, in-process)

for _overrides, _parts in [
    (["seed=abc"], ["seed:", "(value 'abc')"]),
    (["runtime.window_s=-5"], ["runtime.window_s:", "(value -5)"]),
    (["runtime=ray", "ray.vcs_per_actor=0"], ["ray.vcs_per_actor:", "(value 0)"]),  # before Ray starts
    (["policy=srtf", "policy.overhead_s=abc"], ["policy.overhead_s: must be an integer", "'abc'"]),
    (["placer.type_order=bogus"], ["placer.type_order:", "any, given, fastest, slowest"]),
    (["policy=qssf"], ["estimator.source", "estimator.source=file", "estimator.source=oracle"]),
    (["policy=bogus"], ["Could not find 'policy/bogus'", "fifo, "]),
    (["+experiment=nope"], ["Could not find 'experiment/nope'", "venus"]),
    # a mistyped key: its closest keys, not Hydra's advice to append it (nor, appended, a silent run)
    (["sim.compatt=lucid"], ["sim.compatt: not a key of the run's config; did you mean sim.compat?"]),
    (["+sim.compatt=lucid"], ["sim.compatt: not a setting of a trace replay; did you mean sim.compat? (its settings: "]),
    (["smi.compat=lucid"], ["smi.compat: not a key of the run's config; did you mean sim.compat?"]),
    (["+smi.compat=lucid"], ["smi.compat: not a setting of trace replays (mode=cluster); did you mean sim.compat?"]),
    (["policy=tiresias", "policy.overhed_s=3"], ["policy.overhed_s: not a key of the run's config; did you mean "
                                                 "policy.overhead_s or policy.large_overhead_s?"]),
    (["policy.overhead_s=3"], ["policy.overhead_s: not a key of the run's config: if it is a setting the config "
                               "leaves out, +policy.overhead_s=3 sets it"]),  # (no close key: Hydra's advice, as a condition)
    (["seed=[1"], ["override 'seed=[1'"]),
    (["trace.path=${oc.env:RAYSIM_TEST_NO_SUCH_VARIABLE}"], ["RAYSIM_TEST_NO_SUCH_VARIABLE", "trace.path"]),
    (["cluster.reference_gpu_type=H100"], ["cluster.reference_gpu_type:", "(value 'H100')"]),  # after loading
]:
    def _build(root, overrides=_overrides, parts=_parts):
        return Case(replay(root, None, *overrides, name="config"), parts)
    case("config_" + "_".join(_overrides))(_build)


# the run folder


@case("run_folder_under_a_file")
def _(root):
    blocker = root / "a_file"
    blocker.write_text("not a folder")
    return Case(["runtime=local", f"trace.path={trace_csv(root, 'good', GOOD)}", f"hydra.run.dir={blocker}/run"],
                [str(blocker)])


@case("run_log_file_cannot_be_opened")
def _(root):
    """Hydra's 'Unable to configure handler file' becomes one line naming the log file."""
    run_dir = root / "runs" / "log_blocked"
    (run_dir / "raysim.log").mkdir(parents=True)
    return Case(["runtime=local", f"trace.path={trace_csv(root, 'good', GOOD)}", f"hydra.run.dir={run_dir}"],
                [str(run_dir / "raysim.log"), "hydra.run.dir"])


# tools


@case("trace_stats_bad_row")
def _(root):
    path = trace_csv(root, "stats_bad", with_cell(GOOD, 2, "duration", "-5"))
    return Case(["trace", "stats", str(path), "--no-cache"], [*where(path, 3, "duration"), "error: "], prefix="")


@case("trace_convert_missing_source")
def _(root):
    return Case(["trace", "convert", str(root / "nope.csv"), "--out", str(root / "converted")],
                [str(root / "nope.csv"), "not found", "error: "], prefix="")


# hostile input on the newer surfaces (issue 35): each refused in one line, nothing that looks like a result written

#: What a finished run writes (trace replays, FGD inflation runs): none of it may be left by a refused run.
RESULTS = ("jobs.parquet", "summary.csv", "summary.md", "fgd_summary.csv", "allo.csv", "report.html")


def refused(run_dir: Path, *parts: str) -> Callable:
    """A check: one error line holding `parts`, exit status 2, and no result file in `run_dir`."""
    def check(res):
        one_error_line(res, *parts)
        left = [name for name in RESULTS if (run_dir / name).exists()]
        assert not left, f"a refused run wrote {left}"
    return check


NODE_LIST = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,786432,8,V100M32\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def fgd(root: Path, name: str, node_list: str, pod_list: str) -> Case:
    d = folder(root, name, {"openb_node_list_gpu_node.csv": node_list, "openb_pod_list_default.csv": pod_list})
    run_dir = root / "runs" / name
    path = d / ("openb_pod_list_default.csv" if node_list == NODE_LIST else "openb_node_list_gpu_node.csv")
    return Case(["+experiment=fgd_openb", f"fgd.data_dir={d}", "fgd.plots=false", f"hydra.run.dir={run_dir}"],
                check=refused(run_dir, str(path), "no pods" if node_list == NODE_LIST else "no node with GPUs"))


case("fgd_empty_pod_list")(lambda root: fgd(root, "fgd_no_pods", NODE_LIST, POD_HEADER))
case("fgd_node_list_without_gpus")(lambda root: fgd(root, "fgd_no_gpus", NODE_LIST.splitlines()[0] + "\n",
                                                    POD_HEADER + "p0,1000,1024,1,1000,,LS,Running,0,10,0\n"))


# Sia profile folders (policy.profiles): a missing file is an error naming the folder and the file


def sia_run(root: Path, name: str, workload: list[str], change: Callable[[Path], None] | None = None) -> tuple:
    """A sia run on two toy applications' profiles (tests/elastic_util.py: kinds fast and slow) and a
    workload of Sia's format; `change(profiles)` damages the profiles first. (argv, run folder, profiles)."""
    from elastic_util import write_app

    d = root / name
    validation = {32: [(3000, 100, 0.1, 1.0, 3.0), (6000, 200, 0.2, 0.5, 2.5)],
                  64: [(3300, 60, 0.1, 2.0, 5.0), (6900, 120, 0.2, 1.0, 3.0)]}
    write_app(d / "profiles", "alpha", {"fast": 2.0, "slow": 1.0}, validation=validation)
    if change is not None:
        change(d / "profiles")
    trace = folder(d, "trace", {"workload.csv": "name,time,application,num_replicas,batch_size\n" + "\n".join(workload)
                                + "\n"}) / "workload.csv"
    run_dir = root / "runs" / name
    layout = "cluster.layout=[{vc:cluster,gpu_type:fast,gpus_per_node:4,nodes:1},{vc:cluster,gpu_type:slow,gpus_per_node:4,nodes:2}]"
    return (["+experiment=sia_saturn", "runtime=local", layout, f"trace.path={trace}", "trace.cache=false",
             f"policy.profiles={d / 'profiles'}", "+policy.apps.alpha={max_epochs:2,restart_s:30,slowdown:1.2}",
             f"hydra.run.dir={run_dir}"], run_dir, d / "profiles", trace)


SIA_JOBS = ["alpha-0,0,alpha,1,32", "alpha-1,30,alpha,2,64"]


@case("sia_profile_kind_file_missing")
def _(root):
    """Sia's layout: per-kind files and a kind-less placements.csv; the slow kind's file is gone."""
    def change(profiles):
        (profiles / "alpha" / "placements.csv").write_bytes((profiles / "alpha" / "placements-fast.csv").read_bytes())
        (profiles / "alpha" / "placements-slow.csv").unlink()
    argv, run_dir, profiles, _ = sia_run(root, "sia_no_kind_file", SIA_JOBS, change)
    return Case(argv, check=refused(run_dir, f"{profiles / 'alpha'}: no placements-slow.csv (GPU kind 'slow')"))


@case("sia_profile_file_missing")
def _(root):
    argv, run_dir, profiles, _ = sia_run(root, "sia_no_file", SIA_JOBS,
                                         lambda p: (p / "alpha" / "scalability-fast.csv").unlink())
    return Case(argv, check=refused(run_dir, str(profiles / "alpha" / "scalability-fast.csv"), "not found"))


@case("sia_batch_size_without_validation_file")
def _(root):
    """A job's batch size beyond the validated ones (its validation file missing, or a bad row)."""
    argv, run_dir, profiles, trace = sia_run(root, "sia_batch", [*SIA_JOBS, "alpha-2,60,alpha,2,128"])
    return Case(argv, check=refused(run_dir, str(trace), "column 'batchsize'", "job 'alpha-2'",
                                    "outside alpha's validated ones 32..64", "(value 128)"))


# round settings: checked before the trace is read (gavel_hetero_demo: shipped data; sia: no input read yet)

for _name, _overrides, _parts in [
    ("round_nan", ["policy.round_s=nan"], ["policy.round_s: must be a finite number", "(value nan)"]),
    ("round_inf", ["policy.round_s=inf"], ["policy.round_s: must be a finite number", "(value inf)"]),
    ("round_nanosecond", ["policy.round_s=1e-9"], ["policy.round_s: must be at least 1", "(value 1e-09)"]),
    ("reset_inf", ["policy.reset_min_s=inf"], ["policy.reset_min_s: must be a finite number"]),
    ("window_reversed", ["policy.window=[199,100]"], ["policy.window: first job id after the last", "[199, 100]"]),
    ("window_one_id", ["policy.window=[100]"], ["policy.window: must be [first, last]"]),
    ("elastic_round_nanosecond", ["policy=sia", "policy.round_s=1e-9"], ["policy.round_s: must be at least 1 (value 1e-09)"]),
    ("elastic_round_inf", ["policy=pollux", "policy.round_s=inf"], ["policy.round_s: must be a finite number"]),
]:
    def _build(root, name=f"rounds_{_name}", overrides=_overrides, parts=_parts):
        run_dir = root / "runs" / name
        policy = [] if any(o.startswith("policy=") for o in overrides) else ["policy=max_min_fairness_perf"]
        return Case(["+experiment=gavel_hetero_demo", "runtime=local", "trace.cache=false", *policy, *overrides,
                     f"hydra.run.dir={run_dir}"], check=refused(run_dir, *parts))
    case(f"rounds_{_name}")(_build)


# huge pools and counts: refused instead of hanging or running out of memory

for _name, _argv, _parts in [
    ("profiler_pool", ["+experiment=venus", "policy=lucid", "estimator.source=oracle", "policy.profiler.nodes=1000000000000"],
     ["policy.profiler.nodes: must be at most the cluster's 135 nodes"]),
    ("profiler_factor", ["+experiment=venus", "policy=lucid", "estimator.source=oracle", "policy.profiler.factor=100"],
     ["policy.profiler.factor: must be at most the pool's 8 GPUs per node", "(value 100)"]),
    ("generated_jobs", ["+experiment=gavel_continuous", "rounds.generate.jobs=1000000000000"],
     ["rounds.generate.jobs: must be at most 1,000,000"]),
    ("window", ["+experiment=venus", "runtime.window_s=1000000000000"], ["runtime.window_s: must be at most"]),
    ("gpus_per_node", ["+experiment=venus", "cluster.gpus_per_node=1000000000000"],
     ["cluster.gpus_per_node: must be at most 1,024"]),
    # an integer setting shows the value as given, not int(1e300)'s 301 digits
    ("checkpoint_interval", ["+experiment=venus", "checkpoint.interval_s=1e300"],
     ["checkpoint.interval_s: must be at most 1,000,000,000,000 (value 1e+300)"]),
]:
    def _build(root, name=f"huge_{_name}", argv=_argv, parts=_parts):
        run_dir = root / "runs" / name
        return Case(["runtime=local", "trace.cache=false", *argv, f"hydra.run.dir={run_dir}"],
                    check=refused(run_dir, *parts))
    case(f"huge_{_name}")(_build)


# old setting names: refused wherever they are set (Hydra adds an unknown key from a file or a `+` without a word)

for _name, _overrides, _parts in [
    ("throughputs_added", ["+rounds.throughputs=/t.json"], ["rounds.throughputs: renamed to cluster.throughput"]),
    ("throughputs", ["rounds.throughputs=/t.json"], ["rounds.throughputs: renamed to cluster.throughput"]),
    ("round_constants", ["policy=min_total_duration_perf", "+policy.round.min_s=10"],
     ["policy.round.min_s: the constants of round-based policies are policy.<constant> now"]),
    ("cpus_per_node", ["+cluster.cpus_per_node=96"], ["cluster.cpus_per_node: removed", "cpu_milli"]),
    ("unknown_constant", ["policy=max_min_fairness_perf", "+policy.bogus=3"],
     ["policy.bogus: not a setting of policy max_min_fairness_perf"]),
]:
    def _build(root, name=f"old_name_{_name}", overrides=_overrides, parts=_parts):
        run_dir = root / "runs" / name
        return Case(["+experiment=gavel_hetero_demo", "runtime=local", "trace.cache=false", *overrides,
                     f"hydra.run.dir={run_dir}"], check=refused(run_dir, *parts))
    case(f"old_name_{_name}")(_build)


@case("old_name_in_an_experiment_file")
def _(root):
    """The throughput table under its old name in an experiment file: the run would go on with the
    default table (Gavel's), or with none."""
    conf = folder(root, "old_rounds_conf/experiment", {"old_rounds.yaml": (
        "# @package _global_\ndefaults:\n  - gavel_hetero_demo\n  - _self_\n"
        "rounds:\n  throughputs: /somewhere/throughputs.csv\n")})
    run_dir = root / "runs" / "old_rounds_file"
    return Case(["runtime=local", f"hydra.searchpath=[file://{conf.parent}]", "+experiment=old_rounds",
                 f"hydra.run.dir={run_dir}"], check=refused(run_dir, "rounds.throughputs: renamed to cluster.throughput"))


for _name, _yaml, _parts in [
    ("section_key", "sim:\n  compatt: lucid\n",
     ["sim.compatt: not a setting of a trace replay; did you mean sim.compat?"]),
    ("policy_key", "policy:\n  overhed_s: 3\n",
     ["policy.overhed_s: not a setting of policy tiresias; did you mean policy.overhead_s or policy.large_overhead_s?"]),
    ("section", "smi:\n  compat: lucid\n", ["smi: not a setting of trace replays (mode=cluster); did you mean sim?"]),
]:
    def _build(root, name=_name, text=_yaml, parts=_parts):
        """A mistyped key in a user's experiment file: its closest keys."""
        conf = folder(root, f"typo_{name}_conf/experiment", {"typo.yaml": (
            "# @package _global_\ndefaults:\n  - venus\n  - override /policy: tiresias\n  - _self_\n" + text)})
        run_dir = root / "runs" / f"typo_{name}"
        return Case(["runtime=local", f"hydra.searchpath=[file://{conf.parent}]", "+experiment=typo",
                     f"hydra.run.dir={run_dir}"], check=refused(run_dir, *parts))
    case(f"typo_in_an_experiment_file_{_name}")(_build)


# not user errors; sweeps; the harness itself

PLANT = ("import raysim.run.cluster as c\ndef run_cluster(cfg, run_dir, checked=None):\n    raise {}\n"
         "c.run_cluster = run_cluster")


@case("bug_keeps_its_traceback")
def _(root):
    def check(res):
        assert res.returncode == 1
        assert "Traceback" in res.stderr and "ValueError: planted bug" in res.stderr
        assert "raysim: error" not in res.stderr
    return Case(replay(root, None, name="bug"), check=check, setup=PLANT.format("ValueError('planted bug')"))


@case("verbose_adds_the_traceback")
def _(root):
    def check(res):
        assert res.returncode == 2 and "Traceback" in res.stderr
        last = res.stderr.strip().splitlines()[-1]
        assert last == "raysim: error: seed: must be an integer (value 'abc')"
    return Case(replay(root, None, "--verbose", "seed=abc", name="verbose"), check=check)


def _interrupt(root, with_checkpoint: bool) -> Case:
    ckpt = root / "ckpt"
    ckpt.mkdir(exist_ok=True)
    (ckpt / "checkpoint.pkl").write_bytes(b"")
    extra = [f"runtime.checkpoint_dir={ckpt}"] if with_checkpoint else []

    def check(res):
        assert res.returncode == 130
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("raysim: interrupted"), res.stderr
        assert (f"checkpoint in {ckpt}" in lines[0]) == with_checkpoint
        assert with_checkpoint or "set runtime.checkpoint_dir" in lines[0]
    name = "interrupted_with_checkpoint" if with_checkpoint else "interrupted"
    return Case(replay(root, None, *extra, name=name), check=check, setup=PLANT.format("KeyboardInterrupt"))


case("interrupt_without_checkpoint")(lambda root: _interrupt(root, False))
case("interrupt_with_checkpoint")(lambda root: _interrupt(root, True))


@case("multirun_reports_each_failed_job_after_the_others")
def _(root):
    sweep = root / "sweep"

    def check(res):
        one_error_line(res, "run #1 (seed=abc): seed: must be an integer")
        assert (sweep / "0" / "jobs.parquet").exists() and res.stdout.count("results: ") == 1
    return Case(["-m", "runtime=local", f"trace.path={trace_csv(root, 'good', GOOD)}", "trace.cache=false",
                 "seed=0,abc", f"hydra.sweep.dir={sweep}"], check=check)


@case("memory_limit_in_force")
def _(root):
    def check(res):
        assert res.returncode == 1 and "MemoryError" in res.stderr
    return Case(["--help"], check=check, setup="blob = bytearray(16 << 30)")


# --- running them -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every case's (Case, result): built in order, run two at a time."""
    root = tmp_path_factory.mktemp("bad_input")
    cases = {name: build(root) for name, build in CASES.items()}
    runner = CliRunner()
    try:
        results = runner.run_many([request(c.argv, cwd=root, setup=c.setup) for c in cases.values()])
    finally:
        runner.close()
    return {name: (c, res) for (name, c), res in zip(cases.items(), results)}


def test_there_are_enough_distinct_bad_inputs():
    assert len([n for n in CASES if not n.startswith(("bug_", "verbose_", "interrupt_", "memory_"))]) >= 30


@pytest.mark.parametrize("name", list(CASES))
def test_command(outcomes, name):
    c, res = outcomes[name]
    if c.check is not None:
        c.check(res)
    else:
        one_error_line(res, *c.parts, prefix=c.prefix)


def test_a_run_that_failed_says_why_in_its_folder(outcomes, capsys):
    """Every run folder of a command that failed (a user error, a bug, Ctrl-C; a sweep's failed job)
    holds failed.json with the exit status, the reason the console gave, the time and the command,
    beside raysim.log; a run that succeeded has none; `raysim report` skips a failed run's folder."""
    from raysim.cli import main
    from raysim.errors import FAILED_FILE, failed_run

    def setting(c: Case, key: str) -> Path | None:
        return next((Path(a.split("=", 1)[1]) for a in c.argv if a.startswith(key + "=")), None)

    folders = {}
    for name, (c, res) in outcomes.items():
        sweep = setting(c, "hydra.sweep.dir")
        for run in sorted(sweep.glob("[0-9]*")) if sweep else [setting(c, "hydra.run.dir")]:
            folders.setdefault(run, []).append(name)
    reasons = {}
    for run, (name, *others) in folders.items():
        c, res = outcomes[name]
        if run is not None and not others and (run / ".hydra").is_dir():  # (a folder of one case only)
            record = json.loads((run / FAILED_FILE).read_text()) if (run / FAILED_FILE).exists() else None
            if res.returncode == 0 or (run / "summary.csv").exists():
                assert record is None, (name, record)
                continue
            assert record is not None and (run / "raysim.log").exists(), name
            assert record["status"] == res.returncode and record["command"].startswith("python -m raysim "), name
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", record["time"]), record
            assert res.returncode != 2 or record["reason"] in res.stderr, (name, record["reason"])
            assert failed_run(run).endswith(f"(exit status {res.returncode}): {record['reason']}")
            reasons[name] = record["reason"]
    assert {outcomes[n][1].returncode for n in reasons} == {1, 2, 130}  # user errors, the planted bug, Ctrl-C
    assert reasons["interrupt_without_checkpoint"] == ("interrupted (no checkpoint: set runtime.checkpoint_dir to "
                                                       "resume)")
    assert reasons["bug_keeps_its_traceback"] == "a bug in raysim: ValueError: planted bug"
    assert reasons["multirun_reports_each_failed_job_after_the_others"].startswith("seed: must be an integer")
    bug = setting(outcomes["bug_keeps_its_traceback"][0], "hydra.run.dir")
    with pytest.raises(SystemExit) as end:
        main(["report", str(bug)])
    err = capsys.readouterr().err.strip().splitlines()
    assert end.value.code == 2 and len(err) == 1
    assert err[0].startswith(f"raysim: error: {bug}: the run there failed at "), err
    assert err[0].endswith("(exit status 1): a bug in raysim: ValueError: planted bug; nothing to report")


# --- result files read back by `raysim report`, damaged ---------------------------------------------------


def _foreign(path: Path) -> None:
    """A valid file of the same format with nothing a run writes in it."""
    if path.suffix == ".parquet":
        pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
    elif path.suffix == ".csv":
        path.write_text("a,b\n1,2\n")
    else:
        path.write_text("[1, 2, 3]\n")


def _wrong_type(path: Path) -> None:
    """One value or column of the wrong type (JSON: a layout's GPUs as text)."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        column = "jct" if path.name == "jobs.parquet" else "gpu_utilization"
        i = table.schema.get_field_index(column)
        pq.write_table(table.set_column(i, column, table.column(column).cast(pa.string())), path)
    elif path.suffix == ".csv":
        lines = path.read_text().splitlines()
        lines[-1] = lines[-1].rsplit(",", 1)[0] + ",lots"
        path.write_text("\n".join(lines) + "\n")
    else:
        report = json.loads(path.read_text())
        pools = next(iter(report["layout"].values()))
        pools[0]["gpus_per_node"] = "8"
        path.write_text(json.dumps(report))


def _lacking(path: Path) -> None:
    """A column (JSON: a key) the pages read, gone."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["jct" if path.name == "jobs.parquet" else "pending_gpujob_num"]), path)
    elif path.suffix == ".csv":
        frame = pd.read_csv(path)
        frame.drop(columns=["avg_queue" if path.name == "summary.csv" else "cause"]).to_csv(path, index=False)
    else:
        report = json.loads(path.read_text())
        del report["layout"]
        path.write_text(json.dumps(report))


DAMAGES = {"half": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
           "empty": lambda p: p.write_bytes(b""),
           "random": lambda p: p.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8))),
           "foreign": _foreign, "wrong_type": _wrong_type, "lacking": _lacking, "deleted": lambda p: p.unlink()}
RESULT_FILES = ("jobs.parquet", "summary.csv", "lost_by_cause.csv", "trace_report.json", "timeseries.parquet")
#: What a page says of an optional result file that is missing (any other file: one line naming it).
OPTIONAL = {"timeseries.parquet": "timeseries.parquet is missing: no over-time charts",
            "lost_by_cause.csv": "lost_by_cause.csv is missing: no table of the work lost per cause"}
#: The files a sweep's page and plots read of each run (the others: the runs' own pages).
SWEEP_READS = {"jobs.parquet": "jobs.parquet is missing in 1: not in the JCT distribution",
               "summary.csv": None,
               "timeseries.parquet": "timeseries.parquet is missing in 1: not in the over-time charts",
               "lost_by_cause.csv": "lost_by_cause.csv is missing in 1: not in the comparison per cause"}


@pytest.fixture(scope="module")
def result_folders(tmp_path_factory, venus_first_day) -> tuple[Path, Path]:
    """A run of the first Venus day with failures and checkpoints (so lost_by_cause.csv too), without
    out_jobs.csv, plots or page (`raysim report` writes them), and a multirun folder of three
    copies of it."""
    from hydra import compose, initialize_config_dir

    import raysim.cli  # noqa: F401  (the raysim_path resolver)
    from raysim.paths import CONF_DIR
    from raysim.run import run

    root = tmp_path_factory.mktemp("results")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[
            "+experiment=venus", "runtime=local", "failures=llama3", "failures.gpu_mtbf_h=2000",
            "checkpoint.interval_s=1800", f"trace.path={venus_first_day}", "report.plots=none", "report.html=false",
            "report.out_jobs=false"])
    run(cfg, root / "run")
    assert (root / "run" / "lost_by_cause.csv").exists()
    for k in range(3):
        shutil.copytree(root / "run", root / "sweep" / str(k))
    return root / "run", root / "sweep"


def report(folder: Path, capsys) -> tuple[int, list[str]]:
    """`raysim report <folder> --no-plots` in this process: (exit status, stderr's lines)."""
    from raysim.cli import main

    with pytest.raises(SystemExit) as end:
        main(["report", str(folder), "--no-plots"])
    return end.value.code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", RESULT_FILES)
def test_report_on_a_damaged_result_file_names_it(result_folders, tmp_path, capsys, name, damage):
    """A run folder: one line naming the file (and its row and column where it has them), exit
    status 2; an optional file missing: a page that says so."""
    run = tmp_path / "run"
    shutil.copytree(result_folders[0], run)
    DAMAGES[damage](run / name)
    status, err = report(run, capsys)
    if damage == "deleted" and name in OPTIONAL:
        assert status == 0 and err == []
        assert OPTIONAL[name] in (run / "report.html").read_text()
        return
    assert status == 2 and len(err) == 1 and err[0].startswith(f"raysim: error: {run / name}"), err
    if damage == "wrong_type" and name.endswith(".csv"):
        assert re.search(r", row \d+ \(line \d+\), column '\w+': not a number \(value 'lots'\)$", err[0]), err
    if damage in ("foreign", "lacking", "wrong_type") and name.endswith(".parquet"):
        assert "column" in err[0], err


@pytest.mark.parametrize("name", ["jobs.parquet", "timeseries.parquet"])
def test_report_on_a_parquet_file_damaged_inside_names_it(result_folders, tmp_path, capsys, name):
    """The column the page reads overwritten with random bytes in its first row group (the footer
    intact): Arrow fails while reading the rows, which is one line naming the file too."""
    run = tmp_path / "run"
    shutil.copytree(result_folders[0], run)
    meta = pq.read_metadata(run / name).row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema in ("jct", "time"))
    data = bytearray((run / name).read_bytes())
    start, size = chunk.data_page_offset, chunk.total_compressed_size
    data[start:start + size] = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes()
    (run / name).write_bytes(bytes(data))
    status, err = report(run, capsys)
    assert status == 2 and err == [f"raysim: error: {run / name}: " + err[0].split(": ", 3)[-1]], err
    assert err[0].endswith("): truncated or damaged") and "not a readable Parquet file (" in err[0]


def test_out_jobs_cut_short_by_a_damaged_jobs_file_is_not_left(result_folders, tmp_path, monkeypatch):
    """Rows that cannot be read after out_jobs.csv's first chunk: the error names jobs.parquet and
    the half-written table is removed (a later `raysim report` would take it as written)."""
    from raysim.errors import TraceError
    from raysim.report import batsim

    run = tmp_path / "run"
    shutil.copytree(result_folders[0], run)
    chunks = []

    def second_chunk_unreadable(*args):
        chunks.append(args)
        if len(chunks) == 2:
            raise OSError("Unexpected end of stream")  # (what Arrow raises for a damaged page)
        return batsim_rows(*args)

    batsim_rows = batsim.batsim_rows
    monkeypatch.setattr(batsim, "batsim_rows", second_chunk_unreadable)
    with pytest.raises(TraceError, match=r"jobs.parquet: not a readable Parquet file \(Unexpected end of stream\)"):
        batsim.write_out_jobs(run, chunk_rows=200)
    assert len(chunks) == 2 and not (run / "out_jobs.csv").exists()


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", RESULT_FILES)
def test_report_on_a_sweep_with_a_damaged_result_file(result_folders, tmp_path, capsys, name, damage):
    """A multirun folder whose run 1 has a damaged file the sweep reads: one line naming it, exit
    status 2; missing: run 1 left out of what needs the file, which the page (or, for its summary,
    the warning line) says. A file only the runs' own pages read is not read."""
    sweep = tmp_path / "sweep"
    shutil.copytree(result_folders[1], sweep)
    DAMAGES[damage](sweep / "1" / name)
    status, err = report(sweep, capsys)
    if name not in SWEEP_READS:
        assert status == 0 and err == []
    elif damage != "deleted":
        assert status == 2 and len(err) == 1 and err[0].startswith(f"raysim: error: {sweep / '1' / name}"), err
    elif name == "summary.csv":
        assert status == 0 and err == [f"raysim report: warning: run folder {sweep / '1'} left out of the sweep "
                                       "summary: no summary.csv: the run failed, was stopped or is still running"]
    else:
        assert status == 0 and err == [] and SWEEP_READS[name] in (sweep / "report.html").read_text()


def test_report_skips_a_run_that_failed_with_its_reason(result_folders, tmp_path, capsys):
    """A run that wrote its results and then failed (e.g. stopped by a guard after writing what it
    had): its failed.json keeps it out of the sweep, with the reason, on stderr, in sweep_summary.md and on
    the page."""
    from raysim.errors import write_failed_run

    sweep = tmp_path / "sweep"
    shutil.copytree(result_folders[1], sweep)
    write_failed_run(sweep / "1", "no job finished for 10 days: stopped", 2, "python -m raysim seed=1")
    status, err = report(sweep, capsys)
    assert status == 0 and len(err) == 1
    assert re.fullmatch(rf"raysim report: warning: run folder {re.escape(str(sweep / '1'))} left out of the sweep "
                        r"summary: failed at [-\d: ]+ UTC \(exit status 2\): no job finished for 10 days: stopped",
                        err[0]), err
    assert sorted(pd.read_csv(sweep / "sweep_summary.csv", dtype={"run": str})["run"].unique()) == ["0", "2"]
    assert err[0].removeprefix("raysim report: warning: ") in (sweep / "sweep_summary.md").read_text()
    assert "(exit status 2): no job finished for 10 days: stopped</li>" in (sweep / "report.html").read_text()


@pytest.mark.parametrize("name, text", [
    ("summary.csv", "vc,jobs,avg_jct,avg_queue,avg_jct\nall,2,10,1,12\n"),
    ("lost_by_cause.csv", "vc,cause,lost_gpu_h,cause\nall,failure,1.5,x\n")])
def test_a_result_csv_with_a_column_given_twice_is_refused(tmp_path, name, text):
    """A result table read back with a column twice (pandas would read the second as another column,
    "avg_jct.1"): one line naming the column, as the strict input files say it (one check in csvfile)."""
    from raysim.errors import TraceError
    from raysim.report.run_files import read_lost_by_cause, read_summary

    path = tmp_path / name
    path.write_text(text)
    read = read_summary if name == "summary.csv" else read_lost_by_cause
    with pytest.raises(TraceError) as err:
        read(path)
    column = "avg_jct" if name == "summary.csv" else "cause"
    assert str(err.value) == f"{path}, column '{column}': column given twice"


# --- config values, checked in-process (the command line above shows how any of them is reported) ---


@pytest.mark.parametrize("overrides,parts", [
    (["seed=-1"], ["seed:", "must be at least 0"]),
    (["seed=1.5"], ["seed:", "(value 1.5)"]),
    (["runtime=ray", "ray.num_cpus=-2"], ["ray.num_cpus:"]),
    (["ray.vcs_per_actor=some"], ["ray.vcs_per_actor:", "or auto"]),
    (["ray.vcs_per_actor=2.5"], ["ray.vcs_per_actor: must be an integer (value 2.5)"]),
    (["ray.packing=size"], ["ray.packing:", "cost, count", "(value 'size')"]),
    # (1e300 s is positive: the message says the bound it breaks, not "must be a positive number")
    (["sim.stall_s=1e300"], ["sim.stall_s: must be at most 1,000,000,000,000 (value 1e+300)"]),
    (["sim.stall_s=nan"], ["sim.stall_s: must be a finite integer (value nan)"]),
    (["sim.stall_s=0"], ["sim.stall_s: must be at least 1 (value 0)"]),
    (["sim.stall_s=soon"], ["sim.stall_s: must be a positive number of seconds, auto or off (value 'soon')"]),
    (["runtime.checkpoint_every=0"], ["runtime.checkpoint_every:"]),
    (["runtime.resume=true"], ["runtime.resume:", "checkpoint_dir"]),
    (["runtime.name=cloud"], ["runtime.name:", "local, ray"]),
    (["sim.compat=bogus"], ["sim.compat:", "clean, lucid"]),
    (["sim.sample_interval=0"], ["sim.sample_interval:"]),
    (["sim.network=maybe"], ["sim.network:"]),
    (["sim.network=on", "network.duty=2"], ["network.duty:", "at most 1"]),
    (["sim.network=on", "network.nic_gbps=0"], ["network.nic_gbps:", "at least 0.01"]),
    # (1e300 Gb/s per GPU, or a NIC of 1e-300, overflowed the slowed jobs' end times into a traceback)
    (["sim.network=on", "network.nic_gbps=1e-300"], ["network.nic_gbps:", "at least 0.01"]),
    (["sim.network=on", "network.gbps_per_gpu=1e300"], ["network.gbps_per_gpu:", "at most 10,000"]),
    (["trace.on_error=bogus"], ["trace.on_error:", "raise, skip"]),
    (["trace.format=bogus"], ["trace.format:"]),
    (["trace.state_filter=COMPLETED"], ["trace.state_filter:", "must be a list"]),
    (["policy.name=bogus"], ["policy.name:", "unknown policy"]),
    (["policy=gandiva"], ["estimator.source:", "round-based"]),
    (["policy=max_min_fairness", "estimator.source=none", "quota=borrow"], ["quota:", "round-based"]),
    (["placer.name=bogus"], ["placer.name:", "unknown placer"]),
    (["estimator.source=file"], ["estimator.path:", "not set"]),
    (["estimator.source=psychic"], ["estimator.source:"]),
    (["estimator.source=model", "estimator.period_days=0.3"], ["estimator.period_days:", "runtime.window_s"]),
    (["cluster.gpus_per_node=eight"], ["cluster.gpus_per_node:"]),
    (["policy=lucid", "policy.profiler.nodes=-1"], ["policy.profiler.nodes:"]),
    (["spot.guarantee_s=-1"], ["spot.guarantee_s:", "must be at least 0"]),
    (["spot.victims=oldest"], ["spot.victims:", "youngest"]),
])
def test_config_value(overrides, parts):
    from hydra import compose, initialize_config_dir

    import raysim.cli  # noqa: F401  (the raysim_path resolver)
    from raysim.errors import ConfigError, user_error_message
    from raysim.paths import CONF_DIR
    from raysim.run.config import check_cluster_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=venus", "estimator.source=oracle", *overrides])
    with pytest.raises(ValueError) as err:
        check_cluster_config(cfg)
    assert isinstance(err.value, ConfigError) or "policy." in str(err.value)
    message = user_error_message(err.value)
    assert message is not None and "\n" not in message
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def test_mode_must_be_known(tmp_path):
    from omegaconf import OmegaConf

    from raysim.errors import ConfigError
    from raysim.run import run

    with pytest.raises(ConfigError, match="mode: must be one of cluster, fgd"):
        run(OmegaConf.create({"mode": "bogus"}), tmp_path)


@pytest.mark.parametrize("override,words", [
    ("fgd.policy=bogus", "fgd.policy: must be one of random, dotprod"),
    ("fgd.tune=-1", "fgd.tune: must be greater than 0"),
    ("seed=-3", "seed: must be at least 0"),
])
def test_fgd_experiment_checks_its_config_before_reading(tmp_path, override, words):
    """The FGD inflation experiment validates its whole config first: one line naming the key."""
    from hydra import compose, initialize_config_dir

    import raysim.cli  # noqa: F401
    from raysim.errors import ConfigError, user_error_message
    from raysim.paths import CONF_DIR
    from raysim.run.fgd import run_fgd

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=["+experiment=fgd_openb", override])
    with pytest.raises(ConfigError) as err:
        run_fgd(cfg, tmp_path)
    message = user_error_message(err.value)
    assert words in message and "\n" not in message
