"""Simulate a run spec over a runtime: VC groups, the coordinator, and the result files."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.errors import UserError
from raysim.policy import policy_class
from raysim.quota import GLOBAL_VC
from raysim.quota.cohorts import decided_by_coordinator
from raysim.quota.exchange import EpochExchange
from raysim.report.results import merge_profiling, merge_series, write_jobs
from raysim.runtime.codec import jobs_batch
from raysim.runtime.coordinator import Coordinator, check_resumable
from raysim.runtime.fingerprint import run_fingerprint
from raysim.runtime.sink import ResultSink, read_records
from raysim.runtime.spec import RunSpec
from raysim.run.grouping import vc_costs, vc_groups
from raysim.runtime.timing import BOUND_CPUS
from raysim.trace.load import Trace
from raysim.trace.schema import arrival_seconds

log = logging.getLogger("raysim")

#: sim.stall_s=auto: a VC's jobs may go this many times the trace's longest job without progress ...
STALL_JOBS = 10
#: ... and at least this long (s): room for repairs, maintenance and nodes that join late
STALL_MIN_S = 30 * 86_400

#: Beside a checkpoint: the finished run's result files and fingerprint.
FINISHED = "finished"
RESULT_FILES = ("jobs.parquet", "timeseries.parquet")


def simulate_to(out_dir, trace: Trace, spec: RunSpec, estimates=None, *, runtime: str = "local",
                window_s: int = 604_800, vcs_per_actor: int | str = 1, packing: str = "count",
                ray_options: dict | None = None,
                checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False, progress: bool = False,
                executor=None, job_extra: dict | None = None, estimator=None, stall_s: int | str | None = None) -> dict:
    """Simulate every VC of `trace`, writing `out_dir`/jobs.parquet and timeseries.parquet.

    Results stream to disk as Parquet row groups while the run goes on. `runtime` is "local"
    (in-process) or "ray" (actors); both write identical files. `job_extra` adds per-job inputs
    (GPU-type ids, workload ids, share scores) to the job batches; `estimator` (e.g. a
    PeriodicDurationEstimator) fills in duration estimates while the run goes on. Returns the
    run's event and window counts and how many lost actors were rebuilt.

    The VCs are packed into groups (one process or actor each) by `vcs_per_actor` and `packing`:
    "count" in layout order, "cost" by their estimated cost (raysim.run.grouping); an `executor`
    given must hold the same groups.

    With quota lending (`spec.quota`, mode borrow) each VC group decides the loans of the cohorts
    it holds whole; when a cohort is split over groups the coordinator decides its loans, and its
    windows then last at most `quota.period_s` and end at its epochs (the period must be a
    multiple of the window). Mode global routes every job to the one cluster-wide VC of the spec's
    merged layout.

    With `checkpoint_dir`, checkpoints carry the run's fingerprint (raysim.runtime.fingerprint) and
    `resume` refuses one written by a run with other inputs, naming them. A finished run leaves its
    result files beside its checkpoint; resuming it re-emits them without simulating again.

    The counts include `timing` (raysim.runtime.timing.RunTiming.report): where the simulation's
    time went per window and VC group, and the speedup bound for k CPUs with the VCs packed as
    `vcs_per_actor=auto` would pack them for k (by `packing`); on Ray also `ray_nodes`
    (raysim.runtime.ray_backend.RayExecutor.placement): the Ray node of the driver and of each group.

    `stall_s` (seconds, "auto": `stall_bounds`; None: no guard): a run in which some VC has unfinished
    jobs and none of them has finished or kept more work for longer stops there, writes its result
    files (jobs not finished have no end; with `checkpoint_dir`, none: its checkpoint holds the run, to
    be resumed with a larger bound) and raises RunStalled.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = None
    if checkpoint_dir:
        fingerprint = run_fingerprint(trace.table, spec, estimates, job_extra, estimator)
        finished = Path(checkpoint_dir) / FINISHED
        if resume and (finished / "run.json").exists():
            return _reemit_finished(finished, fingerprint, out_dir)
        shutil.rmtree(finished, ignore_errors=True)  # a new run: an earlier finished one is superseded
    if executor is None and runtime == "ray" and vcs_per_actor == "auto":
        from raysim.runtime.ray_backend import ensure_ray

        ensure_ray((ray_options or {}).get("address"), (ray_options or {}).get("num_cpus"))  # to count its CPUs
    costs = _packing_costs(packing, trace, spec)
    groups = vc_groups(spec.vcs, vcs_per_actor, spec.quota, costs=costs)
    exchange = None
    split = decided_by_coordinator(spec.quota, spec.vcs, groups)
    if split:  # the coordinator decides the cohorts split over groups: windows end at epochs
        log.info("quota=borrow: %d VC(s) of cohort(s) %s are spread over VC groups (vcs_per_actor=%s); the "
                 "coordinator decides their loans, in windows of %d s (vcs_per_actor=auto keeps every cohort in "
                 "one group)", len(split), ", ".join(sorted({spec.quota.of(vc).cohort for vc in split})),
                 vcs_per_actor, spec.quota.period_s)
        window_s = min(window_s, spec.quota.period_s)
        exchange = EpochExchange(spec.quota, spec.t0, window_s, split)
    if executor is None:
        executor = make_executor(runtime, spec, groups, ray_options or {})
    # with checkpoints, the partial result files must outlive this process: they live beside them
    spool = Path(checkpoint_dir) / "results" if checkpoint_dir else out_dir / ".partial"
    sink = ResultSink(spool, spec.vcs)
    batch = jobs_batch(trace.table, estimates, job_extra)
    ticks = spec.params.ticks_per_s
    if ticks != 1:  # the simulator's clock counts finer ticks (raysim.sim.params.SimParams.ticks_per_s)
        batch, window_s = in_ticks(batch, trace.table, ticks), window_s * ticks
    if spec.quota.mode == "global":  # every job waits in the one cluster-wide queue
        batch = batch.set_column(batch.schema.get_field_index("vc"), "vc", pa.array([GLOBAL_VC] * batch.num_rows,
                                                                                   pa.string()).dictionary_encode())
    stall, stall_why = stall_bounds(batch, spec.vcs, stall_s, ticks)
    coordinator = Coordinator(executor, batch, groups, sink,
                              t0=spec.t0, window_s=window_s, checkpoint_dir=checkpoint_dir,
                              checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                              origin=trace.origin, ticks_per_s=ticks, estimator=estimator, fingerprint=fingerprint,
                              dispatch_s=dispatch_span(window_s, spec, estimator), exchange=exchange,
                              stall_ticks=stall,
                              packings={k: vc_groups(spec.vcs, "auto", spec.quota, cpus=k, costs=costs)
                                        for k in BOUND_CPUS})
    end, stage = coordinator.run()
    if coordinator.stalled is not None and checkpoint_dir:  # (its spool stays as the checkpoint left it)
        raise RunStalled(f"{coordinator.stalled}; the checkpoint in {checkpoint_dir} holds the run up to there: to "
                         f"go on, resume it (runtime.resume=true) with a larger sim.stall_s (now {stall_why}) or with "
                         "it off")
    files = sink.close(end)
    write_jobs(trace.table, merge_profiling(read_records(files["records"]), stage), out_dir / "jobs.parquet",
               ticks_per_s=ticks, gpu_types=spec.catalog.gpu_types,
               causes=None if spec.capacity is None else spec.capacity.causes, checkpoint=spec.checkpoints,
               attempts=spec.attempts is not None, spot=spec.spot is not None, policy_columns=policy_class(spec.policy).result_columns)
    merge_series(files["series"], out_dir / "timeseries.parquet", ticks_per_s=ticks)
    counts = {"events": coordinator.events, "windows": coordinator.windows_run, "recoveries": coordinator.recoveries}
    if exchange is not None:
        counts.update(epochs=exchange.epochs, loan_operations=exchange.operations)
    if coordinator.stalled is not None:
        shutil.rmtree(spool, ignore_errors=True)
        raise RunStalled(f"{coordinator.stalled}{retired_note(out_dir / 'timeseries.parquet')}; jobs.parquet and "
                         f"timeseries.parquet hold the run up to there (unfinished jobs have no end); to go on, raise "
                         f"sim.stall_s (now {stall_why}) or set it to off")
    if checkpoint_dir:
        _keep_finished(Path(checkpoint_dir) / FINISHED, out_dir, fingerprint, counts)
    else:
        shutil.rmtree(spool, ignore_errors=True)
    counts["timing"] = coordinator.timing.report(time.perf_counter() - started)
    placement = executor.placement()
    if placement is not None:
        counts["ray_nodes"] = placement
    return counts


