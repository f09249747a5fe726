"""Typed settings (raysim.settings): each plug-in declares its settings once, the conf files agree
with the declarations, and every declared field refuses a wrong type, a value out of bounds, nan,
inf, an empty string and an unknown key, each in one line naming the setting, before anything is
read (issue 35)."""

from __future__ import annotations

import copy
import functools
import math

import pytest
from omegaconf import OmegaConf

from raysim.paths import CONF_DIR
from raysim.placement import PLACERS, PlacerSettings
from raysim.policy import POLICIES, policy_class
from raysim.settings import Declared, defaults, describe, leaves
from test_settings_walk import compose, refused

#: Runs each policy's settings are checked in (a policy with inputs of its own needs them named).
BASE = {"bftrainer": ["+experiment=harvest_summit"], "lucid": ["+experiment=venus", "estimator.source=oracle"],
        "qssf": ["+experiment=venus", "estimator.source=oracle"]}


def base(policy: str) -> list[str]:
    return [*BASE.get(policy, ["+experiment=venus"]), f"policy={policy}"]


@pytest.fixture(autouse=True)
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "data"))  # nothing may be read: no dataset is cached


def conf_values(group: str, name: str) -> dict:
    conf = OmegaConf.to_container(OmegaConf.load(CONF_DIR / group / f"{name}.yaml"), resolve=True)
    return {k: v for k, v in conf.items() if k not in ("name", "kind")}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_policys_conf_file_holds_its_declared_defaults(name):
    declared = policy_class(name).Settings
    assert conf_values("policy", name) == defaults(declared)
    assert all(d.doc.strip() and "\n" not in d.doc for _, d in leaves(declared))


@pytest.mark.parametrize("name", sorted(PLACERS))
def test_a_placers_conf_file_holds_the_declared_defaults(name):
    assert conf_values("placer", name) == {d.name: d.default for d in describe(PlacerSettings)}


def bad_values(d: Declared) -> list[tuple[str, str]]:
    """(label, command-line value) of values declaration `d` must refuse."""
    wrong = {"int": "abc", "float": "abc", "bool": "maybe", "str": "5", "dict[str, float]": "abc",
             "dict[str, str]": "abc", "list[str]": "abc", "list[int]": "abc", "value": "5"}[d.kind]
    out = [("type", wrong), ("empty", "''")]
    if d.kind == "list[str]":
        out += [("item_type", "[1]"), ("item_empty", "['']")]
    if d.kind == "list[int]":
        out += [("item_type", "[a, b]"), ("item_nan", "[nan, 1]"), ("item_fraction", "[1.5, 2]")]
    if d.kind == "dict[str, str]":
        out += [("item_type", "{a: 5}"), ("item_empty", "{a: ''}")]
    if d.kind == "value":
        out += [("empty_list", "[]")]
    if d.kind in ("int", "float"):
        out += [("nan", "nan"), ("inf", "inf"), ("minus_inf", "-inf")]
        if d.kind == "int":
            out.append(("fraction", "1.5"))
        if d.minimum is not None:
            out.append(("below", repr(d.minimum - 1)))
        if d.above is not None:
            out.append(("at_bound", repr(d.above)))
        if d.maximum is not None:
            out.append(("above", repr(d.maximum + 1)))
        if d.nonzero:
            out.append(("zero", "0"))
    if d.kind == "dict[str, float]":
        out += [("item_nan", "{default: nan}"), ("item_type", "{default: abc}")]
        if d.minimum is not None:
            out.append(("item_below", f"{{default: {d.minimum - 1}}}"))
    if d.choices:
        out.append(("choice", "bogus"))
    if not d.optional:
        out.append(("null", "null"))
    return out


def walk():
    for name in sorted(POLICIES):
        for key, d in leaves(policy_class(name).Settings):
            for label, text in bad_values(d):
                yield pytest.param(base(name), f"policy.{key}", text, id=f"{name}.{key}:{label}")
        for d in describe(policy_class(name).Settings):
            if d.section:
                yield pytest.param(base(name), f"policy.{d.name}", "abc", id=f"{name}.{d.name}:type")
                yield pytest.param(base(name), f"policy.{d.name}.bogus_setting", "+1", id=f"{name}.{d.name}:unknown")
        yield pytest.param(base(name), "policy.bogus_setting", "+1", id=f"{name}:unknown")
    for d in describe(PlacerSettings):
        for label, text in bad_values(d):
            yield pytest.param(base("fifo"), f"placer.{d.name}", text, id=f"placer.{d.name}:{label}")
    yield pytest.param(base("fifo"), "placer.bogus_setting", "+1", id="placer:unknown")
    from raysim.run.cluster_settings import ClusterMode

    for key, d in leaves(ClusterMode):
        key = key.replace("<name>", "resnet")  # (a table's entry)
        for label, text in bad_values(d):
            if d.kind == "value" and key in OWN_BAD:
                label, text = "value", OWN_BAD[key]
            yield pytest.param(base("fifo"), key, text, id=f"{key}:{label}")
    for d in describe(ClusterMode):
        if d.section:
            yield pytest.param(base("fifo"), f"{d.name}.bogus_setting", "+1", id=f"{d.name}:unknown")
    from raysim.harvest.inputs import HarvestSettings
    from raysim.run.fgd import FgdMode

    for where, overrides, prefix in ((HarvestSettings, base("bftrainer"), "harvest."),
                                     (FgdMode, ["+experiment=fgd_openb"], "")):
        for key, d in leaves(where):
            key = prefix + key
            for label, text in bad_values(d):
                if d.kind == "value" and key in OWN_BAD:
                    label, text = "value", OWN_BAD[key]
                yield pytest.param(overrides, key, text, id=f"{key}:{label}")
        yield pytest.param(overrides, f"{prefix or 'fgd.'}bogus_setting", "+1", id=f"{prefix or 'fgd.'}:unknown")


