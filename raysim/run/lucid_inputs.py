"""Everything a Lucid run needs besides the trace: profiler pool, pair speeds, share scores, forecast
(called through raysim.policy.lucid.Lucid.prepare)."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import numpy as np
from omegaconf import DictConfig, OmegaConf

from raysim.errors import ConfigError
from raysim.models.colocation import pair_table, workload_ids
from raysim.models.forecast import load_forecast
from raysim.trace.load import Trace

if TYPE_CHECKING:  # (raysim.runtime.spec imports the policies, whose Lucid imports this module)
    from raysim.runtime.spec import RunSpec

log = logging.getLogger("raysim")


def lucid_inputs(cfg: DictConfig, trace: Trace, spec: RunSpec) -> tuple[RunSpec, dict]:
    """The Lucid run spec (VCs minus the profiler's nodes, pair speeds and forecast for the policy,
    the profiler's settings) and the per-job extra inputs (workload ids, share scores)."""
    prof = cfg.profiler
    layout = dict(spec.layout)
    profiling = int(prof.nodes) > 0  # profiler.nodes=0: no profiling stage, jobs go straight to their VCs
    total = sum(p.nodes for pools in layout.values() for p in pools)
    if int(prof.nodes) > total:  # a pool of 1e12 nodes hung building its nodes
        raise ConfigError("profiler.nodes", f"must be at most the cluster's {total} nodes (the profiling pool is a "
                          "few of them)", prof.nodes)
    for vc in (prof.take_from or []) if profiling else []:
        if vc not in layout:
            raise ConfigError("profiler.take_from", f"VC {vc!r} is not in the VC layout {sorted(layout)}", vc)
        first, *rest = layout[vc]
        if sum(p.nodes for p in layout[vc]) < 2 or first.nodes < 1:
            raise ConfigError("profiler.take_from", f"VC {vc!r} has {sum(p.nodes for p in layout[vc])} node(s), "
                              "too few to give one", vc)
        layout[vc] = (dataclasses.replace(first, nodes=first.nodes - 1), *rest)
    if profiling and prof.lender is not None and prof.lender not in layout:
        raise ConfigError("profiler.lender", f"not in the VC layout {sorted(layout)}", prof.lender)
    forecast = None
    if cfg.forecast.source == "file":
        if not cfg.forecast.path:
            raise ConfigError("forecast.path", "not set: forecast.source=file needs a CSV with time, pred_gpu_job, "
                              "pred_gpu_num")
        forecast = load_forecast(cfg.forecast.path, trace.origin)
    elif cfg.forecast.source != "none":
        raise ConfigError("forecast.source", "must be none or file", cfg.forecast.source)
    ids, keys = workload_ids(trace.table)
    pairs = pair_speeds_for(cfg, trace, keys)
    scores = share_scores(trace, cfg.profiles.single)
    settings = None
    if profiling:
        donor = next(iter(prof.take_from or []), None) or next(iter(layout))
        pool = dataclasses.replace(spec.layout[donor][0], nodes=int(prof.nodes))
        settings = {"params": spec.params, "pool": pool, "time_limit": int(prof.time_limit),
                    "factor": int(prof.factor), "lender": prof.lender, "forecast": forecast,
                    "scaling": OmegaConf.to_container(prof.scaling, resolve=True)}
    spec = dataclasses.replace(spec, layout=layout, profiler=settings,
                               policy_options={**spec.policy_options, "pairs": pairs, "forecast": forecast})
    packing = spec.policy_options.get("packing", True)
    if profiling:
        profiler_text = (f"profiler pool of {int(prof.nodes)} node(s) from {list(prof.take_from or [])}, "
                         f"lender {prof.lender}")
    else:
        profiler_text = "no profiler (profiler.nodes=0: jobs go straight to their VCs, which keep their nodes)"
    log.info("lucid: %s; %d measured pairs over %d workloads; forecast %s; packing %s", profiler_text, len(pairs),
             len(keys), cfg.forecast.path if forecast else "none",
             "off (policy.packing=false)" if not packing else "by the forecast" if forecast else "always on")
    return spec, {"workload": ids, "share_score": scores}


def pair_speeds_for(cfg: DictConfig, trace: Trace, keys: list) -> dict:
    """Pair speeds by profiles.interference: measured pairs only (unknown pairs run at full speed),
    or measured pairs completed by the learned or the analytic interference model."""
    mode = cfg.profiles.get("interference", "measured")
    if mode == "measured":
        return pair_table(keys, cfg.profiles.colocation) if cfg.profiles.colocation else {}
    if mode not in ("learned", "analytic"):
        raise ConfigError("profiles.interference", "must be measured, learned or analytic", mode)
    if mode == "learned" and not (cfg.profiles.colocation and cfg.profiles.single):
        raise ConfigError("profiles.interference", "learned trains on profiles.colocation and profiles.single: "
                          "set both", mode)
    from raysim.models.interference import interference_pairs
    from raysim.models.resources import key_profiles

    profiles = key_profiles(keys, trace.table, cfg.profiles.single)
    return interference_pairs(keys, mode, colocation_csv=cfg.profiles.colocation,
                              single_csv=cfg.profiles.single, profiles=profiles)


def share_scores(trace: Trace, single_csv) -> np.ndarray:
    """Share score per job: the measured label for known workloads (profiles.single), the packing
    analyzer's prediction otherwise; without profiles, a utilisation rule (>= 80 % -> 2, >= 40 % -> 1)."""
    if single_csv:
        from raysim.models.packing import ShareScores

        return np.asarray(ShareScores.from_files(single_csv).scores(trace.table), dtype=np.int64)
    util = np.nan_to_num(trace.table.column("gpu_util").to_numpy(zero_copy_only=False).astype(float))
    return np.where(util >= 80, 2, np.where(util >= 40, 1, 0)).astype(np.int64)
