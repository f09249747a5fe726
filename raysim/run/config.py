"""From a composed config to what a cluster run needs: the trace, the cluster layout, per-job
GPU-type inputs, duration estimates and the run spec."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from omegaconf import DictConfig, ListConfig, OmegaConf

from raysim.cluster.catalog import JobTypes, job_types
from raysim.cluster.layout import layout_from_config, layout_from_vc_nodes, read_layout_csv
from raysim.errors import ConfigError, UserError
from raysim.models.estimates import estimates_for
from raysim.placement import PLACERS, placer_settings
from raysim.policy import POLICIES, policy_class, policy_kind, policy_settings
from raysim.inputs import RunInputs
from raysim.settings import as_options
from raysim.quota import merged_layout
from raysim.quota.ledger import QuotaLending
from raysim.quota.settings import declared_quota, quota_settings
from raysim.run.cluster_settings import ClusterMode, cluster_mode
from raysim.run.failures import BusyClock, check_failures_config, failure_plan, failures_name
from raysim.run.host_selection import host_selection, host_selection_name
from raysim.run.requests import counts_resources, request_inputs
from raysim.run.spares import refuse_standbys, spare_rules, standby_rules
from raysim.run.spot import class_traits, spot_rules
from raysim.run.workers import worker_inputs
from raysim.run.values import plain, value
from raysim.trace.schema import REQUEST_COLUMNS
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.sim.attempts import Attempts
from raysim.sim.checkpoint import Checkpointing
from raysim.sim.extensions import Capacity, Checkpoints, Network, Replays
from raysim.sim.host_selection import FewestFailures, RandomOrder
from raysim.sim.spares import Spares
from raysim.sim.standbys import Standbys
from raysim.sim.spot import Spot
from raysim.trace.attempts import FAILED_STATES
from raysim.trace.load import Trace, load_trace

log = logging.getLogger("raysim")

def check_cluster_config(cfg: DictConfig) -> ClusterMode:
    """Check the values a trace replay uses, before anything is loaded or Ray is started: a bad one
    is a ConfigError naming its key (one line, exit status 2). Returns the checked settings, parsed
    once here for the whole run (the functions below take them as `m`)."""
    m = cluster_mode(cfg)  # every section's values, by their declarations
    window = m.runtime.window_s
    if m.runtime.resume and not m.runtime.checkpoint_dir:
        raise ConfigError("runtime.resume", "needs runtime.checkpoint_dir (the folder to resume from)", True)
    source = m.estimator.source
    quota, declared = declared_quota(plain(cfg, "quota"))
    if quota == "borrow":
        period = declared.period_s
        if period % min(window, period):
            raise ConfigError("quota.period_s", f"must be a multiple of runtime.window_s ({window} s): "
                              "coordinator windows end at the loan epochs", period)
        window = min(window, period)
    name = POLICIES.chosen(value(cfg, "policy.name"), "policy.name")
    harvest = policy_kind(name) == "harvest"
    if harvest:
        from raysim.harvest.inputs import harvest_settings

        harvest_settings(plain(cfg, "harvest"))
    if not harvest and value(cfg, "harvest") is not None:
        raise ConfigError("harvest", f"used by policy=bftrainer only (+experiment=harvest_summit), not {name}")
    policy_settings(name, policy_constants_of(cfg))
    placer_settings(PLACERS.chosen(value(cfg, "placer.name"), "placer.name"),
                    {k: v for k, v in OmegaConf.to_container(cfg.placer, resolve=True).items() if k != "name"})

    from raysim.run.gavel_jobs import is_gavel_input

    if not harvest and m.trace.synth is None and not is_gavel_input(cfg) and not m.trace.path:
        raise ConfigError("trace.path", "not set: give a trace file or folder, or use +experiment=venus")
    if source == "file" and not m.estimator.path:
        raise ConfigError("estimator.path", "not set: estimator.source=file needs a CSV with job_id and "
                          "an estimate column")
    if source == "model" and (m.estimator.period_days * 86_400) % window:
        raise ConfigError("estimator.period_days", f"the retraining period must be a multiple of "
                          f"runtime.window_s ({window} s)", m.estimator.period_days)
    capacity = value(cfg, "cluster.capacity")
    if capacity is not None and (not isinstance(capacity, str) or not capacity.strip()):
        raise ConfigError("cluster.capacity", "must be null or a node log file (CSV or Parquet)", capacity)
    checkpoint_settings(cfg, m)
    check_failures_config(cfg)
    stage = outside_vcs(cfg)
    refuse_together(name, {**switches(cfg, m, quota), "outside_vcs": ("policy", stage)},
                    {"stage": stage[0], "off": stage[1]} if stage else {})
    replays_failures(cfg, m)
    return m


#: The engine's extensions whose settings the run checks against what they cannot run with or without
#: (raysim.sim.extensions), in the order it checks them.
DECLARED = (QuotaLending, Network, Capacity, BusyClock, Checkpoints, Replays, Spot, Spares, Standbys, FewestFailures,
            RandomOrder)
#: The values of a setting that leave its feature off.
OFF = (None, "none", "off", "keep", "clean")


def switches(cfg: DictConfig, m: ClusterMode, quota: str) -> dict[str, tuple[str, object]]:
    """The settings that switch the engine's features on (the keys extensions and policies declare)
    as this run sets them: key -> (the key a refusal names, its value)."""
    apps = list(m.checkpoint.apps or {})
    return {"quota": ("quota", quota), "estimator.source": ("estimator.source", m.estimator.source),
            "sim.network": ("sim.network", "on" if value(cfg, "sim.network") in ("on", True) else "off"),
            "sim.compat": ("sim.compat", value(cfg, "sim.compat")),
            "cluster.capacity": ("cluster.capacity", value(cfg, "cluster.capacity")),
            "failures": ("failures", failures_name(cfg)),
            "failures.clock": ("failures.clock", value(cfg, "failures.clock")),
            "checkpoint.interval_s": ("checkpoint.interval_s", value(cfg, "checkpoint.interval_s")),
            "checkpoint.apps": (f"checkpoint.apps.{apps[0]}", "set") if apps else ("checkpoint.apps", None),
            "trace.failed": ("trace.failed", m.trace.failed),
            "spot.overhead_s": ("spot.overhead_s", m.spot.overhead_s or None),
            "spares.nodes": ("spares.nodes", m.spares.nodes or None),
            "spares.standbys": ("spares.standbys", m.spares.standbys or None),
            "host_selection": ("host_selection", host_selection_name(cfg))}


def refuse_together(policy: str, on: dict[str, tuple[str, object]], fields: dict) -> None:
    """What the run's `policy` and the engine's extensions declare they cannot run with, or without
    (raysim.policy.base.Policy.refuses; raysim.sim.extensions), checked against `on`, the run's
    settings and traits (key -> the key a refusal names, its value; see `switches`): the first
    refused is one line naming the setting (an extension's first setting that switched it on, or with
    `names_refused` the setting it refuses), the policy's refusals first, the line's `{policy}` and
    `fields` filled in."""

    def holds(condition: str) -> bool:
        key, _, wanted = condition.partition("=")
        shown = on.get(key, (None, None))[1]
        return str(shown) == wanted if wanted else shown not in OFF

    def refuse(condition: str, why: str):
        key, shown = on[condition.partition("=")[0]]
        return ConfigError(key, why.format(policy=policy, **fields), shown)

    for condition, why in policy_class(policy).refuses.items():
        if holds(condition):
            raise refuse(condition, why)
    for extension in DECLARED:
        first = next((s for s in extension.settings if holds(s)), None)
        refused = [(c, why) for c, why in extension.refuses.items() if holds(c)] + \
                  [(first, why) for c, why in extension.requires.items() if not holds(c)]
        if first and refused:
            condition, why = refused[0]
            raise refuse(condition if extension.names_refused else first, why)


CHECKPOINT_KEYS = ("interval_s", "write_s", "restart_s")


def checkpoint_settings(cfg: DictConfig, m: ClusterMode) -> Checkpointing | None:
    """The run's checkpoint-restart settings (`checkpoint.*`), None without `checkpoint.interval_s`;
    a bad value, in them or in an application's (`checkpoint.apps`), is one line naming the key
    (what they cannot run with: raysim.sim.extensions.Checkpoints)."""
    default = _checkpointing(m.checkpoint, "checkpoint")
    checkpoint_apps(cfg, m)
    return default


def _checkpointing(values, shown: str) -> Checkpointing | None:
    """The Checkpointing of checked `values` (interval_s, write_s, restart_s; None: interval_s null,
    and then no cost may be set); errors name the keys as `shown`.<key>."""
    if values.interval_s is None:
        for k in CHECKPOINT_KEYS[1:]:
            if getattr(values, k) is not None:
                raise ConfigError(f"{shown}.{k}", f"needs {shown}.interval_s (the work between checkpoints)",
                                  getattr(values, k))
        return None
    return Checkpointing(values.interval_s, values.write_s or 0, values.restart_s or 0)


def checkpoint_apps(cfg: DictConfig, m: ClusterMode) -> dict:
    """`checkpoint.apps`: per value of the trace column `checkpoint.column`, that application's
    settings ({name: Checkpointing, or None: it does not checkpoint}), keys it leaves out taken from
    the run's `checkpoint.*`; {} without them. A bad entry is one line naming its key."""
    from raysim.run.cluster_settings import AppCheckpoint

    cp = m.checkpoint
    if not cp.apps:
        if cp.column is not None:
            raise ConfigError("checkpoint.column", "needs checkpoint.apps (each application's settings)", cp.column)
        return {}
    if cp.column is None:
        raise ConfigError("checkpoint.column", "must name the trace column that says each job's application "
                          "(e.g. model): checkpoint.apps needs it", cp.column)
    given = plain(cfg, "checkpoint.apps")
    out = {}
    for name, entry in cp.apps.items():
        mine = given[name]
        if "interval_s" in mine and mine["interval_s"] is None:  # it does not checkpoint: costs of its own only
            merged = entry
        else:
            merged = AppCheckpoint(**{k: getattr(entry if k in mine else cp, k) for k in CHECKPOINT_KEYS})
        out[name] = _checkpointing(merged, f"checkpoint.apps.{name}")
    return out


