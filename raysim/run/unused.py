"""Every setting is used or refused: a setting the run has no use for is a ConfigError naming it
(one line, exit status 2), raised before anything is read.

Two tables say what a run uses:

- `MODES`: the top-level config keys and groups each mode reads (`mode: cluster`, `fgd`).
  Any other key that differs from the root defaults (conf/config.yaml and its default groups) is
  refused, wherever it was set (command line or experiment file), and so is a command-line override
  naming one, even to its default value (`runtime=ray` in the FGD experiment).
- `policy_unused`: in cluster mode, settings only some runs use (`estimator.*` only for policies
  that rank by estimates, `harvest` only for harvesting, `network.*` only with sim.network=on,
  `ray.*` only with runtime=ray, ..., and those of its own group a policy says it leaves unread,
  `Policy.unread`, e.g. Lucid's profiling pool's settings when it has no pool). These are refused when given on
  the command line of a single run (and those whose switch is the run's own, `SWITCHED`: `network.*`
  without sim.network=on, ..., wherever they are set): experiment files legitimately prepare them
  for the policies one may pick, and a multirun sweeping policies gives its overrides to runs that use them and runs
  that do not (`-m policy=qssf,srtf estimator.source=oracle`). A policy's own settings are in its
  group (`policy.*`, declared by the policy, raysim.settings): another policy refuses them wherever
  they are set; an experiment prepares them for a sweep as `policies.<name>.*`
  (raysim.run.policy_table).
"""

from __future__ import annotations

from functools import lru_cache

from omegaconf import DictConfig, ListConfig, OmegaConf

from raysim.errors import ConfigError
from raysim.run.overrides import command_line_overrides, covers, in_multirun, override_key
from raysim.settings import did_you_mean

#: Keys every mode reads (or Hydra owns).
SHARED = ("mode", "data", "hydra", "replicate")  # (replicate: read by the sweep, raysim.report.replicate)
#: The config keys and groups each mode reads; the others must keep their root defaults.
CLUSTER_KEYS = ("seed", "trace", "sim", "network", "estimator", "ray", "policies",
                "rounds", "harvest", "cluster", "policy", "placer", "runtime", "quota", "checkpoint",
                "failures", "repair", "retire", "host_selection", "report", "spot", "spares")
MODES = {"cluster": CLUSTER_KEYS, "fgd": ("fgd", "seed")}
#: Why a mode refuses what it does not use (per key where it helps; "*": any other key).
WHY = {
    "fgd": {"*": "the FGD inflation experiment (+experiment=fgd_openb) does not use it: it places pods without "
                 "a clock; +experiment=openb replays them in time under policies, placers, quotas and runtimes"},
    "cluster": {"fgd": "used by the FGD inflation experiment only (mode=fgd, +experiment=fgd_openb)",
                "*": "not a setting of trace replays (mode=cluster)"},
}
#: Config groups chosen by name (`policy=tiresias`): a different choice is refused as the group.
CHOICE_KEYS = {"policy": "name", "placer": "name", "runtime": "name", "quota": "mode", "failures": "name",
               "repair": "name", "retire": "name", "host_selection": "name"}
#: The round mechanism's settings, once rounds.*, now every round-based policy's own (policy.*);
#: rounds.generate, rate_jobs_per_hour and reference_type make Gavel's jobs for any policy.
ROUND_MOVED = ("round_s", "reset_min_s", "type_order", "lp_method", "window", "job_type_column", "job_type_map")


