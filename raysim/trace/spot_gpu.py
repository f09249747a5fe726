"""Alibaba's spot GPU trace (cluster-trace-v2026-spot-gpu; GFS, ASPLOS'26): ``trace.format=spot_gpu``.

Source: github.com/alibaba/clusterdata, folder ``cluster-trace-v2026-spot-gpu``: a folder holding
``node_info_df.csv`` (``node_name,gpu_model,gpu_capacity_num,cpu_num``, columns in any order) and
``job_info_df.csv`` (``job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,
submit_time,duration,job_type``). Errors are one line naming the file, the 1-based data row
(``row N (line N+1)``) and the column; with ``trace.on_error=skip`` bad job rows are dropped and
counted by reason. The node list is always checked strictly (any bad row raises).

Jobs (one per row of ``job_info_df.csv``):

- ``job_id`` = the 1-based data row; ``job_name`` kept; ``user`` = ``organization``; ``state`` empty.
- ``gpu_num`` = ``worker_num`` x ``gpu_request``: ``worker_num`` a positive integer, ``gpu_request``
  whole GPUs per worker, or a share of one GPU (0 < gpu_request < 1) for a job of one worker:
  then ``gpu_num`` = 1 and ``gpu_milli`` = gpu_request x 1000 rounded (a share other shares may
  use, as the alibaba2023 reader gives it). A share with several workers, or a fraction above 1,
  is a bad row. ``gpu_milli`` is written only when some job asks for a share (1000 for whole GPUs).
  Jobs with ``gpu_request`` 0 are filtered and counted (GFS drops them too). ``workers`` =
  ``worker_num``, written only when some job has several: each worker's GPUs go on one node, several
  workers may share one (raysim.placement.workers; GFS's ``consolidateSpot.place``). Where the reader
  derives the layout, a job whose workers its VC's nodes never hold at once is a bad row.
- ``cpu_num`` = ``worker_num`` x ``cpu_request`` rounded up (``cpu_request``: vCPUs per worker).
- ``gpu_constraint`` = ``gpu_model``: a job runs on its own GPU model only; a model the node list
  does not have is a bad row.
- ``priority_class`` = ``job_type`` (``HP`` -> hp, ``Spot`` -> spot, any case; docs/spot.md).
- ``submit_time`` and ``duration`` as given (integer seconds; submit times from the first job,
  origin "0").

VCs (reader option ``vc_from``), when no layout is configured (``cluster.layout``,
``trace.vc_config`` or a ``vc_config.csv`` beside the files: the user's own mapping):

- ``organization`` (default): one VC per organization. The node list has no organizations, so each
  GPU model's nodes are dealt in file order to the organizations whose jobs ask for that model, each
  node to the one furthest below its share of the model's GPUs, the share being its jobs'
  GPU-seconds on that model (ties: the organization seen first in the job table). A job asking more
  GPUs than its VC has of its model is a bad row.
- ``gpu_model``: one VC per GPU model holding every node of that model, in file order (GFS's
  ``cluster.py``).

Either way the layout (typed node pools of consecutive alike nodes, GPUs only: nodes' CPUs are not
limits) is recorded in the table's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE, Layout, Pool
from raysim.errors import SkipReport, TraceError
from raysim.settings import setting
from raysim.trace.alibaba2023 import _Checks, _data_rows, _integers, _read, _repeated, _text
from raysim.trace.layout import with_pools
from raysim.trace.mapping import RowChecks, Source, validate_mapped
from raysim.trace.readers import Bounds

NODE_FILE = "node_info_df.csv"
JOB_FILE = "job_info_df.csv"
NODE_COLUMNS = ("node_name", "gpu_model", "gpu_capacity_num", "cpu_num")
JOB_COLUMNS = ("job_name", "organization", "gpu_model", "cpu_request", "gpu_request", "worker_num",
               "submit_time", "duration", "job_type")
#: Where a VC comes from when the reader derives the layout (module doc).
VC_SOURCES = ("organization", "gpu_model")
#: Where a job column comes from in the job table (for error messages).
SOURCE_COLUMNS = {"gpu_num": "gpu_request", "cpu_num": "cpu_request", "priority_class": "job_type",
                  "vc": "organization", "user": "organization", "gpu_constraint": "gpu_model", "workers": "worker_num"}
NO_GPU = "filtered: gpu_request 0 (CPU-only job)"
_NUMBER = r"^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


@dataclass(frozen=True)
class SpotGpuOptions:
    """The spot_gpu reader's options (trace.reader_options)."""

    vc_from: str = setting("organization", "what a VC is when the reader derives the layout: organization "
                           "(each GPU model's nodes dealt by demand) or gpu_model (GFS: one VC per model)",
                           choices=VC_SOURCES)


# ----------------------------------------------------------------------------------------- nodes