def checkpoint_kinds(cfg: DictConfig, m: ClusterMode, trace: Trace) -> tuple[tuple, np.ndarray | None]:
    """The per-application checkpoint settings of `checkpoint.apps` and, per trace job, the index of
    its application's among them (-1: the run's own); ((), None) without them. A column the trace
    lacks, or an application no job has, is one line."""
    apps = checkpoint_apps(cfg, m)
    if not apps:
        return (), None
    column = value(cfg, "checkpoint.column")
    if column not in trace.table.column_names:
        raise ConfigError("checkpoint.column", f"trace {trace.source} has no column {column!r} (it has "
                          f"{', '.join(trace.table.column_names)})", column)
    names = np.asarray(trace.table.column(column).cast(pa.string()).to_pylist(), dtype=object)
    ids = np.full(len(names), -1, dtype=np.int64)
    for k, name in enumerate(apps):
        mine = names == name
        if not mine.any():
            raise ConfigError(f"checkpoint.apps.{name}", f"no job of the trace has {column}={name}")
        ids[mine] = k
    return tuple(apps.values()), ids


def replays_failures(cfg: DictConfig, m: ClusterMode) -> bool:
    """`trace.failed`: keep (a failed job runs once, for its duration) or replay (raysim.sim.attempts:
    jobs the trace shows failing and retried run as it shows; what it cannot run with:
    raysim.sim.extensions.Replays); replay with Philly's span durations is one line naming the key."""
    if m.trace.failed == "keep":
        return False
    if (value(cfg, "trace.reader_options") or {}).get("duration") == "span":
        raise ConfigError("trace.failed", "Philly's attempts add up to the duration rule sum, not span: drop "
                          "trace.reader_options.duration=span", "replay")
    return True


