"""Everything a Lucid run needs besides the trace: profiler pool, pair speeds, share scores, forecast
(called through raysim.policy.lucid.Lucid.prepare)."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import numpy as np

from raysim.errors import ConfigError
from raysim.models.colocation import pair_table, workload_ids
from raysim.models.forecast import load_forecast
from raysim.trace.load import Trace

if TYPE_CHECKING:  # (raysim.policy.lucid imports this module)
    from raysim.policy.lucid import LucidSettings, ProfilesSettings

log = logging.getLogger("raysim")


def lucid_inputs(lucid: LucidSettings, trace: Trace, spec) -> tuple[object, dict]:
    """The Lucid run spec (VCs minus the profiler's nodes, pair speeds and forecast for the policy,
    the profiler's settings) and the per-job extra inputs (workload ids, share scores), from Lucid's
    checked settings (raysim.policy.policy_settings("lucid", ...)) and the run's `spec` (the
    raysim.runtime.spec.RunSpec every policy's `prepare` gets)."""
    prof = lucid.profiler
    layout = dict(spec.layout)
    profiling = prof.nodes > 0  # policy.profiler.nodes=0: no profiling stage, jobs go straight to their VCs
    total = sum(p.nodes for pools in layout.values() for p in pools)
    if prof.nodes > total:  # a pool of 1e12 nodes hung building its nodes
        raise ConfigError("policy.profiler.nodes", f"must be at most the cluster's {total} nodes (the profiling pool is a "
                          "few of them)", prof.nodes)
    for name in prof.take_from if profiling else []:
        if name not in layout:
            raise ConfigError("policy.profiler.take_from", f"VC {name!r} is not in the VC layout {sorted(layout)}",
                              name)
        first, *rest = layout[name]
        if sum(p.nodes for p in layout[name]) < 2 or first.nodes < 1:
            raise ConfigError("policy.profiler.take_from", f"VC {name!r} has {sum(p.nodes for p in layout[name])} "
                              "node(s), too few to give one", name)
        layout[name] = (dataclasses.replace(first, nodes=first.nodes - 1), *rest)
    if profiling and prof.lender is not None and prof.lender not in layout:
        raise ConfigError("policy.profiler.lender", f"not in the VC layout {sorted(layout)}", prof.lender)
    forecast = None
    if lucid.forecast.source == "file":
        if not lucid.forecast.path:
            raise ConfigError("policy.forecast.path", "not set: policy.forecast.source=file needs a CSV with time, "
                              "pred_gpu_job, pred_gpu_num")
        forecast = load_forecast(lucid.forecast.path, trace.origin)
    ids, keys = workload_ids(trace.table)
    pairs = pair_speeds_for(lucid.profiles, trace, keys)
    scores = share_scores(trace, lucid.profiles.single)
    settings = None
    if profiling:
        donor = next(iter(prof.take_from), None) or next(iter(layout))
        pool = dataclasses.replace(spec.layout[donor][0], nodes=prof.nodes)
        if prof.factor > pool.gpus_per_node:  # a job the pool accepts but cannot hold would wait there forever
            raise ConfigError("policy.profiler.factor", f"must be at most the pool's {pool.gpus_per_node} GPUs per "
                              f"node: jobs of up to nodes x factor GPUs are profiled in the pool of {pool.nodes} "
                              f"node(s), {pool.nodes * pool.gpus_per_node} GPUs", prof.factor)
        settings = {"params": spec.params, "pool": pool, "time_limit": prof.time_limit,
                    "factor": prof.factor, "lender": prof.lender, "forecast": forecast,
                    "scaling": dataclasses.asdict(prof.scaling)}
    spec = dataclasses.replace(spec, layout=layout, profiler=settings,
                               policy_options={**spec.policy_options, "pairs": pairs, "forecast": forecast})
    packing = spec.policy_options.get("packing", True)
    if profiling:
        profiler_text = f"profiler pool of {prof.nodes} node(s) from {list(prof.take_from)}, lender {prof.lender}"
    else:
        profiler_text = "no profiler (policy.profiler.nodes=0: jobs go straight to their VCs, which keep their nodes)"
    log.info("lucid: %s; %d measured pairs over %d workloads; forecast %s; packing %s", profiler_text, len(pairs),
             len(keys), lucid.forecast.path if forecast else "none",
             "off (policy.packing=false)" if not packing else "by the forecast" if forecast else "always on")
    return spec, {"workload": ids, "share_score": scores}


def pair_speeds_for(settings: ProfilesSettings, trace: Trace, keys: list) -> dict:
    """Pair speeds by policy.profiles.interference: measured pairs only (unknown pairs run at full
    speed), or measured pairs completed by the learned or the analytic interference model."""
    mode = settings.interference
    if mode == "measured":
        return pair_table(keys, settings.colocation) if settings.colocation else {}
    if mode == "learned" and not (settings.colocation and settings.single):
        raise ConfigError("policy.profiles.interference", "learned trains on policy.profiles.colocation and "
                          "policy.profiles.single: set both", mode)
    from raysim.models.interference import interference_pairs
    from raysim.models.resources import key_profiles

    profiles = key_profiles(keys, trace.table, settings.single)
    return interference_pairs(keys, mode, colocation_csv=settings.colocation,
                              single_csv=settings.single, profiles=profiles)


def share_scores(trace: Trace, single_csv) -> np.ndarray:
    """Share score per job: the measured label for known workloads (policy.profiles.single), the packing
    analyzer's prediction otherwise; without profiles, a utilisation rule (>= 80 % -> 2, >= 40 % -> 1)."""
    if single_csv:
        from raysim.models.packing import ShareScores

        return np.asarray(ShareScores.from_files(single_csv).scores(trace.table), dtype=np.int64)
    util = np.nan_to_num(trace.table.column("gpu_util").to_numpy(zero_copy_only=False).astype(float))
    return np.where(util >= 80, 2, np.where(util >= 40, 1, 0)).astype(np.int64)
