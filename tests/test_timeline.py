"""timeline.json, the per-job timeline in Chrome's trace event format (raysim.report.timeline,
docs/outputs.md): a Venus day's timeline has the fields each event's phase needs, one slice per job
that ran in the day, tracks whose slices never overlap, and capacity events as instants."""

from __future__ import annotations

import json
import logging

import pyarrow.parquet as pq
import pytest
from simutil import NO_PAGES
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run import run

DAY = 86_400
#: Fields every event has (metadata events carry ts 0), and those of each phase.
FIELDS = ("name", "ph", "ts", "pid", "tid")
PHASE_FIELDS = {"X": ("dur", "args"), "i": ("s",), "M": ("args",)}


def run_timeline(out, experiment="venus", *overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"+experiment={experiment}", "runtime=local",
                                                        "report.timeline=true", *NO_PAGES, *overrides])
    run(cfg, out)
    return json.loads((out / "timeline.json").read_text()), pq.read_table(out / "jobs.parquet").to_pandas()


@pytest.fixture(scope="module")
def venus_day(tmp_path_factory):
    """The shipped Venus-like week under Tiresias (it preempts), its first day drawn."""
    return run_timeline(tmp_path_factory.mktemp("day") / "run", "venus", "policy=tiresias",
                        f"report.timeline_range=[0,{DAY}]")


def check_format(trace):
    """Every event has the fields its phase needs; every track and process used is named."""
    events = trace["traceEvents"]
    for event in events:
        assert all(key in event for key in FIELDS + PHASE_FIELDS[event["ph"]]), event
        assert isinstance(event["ts"], (int, float)) and isinstance(event["pid"], int) and isinstance(event["tid"], int)
    for event in (e for e in events if e["ph"] == "X"):
        assert event["dur"] >= 0
    for event in (e for e in events if e["ph"] == "i"):
        assert event["s"] in ("g", "p", "t")
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    processes = {e["pid"] for e in events if e["name"] == "process_name"}
    used = {(e["pid"], e["tid"]) for e in events if e["ph"] in ("X", "i")}
    assert used <= named and {pid for pid, _ in used} <= processes
    return events


def test_a_venus_days_timeline_has_one_slice_per_job_run(venus_day):
    trace, jobs = venus_day
    events = check_format(trace)
    slices = [e for e in events if e["ph"] == "X"]
    ran = jobs[jobs.start_time.notna() & (jobs.start_time < DAY) & (jobs.end_time.isna() | (jobs.end_time >= 0))]
    assert sorted(e["args"]["job_id"] for e in slices) == sorted(ran.job_id)  # each job that ran in the day, once
    by_id = jobs.set_index("job_id")
    for e in slices:
        job = by_id.loc[e["args"]["job_id"]]
        assert e["name"] == f"job {e['args']['job_id']}"
        assert e["ts"] == job.start_time * 1_000_000 and e["ts"] + e["dur"] == job.end_time * 1_000_000
        assert e["args"]["preemptions"] == job.preemptions and e["args"]["queue"] == job.queue
        assert e["args"]["waiting"] == job.start_time - job.submit_time
    assert any(e["args"]["preemptions"] for e in slices)
    tracks = {}
    for e in sorted(slices, key=lambda e: e["ts"]):
        key = (e["pid"], e["tid"])
        assert tracks.get(key, float("-inf")) <= e["ts"], "slices on one track overlap"
        tracks[key] = e["ts"] + e["dur"]
    assert trace["otherData"]["raysim"]["left_out"]["outside_range"] == len(jobs) - len(ran)


def test_the_job_limit_keeps_the_first_to_start_and_says_how_many_it_left_out(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="raysim"):
        trace, jobs = run_timeline(tmp_path / "run", "venus", "report.timeline_max_jobs=100")
    slices = [e for e in check_format(trace) if e["ph"] == "X"]
    first = jobs.sort_values(["start_time"], kind="stable").job_id[:100]
    assert sorted(e["args"]["job_id"] for e in slices) == sorted(first)
    assert trace["otherData"]["raysim"]["left_out"]["past_max_jobs"] == len(jobs) - 100
    assert f"left out {len(jobs) - 100:,} jobs past report.timeline_max_jobs" in caplog.text


def test_capacity_events_are_instants_on_their_nodes(tmp_path):
    trace, _ = run_timeline(tmp_path / "run", "venus_maintenance", "policy=tiresias")
    events = check_format(trace)
    instants = [e for e in events if e["ph"] == "i"]
    assert {e["args"]["event"] for e in instants} >= {"down", "up"}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert all(names[e["pid"], e["tid"]] == f"node {e['args']['node']}" for e in instants)