def refuse_placeholder_durations(cfg: DictConfig, trace) -> None:
    """Jobs without a duration (Sia's elastic workloads carry a placeholder) only under elastic
    policies, which end jobs by their training progress: one line otherwise."""
    name = cfg.policy.name
    if getattr(policy_class(name), "elastic", False) or "duration_source" not in trace.table.column_names:
        return
    if "placeholder" in set(trace.table.column("duration_source").to_pylist()):
        raise ConfigError("policy", f"trace {trace.source} has elastic jobs without durations (Sia's workloads): "
                          f"run an elastic policy (sia, pollux, gavel_elastic; docs/elastic.md), not {name}", name)


def outside_vcs(cfg: DictConfig) -> tuple[str, str] | None:
    """The run's stage where its policy runs jobs outside their VCs, and the setting that turns it off
    (raysim.policy.base.Policy.outside_vcs, e.g. Lucid's profiler); None: there is none."""
    return policy_class(value(cfg, "policy.name")).outside_vcs(policy_constants_of(cfg))


def policy_constants_of(cfg: DictConfig) -> dict:
    """The run's policy settings: its group (without name and kind) with the experiment's
    `policies.<kind>` and `policies.<name>` entries (raysim.run.policy_table.policy_values)."""
    from raysim.run.policy_table import policy_values

    return policy_values(cfg)


