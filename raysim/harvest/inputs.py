"""A harvesting run's inputs (the ``harvest`` config section): the Summit node log as the run's
capacity plan, the task set as its trace, and the BFTrainer policy's settings.

The harvested machine is one VC, ``summit``, of N nodes with one "GPU" each (GPU utilisation is
then nodes used by tasks / nodes present). A node busy at the replay's start is absent; from then
on a node going busy goes down and a node going idle comes up (raysim.sim.capacity), at whole
seconds since the start (the node log's times are whole seconds; a log with finer times is
refused in one line). Tasks are trace jobs: job_id = their row in the task file, submit_time = Tsub
in seconds since the start (0 for a task submitted earlier), gpu_num = Jmin; they have no duration
(the policy ends them when their samples are done), so each carries the placeholder one year,
like Sia's elastic jobs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from raysim.cluster.layout import Pool
from raysim.errors import ConfigError, UserError
from raysim.harvest.allocators import ALLOCATORS
from raysim.harvest.replay import NS, NodeEvents, load_node_log, slice_events
from raysim.harvest.tasks import TaskSet, load_tasks
from raysim.paths import original_cwd
from raysim.settings import count_or_word, parse, setting
from raysim.sim.capacity import CapacityPlan, VCCapacity

#: The harvested machine's VC, the GPU type of its nodes, and the cause of its capacity events.
VC = "summit"
NODE_TYPE = "node"
CAUSE = "busy"
#: A task's placeholder duration (the policy ends it): one year, as Sia's elastic jobs.
PLACEHOLDER_S = 31_536_000

DATA_HELP = ("The harvest data is the BFTrainer replayer dataset (Liu et al., arXiv 2106.12091; "
             "https://github.com/BFTrainer/Replayer, folder dataset/) stored as Parquet: the dataset "
             "summit_nodes (`raysim data fetch summit_nodes`, harvest.data_dir=data:summit_nodes), or set "
             "harvest.data_dir to a folder holding it (or harvest.node_log / harvest.tasks). See docs/data.md "
             "and docs/harvest.md.")


def resolve_data(path: str, key: str, base: Path) -> Path:
    """`path` made absolute against `base`; FileNotFoundError (a user error: one line) with how to
    get the data if missing."""
    resolved = (base / os.path.expanduser(str(path))).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"harvest.{key}: file not found: {resolved} (from {path!r}, relative to "
                                f"{base}). {DATA_HELP}")
    return resolved


def _nodes(value, key: str = "harvest.nodes"):
    """`harvest.nodes`: a positive node count, or 'all' for the whole machine."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    return count_or_word(value, key, (), "a positive node count or 'all'")


def _iso_time(value, key: str = "harvest.start_time") -> str:
    """`harvest.start_time`: an ISO date and time."""
    try:
        np.datetime64(str(value), "ns")
    except ValueError:
        raise ConfigError(key, "not an ISO date and time", value) from None
    return str(value)


@dataclass(frozen=True)
class HarvestSettings:
    """The `harvest:` section (policy=bftrainer, conf/experiment/harvest_summit.yaml): the node log and
    task set it replays, the slice of the machine, and the BFTrainer policy's settings."""

    data_dir: str | None = setting("data:summit_nodes", "the folder holding the BFTrainer replayer dataset "
                                                        "(data:summit_nodes, or a path relative to the launch "
                                                        "directory); node_log and tasks name files in it")
    node_log: str = setting("data:summit_nodes/summit_node_events.parquet", "the Summit node log (Parquet)")
    task_set: str | None = setting("hps-shufflenet-10J", "the task set's name (hps-shufflenet-10J, "
                                                         "hps-shufflenet-1000J, ImageNet-imgps-1001J, "
                                                         "ImageNet-spdup-1001J); tasks names its file")
    tasks: str = setting("data:summit_nodes/tasks_hps-shufflenet-10J.parquet", "the task set (Parquet)")
    start_row: int = setting(1000, "log row (= distinct time) to start at", minimum=0)
    start_time: str | None = setting(None, "ISO time to start at instead of start_row", check=_iso_time)
    nodes: object | None = setting(256, "the first N nodes of the machine (log column order), or all (null: all)",
                                   check=_nodes,
                            what="a node count or all")
    # (at most 1e9 s, longer than any trace: Tfwd multiplies the tasks' rates in every allocator's
    # objective, which overflows to inf, where the allocators' choices stop meaning anything, near 1e300)
    tfwd: float = setting(10.0, "seconds the optimiser looks ahead (Tfwd)", above=0, maximum=1e9)
    max_jobs: int = setting(10, "tasks active at once (admitted first-come first-served)", minimum=1)
    allocator: str = setting("exact", "exact (optimal, DP) | heuristic (reference equal share) | milp "
                                      "(node-level, small pools)", choices=tuple(ALLOCATORS))
    compat_cap: bool = setting(True, "cap each task's change per event at floor((pool+1)/2) nodes, as the "
                                     "reference MILP")
    precise: bool = setting(False, "also make task arrivals and completions decision points (clock in "
                                   "milliseconds)")
    milp_time_limit: float = setting(60.0, "seconds per solve, allocator=milp", above=0)

    @property
    def node_count(self) -> int | None:
        """The slice's nodes (None: the whole machine)."""
        return None if self.nodes in (None, "all") else int(self.nodes)

    @property
    def start_ns(self) -> int | None:
        """`start_time` in ns since the epoch (None: start at `start_row`)."""
        return None if self.start_time is None else int(np.datetime64(self.start_time, "ns").astype(np.int64))


