"""Declared settings of the failure producers (`failures=`) and the quota modes (`quota=`)
(raysim.settings, issue 35): the conf files agree with the declarations, and every declared field
refuses a wrong type, nan, inf, an empty string, a value out of bounds and an unknown key, each in
one ConfigError naming the setting; and the list of sections they need (failures.categories)."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf, open_dict
from test_declared_settings import bad_values, conf_values
from test_settings_walk import compose, refused

from raysim.errors import ConfigError
from raysim.paths import CONF_DIR
from raysim.quota.settings import (
    QUOTAS,
    BorrowSettings,
    VCQuota,
    declared_quota,
    quota_settings,
)
from raysim.run.failures import (
    FAILURES,
    ModelSettings,
    check_failures_config,
    failure_settings,
)
from raysim.settings import defaults, describe, leaves, parse, setting


@dataclass(frozen=True)
class Entry:
    """An entry of a list of sections."""

    name: str = setting("a", "its name")
    size: int = setting(1, "its size", minimum=1)


@dataclass(frozen=True)
class Holder:
    entries: list[Entry] = setting([Entry()], "entries")
    more: list[Entry] | None = setting(None, "more entries, or null")


def test_a_list_of_sections_is_checked_entry_by_entry():
    d = {d.name: d for d in describe(Holder)}
    assert d["entries"].kind == "sections" and d["entries"].section is Entry and d["more"].optional
    assert [name for name, _ in leaves(Holder)] == ["entries[<i>].name", "entries[<i>].size", "more[<i>].name",
                                                    "more[<i>].size"]
    assert defaults(Holder) == {"entries": [{"name": "a", "size": 1}], "more": None}
    held = parse(Holder, {"entries": [{"name": "x", "size": 2.0}, {}]}, prefix="h", owner="test")
    assert held.entries == [Entry("x", 2), Entry()] and isinstance(held.entries[0].size, int)
    assert parse(Holder, {}, prefix="h", owner="test") == Holder()
    for entries, key in [("abc", "h.entries"), ({"name": "x"}, "h.entries"), ([5], "h.entries[0]"),
                         ([{}, {"size": 0}], "h.entries[1].size"), ([{"name": ""}], "h.entries[0].name"),
                         ([{"bogus": 1}], "h.entries[0].bogus"), (None, "h.entries")]:
        with pytest.raises(ConfigError) as err:
            parse(Holder, {"entries": entries}, prefix="h", owner="test")
        assert err.value.key == key, (entries, str(err.value))


# ------------------------------------------------------------------ failure producers and quota modes
@pytest.fixture(autouse=True)
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYSIM_DATA", str(tmp_path / "data"))  # nothing may be read: no dataset is cached


def stems(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def test_the_registries_name_the_conf_files():
    assert sorted(FAILURES) == stems("failures") and sorted(QUOTAS) == stems("quota")
    for name in FAILURES:
        assert OmegaConf.load(CONF_DIR / "failures" / f"{name}.yaml").name == name
    for mode in QUOTAS:
        assert OmegaConf.load(CONF_DIR / "quota" / f"{mode}.yaml").mode == mode


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_every_failures_preset_passes_its_declaration(name):
    """Every preset parses (trace's given its path); none, trace and exponential are their
    producer's declared defaults."""
    settings = failure_settings(composed(name))
    assert type(settings) is FAILURES[name].Settings
    if name in ("none", "trace"):
        assert conf_values("failures", name) == defaults(FAILURES[name].Settings)
    if name == "exponential":
        assert settings == ModelSettings()


@pytest.mark.parametrize("mode", sorted(QUOTAS))
def test_every_quota_mode_file_holds_its_declared_defaults(mode):
    conf = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "quota" / f"{mode}.yaml"))
    assert {k: v for k, v in conf.items() if k != "mode"} == defaults(QUOTAS[mode].Settings)
    assert declared_quota(conf) == (mode, QUOTAS[mode].Settings())


def test_a_vcs_own_setting_is_over_every_vcs_even_null():
    settings = quota_settings({"mode": "borrow", "borrow_limit": 16, "reclaim": "drain",
                               "vcs": {"a": {"borrow_limit": None, "cohort": "x"}}}, ["a", "b"])
    assert settings.of("a") == VCQuota(cohort="x", reclaim="drain")
    assert settings.of("b") == VCQuota(borrow_limit=16, reclaim="drain")


@functools.cache
def composed(preset: str):
    """A run with failures=`preset` (trace: its path set, the one setting its file leaves unset)."""
    return compose(["+experiment=venus", f"failures={preset}", *(["failures.path=f.csv"] if preset == "trace" else [])])