def configured_layout(cfg: DictConfig) -> dict | None:
    """The layout of `cluster.layout` (a layout CSV or a list of pools), or None: then the VC
    layout comes with the trace (vc_config.csv: nodes of `cluster.gpus_per_node` GPUs)."""
    spec = cfg.cluster.get("layout")
    if spec is None:
        return None
    if isinstance(spec, (list, ListConfig)):
        try:
            return layout_from_config(OmegaConf.to_container(spec, resolve=True), name="cluster.layout")
        except ValueError as exc:  # layout_from_config's only errors: its one-line checks of the entries
            raise UserError(str(exc)) from exc
    return read_layout_csv(Path(str(spec)).expanduser())


def load_from_config(cfg: DictConfig) -> Trace:
    """The validated trace named by cfg.trace, checked against the configured cluster layout."""
    t = cfg.trace
    from raysim.run.gavel_jobs import gavel_trace, is_gavel_input

    if policy_kind(cfg.policy.name) == "harvest":
        from raysim.harvest.inputs import harvest_settings, harvest_trace

        return harvest_trace(harvest_settings(plain(cfg, "harvest")))
    if is_gavel_input(cfg):
        layout = configured_layout(cfg)
        if layout is None:
            raise ConfigError("cluster.layout", "Gavel's traces need a typed cluster layout: cluster=gavel_24, "
                              "cluster=hetero_demo or cluster.layout=<layout CSV>")
        return gavel_trace(cfg, layout)
    if t.synth:
        from raysim.trace.synth import load_synth

        return load_synth(dict(t.synth), cache_dir=t.cache_dir)
    if not t.path:
        raise ConfigError("trace.path", "not set: give a trace file or folder, or use +experiment=venus")
    return load_trace(t.path, fmt=t.format, vc_config=t.vc_config, gpus_per_node=int(cfg.cluster.gpus_per_node),
                      on_error=t.on_error, state_filter=t.state_filter, origin=t.origin, cache=t.cache,
                      cache_dir=t.cache_dir, reader_options=dict(t.reader_options or {}), layout=configured_layout(cfg),
                      max_duration_s=t.max_duration_s, max_submit_span_years=t.max_submit_span_years)


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
        from raysim.cluster.throughput import read_throughput_table

        path = Path(str(path)).expanduser()
        table = read_throughput_table(path)
    reference = cfg.cluster.get("reference_gpu_type")
    known = list(dict.fromkeys(p.gpu_type for pools in layout.values() for p in pools))
    if reference is not None and reference not in known:
        raise ConfigError("cluster.reference_gpu_type", f"not a GPU type of the cluster {known}", reference)
    types = job_types(trace.table, layout, throughput=table, reference_gpu_type=reference, source=trace.source)
    if types.missing:
        log.warning("throughput table %s has no entry for %d (job type, GPU type) pair(s), e.g. %s: "
                    "those jobs run there as fast as on their reference type", path, len(types.missing),
                    types.missing[:3])
    return types