#: Fields of type `value` whose own check takes 5 and []: a value each refuses.
OWN_BAD = {"ray.vcs_per_actor": "0", "sim.network": "maybe", "harvest.nodes": "0", "sim.stall_s": "maybe"}


ROOT_SECTIONS = ("trace", "sim", "network", "checkpoint", "estimator", "ray", "report", "data", "rounds")


@pytest.mark.parametrize("key", ROOT_SECTIONS)
def test_the_root_configs_sections_hold_their_declared_defaults(key):
    from raysim.run.cluster_settings import ClusterMode

    root = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml"), resolve=False)
    (declared,) = [d.section for d in describe(ClusterMode) if d.name == key]
    assert root[key] == defaults(declared)
    assert all(d.doc.strip() and "\n" not in d.doc for _, d in leaves(declared))


@pytest.mark.parametrize("group", ["runtime", "cluster"])
def test_every_runtime_and_cluster_file_parses_and_the_default_one_holds_the_defaults(group):
    """conf/runtime/*.yaml and conf/cluster/*.yaml set only declared settings, each valid; ray.yaml
    and vc_config.yaml (the root's defaults) are the declared defaults."""
    from raysim.run.cluster_settings import ClusterSettings, RuntimeSettings
    from raysim.settings import parse

    declared, default = {"runtime": (RuntimeSettings, "ray"), "cluster": (ClusterSettings, "vc_config")}[group]
    for path in sorted((CONF_DIR / group).glob("*.yaml")):
        values = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        values.pop("defaults", None)
        values = {k: v for k, v in values.items() if not (isinstance(v, str) and v.startswith("${"))}
        parse(declared, values, prefix=group, owner=path.name)
        if path.stem == default:
            assert values == defaults(declared)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_passes_with_its_defaults(policy):
    from raysim.run import check_settings

    check_settings(compose(base(policy)))


@functools.lru_cache(maxsize=None)
def composed(overrides: tuple):
    return compose(list(overrides))


@pytest.mark.parametrize("overrides,key,text", walk())
def test_every_declared_setting_refuses_bad_values_in_one_line(overrides, key, text):
    """Each value as Hydra parses it on the command line, set over the composed run (one
    composition per policy: composing once per case took minutes)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import open_dict

    from raysim.run import check_settings

    value = OverridesParser.create().parse_overrides([f"{key}={'1' if text == '+1' else text}"])[0].value()
    cfg = copy.deepcopy(composed(tuple(overrides)))
    with open_dict(cfg):
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    err = refused(check_settings, cfg)
    assert err.key == key or err.key.startswith((key + ".", key + "[")), str(err)


def test_a_checked_setting_has_its_declared_type():
    from raysim.policy import policy_settings

    settings = policy_settings("sia", {"round_s": 120, "max_replicas_cap": 8.0})
    assert settings.round_s == 120.0 and isinstance(settings.round_s, float)
    assert settings.max_replicas_cap == 8 and isinstance(settings.max_replicas_cap, int)
    assert settings.restart_penalty_s["bert"] == 120.0 and not math.isnan(settings.lambda_a)


def test_docs_configuration_lists_every_plugin_and_setting():
    """docs/configuration.md's plug-in section is what `python -m raysim.plugins --markdown` writes."""
    from raysim.plugins import MARK_BEGIN, MARK_END, markdown

    text = (CONF_DIR.parent / "docs" / "configuration.md").read_text()
    section = text[text.index(MARK_BEGIN):text.index(MARK_END) + len(MARK_END) + 1]
    assert section == markdown(), "run: python -m raysim.plugins --markdown docs/configuration.md"


def test_every_registry_is_one_class_and_every_plugin_has_a_summary():
    from raysim.plugins import GROUPS
    from raysim.registry import Registry

    for group in GROUPS:
        plugins = group.plugins()
        assert isinstance(plugins, Registry), group.setting
        for name in plugins:
            summary = plugins.summary(name)
            assert summary and "\n" not in summary, (group.setting, name)


