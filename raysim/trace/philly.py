"""Microsoft Philly traces (msr-fiddle/philly-traces): ``cluster_job_log``, a JSON list of jobs.

Each job has jobid, user, vc, status (Pass, Killed, Failed), submitted_time and a list of scheduling
attempts, each with start_time, end_time and detail: [{ip, gpus: [...]}]. Times are strings
``YYYY-MM-DD HH:MM:SS`` or "None". Errors name the job by its 1-based position in the list
(``job N``) and the JSON key (``attempts[2].end_time``). Rules:

- job_id is the job's position in the list (jobid strings must be unique); status maps to raysim's
  states: Pass -> COMPLETED, Killed -> CANCELLED, Failed -> FAILED. cpu_num is 0 (not recorded).
- GPUs: those listed in the detail of the first attempt that lists any (Philly's own analysis
  notebook uses the first attempt).
- Duration, `duration="sum"` (default): the sum of the attempts' run times (end - start, attempts
  missing a time are left out), i.e. the GPU time the job held; the gaps between attempts are
  requeueing, which the simulator produces itself. A job whose attempts ran two or more times keeps
  them in ``attempts_s`` (runs and gaps, raysim.trace.attempts), which ``trace.failed=replay``
  replays; attempts shorter than a second are left out of it, a run that starts before the one
  before ended follows with a gap of 0. `duration="span"`: last end - first start, as in
  Philly's notebook.
- Dropped and counted, not errors: jobs without attempts (never started), jobs whose last attempt
  has no end_time (still running when the trace was taken), jobs with no attempt that has both
  times, jobs with no GPUs, jobs with duration 0.
- VC sizes: a ``vc_config.csv`` beside the trace wins; else each VC gets enough nodes for its peak
  concurrent GPU use over the attempts (and its largest job), recorded in the metadata.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.trace.attempts import COLUMN as ATTEMPTS, format_attempts
from raysim.errors import SkipReport, TraceError
from raysim.settings import setting
from raysim.trace.layout import trace_layout, with_layout
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

STATES = {"Pass": "COMPLETED", "Killed": "CANCELLED", "Failed": "FAILED"}
DURATION_RULES = ("sum", "span")
JOB_KEYS = ("jobid", "user", "vc", "status", "submitted_time", "attempts")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
COLUMNS = {"job_id": "jobid", "submit_time": "submitted_time", "state": "status",
           "gpu_num": "attempts[].detail[].gpus", "duration": "attempts[].start_time/end_time"}


@dataclass(frozen=True)
class PhillyOptions:
    """The Philly reader's options (trace.reader_options)."""

    duration: str = setting("sum", "a job's duration: the sum of its attempts' run times, or last end - first "
                            "start (Philly's notebook)", choices=DURATION_RULES)