def warn_if_network_idle(network: dict, layout: dict) -> None:
    """sim.network=on slows a job only where a node's multi-node jobs ask more than its NIC carries;
    say so when no node of the layout can get there (e.g. 8-GPU nodes at the default figures)."""
    most = max(p.gpus_per_node for pools in layout.values() for p in pools)
    demand = most * float(network["gbps_per_gpu"]) * float(network["duty"])
    if demand <= float(network["nic_gbps"]):
        log.warning("sim.network=on changes nothing here: a full node of %d GPUs asks at most %g Gb/s "
                    "(gbps_per_gpu %g x duty %g per GPU) of its %g Gb/s NIC; raise network.gbps_per_gpu or "
                    "network.duty, or lower network.nic_gbps (see docs/configuration.md)", most, demand,
                    network["gbps_per_gpu"], network["duty"], network["nic_gbps"])


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


def refuse_with_resources(cfg: DictConfig, trace: Trace) -> None:
    """What the run's policy declares it cannot run with where VCs count GPU shares, CPU and memory
    (`resources`), or where the trace's jobs ask for them (`requests`): one line naming the policy."""
    name = cfg.policy.name
    asks = [c for c in REQUEST_COLUMNS if c in trace.table.column_names]
    refuse_together(name, {"resources": ("policy", name), "requests": ("policy", name if asks else None)},
                    {"asks": ", ".join(asks)})


def refuse_with_classes(cfg: DictConfig, m: ClusterMode, trace: Trace, resources: bool) -> None:
    """What priority classes cannot run with (raysim.sim.spot.Spot), now that the trace says whether
    it has them: one line naming the setting."""
    traits = class_traits(cfg, m.spot, trace, resources=resources)
    refuse_together(cfg.policy.name, {**switches(cfg, m, declared_quota(plain(cfg, "quota"))[0]), **traits},
                    {"trace": trace.source})


def capacity_plan(cfg: DictConfig, trace: Trace, layout: dict, homes: tuple):
    """The run's capacity plan: the node log of `cluster.capacity` and the failures of `failures`,
    merged per node (None: the nodes never change)."""
    path = value(cfg, "cluster.capacity")
    if path is None and failures_name(cfg) == "none":
        return None
    from raysim.sim.capacity import plan_from_node_log

    vcs = trace.table.column("vc").to_pylist()
    jobs = {next(iter(layout)): len(vcs)} if homes else dict(zip(*np.unique(np.asarray(vcs, dtype=object),
                                                                             return_counts=True)))
    jobs = {str(k): int(v) for k, v in jobs.items()}
    plan = None
    if path is not None:
        plan = plan_from_node_log(Path(str(path)).expanduser(), layout, jobs, homes)
        log.info("cluster.capacity %s: %d node event(s) over %d VC(s), causes %s", path, plan.num_events,
                 len(plan.vcs), ", ".join(plan.causes))
    return failure_plan(cfg, layout, homes, jobs, plan)


def replayed_attempts(cfg: DictConfig, m: ClusterMode, trace: Trace) -> Attempts | None:
    """With trace.failed=replay, the trace's jobs that ran several times (None: keep), saying how
    many failed and how many ran several times."""
    if not replays_failures(cfg, m):
        return None
    attempts = Attempts.of_trace(trace.table)
    failed = int(pc.sum(pc.is_in(trace.table.column("state").cast(pa.string()),
                                 pa.array(FAILED_STATES))).as_py() or 0)
    log.info("trace.failed=replay: %d jobs ran several times (%d failed runs replayed), %d jobs end failed",
             len(attempts), sum(len(g) for g in attempts.gaps.values()), failed)
    if not attempts and not failed:
        log.warning("trace.failed=replay: the trace records no failed job and no retried run (no attempts_s "
                    "column, no state in %s); the run equals trace.failed=keep", list(FAILED_STATES))
    return attempts


