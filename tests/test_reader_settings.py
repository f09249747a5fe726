"""The trace readers' options as typed settings (issue 35): every reader declares its
``trace.reader_options``, and every declared option refuses a wrong type, nan, inf, an empty text
and a value out of its bounds, as does every reader an option it does not declare, each in one line
naming ``trace.reader_options.<key>``, before the trace is even looked for; the same from a run's
command line and from ``raysim trace convert -o KEY=VALUE``."""

from __future__ import annotations

import inspect
import math

import pytest
from test_declared_settings import bad_values
from test_settings_walk import refused

from raysim.settings import NoSettings, describe
from raysim.trace.cli import main as trace_main
from raysim.trace.load import READERS, check_reader_options, load_trace, reader_options_from_text

PREFIX = "trace.reader_options"


def declared(fmt: str):
    return describe(READERS[fmt].Settings)


def cases(as_text: bool = False):
    """(format, option, value as a run's command line gives it) of each value to refuse; `as_text`:
    but a number for a name, which is a name when options are given as text."""
    for fmt in READERS:
        for d in declared(fmt):
            labelled = bad_values(d) + ([("unknown_name", "bogus")] if d.kind == "str" and d.check else [])
            for label, text in labelled:
                if not (as_text and d.kind == "str" and label == "type"):
                    yield pytest.param(fmt, d.name, text, id=f"{fmt}.{d.name}:{label}")
        yield pytest.param(fmt, "bogus_option", "1", id=f"{fmt}:unknown")


def hydra_value(key: str, text: str):
    """`text` as Hydra parses the override KEY=TEXT."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides([f"{PREFIX}.{key}={text}"])[0].value()


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_every_reader_declares_its_options_and_takes_each_one(fmt):
    """A declaration (NoSettings for none), one-line docs, defaults that pass their own checks, and
    each option a keyword the reader takes without a default of its own (the declaration's is the one)."""
    reader = READERS[fmt]
    options = check_reader_options(fmt, {})
    assert isinstance(options, reader.Settings)
    params = inspect.signature(reader).parameters
    for d in declared(fmt):
        assert d.doc.strip() and "\n" not in d.doc, (fmt, d.name)
        assert params[d.name].kind is inspect.Parameter.KEYWORD_ONLY, (fmt, d.name)
        assert params[d.name].default is inspect.Parameter.empty, (fmt, d.name)
    if not declared(fmt):
        assert reader.Settings is NoSettings


@pytest.mark.parametrize("fmt,key,text", cases())
def test_every_reader_option_refuses_bad_values_in_one_line(fmt, key, text, tmp_path):
    """Through load_trace with the format named: refused before the (absent) trace is looked for."""
    value = hydra_value(key, text)
    err = refused(lambda: load_trace(tmp_path / "absent", fmt=fmt, cache=False, reader_options={key: value}))
    name = f"{PREFIX}.{key}"
    assert err.key == name or err.key.startswith((name + ".", name + "[")), str(err)


@pytest.mark.parametrize("fmt,key,text", cases(as_text=True))
def test_trace_convert_refuses_a_bad_option_as_a_run_does(fmt, key, text, tmp_path, capsys):
    """`raysim trace convert -o KEY=VALUE`: the value read by its declared kind, refused with the
    run's words (exit status 2, one line)."""
    value = hydra_value(key, text)
    with pytest.raises(ValueError) as run_err:
        load_trace(tmp_path / "absent", fmt=fmt, cache=False, reader_options={key: value})
    shell = "" if text == "''" else text  # what the shell passes for -o KEY=''
    assert trace_main(["convert", str(tmp_path / "absent"), "--format", fmt, "-o", f"{key}={shell}",
                       "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {run_err.value}\n"
    assert not (tmp_path / "out").exists()


def test_option_text_is_read_by_its_declared_kind():
    assert reader_options_from_text("alibaba2023", {"vcs": "2", "speedup": "1e3", "workload": "gpushare40"}) == {
        "vcs": 2, "speedup": 1000.0, "workload": "gpushare40"}
    assert math.isnan(reader_options_from_text("alibaba2023", {"speedup": "nan"})["speedup"])
    assert reader_options_from_text("pai", {"vc_groups": '{"T4": "V100"}'}) == {"vc_groups": {"T4": "V100"}}
    assert reader_options_from_text("pai", {"vc_groups": "null"}) == {"vc_groups": None}
    assert reader_options_from_text("sia", {"vc": "5"}) == {"vc": "5"}  # a name stays text
    assert reader_options_from_text("sia", {"vc": "null"}) == {"vc": None}
    assert reader_options_from_text("helios", {"vc": "last"}) == {"vc": "last"}  # not declared: check names it
    options = check_reader_options("alibaba2023", reader_options_from_text("alibaba2023", {"speedup": "4", "vcs": "2"}))
    assert options.speedup == 4.0 and isinstance(options.speedup, float) and options.vcs == 2
    assert options.node_list == "openb_node_list_gpu_node" and options.workload is None


@pytest.mark.parametrize("overrides,words", [
    (["trace.format=helios", f"+{PREFIX}.vc_size=bogus"], f"{PREFIX}.vc_size: must be one of mode, last, max"),
    ([f"+{PREFIX}.vc_size=last"], f"{PREFIX}.vc_size: not a setting of the parquet reader (its settings: none"),
])
def test_a_bad_reader_option_on_the_command_line_is_one_line_and_exit_status_2(overrides, words, tmp_path):
    """+experiment=venus reads traces/venus_synth (its jobs.parquet): Helios' rule is checked before
    that folder is read as a Helios trace; an option the parquet reader does not declare is refused."""
    from test_cli import raysim

    res = raysim("+experiment=venus", *overrides, f"hydra.run.dir={tmp_path / 'run'}",
                 env={"RAYSIM_DATA": str(tmp_path / "data")})
    assert res.returncode == 2 and res.stderr.startswith(f"raysim: error: {words}"), res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "run" / "jobs.parquet").exists()