def read_philly(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
                bounds: Bounds = Bounds(), duration: str) -> tuple[pa.Table, SkipReport]:
    """Read a Philly ``cluster_job_log``; `vc_nodes` None derives the layout from the trace."""
    name = str(path)
    jobs = _load(path)
    source = Source(name, unit="job", columns=COLUMNS)
    report = SkipReport(file=name)
    checks = RowChecks(source, np.arange(1, len(jobs) + 1))
    job, att = _flatten(jobs, checks)

    start, bad_start = _seconds(att["start"])
    end, bad_end = _seconds(att["end"])
    where = att["job"]
    checks.flag(_any(where, bad_start, len(jobs)), "attempt start_time is not a datetime",
                _first(where, bad_start, att["col"] + ".start_time", len(jobs)),
                _first(where, bad_start, att["start"], len(jobs)))
    checks.flag(_any(where, bad_end, len(jobs)), "attempt end_time is not a datetime",
                _first(where, bad_end, att["col"] + ".end_time", len(jobs)),
                _first(where, bad_end, att["end"], len(jobs)))
    backwards = end < start
    checks.flag(_any(where, backwards, len(jobs)), "attempt ends before it starts",
                _first(where, backwards, att["col"] + ".end_time", len(jobs)),
                _first(where, backwards, att["end"], len(jobs)))
    status = job["status"]
    checks.flag(~pd.Series(status, dtype=object).isin(list(STATES)).to_numpy() & job["ok"],
                f"unknown status (expected one of {list(STATES)})", "status", status)
    checks.flag(pd.Series(job["jobid"], dtype=object).duplicated().to_numpy() & job["ok"],
                "duplicate jobid", "jobid", job["jobid"])
    keep = checks.finish(report, on_error)

    # per job: GPUs of the first attempt listing any; run time from the attempts with both times
    n = len(jobs)
    ran = ~np.isnan(start) & ~np.isnan(end) & ~backwards
    n_att = np.bincount(where, minlength=n)
    unfinished = n_att > 0
    unfinished[unfinished] = np.isnan(end[np.cumsum(n_att)[unfinished] - 1])  # attempts in job order
    gpus = _first(where, att["gpus"] > 0, att["gpus"], n)
    gpus = np.where(pd.isna(gpus), 0, gpus).astype(np.int64)
    if duration == "sum":
        seconds = np.bincount(where[ran], (end - start)[ran], minlength=n)
    else:
        first_start = pd.Series(start[ran]).groupby(where[ran]).min()
        last_end = pd.Series(end[ran]).groupby(where[ran]).max()
        seconds = np.zeros(n)
        seconds[first_start.index] = last_end.to_numpy() - first_start.to_numpy()
    n_ran = np.bincount(where[ran], minlength=n)
    rows = np.arange(1, n + 1)
    report.drop(keep, (
        (n_att == 0, "filtered: never started (no attempts)"),
        (unfinished, "filtered: unfinished when the trace was taken (last attempt has no end_time)"),
        (n_ran == 0, "filtered: never ran (no attempt with start_time and end_time)"),
        (gpus == 0, "filtered: CPU-only job (gpu_num = 0)"),
        (np.rint(seconds) == 0, "filtered: never ran (duration 0)"),
    ))

    idx = np.flatnonzero(keep)
    source.rows = rows[idx]
    frame = pd.DataFrame({
        "job_id": rows[idx], "user": job["user"][idx], "vc": job["vc"][idx], "gpu_num": gpus[idx],
        "cpu_num": np.zeros(len(idx), dtype=np.int64), "state": [STATES[s] for s in status[idx]],
        "submit_time": job["submitted"][idx], "duration": np.rint(seconds[idx]).astype(np.int64),
    })
    if duration == "sum":
        runs = _runs(where, start, end, ran, n)[idx]
        if any(r is not None for r in runs):
            frame[ATTEMPTS] = runs
    if vc_nodes is None:
        mine = keep[where] & ran
        vc_nodes = trace_layout(job["vc"][where[mine]], start[mine], end[mine], att["gpus"][mine],
                                frame["vc"], frame["gpu_num"], gpus_per_node)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    return with_layout(table, vc_nodes), report


read_philly.Settings = PhillyOptions


def _runs(where: np.ndarray, start: np.ndarray, end: np.ndarray, ran: np.ndarray, n: int) -> np.ndarray:
    """Per job, the ``attempts_s`` text of its attempts that ran (raysim.trace.attempts: runs and the
    gaps between one's end and the next one's start, a negative gap as 0), or None where fewer than
    two ran for at least a second."""
    out = np.full(n, None, dtype=object)
    lasting = np.flatnonzero(ran & (end - start >= 1))  # (attempts are in job order)
    jobs, first, counts = np.unique(where[lasting], return_index=True, return_counts=True)
    for i, a, k in zip(jobs[counts > 1], first[counts > 1], counts[counts > 1]):
        mine = lasting[a:a + k]
        s, e = start[mine], end[mine]
        out[i] = format_attempts(e - s, np.maximum(s[1:] - e[:-1], 0))
    return out