def spec_from_config(cfg: DictConfig, trace: Trace, m: ClusterMode | None = None) -> tuple[RunSpec, dict]:
    """The run's spec and the extra per-job input columns (GPU-type ids, and whatever the policy's
    `prepare` adds, e.g. Lucid's workload ids and share scores); `m`: the run's settings as
    check_cluster_config returned them (None: checked here)."""
    m = m or check_cluster_config(cfg)
    params = SimParams.for_mode(cfg.sim.compat, sample_interval=int(cfg.sim.sample_interval), seed=int(cfg.seed))
    network = dict(cfg.network) if cfg.sim.network in ("on", True) else None
    layout = cluster_layout(cfg, trace)
    if network is not None:
        warn_if_network_idle(network, layout)
    types = gpu_type_inputs(cfg, trace, layout)
    settings = policy_settings(cfg.policy.name, policy_constants_of(cfg))
    constants = as_options(settings)  # (its inputs are its prepare's)
    quota = quota_settings(OmegaConf.to_container(cfg.quota, resolve=True) if value(cfg, "quota") else None,
                           list(layout))
    homes = ()
    if quota.mode == "global":
        layout, homes = merged_layout(layout)
    resources = counts_resources(trace.table, layout, cfg.placer.name)
    if resources:
        refuse_with_resources(cfg, trace)
    requests, shapes = request_inputs(trace.table) if resources else ({}, None)
    kinds, kind_ids = checkpoint_kinds(cfg, m, trace)
    checkpoint = checkpoint_settings(cfg, m)
    refuse_with_classes(cfg, m, trace, resources)
    spot, spot_ids = spot_rules(m.spot, trace, layout)
    workers = worker_inputs(cfg, trace, resources=resources)
    refuse_standbys(m.spares, policy_class(cfg.policy.name).times_jobs, resources)
    spec = RunSpec(cfg.policy.name, cfg.placer.name, params, layout, policy_options=constants,
                   type_order=str(cfg.placer.get("type_order", "any")), network=network, catalog=types.catalog,
                   quota=quota, pool_homes=homes, resources=resources, shapes=shapes,
                   capacity=capacity_plan(cfg, trace, layout, homes), checkpoint=checkpoint,
                   checkpoint_kinds=kinds, attempts=replayed_attempts(cfg, m, trace), spot=spot,
                   spares=spare_rules(m.spares, layout, host_selection(cfg)), standbys=standby_rules(m.spares, layout))
    if spec.capacity is not None and quota.borrow:  # a node on loan keeps its identity
        spec = replace(spec, quota=replace(quota, named_nodes=True))
    extra = {"constraint": types.constraint, "speed_profile": types.speed_profile, **requests}
    if kind_ids is not None:
        extra["checkpoint_kind"] = kind_ids
    if spot_ids is not None:
        extra["spot"] = spot_ids
    if workers is not None:
        extra["workers"] = workers
    refuse_placeholder_durations(cfg, trace)
    spec, more = policy_class(spec.policy).prepare(settings, run_inputs(cfg), trace, spec)
    return spec, {**extra, **(more or {})}


def run_inputs(cfg: DictConfig) -> RunInputs:
    """What a policy's `prepare` reads besides its own settings (raysim.inputs.RunInputs)."""
    harvest = None
    if value(cfg, "harvest") is not None:
        from raysim.harvest.inputs import harvest_settings

        harvest = harvest_settings(plain(cfg, "harvest"))
    return RunInputs(throughput=value(cfg, "cluster.throughput"), reference_type=value(cfg, "rounds.reference_type"),
                     reference_gpu_type=value(cfg, "cluster.reference_gpu_type"), harvest=harvest)
