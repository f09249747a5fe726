"""Typed settings (raysim.settings): each plug-in declares its settings once, the conf files agree
with the declarations, and every declared field refuses a wrong type, a value out of bounds, nan,
inf, an empty string and an unknown key, each in one line naming the setting, before anything is
read (issue 35)."""

from __future__ import annotations

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
             "list[str]": "abc"}[d.kind]
    out = [("type", wrong), ("empty", "''")]
    if d.kind == "list[str]":
        out += [("item_type", "[1]"), ("item_empty", "['']")]
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


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_passes_with_its_defaults(policy):
    from raysim.run import check_settings

    check_settings(compose(base(policy)))


@pytest.mark.parametrize("overrides,key,text", walk())
def test_every_declared_setting_refuses_bad_values_in_one_line(overrides, key, text, monkeypatch):
    from raysim.run import check_settings, policy_table

    override = f"+{key}=1" if text == "+1" else f"{key}={text}"
    # as in a run: the command line wins over an experiment's policies table (+experiment=venus: Lucid's pool)
    monkeypatch.setattr(policy_table, "command_line_overrides", lambda: [*overrides, override])
    err = refused(check_settings, compose([*overrides, override]))
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


def test_a_policy_setting_under_another_policy_is_refused_wherever_it_is_set(tmp_path):
    """The issue's new user: Lucid's pool under SRTF, from an experiment file (what the composed
    config holds) or on the command line (its old name, which says where it went)."""
    from omegaconf import open_dict

    from raysim.run import check_settings
    from test_cli import raysim

    cfg = compose(["+experiment=venus", "policy=srtf"])
    with open_dict(cfg):
        cfg.policy.profiler = {"nodes": 3}  # as an experiment file's `policy:` section merges it
    err = refused(check_settings, cfg)
    assert err.key == "policy.profiler" and "not a setting of policy srtf" in str(err)

    res = raysim("+experiment=venus", "policy=srtf", "profiler.nodes=3", f"hydra.run.dir={tmp_path / 'run'}",
                 env={"RAYSIM_DATA": str(tmp_path / "data")}, cwd=tmp_path)
    assert res.returncode == 2 and not (tmp_path / "run" / "jobs.parquet").exists()
    assert res.stderr.startswith("raysim: error: profiler.nodes: moved to policy.profiler")
    assert "policy=lucid" in res.stderr and res.stderr.count("\n") == 1


def test_an_experiments_policy_table_gives_way_to_the_command_line():
    """policies.lucid (+experiment=venus: the pool's VCs) over Lucid's defaults, the command line over both."""
    from raysim.run.policy_table import apply_policy_table

    overrides = ["+experiment=venus", "policy=lucid", "estimator.source=oracle", "policy.profiler.lender=vcJsw"]
    cfg = compose(overrides)
    apply_policy_table(cfg, overrides)
    assert list(cfg.policy.profiler.take_from) == ["vc8Gr", "vcefl"]  # the experiment's
    assert cfg.policy.profiler.lender == "vcJsw" and cfg.policy.profiler.nodes == 2  # the command line's; the default
    other = compose(["+experiment=venus", "policy=srtf"])
    apply_policy_table(other, [])
    assert "profiler" not in other.policy  # prepared for Lucid, not laid over SRTF