#: Settings that were renamed or removed -> what to set instead. Refused wherever they are set: Hydra
#: adds a key it does not know from an experiment file, or from `+key=value` on the command line,
#: without a word, and the run would silently go on without it.
RETIRED = {
    "spares.returns": "moved to the host_selection group: host_selection=returns_last (was spares.returns=last), "
                      "in_place, fewest_failures or random",
    "rounds.throughputs": "renamed to cluster.throughput (the throughput table of every policy)",
    "rounds.plots": "renamed to report.plots (run, sweep, none or auto)",
    "policy.round": "the constants of round-based policies are policy.<constant> now (e.g. policy.type_choice, "
                    "policy.min_s)",
    **{old: f"moved to policy.{old}: Lucid's {what} is a setting of policy=lucid (an experiment file that "
                 f"prepares it for a sweep sets policies.lucid.{old}; docs/configuration.md)"
       for old, what in (("profiler", "profiling pool"), ("forecast", "packing forecast"),
                         ("profiles", "pair speeds and share scores"))},
    **{f"rounds.{key}": f"moved to policy.{key}: the round mechanism's settings are each round-based policy's "
                        f"(an experiment file that prepares them for a sweep sets policies.round.{key}; "
                        "docs/configuration.md)" for key in ROUND_MOVED},
    "elastic": "moved: the elastic policies' inputs are each elastic policy's settings (policy.profiles, "
               "policy.apps, policy.share, ...; an experiment file that prepares them for a sweep sets "
               "policies.elastic.*; docs/configuration.md)",
    "cluster.cpus_per_node": "removed: give each node's CPUs as the cpu_milli column of a cluster.layout CSV "
                             "(vc,gpu_type,gpus_per_node,nodes,cpu_milli,memory_mib)",
}


def _has(cfg: DictConfig, dotted: str) -> bool:
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, DictConfig) or part not in node.keys():  # (keys(): no exception raised inside)
            return False
        node = node._get_node(part)
    return True


def refuse_retired(cfg: DictConfig | None, overrides=None) -> None:
    """A ConfigError naming the first setting of `RETIRED` given on the command line (default: this
    run's overrides) or present in `cfg` (an experiment file; None: overrides only), with what to set
    instead."""
    for text in command_line_overrides() if overrides is None else overrides:
        key = override_key(text)
        for old, why in RETIRED.items():
            if covers(old, key):
                raise ConfigError(key, why)
    for old, why in RETIRED.items():
        if cfg is not None and _has(cfg, old):
            raise ConfigError(old, why)


def refuse_overrides(unused, why: str, overrides=None) -> None:
    """A ConfigError naming the first of `overrides` (default: this run's command-line overrides)
    that sets a config group or key of `unused` (e.g. "placer" covers `placer=fgd` and
    `placer.type_order=...`); `why` says what the mode does instead."""
    for text in command_line_overrides() if overrides is None else overrides:
        key = override_key(text)
        if any(covers(prefix, key) for prefix in unused):
            raise ConfigError(key, why)


@lru_cache(maxsize=1)
def root_defaults() -> DictConfig:
    """conf/config.yaml with its default groups (cluster, policy, placer, runtime, quota), as a run
    gets it with no override."""
    from raysim.paths import CONF_DIR

    root = OmegaConf.load(CONF_DIR / "config.yaml")
    groups = {}
    for entry in root.get("defaults", []):
        if isinstance(entry, str):  # _self_
            continue
        for group, name in entry.items():
            if not group.startswith(("override hydra/", "hydra/")):  # (Hydra's own groups: not run settings)
                groups[group] = OmegaConf.load(CONF_DIR / group / f"{name}.yaml")
    base = {k: v for k, v in root.items() if k not in ("defaults", "hydra")}
    return OmegaConf.merge(OmegaConf.create(base), groups)


def _plain(node):
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=False)
    return node


def first_difference(value, default, key: str):
    """(dotted key, value) of the first setting under `key` where `value` differs from `default`, or None."""
    value, default = _plain(value), _plain(default)
    if isinstance(value, dict) and isinstance(default, dict):
        for k in list(value) + [k for k in default if k not in value]:
            found = first_difference(value.get(k), default.get(k), f"{key}.{k}")
            if found:
                return found
        return None
    return None if value == default else (key, value)