def read_spot_nodes(path) -> pd.DataFrame:
    """``node_info_df.csv`` in file order as columns node_name (text), gpu_model (text),
    gpu_capacity_num and cpu_num (int64); any bad row raises."""
    name = str(path)
    table, malformed, _ = _read(path, NODE_COLUMNS, (), "node list")
    checks = _Checks(name, table.num_rows, malformed)
    node, model = _text(table, "node_name"), _text(table, "gpu_model")
    checks.flag(node == "", "node_name is empty", "node_name", node)
    checks.flag(model == "", "gpu_model is empty", "gpu_model", model)
    gpus, _ = _integers(checks, table, "gpu_capacity_num", digits=6)
    checks.flag(gpus == 0, "gpu_capacity_num must be positive", "gpu_capacity_num", _text(table, "gpu_capacity_num"))
    cpus, _ = _integers(checks, table, "cpu_num", digits=9)
    checks.flag(_repeated(node), "node_name repeats an earlier row", "node_name", node)
    checks.finish(_data_rows(table.num_rows, malformed), None, "raise")
    if not table.num_rows:
        raise TraceError(name, "no nodes: the node list has no data rows")
    return pd.DataFrame({"node_name": node, "gpu_model": model, "gpu_capacity_num": gpus, "cpu_num": cpus})


def runs_of(nodes) -> tuple[Pool, ...]:
    """(GPU model, GPUs) of nodes in order as pools of consecutive alike nodes."""
    pools: list[Pool] = []
    for model, gpus in nodes:
        if pools and (pools[-1].gpu_type, pools[-1].gpus_per_node) == (model, gpus):
            pools[-1] = Pool(model, gpus, pools[-1].nodes + 1)
        else:
            pools.append(Pool(model, int(gpus), 1))
    return tuple(pools)


def layout_by_model(nodes: pd.DataFrame) -> Layout:
    """One VC per GPU model, its nodes in file order (GFS's cluster.py)."""
    return {model: runs_of(zip(group["gpu_model"], group["gpu_capacity_num"]))
            for model, group in nodes.groupby("gpu_model", sort=False)}


def layout_by_demand(nodes: pd.DataFrame, demand: pd.DataFrame) -> Layout:
    """One VC per organization of `demand` (columns organization, gpu_model, gpu_s: GPU-seconds), each
    GPU model's nodes dealt in file order, each to the organization furthest below its share of the
    model's GPUs (shares: GPU-seconds; ties: first in `demand`). Organizations dealt no node have no
    VC."""
    dealt: dict[str, list[tuple[str, int]]] = {}
    orgs_in_order = list(dict.fromkeys(demand["organization"]))
    for model, group in nodes.groupby("gpu_model", sort=False):
        asking = demand[(demand["gpu_model"] == model) & (demand["gpu_s"] > 0)]
        if asking.empty:
            continue
        orgs = asking["organization"].tolist()
        share = asking["gpu_s"].to_numpy(dtype=np.float64)
        share = share / share.sum() * group["gpu_capacity_num"].sum()
        held = np.zeros(len(orgs))
        for gpus in group["gpu_capacity_num"].tolist():
            k = int(np.argmax(share - held))  # first of the largest: the organization seen first
            held[k] += gpus
            dealt.setdefault(orgs[k], []).append((model, gpus))
    return {org: runs_of(dealt[org]) for org in orgs_in_order if org in dealt}


# ------------------------------------------------------------------------------------------ jobs

