"""Typed settings: a plug-in (a policy, a placer, ...) declares the settings it reads as one frozen
dataclass whose fields are :func:`setting`\\ s -- a default, a one-line doc, and bounds or choices.

:func:`parse` checks a mapping (a composed config group such as ``policy``) against a declaration,
once, before anything is read, and returns the typed object: a wrong type, ``nan`` or ``inf``, an
empty string, a value out of its bounds or outside its choices, and a key the declaration does not
have (with its closest declared names, :func:`did_you_mean`), each end in one
:class:`~raysim.errors.ConfigError` naming the setting (``policy.p: must not be 0 (value 0)``).
``raysim --help`` and docs/configuration.md show the declarations (:func:`describe`), so every
setting is documented where it is declared.

Supported field types: ``int``, ``float``, ``bool``, ``str``, ``dict[str, float]`` (a table of
numbers by name), ``dict[str, str]``, ``list[str]`` (names), ``list[int]``, any of them ``| None``
(null allowed); ``object`` (any value, checked by the field's own `check`); another declaration,
a *section* (:func:`section`: ``policy.profiler.nodes``), checked field by field, optionally ``| None``
(a section that may be absent); ``dict[str, <declaration>]``, a *table* of sections by name
(``quota.vcs.<vc>.cohort``); and ``list[<declaration>]``, a *list* of sections, each checked as a
section (``failures.categories[0].share``; its default: a list of instances). A field may also name a `check` of its own (a function of the typed value and the key, returning
the value or raising ConfigError) for what its type and bounds cannot say.

A plug-in receives its settings as keyword arguments (:func:`as_options`), but its sections and
the fields declared ``input=True``: those are inputs its run reads before it is built (e.g. Lucid's
profiling pool, the round mechanism's job-type column).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
from functools import lru_cache
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from raysim.errors import ConfigError


def setting(default, doc: str, *, minimum: float | None = None, above: float | None = None,
            maximum: float | None = None, nonzero: bool = False, choices: tuple | None = None,
            check=None, input: bool = False, what: str = ""):
    """A declared field: its `default`, a one-line `doc`, and what a value must be (at least
    `minimum`, greater than `above`, at most `maximum`, not 0, one of `choices`, and what `check`
    says); `input`: read by the plug-in's run, not passed to its constructor; `what`: its type in
    words, for a field of type ``object``."""
    meta = {"doc": doc, "minimum": minimum, "above": above, "maximum": maximum, "nonzero": nonzero,
            "choices": tuple(choices) if choices is not None else None, "check": check, "input": input,
            "what": what}
    if isinstance(default, (dict, list)):
        frozen = default.copy()
        return dataclasses.field(default_factory=lambda: frozen.copy(), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def section(cls, doc: str):
    """A declared field that is itself a declaration `cls` (its defaults by default)."""
    meta = {"doc": doc, "minimum": None, "above": None, "maximum": None, "nonzero": False, "choices": None,
            "check": None, "input": True, "what": ""}
    return dataclasses.field(default_factory=cls, metadata=meta)


@dataclass(frozen=True)
class NoSettings:
    """A plug-in without settings."""


@dataclass(frozen=True)
class Declared:
    """One declared setting, as :func:`describe` shows it."""

    name: str
    kind: str          # int, float, bool, str, dict[str, float], dict[str, str], list[str], list[int],
                       # value (any: its check says), section, table (sections by name) or sections (a list)
    optional: bool     # null allowed
    default: object
    doc: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    nonzero: bool = False
    choices: tuple | None = None
    section: type | None = None  # kind "section": its declaration; "table" or "sections": its entries
    check: object = None         # its own rule: check(value, key) -> value, or ConfigError
    input: bool = False          # read by the plug-in's run, not passed to its constructor
    what: str = ""               # its type in words (kind "value")

    def constraint(self) -> str:
        """What a value must be, in words ("" when any value of its type will do)."""
        parts = []
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.above is not None:
            parts.append(f"> {_shown(self.above)}")
        if self.minimum is not None:
            parts.append(f">= {_shown(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"<= {_shown(self.maximum)}")
        if self.nonzero:
            parts.append("not 0")
        if self.optional:
            parts.append("or null")
        return ", ".join(parts)


def _kind(annotation) -> tuple[str, bool]:
    """(kind, optional) of a field's type annotation."""
    optional = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            raise TypeError(f"unsupported setting type {annotation!r}")
        annotation = args[0]
    if typing.get_origin(annotation) is dict and dataclasses.is_dataclass(typing.get_args(annotation)[1]):
        return "table", optional
    if typing.get_origin(annotation) is list and dataclasses.is_dataclass(typing.get_args(annotation)[0]):
        return "sections", optional
    for container in (dict, list):
        if typing.get_origin(annotation) is container:
            kind = f"{container.__name__}[{', '.join(a.__name__ for a in typing.get_args(annotation))}]"
            if kind in ("dict[str, float]", "dict[str, str]", "list[str]", "list[int]"):
                return kind, optional
    if annotation is object:
        return "value", optional
    if dataclasses.is_dataclass(annotation):
        return "section", optional
    if annotation in (int, float, bool, str):
        return annotation.__name__, optional
    raise TypeError(f"unsupported setting type {annotation!r}")