def refuse_unused(cfg: DictConfig, overrides=None) -> None:
    """The mode's table (`MODES`): a ConfigError naming the first command-line override (default:
    this run's) that sets a key the mode does not use, or else the first such key whose value differs
    from the root defaults. An unknown mode is left to the mode check."""
    mode = cfg.get("mode")
    if mode not in MODES:
        return
    used = set(MODES[mode]) | set(SHARED)

    def why(key: str) -> str:
        """Why the mode refuses `key`, and the used key it may be a typo of."""
        top, _, rest = key.partition(".")
        hint = did_you_mean(top, sorted(used), rest=rest) if top not in WHY[mode] else ""
        return WHY[mode].get(top, WHY[mode]["*"]) + (f"; {hint}" if hint else "")

    for text in command_line_overrides() if overrides is None else overrides:
        key = override_key(text)
        top = key.split(".", 1)[0].split("/", 1)[0]  # hydra/launcher=... is Hydra's
        if top not in used and top != "experiment":
            raise ConfigError(key, why(key))
    defaults = root_defaults()
    for top in cfg.keys():
        if top in used:
            continue
        choice = CHOICE_KEYS.get(top)
        mine, theirs = cfg.get(top), defaults.get(top)
        if choice and isinstance(mine, DictConfig) and mine.get(choice) != theirs.get(choice):
            raise ConfigError(top, why(top), mine.get(choice))
        found = first_difference(mine, theirs, top)
        if found:
            key, value = found
            if isinstance(value, (dict, list)):
                raise ConfigError(key, why(key))
            raise ConfigError(key, why(key), value)


def policy_unused(cfg: DictConfig) -> dict[str, str]:
    """Cluster-mode settings this run does not use -> why (dotted prefixes: "profiler" covers
    policy.profiler.nodes)."""
    from raysim.policy import POLICIES

    name = cfg.policy.name
    cls = POLICIES.get(name)
    if cls is None:  # an unknown policy: its own check says so
        return {}
    from raysim.run.policy_table import entries_for, policy_values

    out = {f"policies.{entry}": f"settings an experiment prepares for policy (or kind) {entry}, not this run's "
                                f"{name} ({cls.kind})" for entry in (cfg.get("policies") or {})
           if entry not in entries_for(cfg)}
    out.update(cls.unread(policy_values(cfg)))
    if cls.kind != "harvest":
        out["harvest"] = f"used by policy=bftrainer only (+experiment=harvest_summit, docs/harvest.md), not {name}"
    else:
        out["trace"] = "policy=bftrainer's jobs are the tasks of harvest.tasks (docs/harvest.md)"
        out["cluster"] = "policy=bftrainer harvests the nodes of harvest.node_log (harvest.nodes; docs/harvest.md)"
        out["placer"] = "policy=bftrainer places tasks on nodes itself"
    if not cls.needs_estimate:
        out["estimator"] = cls.refuses.get("estimator.source", "{policy} reads no duration estimates (qssf and lucid "
                                           "do)").format(policy=name)
    if cfg.sim.get("network") not in ("on", True):
        out["network"] = "used with sim.network=on only"
    if cfg.runtime.get("name") != "ray":
        out["ray"] = f"used with runtime=ray only (this run: runtime={cfg.runtime.get('name')})"
    if cfg.get("report") is not None and cfg.report.get("timeline") is not True:
        for key in ("report.timeline_max_jobs", "report.timeline_range"):
            out[key] = "used with report.timeline=true only (the per-job timeline, timeline.json)"
    quota = cfg.quota.get("mode") if cfg.get("quota") is not None else "none"
    if quota != "borrow":
        out["quota.period_s"] = out["quota.reclaim"] = f"used with quota=borrow only (this run: quota={quota})"
    return out


#: Settings of `policy_unused` that no policy reads where they are unused (their switch is the run's:
#: sim.network, runtime, report.timeline): a single run refuses them wherever they were set.
SWITCHED = ("network", "ray", "report.timeline_max_jobs", "report.timeline_range")


def refuse_unused_by_run(cfg: DictConfig, overrides=None) -> None:
    """Cluster mode: a ConfigError naming the first command-line override (default: this single
    run's; none in a multirun, see the module doc) of a setting `policy_unused` lists, or, in a
    single run, the first of `SWITCHED` that differs from the root defaults (an experiment file set
    it)."""
    if overrides is None:
        if in_multirun():
            return
        overrides = command_line_overrides()
    unused = policy_unused(cfg)
    for text in overrides:
        key = override_key(text)
        for prefix, why in unused.items():
            if covers(prefix, key):
                raise ConfigError(key, why)
    defaults = root_defaults()
    for prefix in SWITCHED:
        if prefix in unused:
            found = first_difference(OmegaConf.select(cfg, prefix), OmegaConf.select(defaults, prefix), prefix)
            if found:
                raise ConfigError(found[0], unused[prefix], found[1])