def read_spot_gpu(path, *, vc_nodes: dict[str, int] | None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                  on_error: str = "raise", state_filter=None, origin: str = "auto", cluster: str = "",
                  bounds: Bounds = Bounds(), vc_from: str) -> tuple[pa.Table, SkipReport]:
    """Read ``job_info_df.csv`` (with ``node_info_df.csv`` beside it) as a raysim job table (rules:
    module doc). `vc_nodes` None derives the layout from the node list and records it."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"trace.on_error must be 'raise' or 'skip', not {on_error!r}")
    name = str(path)
    nodes = read_spot_nodes(Path(path).parent / NODE_FILE)
    table, malformed, _ = _read(path, JOB_COLUMNS, (), "job table")
    rows = _data_rows(table.num_rows, malformed)
    checks = _Checks(name, table.num_rows, malformed)
    job, org, model = _text(table, "job_name"), _text(table, "organization"), _text(table, "gpu_model")
    checks.flag(job == "", "job_name is empty", "job_name", job)
    checks.flag(org == "", "organization is empty", "organization", org)
    models = list(dict.fromkeys(nodes["gpu_model"]))
    checks.flag(~np.isin(model, models), f"gpu_model not in the node list {models}", "gpu_model", model)
    workers, _ = _integers(checks, table, "worker_num", digits=9)
    checks.flag(workers == 0, "worker_num must be positive", "worker_num", _text(table, "worker_num"))
    gpu_request = _numbers(checks, table, "gpu_request")
    cpu_request = _numbers(checks, table, "cpu_request")
    share = (gpu_request > 0) & (gpu_request < 1)
    raw_gpu = _text(table, "gpu_request")
    checks.flag(share & (workers > 1), "a share of one GPU (gpu_request < 1) needs worker_num 1", "gpu_request",
                raw_gpu)
    checks.flag((gpu_request > 1) & (gpu_request != np.floor(gpu_request)),
                "gpu_request above 1 must be whole GPUs", "gpu_request", raw_gpu)
    largest = 2.0 ** 31 - 1  # gpu_num and cpu_num are 32-bit integers
    checks.flag(workers * np.floor(gpu_request) > largest, "worker_num x gpu_request does not fit a 32-bit integer",
                "gpu_request", raw_gpu)
    checks.flag(np.ceil(workers * cpu_request) > largest, "worker_num x cpu_request does not fit a 32-bit integer",
                "cpu_request", _text(table, "cpu_request"))
    checks.flag(_repeated(job), "job_name repeats an earlier row", "job_name", job)
    gpu_num = np.where(share | checks.bad, 1, workers * np.floor(gpu_request)).astype(np.int64)
    milli = np.where(share, np.clip(np.rint(gpu_request * 1000), 1, 999), 1000).astype(np.int64)

    report = SkipReport(file=name)
    keep = checks.finish(rows, report, on_error)
    source = Source(name, rows=rows, columns=SOURCE_COLUMNS)
    idle = keep & (gpu_num == 0)
    source.skip(report, NO_GPU, rows[idle], "gpu_request", raw_gpu[idle].tolist())
    keep &= ~idle

    vc = model if vc_from == "gpu_model" else org
    layout = None
    if vc_nodes is None:
        if vc_from == "gpu_model":
            layout = layout_by_model(nodes)
        else:
            duration = pd.to_numeric(pd.Series(_text(table, "duration")), errors="coerce").fillna(0).to_numpy()
            demand = pd.DataFrame({"organization": org[keep], "gpu_model": model[keep],
                                   "gpu_s": (gpu_num * milli / 1000 * np.maximum(duration, 0))[keep]})
            demand = demand.groupby(["organization", "gpu_model"], sort=False, as_index=False)["gpu_s"].sum()
            layout = layout_by_demand(nodes, demand)
        room: dict[tuple[str, str], int] = {}
        for v, pools in layout.items():
            for p in pools:
                room[v, p.gpu_type] = room.get((v, p.gpu_type), 0) + p.gpus
        have = np.array([room.get((v, m), 0) for v, m in zip(vc, model)], dtype=np.int64)
        fit = RowChecks(source, rows)
        fit.flag(keep & (gpu_num > have), f"the job asks more GPUs than its VC has of its gpu_model "
                 f"(trace.reader_options.vc_from={vc_from})", "gpu_request", raw_gpu)
        per = np.maximum(np.floor(gpu_request), 1).astype(np.int64)
        held = np.array([sum(p.nodes * (p.gpus_per_node // g) for p in layout.get(v, ()) if p.gpu_type == m)
                         for v, m, g in zip(vc, model, per)], dtype=np.int64)
        fit.flag(keep & (workers > held), f"its VC's nodes of its gpu_model never hold its workers at once, each on "
                 f"one node (trace.reader_options.vc_from={vc_from})", "worker_num", _text(table, "worker_num"))
        keep &= fit.finish(report, on_error)
        vc_nodes, gpus_per_node = {v: sum(p.gpus for p in pools) for v, pools in layout.items()}, 1

    source.rows = rows[keep]
    frame = pd.DataFrame({
        "job_id": rows, "vc": vc, "user": org, "gpu_num": gpu_num,
        "cpu_num": np.where(checks.bad, 0, np.ceil(workers * cpu_request)).astype(np.int64),
        "submit_time": _text(table, "submit_time"), "duration": _text(table, "duration"), "state": "",
        "gpu_constraint": model, "job_name": job, "priority_class": _text(table, "job_type"),
    })
    if share[keep].any():
        frame["gpu_milli"] = milli
    if (workers[keep] > 1).any():
        frame["workers"] = np.where(checks.bad, 1, workers)
    frame = frame[keep].reset_index(drop=True)
    table, report = validate_mapped(frame, source, report, vc_nodes=vc_nodes, gpus_per_node=gpus_per_node,
                                    on_error=on_error, state_filter=state_filter, origin=origin,
                                    cluster=cluster, bounds=bounds)
    return (table if layout is None else with_pools(table, layout)), report


read_spot_gpu.Settings = SpotGpuOptions


def _numbers(checks: _Checks, table: pa.Table, column: str) -> np.ndarray:
    """A column of non-negative decimal numbers (0 where bad); empty, negative and other text flagged."""
    text = pc.utf8_trim_whitespace(table.column(column))
    empty = pc.equal(text, "").to_numpy(zero_copy_only=False)
    ok = pc.match_substring_regex(text, _NUMBER).to_numpy(zero_copy_only=False)
    negative = pc.match_substring_regex(text, "^-").to_numpy(zero_copy_only=False)
    raw = text.to_numpy(zero_copy_only=False)
    checks.flag(empty, f"{column} is empty", column, raw)
    checks.flag(negative & ~empty, f"{column} is negative", column, raw)
    checks.flag(~ok & ~empty & ~negative, f"{column} is not a number", column, raw)
    values = pc.cast(pc.if_else(pa.array(ok), text, "0"), pa.float64()).to_numpy(zero_copy_only=False)
    checks.flag(~np.isfinite(values), f"{column} is too large", column, raw)
    return np.where(np.isfinite(values), values, 0.0)
