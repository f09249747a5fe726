"""An elastic policy's declared settings (`ElasticSettings`, raysim.settings): its rounds and its
inputs, the applications' profiles and constants and how an ordinary trace's jobs become elastic.
The policies (raysim.policy.elastic and its subclasses) declare them; raysim.elastic.inputs reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from raysim.rounds.policies.base import MAX_ROUND_S, MIN_ROUND_S
from raysim.settings import setting


#: Sia's applications: epochs to train, checkpoint-restore seconds, calibration slowdown.
APPS = {"bert": {"max_epochs": 2, "restart_s": 120, "slowdown": 1.2},
        "cifar10": {"max_epochs": 100, "restart_s": 50, "slowdown": 1.8},
        "deepspeech2": {"max_epochs": 80, "restart_s": 25, "slowdown": 1.2},
        "imagenet": {"max_epochs": 90, "restart_s": 250, "slowdown": 1.2},
        "yolov3": {"max_epochs": 50, "restart_s": 80, "slowdown": 1.2},
        "ncf": {"max_epochs": 10, "restart_s": 15, "slowdown": 1.5}}


def round_setting(default: float, doc: str):
    """policy.round_s of an elastic policy: within the round mechanism's shortest and longest rounds."""
    return setting(default, doc, minimum=MIN_ROUND_S, maximum=MAX_ROUND_S)


def app_constants(apps, key: str) -> dict:
    """policy.apps: per application, {max_epochs: N, restart_s: S, slowdown: F}."""
    from raysim.errors import ConfigError

    if not isinstance(apps, dict) or not apps:
        raise ConfigError(key, "must be a table: application -> {max_epochs, restart_s, slowdown}", apps)
    for app, c in apps.items():
        if not isinstance(c, dict) or set(c) != {"max_epochs", "restart_s", "slowdown"}:
            raise ConfigError(f"{key}.{app}", "needs max_epochs, restart_s and slowdown, and nothing else", c)
        for field, whole, low in (("max_epochs", True, 1), ("restart_s", False, 0), ("slowdown", False, 0)):
            v = c[field]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < low or (
                    whole and v != int(v)) or (field == "slowdown" and v == 0):
                raise ConfigError(f"{key}.{app}.{field}", ("must be a whole number of epochs, at least 1" if whole else
                                  "must be a finite number above 0" if field == "slowdown" else
                                  "must be a finite number, at least 0"), v)
    return apps


def gpu_hour_rules(rules, key: str) -> list:
    """policy.application_map: [{below_gpu_hours: H or null, application: A}, ...], in order."""
    from raysim.errors import ConfigError

    if not isinstance(rules, list) or not rules:
        raise ConfigError(key, "must be a list of {below_gpu_hours: H, application: A} rules", rules)
    for i, rule in enumerate(rules):
        bound = rule.get("below_gpu_hours", 0) if isinstance(rule, dict) else None
        if not isinstance(rule, dict) or set(rule) != {"below_gpu_hours", "application"} or not (
                isinstance(rule["application"], str) and rule["application"].strip()) or not (
                bound is None or not isinstance(bound, bool) and isinstance(bound, (int, float)) and bound > 0):
            raise ConfigError(f"{key}[{i}]", "needs application (a name) and below_gpu_hours (a number above 0, "
                              "or null: any)", rule)
    return rules


@dataclass(frozen=True)
class ElasticSettings:
    """The rounds of an elastic policy, and its inputs: the applications' profiles and what each
    application's jobs train for (Sia's), and how an ordinary trace's jobs become elastic
    (raysim.elastic.mapping)."""

    round_s: float = round_setting(60.0, "seconds between rounds")
    profiles: str | None = setting(None, "folder of <app>/placements-<kind>.csv, scalability-<kind>.csv, "
                                   "validation-<batch>.csv (data:sia_profiles)", input=True)
    application_column: str = setting("model", "the trace's column naming each job's application (Sia's "
                                      "workloads: model)", input=True)
    batch_size_column: str = setting("batchsize", "... and its initial batch size (missing: the application's "
                                     "smallest validated one)", input=True)
    application_map: object | None = setting(None, "ordinary traces: [{below_gpu_hours: H, application: A}, ...] "
                                             "rules, in order (raysim.elastic.mapping)", check=gpu_hour_rules,
                                             input=True, what="list of rules")
    share: float = setting(1.0, "fraction of jobs that are elastic, drawn per job from the seed (the others keep "
                           "their GPUs and batch size)", minimum=0, maximum=1, input=True)
    match_durations: bool = setting(False, "true: each job's training speed scaled so that on its own GPUs "
                                    "(reference kind) it takes its trace duration", input=True)
    apps: object = setting(APPS, "per application: epochs to train, checkpoint-restore seconds, calibration "
                           "slowdown (Sia's)", check=app_constants, input=True,
                           what="table by application")