def _packing_costs(packing: str, trace: Trace, spec: RunSpec) -> dict | None:
    """Per VC, its estimated cost under `packing` "cost"; None under "count" (raysim.run.grouping)."""
    if packing == "count":
        return None
    if packing == "cost":
        return vc_costs(trace.table, spec.layout)
    raise ValueError(f"packing must be 'cost' or 'count', not {packing!r}")


def retired_note(series: Path) -> str:
    """Where a retirement policy retired nodes (the time series' `retired_nodes`), a note of how many
    per VC for a stalled run's line (their jobs may need more nodes than are left); else ''."""
    from raysim.report.summary import repair_counts
    from raysim.sim.recorder import COUNT_COLUMNS

    column = COUNT_COLUMNS["retired"]
    if column not in pq.read_schema(series).names:
        return ""
    retired = {vc: c[column] for vc, c in repair_counts(series, [column]).items() if c[column] and vc != "all"}
    if not retired:
        return ""
    return (" (retired for good: " + ", ".join(f"{n:,} node(s) of VC {vc}" for vc, n in retired.items())
            + "; a job needing more nodes than its VC has left never starts)")


class RunStalled(UserError):
    """A run stopped by its stall guard (`sim.stall_s`): its jobs were not progressing (one line)."""


def stall_bounds(batch: pa.Table, vcs, stall_s: int | str | None, ticks: int = 1) -> tuple[dict | None, str]:
    """Per VC of `vcs`, the stall guard's bound in clock ticks (None: no guard), and the setting in
    words. `stall_s` is a number of seconds, None or "auto": STALL_JOBS times the longest job the VC
    is given in `batch` (a job batch, durations in ticks), at least STALL_MIN_S. In a run that ends,
    a VC's jobs go without progress only while its running jobs run (each ends within its duration
    over its speed) or its queue waits for nodes (a repair, a late join, a loan): so no such VC is
    stopped unless a job runs slower than 1/STALL_JOBS of its speed or nodes stay away longer."""
    if stall_s is None:
        return None, "off"
    if stall_s != "auto":
        return dict.fromkeys(vcs, int(stall_s) * ticks), f"{int(stall_s):,} s"
    longest = dict.fromkeys(vcs, 0)
    if batch.num_rows:
        by = batch.select(["vc", "duration"]).group_by("vc").aggregate([("duration", "max")])
        longest.update(zip(by.column("vc").to_pylist(), by.column("duration_max").to_pylist()))
    bounds = {vc: max(STALL_JOBS * int(d), STALL_MIN_S * ticks) for vc, d in longest.items()}
    return bounds, f"auto: {STALL_JOBS} x the VC's longest job, at least {STALL_MIN_S // 86_400} days"


