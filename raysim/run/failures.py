"""The `failures` config group checked and turned into a producer's settings (raysim.sim.failures,
raysim.sim.failure_trace): every key used or refused, a bad value one line naming its key."""

from __future__ import annotations

import re
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from raysim.errors import ConfigError
from raysim.run.values import choice, number, value
from raysim.sim.failures import DISTRIBUTIONS, KINDS, REPAIRS, Category, FailureModel

#: The presets of the group (conf/failures/): models draw failures, `trace` replays them.
NAMES = ("none", "exponential", "weibull", "llama3", "trace")
#: The longest mean time between failures or repair a setting may give (hours: about 1,140 years), so
#: that every drawn time fits the engine's clock, even at a million ticks per second.
MAX_HOURS = 1e7
_MODEL_KEYS = {"name", "distribution", "shape", "node_mtbf_h", "gpu_mtbf_h", "repair_h", "repair", "categories"}
_KEYS = {"none": {"name"}, "trace": {"name", "path", "kinds"}}
_NAME = re.compile(r"[A-Za-z0-9_]+")
HOUR = 3600


def failures_name(cfg: DictConfig) -> str:
    """The chosen preset (`none` where the group is absent)."""
    return "none" if value(cfg, "failures") is None else choice(cfg, "failures.name", NAMES, what="failure model")


def check_failures_config(cfg: DictConfig) -> None:
    """Check the `failures` group: its keys and values (one line naming a bad one)."""
    name = failures_name(cfg)
    allowed = _KEYS.get(name, _MODEL_KEYS - ({"shape"} if value(cfg, "failures.distribution") != "weibull" else set()))
    for key in cfg.failures or {}:
        if key not in allowed:
            why = ("only with failures.distribution=weibull" if key == "shape" else
                   f"not a setting of failures={name} (it has {', '.join(sorted(allowed))})")
            raise ConfigError(f"failures.{key}", why, value(cfg, f"failures.{key}"))
    if name == "trace":
        failure_kinds(cfg)
        path = value(cfg, "failures.path")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError("failures.path", "must be a failure trace file (CSV or Parquet; docs/failures.md)", path)
    elif name != "none":
        failure_model(cfg)


def failure_kinds(cfg: DictConfig) -> dict[str, str]:
    """`failures.kinds` of failures=trace: category -> down or restart."""
    kinds = value(cfg, "failures.kinds")
    if not isinstance(kinds, DictConfig) or not kinds:
        raise ConfigError("failures.kinds", "must map each category to down or restart, e.g. {failure: down}", kinds)
    for category, kind in kinds.items():
        if not _NAME.fullmatch(str(category)):
            raise ConfigError("failures.kinds", "a category is a name of letters, digits and _", category)
        choice(cfg, f"failures.kinds.{category}", KINDS)
    return {str(k): str(v) for k, v in kinds.items()}


def failure_model(cfg: DictConfig) -> FailureModel:
    """The failure model of failures=exponential, weibull or llama3."""
    distribution = choice(cfg, "failures.distribution", DISTRIBUTIONS)
    shape = number(cfg, "failures.shape", above=0) if distribution == "weibull" else 1.0
    node, gpu = value(cfg, "failures.node_mtbf_h"), value(cfg, "failures.gpu_mtbf_h")
    if (node is None) == (gpu is None):
        raise ConfigError("failures.node_mtbf_h", "set exactly one of failures.node_mtbf_h (per node) and "
                          "failures.gpu_mtbf_h (per GPU)", node)
    mtbf = {k: number(cfg, f"failures.{k}", above=0, maximum=MAX_HOURS) * HOUR
            for k, v in (("node_mtbf_h", node), ("gpu_mtbf_h", gpu)) if v is not None}
    repair_s = number(cfg, "failures.repair_h", minimum=0, maximum=MAX_HOURS) * HOUR
    repair = choice(cfg, "failures.repair", REPAIRS)
    raw = value(cfg, "failures.categories")
    if not isinstance(raw, ListConfig) or not raw:
        raise ConfigError("failures.categories", "must be a list of {name, share, kind[, repair_h]}", raw)
    categories = tuple(_category(cfg, i) for i in range(len(raw)))
    names = [c.name for c in categories]
    if len(set(names)) < len(names):
        raise ConfigError("failures.categories", "category names must differ", names)
    return FailureModel(categories, node_mtbf_s=mtbf.get("node_mtbf_h"), gpu_mtbf_s=mtbf.get("gpu_mtbf_h"),
                        distribution=distribution, shape=shape, repair_s=repair_s, repair=repair)


def _category(cfg: DictConfig, i: int) -> Category:
    key = f"failures.categories[{i}]"
    entry = value(cfg, key)
    if not isinstance(entry, DictConfig):
        raise ConfigError(key, "must be {name, share, kind[, repair_h]}", entry)
    extra = set(entry) - {"name", "share", "kind", "repair_h"}
    if extra:
        raise ConfigError(f"{key}.{sorted(extra)[0]}", "not a setting of a category (name, share, kind, repair_h)")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{key}.name", "must be a name of letters, digits and _", name)
    repair = entry.get("repair_h")
    return Category(name, number(cfg, f"{key}.share", above=0), choice(cfg, f"{key}.kind", KINDS),
                    None if repair is None else number(cfg, f"{key}.repair_h", minimum=0, maximum=MAX_HOURS) * HOUR)


def causes_of(cfg: DictConfig) -> tuple:
    """The causes failures name (category names, in order)."""
    name = failures_name(cfg)
    if name == "none":
        return ()
    if name == "trace":
        return tuple(failure_kinds(cfg))
    return tuple(OmegaConf.to_container(c)["name"] for c in cfg.failures.categories)


def failure_plan(cfg: DictConfig, layout: dict, homes: tuple, jobs: dict, log_plan):
    """The run's capacity plan with failures (None under failures=none: `log_plan`, the node log's
    plan or None, stands): per VC, each node's failures merged with its node log events; the causes
    are the node log's, then the failure categories. `jobs`: trace jobs per VC of `layout`."""
    name = failures_name(cfg)
    if name == "none":
        return log_plan
    from raysim.sim.capacity import CapacityPlan

    logs = dict(log_plan.vcs) if log_plan is not None else {}
    causes = tuple(dict.fromkeys((log_plan.causes if log_plan is not None else ()) + causes_of(cfg)))
    if name == "trace":
        from raysim.sim.failure_trace import read_failure_trace, traced_vcs

        kinds = failure_kinds(cfg)
        from raysim.sim.capacity import own_layout

        own = own_layout(layout, homes) if homes else layout
        by_node = read_failure_trace(Path(str(value(cfg, "failures.path"))).expanduser(), own, kinds, causes)
        return CapacityPlan(causes, traced_vcs(by_node, layout, homes, causes, logs, jobs))
    from raysim.sim.failures import failing_vcs

    return CapacityPlan(causes, failing_vcs(failure_model(cfg), int(value(cfg, "seed")), layout, homes, causes,
                                            logs, jobs))