def _load(path) -> list:
    try:
        with Path(path).open(encoding="utf-8") as f:
            jobs = json.load(f)
    except FileNotFoundError:
        raise TraceError(str(path), "trace file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(str(path), f"not a readable JSON file: {exc}") from None
    if not isinstance(jobs, list):
        raise TraceError(str(path), f"expected a JSON list of jobs, found {type(jobs).__name__}")
    return jobs


def _flatten(jobs: list, checks: RowChecks) -> tuple[dict, dict]:
    """Job-level and attempt-level arrays; malformed jobs are flagged in `checks` (and have no
    attempts). Attempt arrays: job (index), col ("attempts[k]"), start, end, gpus."""
    n = len(jobs)
    job = {k: np.full(n, None, dtype=object) for k in ("jobid", "user", "vc", "status", "submitted")}
    att = {"job": [], "col": [], "start": [], "end": [], "gpus": []}
    problem = np.full(n, None, dtype=object)
    column = np.full(n, None, dtype=object)
    value = np.full(n, None, dtype=object)
    for i, entry in enumerate(jobs):
        found = _problem(entry)
        if found:
            problem[i], column[i], value[i] = found
            continue
        for key, out in zip(JOB_KEYS, ("jobid", "user", "vc", "status", "submitted")):
            job[out][i] = entry[key]
        for k, attempt in enumerate(entry["attempts"]):
            att["job"].append(i)
            att["col"].append(f"attempts[{k}]")
            att["start"].append(attempt["start_time"])
            att["end"].append(attempt["end_time"])
            att["gpus"].append(sum(len(d["gpus"]) for d in attempt["detail"]))
    for reason in dict.fromkeys(p for p in problem if p is not None):
        mask = problem == reason
        checks.flag(mask, reason, column, value)
    job["ok"] = pd.isna(problem)
    att = {k: np.asarray(v, dtype=np.int64 if k in ("job", "gpus") else object) for k, v in att.items()}
    return job, att


def _problem(entry) -> tuple[str, str | None, object] | None:
    """(reason, key, value) for a job entry that does not have Philly's structure, else None."""
    if not isinstance(entry, dict):
        return "job is not a JSON object", None, type(entry).__name__
    for key in JOB_KEYS:
        if key not in entry:
            return "missing key", key, None
    for key in ("jobid", "user", "vc", "status"):
        if not isinstance(entry[key], str) or not entry[key]:
            return "not a non-empty string", key, entry[key]
    if not isinstance(entry["attempts"], list):
        return "attempts is not a list", "attempts", entry["attempts"]
    for k, attempt in enumerate(entry["attempts"]):
        where = f"attempts[{k}]"
        if not isinstance(attempt, dict):
            return "attempt is not a JSON object", where, attempt
        for key in ("start_time", "end_time", "detail"):
            if key not in attempt:
                return "missing key", f"{where}.{key}", None
        if not isinstance(attempt["detail"], list):
            return "detail is not a list", f"{where}.detail", attempt["detail"]
        for d, detail in enumerate(attempt["detail"]):
            if not isinstance(detail, dict) or not isinstance(detail.get("gpus"), list):
                return "detail entry has no list of gpus", f"{where}.detail[{d}].gpus", detail
    return None


def _seconds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Seconds since 1970 (NaN where missing: None, "None" or ""), and the mask of unparsable ones."""
    s = pd.Series(values, dtype=object)
    missing = s.isna().to_numpy() | s.isin(["None", ""]).to_numpy()
    stamps = pd.to_datetime(s.where(~missing), format=TIME_FORMAT, errors="coerce")
    seconds = (stamps - pd.Timestamp(0)).dt.total_seconds().to_numpy()
    return seconds, np.isnan(seconds) & ~missing


def _any(where: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """Per job: does any of its attempts satisfy `mask`?"""
    return np.bincount(where[mask], minlength=n) > 0


def _first(where: np.ndarray, mask: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per job: `values` of its first attempt satisfying `mask` (None for jobs with none)."""
    out = np.full(n, None, dtype=object)
    jobs, first = np.unique(where[mask], return_index=True)
    out[jobs] = np.asarray(values, dtype=object)[mask][first]
    return out