def in_ticks(batch: pa.Table, trace: pa.Table, ticks: int) -> pa.Table:
    """A job batch on a clock of `ticks` per second: submit times from the exact arrivals where the
    trace has them (raysim.trace.schema.arrival_seconds), durations scaled."""
    submit = np.rint(arrival_seconds(trace) * ticks).astype(np.int64)
    batch = batch.set_column(batch.schema.get_field_index("submit_time"), "submit_time", pa.array(submit))
    duration = batch.column("duration").to_numpy() * ticks
    return batch.set_column(batch.schema.get_field_index("duration"), "duration", pa.array(duration))


#: arrivals leave the pass-through stage at least this many seconds at a time
DISPATCH_MIN_S = 86_400


def dispatch_span(window_s: int, spec: RunSpec, estimator) -> int:
    """Seconds of arrivals the stage hands the VC groups at once: a window's worth under a stage
    with its own events (the Lucid profiler) or an online estimator (estimates depend on the jobs
    finished by dispatch); else at least a day, so that short windows do not each pay for it."""
    if spec.profiler is not None or estimator is not None or window_s >= DISPATCH_MIN_S:
        return window_s
    return -(-DISPATCH_MIN_S // window_s) * window_s


def _keep_finished(folder: Path, out_dir: Path, fingerprint: dict, counts: dict) -> None:
    """After a checkpointed run: its result files and fingerprint, so a resume re-emits them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in RESULT_FILES:
        shutil.copyfile(out_dir / name, folder / name)
    (folder / "run.json").write_text(json.dumps({"fingerprint": fingerprint, "counts": counts}, sort_keys=True))


def _reemit_finished(folder: Path, fingerprint: dict, out_dir: Path) -> dict:
    """Resuming a run that had finished: after the same fingerprint check as any resume, copy its
    result files into `out_dir` instead of simulating anything again."""
    recorded = json.loads((folder / "run.json").read_text())
    check_resumable(folder.parent, recorded.get("fingerprint"), fingerprint)
    log.warning("runtime.resume: the run checkpointed in %s had finished; its result files are copied, "
                "nothing is simulated again", folder.parent)
    for name in RESULT_FILES:
        shutil.copyfile(folder / name, out_dir / name)
    return {**recorded["counts"], "resumed_finished": True}


def simulate(trace: Trace, spec: RunSpec, estimates=None, **kwargs) -> tuple[pa.Table, pa.Table]:
    """`simulate_to` into a temporary folder; returns the (jobs, time series) tables read back.
    For small runs and tests: large runs should use simulate_to and read what they need."""
    with tempfile.TemporaryDirectory(prefix="raysim-") as tmp:
        simulate_to(tmp, trace, spec, estimates, **kwargs)
        return pq.read_table(Path(tmp) / "jobs.parquet"), pq.read_table(Path(tmp) / "timeseries.parquet")


def make_executor(runtime: str, spec: RunSpec, groups, ray_options: dict):
    """The executor of `runtime`: "local" (in-process) or "ray" (actors on a local or given Ray)."""
    if runtime == "local":
        from raysim.runtime.local import LocalExecutor

        return LocalExecutor(spec, groups)
    if runtime == "ray":
        from raysim.runtime.ray_backend import RayExecutor, ensure_ray

        ensure_ray(ray_options.get("address"), ray_options.get("num_cpus"))
        lost = ray_options.get("lost_after_s")
        return RayExecutor(spec, groups, actor_cpus=float(ray_options.get("actor_cpus", 0.1)),
                           slow_factor=float(ray_options.get("slow_factor", 10.0)),
                           slow_min_s=float(ray_options.get("slow_min_s", 60.0)),
                           lost_after_s=None if lost is None else float(lost))
    raise ValueError(f"runtime.name must be 'local' or 'ray', not {runtime!r}")
