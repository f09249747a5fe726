"""From a composed config to what a cluster run needs: the trace, the cluster layout, per-job
GPU-type inputs, duration estimates and the run spec."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf

from raysim.cluster.catalog import JobTypes, job_types
from raysim.cluster.layout import layout_from_config, layout_from_vc_nodes, read_layout_csv
from raysim.models.estimates import estimates_for
from raysim.policy import policy_class
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import Trace, load_trace

log = logging.getLogger("raysim")


def configured_layout(cfg: DictConfig) -> dict | None:
    """The layout of `cluster.layout` (a layout CSV or a list of pools), or None: then the VC
    layout comes with the trace (vc_config.csv: nodes of `cluster.gpus_per_node` GPUs)."""
    spec = cfg.cluster.get("layout")
    if spec is None:
        return None
    if isinstance(spec, (list, ListConfig)):
        return layout_from_config(OmegaConf.to_container(spec, resolve=True), name="cluster.layout")
    return read_layout_csv(Path(str(spec)).expanduser())


def load_from_config(cfg: DictConfig) -> Trace:
    """The validated trace named by cfg.trace, checked against the configured cluster layout."""
    t = cfg.trace
    if t.synth:
        from raysim.trace.synth import load_synth

        return load_synth(dict(t.synth), cache_dir=t.cache_dir)
    if not t.path:
        raise ValueError("trace.path is not set: give a trace file or folder, or use +experiment=venus")
    return load_trace(t.path, fmt=t.format, vc_config=t.vc_config, gpus_per_node=int(cfg.cluster.gpus_per_node),
                      on_error=t.on_error, state_filter=t.state_filter, origin=t.origin, cache=t.cache,
                      cache_dir=t.cache_dir, reader_options=dict(t.reader_options or {}),
                      layout=configured_layout(cfg))


def cluster_layout(cfg: DictConfig, trace: Trace) -> dict:
    """VC -> node pools: `cluster.layout` restricted to the VCs the trace uses (in layout order),
    else the typed pools the trace's reader derived (alibaba2023: the node list's), else one pool
    per VC of the trace's layout."""
    layout = configured_layout(cfg)
    if layout is None and trace.layout is not None:
        return trace.layout
    if layout is None:
        return layout_from_vc_nodes(trace.vc_nodes, int(cfg.cluster.gpus_per_node), str(cfg.cluster.gpu_type))
    return {vc: pools for vc, pools in layout.items() if vc in trace.vc_nodes}


def gpu_type_inputs(cfg: DictConfig, trace: Trace, layout: dict) -> JobTypes:
    """Constraint and speed-profile ids per job (raysim.cluster.catalog) from the trace's GPU-type
    columns and `cluster.throughput` (a CSV job_type,gpu_type,throughput or Gavel's JSON)."""
    table = None
    path = cfg.cluster.get("throughput")
    if path:
        from raysim.cluster.throughput import read_gavel_throughputs, read_throughput_csv

        path = Path(str(path)).expanduser()
        table = read_gavel_throughputs(path) if path.suffix == ".json" else read_throughput_csv(path)
    types = job_types(trace.table, layout, throughput=table, reference_gpu_type=cfg.cluster.get("reference_gpu_type"),
                      source=trace.source)
    if types.missing:
        log.warning("throughput table %s has no entry for %d (job type, GPU type) pair(s), e.g. %s: "
                    "those jobs run there as fast as on their reference type", path, len(types.missing),
                    types.missing[:3])
    return types


def estimates_from_config(cfg: DictConfig, trace: Trace):
    """(estimates per trace row or None, an online estimator or None) as `estimator.*` says."""
    est = cfg.estimator
    if est.source == "model":
        from raysim.models.online import PeriodicDurationEstimator

        online = PeriodicDurationEstimator(trace.table, trace.origin, period_s=int(est.period_days * 86_400),
                                           kind=est.kind, seed=int(cfg.seed))
        return np.full(trace.table.num_rows, np.nan), online
    return estimates_for(trace.table, source=est.source, path=est.path, column=est.column,
                         negative_to=est.negative_to), None


def spec_from_config(cfg: DictConfig, trace: Trace) -> tuple[RunSpec, dict]:
    """The run's spec and the extra per-job input columns (GPU-type ids, and whatever the policy's
    `prepare` adds, e.g. Lucid's workload ids and share scores)."""
    params = SimParams.for_mode(cfg.sim.compat, sample_interval=int(cfg.sim.sample_interval), seed=int(cfg.seed))
    if cfg.sim.network not in ("off", "on", False, True):
        raise ValueError(f"sim.network must be off or on, not {cfg.sim.network!r}")
    network = dict(cfg.network) if cfg.sim.network in ("on", True) else None
    layout = cluster_layout(cfg, trace)
    types = gpu_type_inputs(cfg, trace, layout)
    constants = {k: v for k, v in OmegaConf.to_container(cfg.policy, resolve=True).items()
                 if k not in ("name", "kind", "round")}  # kind, round: the round-based policies' (raysim.rounds)
    spec = RunSpec(cfg.policy.name, cfg.placer.name, params, layout, policy_options=constants,
                   type_order=str(cfg.placer.get("type_order", "any")), network=network, catalog=types.catalog)
    extra = {"constraint": types.constraint, "speed_profile": types.speed_profile}
    spec, more = policy_class(spec.policy).prepare(cfg, trace, spec)
    return spec, {**extra, **(more or {})}
