"""Elastic jobs made of an ordinary trace: which application stands in for each job, which jobs may
be resized, and how much work each one has.

- **Applications by GPU-hours** (``policy.application_map``): a list of ``{below_gpu_hours: H,
  application: A}`` rules tried in order; a job whose duration x GPUs is below H GPU-hours trains A.
  Sia's workload generator maps the Helios traces this way (cifar10 below 1, deepspeech2 below 10,
  yolov3 below 100, imagenet above; ``+experiment=venus_elastic``).
- **The elastic share** (``policy.share``): each job is elastic with this probability, drawn from
  the run's seed and the job's id (the same jobs whatever the policy); the others are rigid: they
  keep their GPU count and batch size, and elastic policies only choose their GPU kind and when
  they run.
- **Work that matches the trace** (``policy.match_durations``): each job's training runs faster or
  slower by one factor, so that on its own GPU count on the reference GPU kind, without restarts,
  it takes exactly its trace duration. Event-driven policies (Tiresias, Lucid) replay those
  durations, so they run the same work (except jobs above the GPUs the profiles cover, which
  elastic policies cap, and the restore time elastic policies charge at a job's first start).
"""

from __future__ import annotations

import hashlib

import numpy as np

from raysim.errors import ConfigError


def applications_by_gpu_hours(duration_s: np.ndarray, gpus: np.ndarray, rules: list) -> list[str]:
    """The application of each job by its GPU-hours under `rules` ([{below_gpu_hours, application}],
    the last rule's bound may be null: any)."""
    hours = duration_s * gpus / 3600.0
    out = np.full(len(hours), None, dtype=object)
    for i, rule in enumerate(rules):
        try:
            app = str(rule["application"])
            bound = rule.get("below_gpu_hours")
            bound = np.inf if bound is None else float(bound)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigError(f"policy.application_map[{i}]", "needs application and below_gpu_hours (a number "
                              "or null)", rule) from None
        pick = (out == None) & (hours < bound)  # noqa: E711 (elementwise)
        out[pick] = app
    if (out == None).any():  # noqa: E711
        top = float(hours[out == None].max())  # noqa: E711
        raise ConfigError("policy.application_map", f"no rule covers a job of {top:.1f} GPU-hours: end with "
                          "{below_gpu_hours: null, application: ...}")
    return [str(a) for a in out]


def elastic_mask(job_ids, share: float, seed: int) -> np.ndarray:
    """Whether each job is elastic: probability `share`, drawn per job id and seed (stable across
    policies, runtimes and trace cuts)."""
    if not 0.0 <= share <= 1.0:
        raise ConfigError("policy.share", "must be a fraction between 0 and 1", share)
    if share == 1.0:
        return np.ones(len(job_ids), dtype=bool)
    draws = np.array([int.from_bytes(hashlib.sha256(f"{seed}/{j}".encode()).digest()[:8], "little") / 2**64
                      for j in job_ids])
    return draws < share


def rigid_seconds(make_job, placement: tuple[int, ...], kind: str) -> float | None:
    """Seconds a job (``make_job()``, fresh) trains on `placement` of `kind` without restarts to
    its last epoch; None when the profiles do not cover that configuration."""
    job = make_job()
    job.allocate(kind, placement)
    job.rescale_left = 0.0
    now, step = 0.0, 86_400.0
    try:
        while job.completion is None:
            job.advance(now, step)
            now += step
            if now > 3.2e9:  # a century: the profile gives it no progress
                return None
    except ValueError:  # a configuration outside the measured profile
        return None
    return float(job.completion)