@lru_cache(maxsize=None)
def describe(cls) -> tuple[Declared, ...]:
    """The settings declared by dataclass `cls`, in declaration order (read once per class)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind, optional = _kind(hints[f.name])
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        meta = f.metadata
        if "doc" not in meta:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with setting(default, doc)")
        out.append(Declared(f.name, kind, optional, default, meta["doc"], meta["minimum"], meta["above"],
                            meta["maximum"], meta["nonzero"], meta["choices"],
                            _section_of(hints[f.name], kind), meta["check"], meta["input"],
                            meta["what"]))
    return tuple(out)


def _section_of(annotation, kind: str):
    """The declaration of a section's, a table's or a list's entries (None for other kinds)."""
    if kind not in ("section", "table", "sections"):
        return None
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    inner = args[0] if len(args) == 1 else annotation
    if typing.get_origin(inner) in (dict, list):
        return typing.get_args(inner)[-1]
    return inner


def leaves(cls, prefix: str = "") -> list[tuple[str, Declared]]:
    """(dotted name, declaration) of every setting of `cls`, sections' settings included (those of an
    optional section too: ``trace.synth.days``)."""
    out = []
    for d in describe(cls):
        name = f"{prefix}{d.name}"
        inner = name + {"table": ".<name>.", "sections": "[<i>]."}.get(d.kind, ".")
        out += leaves(d.section, inner) if d.section else [(name, d)]
    return out


def defaults(cls) -> dict:
    """name -> default of every setting `cls` declares (a section: its own defaults, as a dict; a list
    of sections: a list of dicts)."""
    return {d.name: defaults(d.section) if d.kind == "section" and d.default is not None else
            [dataclasses.asdict(s) for s in d.default] if d.kind == "sections" and d.default is not None else
            copy.deepcopy(d.default)
            for d in describe(cls)}


def parse(cls, values: Mapping, *, prefix: str, owner: str):
    """`values` checked against declaration `cls` and filled with its defaults: an instance of `cls`.
    A key `cls` does not declare, or a bad value, is a ConfigError naming ``<prefix>.<key>`` (``<key>``
    with an empty prefix: the root of a config);
    `owner` says whose settings these are (e.g. "policy sia")."""
    declared = {d.name: d for d in describe(cls)}
    for key in values:
        if key not in declared:
            known = ", ".join(declared) or "none"
            hint = did_you_mean(str(key), declared, prefix)
            raise ConfigError(_dotted(prefix, key), f"not a setting of {owner}{'; ' + hint if hint else ''} "
                              f"(its settings: {known}; raysim --help lists them)")
    return cls(**{key: check(d, values[key], _dotted(prefix, key), owner) for key, d in declared.items()
                  if key in values})


def did_you_mean(key: str, names: Iterable[str], prefix: str = "", rest: str = "") -> str:
    """"did you mean <prefix>.<name>.<rest>?" naming the `names` closest to `key` (a mistyped name
    among them, difflib's ratio at least 0.6; at most three, closest first), or "" when none is close."""
    close = difflib.get_close_matches(key, [str(n) for n in names], n=3)
    keys = [_dotted(prefix, n) + (f".{rest}" if rest else "") for n in close]
    return f"did you mean {' or '.join(keys)}?" if keys else ""


