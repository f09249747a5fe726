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
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

from raysim.cluster.layout import Pool
from raysim.errors import ConfigError, UserError
from raysim.harvest.replay import NS, NodeEvents, load_node_log, slice_events
from raysim.harvest.tasks import TaskSet, load_tasks
from raysim.paths import original_cwd
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


def parse_nodes(value) -> int | None:
    """`harvest.nodes`: a positive int, or 'all' / null for the whole machine."""
    if value is None or str(value).lower() == "all":
        return None
    try:
        nodes = int(value)
    except (TypeError, ValueError):
        nodes = 0
    if isinstance(value, bool) or nodes <= 0 or nodes != value and str(nodes) != str(value).strip():
        raise ConfigError("harvest.nodes", "expected a positive node count or 'all'", value)
    return nodes


def check_harvest_config(cfg: DictConfig) -> None:
    """The `harvest` values a run uses, checked before any data is read (ConfigError: one line)."""
    from raysim.harvest.allocators import ALLOCATORS
    from raysim.run.values import boolean, choice, integer, number

    if cfg.get("harvest") is None:
        raise ConfigError("policy", "policy=bftrainer harvests idle nodes as the `harvest:` section says; run "
                          "e.g. `python -m raysim +experiment=harvest_summit`", "bftrainer")
    number(cfg, "harvest.tfwd", above=0)
    integer(cfg, "harvest.max_jobs", minimum=1)
    integer(cfg, "harvest.start_row", minimum=0)
    choice(cfg, "harvest.allocator", sorted(ALLOCATORS))
    number(cfg, "harvest.milp_time_limit", above=0)
    boolean(cfg, "harvest.compat_cap")
    boolean(cfg, "harvest.precise")
    parse_nodes(cfg.harvest.nodes)
    start_ns(cfg.harvest)


def start_ns(h) -> int | None:
    """`harvest.start_time` in ns since the epoch (None: start at `harvest.start_row`)."""
    start = h.get("start_time")
    try:
        return None if start is None else int(np.datetime64(str(start), "ns").astype(np.int64))
    except ValueError:
        raise ConfigError("harvest.start_time", "not an ISO date and time", start) from None


def _input(read, *prefixes: str):
    """`read()`, whose ValueErrors that name its input (the harvest readers' own checks of the data
    and of harvest.nodes / start_row) become user errors; any other ValueError stays a bug."""
    try:
        return read()
    except ValueError as exc:
        if type(exc) is ValueError and str(exc).startswith(prefixes):
            raise UserError(str(exc)) from exc
        raise


def harvest_section(cfg: DictConfig) -> dict:
    """The run's `harvest:` section, as plain values."""
    return OmegaConf.to_container(cfg.harvest, resolve=True)


def load_inputs(h: dict) -> tuple[NodeEvents, TaskSet]:
    """The node log's events for the slice the `harvest:` section `h` names and the task set (read
    once per process and version of the files: the trace and the policy's inputs both need them)."""
    base = original_cwd()
    log_path = resolve_data(h["node_log"], "node_log", base)
    tasks_path = resolve_data(h["tasks"], "tasks", base)
    versions = tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in (log_path, tasks_path))
    return _load(str(log_path), str(tasks_path), parse_nodes(h["nodes"]), int(h["start_row"]), start_ns(h),
                 versions)


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


def harvest_trace(cfg: DictConfig):
    """The task set as the run's trace (see the module doc), with the harvested machine as its layout."""
    from raysim.errors import SkipReport
    from raysim.trace.load import Trace
    from raysim.trace.schema import conform, with_metadata

    events, tasks = load_inputs(harvest_section(cfg))
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


def harvest_spec(h: dict, trace, spec):
    """`spec` with the node log as its capacity plan, the policy's clock, tasks and settings (`h`:
    the `harvest:` section)."""
    events, tasks = load_inputs(h)
    precise = bool(h["precise"])
    params = replace(spec.params, ticks_per_s=1000 if precise else 1)
    rows = trace.table.column("job_id").to_numpy()
    options = {"tasks": tasks, "rows": rows, "initial_idle": events.initial_idle, "end_s": float(events.times[-1]),
               "tfwd": float(h["tfwd"]), "max_jobs": int(h["max_jobs"]), "allocator": str(h["allocator"]),
               "compat_cap": bool(h["compat_cap"]), "precise": precise, "milp_time_limit": float(h["milp_time_limit"])}
    return replace(spec, params=params, capacity=capacity_plan(events, trace.table.num_rows),
                   policy_options={**spec.policy_options, **options})