@pytest.mark.parametrize("experiment,policy,key,value,why", [
    ("venus", "srtf", "profiler.nodes", 3, "policy=lucid"),            # Lucid's pool under SRTF
    ("sia_saturn", "sia", "rounds.round_s", 60, "round-based policy"),  # Gavel's rounds under Sia
    ("openb", "fifo", "elastic.share", 0.5, "elastic policy"),          # an elastic input under FIFO
])
def test_a_policy_setting_under_another_policy_is_refused_wherever_it_is_set(experiment, policy, key, value, why,
                                                                              tmp_path):
    """The issue's new user: one policy's setting under another, from an experiment file (what the
    composed config holds: the setting in the policy group, or under its old name) or on the command
    line (its old name, which says where it went)."""
    from omegaconf import open_dict

    from raysim.run import check_settings
    from test_cli import raysim

    section, leaf = key.split(".")
    # in the policy group (Sia's rounds are its own: policy.round_s is Sia's), or under the old name
    for where in ("old name",) if section == "rounds" else ("policy", "old name"):
        cfg = compose([f"+experiment={experiment}", f"policy={policy}"])
        with open_dict(cfg):  # as an experiment file's section merges it
            if where == "policy" and section == "profiler":
                cfg.policy.profiler = {leaf: value}
            elif where == "policy":
                cfg.policy[leaf] = value
            else:
                cfg[section] = {**(cfg.get(section) or {}), leaf: value}
        err = refused(check_settings, cfg)
        assert (f"not a setting of policy {policy}" if where == "policy" else "moved") in str(err), str(err)

    res = raysim(f"+experiment={experiment}", f"policy={policy}", f"{key}={value}",
                 f"hydra.run.dir={tmp_path / 'run'}", env={"RAYSIM_DATA": str(tmp_path / "data")}, cwd=tmp_path)
    assert res.returncode == 2 and not (tmp_path / "run" / "jobs.parquet").exists()
    assert res.stderr.startswith(f"raysim: error: {key}: moved") and why in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1


def test_an_experiments_policy_table_gives_way_to_what_is_set():
    """policies.lucid (+experiment=venus: the pool's VCs) over Lucid's defaults; the command line, or
    a value other than the default, over both."""
    from raysim.run.policy_table import policy_values

    overrides = ["+experiment=venus", "policy=lucid", "estimator.source=oracle", "policy.profiler.lender=vcJsw"]
    values = policy_values(compose(overrides), overrides)
    assert values["profiler"]["take_from"] == ["vc8Gr", "vcefl"]  # the experiment's
    assert values["profiler"]["lender"] == "vcJsw" and values["profiler"]["nodes"] == 2  # the command line's; the default
    assert policy_values(compose(overrides), [])["profiler"]["lender"] == "vcJsw"  # in-process: not the default
    assert "profiler" not in policy_values(compose(["+experiment=venus", "policy=srtf"]), [])  # not laid over SRTF


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_policys_kind_is_its_conf_files(name):
    """conf/policy/<name>.yaml's `kind` (event when absent) is the class's (policies.<kind> tables)."""
    conf = OmegaConf.load(CONF_DIR / "policy" / f"{name}.yaml")
    assert conf.get("kind", "event") == policy_class(name).kind


def test_a_kind_table_prepares_every_policy_of_the_kind():
    """+experiment=gavel_trace: policies.round (Gavel's type order and window) for each round-based
    policy, none for an event-driven one; a kind's entry must suit every policy of the kind."""
    from omegaconf import open_dict

    from raysim.run.policy_table import check_policy_table, policy_values

    for policy in ("max_min_fairness", "gavel_fifo", "min_total_duration_perf"):
        values = policy_values(compose(["+experiment=gavel_trace", f"policy={policy}"]), [])
        assert values["type_order"] == ["V100", "P100", "K80"] and values["window"] == [100, 199]
    cfg = compose(["+experiment=gavel_trace", "policy=tiresias"])
    assert "window" not in policy_values(cfg, [])
    with open_dict(cfg):
        cfg.policies.round.type_choice = "random"  # gavel_fifo's own: not every round-based policy's
    err = refused(check_policy_table, cfg)
    assert err.key == "policies.round.type_choice" and "not a setting of policy" in str(err)


@pytest.mark.parametrize("experiment,key,where", [
    ("harvest_summit", "harvest", "raysim.harvest.inputs:HarvestSettings"),
    ("fgd_openb", "fgd", "raysim.run.fgd:FgdSettings"),
])
def test_the_experiment_that_sets_a_section_holds_its_declared_defaults(experiment, key, where):
    """harvest: and fgd: are set by their experiments (the root leaves them null): those files hold
    the declared defaults, so `raysim --help`, the docs and the runs agree."""
    import importlib

    module, attribute = where.split(":")
    section = OmegaConf.to_container(compose([f"+experiment={experiment}"])[key], resolve=True)
    assert section == defaults(getattr(importlib.import_module(module), attribute))