def _dotted(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def check(d: Declared, value, key: str, owner: str = ""):
    """`value` as declaration `d` types it, or a ConfigError naming `key`."""
    value = _typed(d, value, key, owner)
    return d.check(value, key) if d.check is not None and value is not None else value


def _typed(d: Declared, value, key: str, owner: str):
    """`value` of declaration `d`'s type (its own `check` aside), or a ConfigError naming `key`."""
    if d.kind == "value" and value is not None:
        return value
    if value is None:
        if d.optional:
            return None
        raise ConfigError(key, f"must be {_a(d.kind)}, not null")
    if d.kind == "table":
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a table {{name: {{{', '.join(f.name for f in describe(d.section))}}}}}",
                              value)
        return {str(k): _typed(dataclasses.replace(d, kind="section", optional=False), v, f"{key}.{k}", owner)
                for k, v in value.items()}
    if d.kind == "sections":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ConfigError(key, f"must be a list of sections {{{', '.join(f.name for f in describe(d.section))}}}",
                              value)
        return [_typed(dataclasses.replace(d, kind="section", optional=False), v, f"{key}[{i}]", owner)
                for i, v in enumerate(value)]
    if d.section is not None:
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a section of settings ({', '.join(f.name for f in describe(d.section))})",
                              value)
        return parse(d.section, value, prefix=key, owner=owner)
    if d.kind in ("list[str]", "list[int]"):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ConfigError(key, "must be a list, e.g. " + ("[a, b]" if d.kind == "list[str]" else "[1, 2]"), value)
        item = dataclasses.replace(d, kind=d.kind[5:-1], optional=False, check=None)
        return [_typed(item, v, f"{key}[{i}]", owner) for i, v in enumerate(value)]
    if d.kind == "dict[str, str]":
        if not isinstance(value, Mapping):
            raise ConfigError(key, "must be a table of names by name, e.g. {a: b}", value)
        item = dataclasses.replace(d, kind="str", optional=False, check=None)
        return {str(k): _typed(item, v, f"{key}.{k}", owner) for k, v in value.items()}
    if d.kind == "dict[str, float]":
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(key, "must be a table of numbers by name, e.g. {default: 30}", value)
        item = dataclasses.replace(d, kind="float", optional=False, choices=None, check=None)
        return {str(k): _typed(item, v, f"{key}.{k}", owner) for k, v in value.items()}
    if d.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(key, "must be true or false", value)
        return value
    if d.kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(key, "must be " + _choices(d) if d.choices else "must be a non-empty name", value)
        if d.choices and value not in d.choices:
            raise ConfigError(key, "must be " + _choices(d), value)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"must be {_a(d.kind)}", value)
    if not math.isfinite(value):
        raise ConfigError(key, f"must be a finite {'integer' if d.kind == 'int' else 'number'}", value)
    given = value  # (what errors show: 1e+300, not the 301 digits of int(1e300))
    if d.kind == "int":
        if value != int(value):
            raise ConfigError(key, "must be an integer", given)
        value = int(value)
    else:
        value = float(value)
    if d.choices and value not in d.choices:
        raise ConfigError(key, "must be " + _choices(d), given)
    if d.above is not None and not value > d.above:
        raise ConfigError(key, f"must be greater than {_shown(d.above)}", given)
    if d.minimum is not None and value < d.minimum:
        raise ConfigError(key, f"must be at least {_shown(d.minimum)}", given)
    if d.maximum is not None and value > d.maximum:
        raise ConfigError(key, f"must be at most {_shown(d.maximum)}", given)
    if d.nonzero and value == 0:
        raise ConfigError(key, "must not be 0", given)
    return value


def count_or_word(value, key: str, words: tuple[str, ...], what: str, maximum: int | None = None):
    """A setting that is one of `words` or a whole number from 1 to `maximum` (for a field's own
    `check`): `value` as given (1e300 stays 1e+300 in later messages); else a ConfigError giving the
    reason: "must be <what>" for what is no number, else the rule it breaks (finite, whole, the bound)."""
    if isinstance(value, str) and value in words:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"must be {what}", value)
    check(Declared(key, "int", False, None, "", minimum=1, maximum=maximum), value, key)
    return value


def _shown(bound: float) -> str:
    """A bound as people read it: 1,000,000 rather than 1e+06."""
    return f"{int(bound):,}" if float(bound).is_integer() and abs(bound) < 1e16 else f"{bound:g}"


def _a(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a name",
            "value": "set", "sections": "a list of sections"}.get(kind, kind)


def _choices(d: Declared) -> str:
    return "one of " + ", ".join(map(str, d.choices))


def as_options(settings) -> dict:
    """The settings object's fields as keyword arguments (a plug-in's constructor takes them), but
    its inputs (sections and fields declared input=True, which its run reads)."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if not f.metadata.get("input")}