def parsed(text: str):
    """`text` as Hydra parses a value on the command line."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides([f"key={text}"])[0].value()


#: The presets each producer's settings are walked over (the model presets': weibull's, whose
#: settings include `shape`).
WALKED = ("none", "weibull", "trace")


def failure_cases():
    for preset in WALKED:
        for key, d in leaves(FAILURES[preset].Settings):
            for label, text in bad_values(d):
                yield pytest.param(preset, f"failures.{key}", text, id=f"{preset}.{key}:{label}")
        for d in describe(FAILURES[preset].Settings):
            if d.section:
                yield pytest.param(preset, f"failures.{d.name}", "abc", id=f"{preset}.{d.name}:type")
                yield pytest.param(preset, f"failures.{d.name}[<i>].bogus_setting", "1", id=f"{preset}.{d.name}:unknown")
        yield pytest.param(preset, "failures.bogus_setting", "1", id=f"{preset}:unknown")


@pytest.mark.parametrize("preset,key,text", failure_cases())
def test_every_failure_setting_refuses_bad_values_in_one_line(preset, key, text):
    """Each bad value set over the composed preset, checked as a run checks it; a category's setting
    set in the preset's first category (failures.categories[0])."""
    cfg = copy.deepcopy(composed(preset))
    with open_dict(cfg):
        if "[<i>]." in key:
            head, leaf = key.split("[<i>].")
            entry = OmegaConf.to_container(OmegaConf.select(cfg, head))[0]
            OmegaConf.update(cfg, head, [{**entry, leaf: parsed(text)}], merge=False)
            key = f"{head}[0].{leaf}"
        else:
            OmegaConf.update(cfg, key, parsed(text), merge=False, force_add=True)
    err = refused(check_failures_config, cfg)
    assert err.key == key or err.key.startswith((key + ".", key + "[")), str(err)


@pytest.mark.parametrize("overrides,key", [
    (["failures=exponential", "failures.distribution=weibull"], "failures.shape"),  # weibull needs its shape
    (["failures=weibull", "failures.distribution=exponential"], "failures.shape"),  # ... and only weibull
    (["failures=llama3", "failures.node_mtbf_h=10"], "failures.node_mtbf_h"),       # both MTBFs
    (["failures=llama3", "failures.gpu_mtbf_h=null"], "failures.node_mtbf_h"),      # neither
    (["failures=exponential", "failures.categories=[{name: a}, {name: a}]"], "failures.categories"),
    (["failures=trace"], "failures.path"),
])
def test_what_a_producers_settings_say_together_is_checked_in_one_line(overrides, key):
    err = refused(check_failures_config, compose(["+experiment=venus", *overrides]))
    assert err.key == key, str(err)


@pytest.mark.parametrize("kinds", [{}, {"a b": "down"}])
def test_a_traces_kinds_name_categories(kinds):
    cfg = copy.deepcopy(composed("trace"))
    OmegaConf.update(cfg, "failures.kinds", kinds, merge=False)
    assert refused(check_failures_config, cfg).key == "failures.kinds"


def quota_cases():
    for mode in sorted(QUOTAS):
        yield pytest.param({"mode": mode, "bogus_setting": 1}, "quota.bogus_setting", id=f"{mode}:unknown")
    for key, d in leaves(BorrowSettings):
        for label, text in bad_values(d):
            value = parsed(text)
            if key.startswith("vcs.<name>."):
                leaf = key.split(".")[-1]
                yield pytest.param({"mode": "borrow", "vcs": {"a": {leaf: value}}}, f"quota.vcs.a.{leaf}",
                                   id=f"{key}:{label}")
            else:
                yield pytest.param({"mode": "borrow", key: value}, f"quota.{key}", id=f"{key}:{label}")
    yield pytest.param({"mode": "borrow", "vcs": "abc"}, "quota.vcs", id="vcs:type")
    yield pytest.param({"mode": "borrow", "vcs": {"a": "abc"}}, "quota.vcs.a", id="vcs.<name>:type")
    yield pytest.param({"mode": "borrow", "vcs": {"a": {"bogus_setting": 1}}}, "quota.vcs.a.bogus_setting",
                       id="vcs.<name>:unknown")
    yield pytest.param({"mode": "borrow", "vcs": {"zz": {}}}, "quota.vcs", id="vcs:not_a_vc_of_the_run")
    yield pytest.param({"mode": "lend"}, "quota.mode", id="mode:choice")


@pytest.mark.parametrize("conf,key", quota_cases())
def test_every_quota_setting_refuses_bad_values_in_one_line(conf, key):
    err = refused(quota_settings, conf, ["a", "b"])
    assert err.key == key or err.key.startswith((key + ".", key + "[")), str(err)