def harvest_settings(section: dict | None) -> HarvestSettings:
    """The `harvest:` section (plain values) checked into HarvestSettings, before any data is read
    (ConfigError: one line naming the key)."""
    if section is None:
        raise ConfigError("policy", "policy=bftrainer harvests idle nodes as the `harvest:` section says; run "
                          "e.g. `python -m raysim +experiment=harvest_summit`", "bftrainer")
    return parse(HarvestSettings, section, prefix="harvest", owner="idle-node harvesting (policy=bftrainer)")


def _input(read, *prefixes: str):
    """`read()`, whose ValueErrors that name its input (the harvest readers' own checks of the data
    and of harvest.nodes / start_row) become user errors; any other ValueError stays a bug."""
    try:
        return read()
    except ValueError as exc:
        if type(exc) is ValueError and str(exc).startswith(prefixes):
            raise UserError(str(exc)) from exc
        raise


def load_inputs(h: HarvestSettings) -> tuple[NodeEvents, TaskSet]:
    """The node log's events for the slice `h` names and the task set (read once per process and
    version of the files: the trace and the policy's inputs both need them)."""
    base = original_cwd()
    log_path = resolve_data(h.node_log, "node_log", base)
    tasks_path = resolve_data(h.tasks, "tasks", base)
    versions = tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in (log_path, tasks_path))
    return _load(str(log_path), str(tasks_path), h.node_count, h.start_row, h.start_ns, versions)


@lru_cache(maxsize=2)
def _load(log_path: str, tasks_path: str, nodes: int | None, start_row: int, start: int | None, versions: tuple):
    node_log = _input(lambda: load_node_log(log_path), log_path)
    events = _input(lambda: slice_events(node_log, nodes, start_row=start_row, start_time_ns=start),
                    log_path, "harvest.")
    if np.any(events.times != np.round(events.times)):
        row = int(np.flatnonzero(events.times != np.round(events.times))[0])
        raise UserError(f"{log_path}: event {row}, column 'time': not a whole second after the replay's start "
                        "(harvesting runs on whole seconds)")
    return events, _input(lambda: load_tasks(tasks_path), tasks_path)


def harvest_trace(h: HarvestSettings):
    """The task set as the run's trace (see the module doc), with the harvested machine as its layout."""
    from raysim.errors import SkipReport
    from raysim.trace.load import Trace
    from raysim.trace.schema import conform, with_metadata

    events, tasks = load_inputs(h)
    k = len(tasks)
    submit = np.maximum(np.ceil((tasks.tsub_ns - events.t0_ns) / NS), 0).astype(np.int64)
    order = np.argsort(submit, kind="stable")

    def labels(value: str):
        return pa.array([value] * k, pa.string()).dictionary_encode()

    table = pa.table({
        "job_id": pa.array(order.astype(np.int64)),
        "vc": labels(VC),
        "user": labels("harvest"),
        "gpu_num": pa.array(tasks.jmin[order].astype(np.int32)),
        "cpu_num": pa.array(np.zeros(k, np.int32)),
        "submit_time": pa.array(submit[order]),
        "duration": pa.array(np.full(k, PLACEHOLDER_S, np.int64)),
        "state": labels("COMPLETED"),
        "task": pa.array(tasks.names[order].tolist(), pa.string()),
    })
    origin = str(np.datetime64(events.t0_ns, "ns").astype("datetime64[s]"))
    table = with_metadata(conform(table), cluster=VC, origin=origin, source=tasks.source)
    return Trace(table, {VC: events.num_nodes}, SkipReport(tasks.source), tasks.source,
                 layout={VC: (Pool(NODE_TYPE, 1, events.num_nodes),)})


def capacity_plan(events: NodeEvents, jobs: int) -> CapacityPlan:
    """The slice's idle-set changes as the VC's capacity events: busy nodes down, idle ones up."""
    per = np.diff(events.ptr)[1:]
    times = np.repeat(events.times[1:].astype(np.int64), per)
    up = events.idle.tolist()
    evs = tuple(zip(times.tolist(), events.node.astype(np.int64).tolist(), up, [0] * len(up)))
    absent = tuple(np.flatnonzero(~events.initial_idle).tolist())
    return CapacityPlan((CAUSE,), {VC: VCCapacity(evs, absent, jobs)})


def harvest_spec(h: HarvestSettings, trace, spec):
    """`spec` with the node log as its capacity plan, the policy's clock, tasks and settings (`h`:
    the `harvest:` section)."""
    events, tasks = load_inputs(h)
    precise = h.precise
    params = replace(spec.params, ticks_per_s=1000 if precise else 1)
    rows = trace.table.column("job_id").to_numpy()
    options = {"tasks": tasks, "rows": rows, "initial_idle": events.initial_idle, "end_s": float(events.times[-1]),
               "tfwd": h.tfwd, "max_jobs": h.max_jobs, "allocator": h.allocator, "compat_cap": h.compat_cap,
               "precise": precise, "milp_time_limit": h.milp_time_limit}
    return replace(spec, params=params, capacity=capacity_plan(events, trace.table.num_rows),
                   policy_options={**spec.policy_options, **options})
