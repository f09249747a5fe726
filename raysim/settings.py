"""Typed settings: a plug-in (a policy, a placer, ...) declares the settings it reads as one frozen
dataclass whose fields are :func:`setting`\\ s -- a default, a one-line doc, and bounds or choices.

:func:`parse` checks a mapping (a composed config group such as ``policy``) against a declaration,
once, before anything is read, and returns the typed object: a wrong type, ``nan`` or ``inf``, an
empty string, a value out of its bounds or outside its choices, and a key the declaration does not
have, each end in one :class:`~raysim.errors.ConfigError` naming the setting (``policy.p: must not
be 0 (value 0)``). ``raysim --help`` and docs/configuration.md show the declarations
(:func:`describe`), so every setting is documented where it is declared.

Supported field types: ``int``, ``float``, ``bool``, ``str``, any of them ``| None`` (null allowed),
``dict[str, float]`` (a table of numbers by name), ``list[str]`` (names), and another declaration,
a *section* (:func:`section`: ``policy.profiler.nodes``), checked field by field. A plug-in receives
its settings but its sections as keyword arguments (:func:`as_options`); sections are inputs its
run reads (e.g. Lucid's profiling pool).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from raysim.errors import ConfigError


def setting(default, doc: str, *, minimum: float | None = None, above: float | None = None,
            maximum: float | None = None, nonzero: bool = False, choices: tuple | None = None):
    """A declared field: its `default`, a one-line `doc`, and what a value must be (at least
    `minimum`, greater than `above`, at most `maximum`, not 0, or one of `choices`)."""
    meta = {"doc": doc, "minimum": minimum, "above": above, "maximum": maximum, "nonzero": nonzero,
            "choices": tuple(choices) if choices is not None else None}
    if isinstance(default, (dict, list)):
        frozen = default.copy()
        return dataclasses.field(default_factory=lambda: frozen.copy(), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def section(cls, doc: str):
    """A declared field that is itself a declaration `cls` (its defaults by default)."""
    meta = {"doc": doc, "minimum": None, "above": None, "maximum": None, "nonzero": False, "choices": None}
    return dataclasses.field(default_factory=cls, metadata=meta)


@dataclass(frozen=True)
class NoSettings:
    """A plug-in without settings."""


@dataclass(frozen=True)
class Declared:
    """One declared setting, as :func:`describe` shows it."""

    name: str
    kind: str          # int, float, bool, str, dict[str, float], list[str] or section
    optional: bool     # null allowed
    default: object
    doc: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    nonzero: bool = False
    choices: tuple | None = None
    section: type | None = None  # kind "section": its declaration

    def constraint(self) -> str:
        """What a value must be, in words ("" when any value of its type will do)."""
        parts = []
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.above is not None:
            parts.append(f"> {self.above:g}")
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
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
    if typing.get_origin(annotation) is dict and typing.get_args(annotation) == (str, float):
        return "dict[str, float]", optional
    if typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,):
        return "list[str]", optional
    if dataclasses.is_dataclass(annotation) and not optional:
        return "section", False
    if annotation in (int, float, bool, str):
        return annotation.__name__, optional
    raise TypeError(f"unsupported setting type {annotation!r}")


def describe(cls) -> list[Declared]:
    """The settings declared by dataclass `cls`, in declaration order."""
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
                            hints[f.name] if kind == "section" else None))
    return out


def leaves(cls, prefix: str = "") -> list[tuple[str, Declared]]:
    """(dotted name, declaration) of every setting of `cls`, sections' settings included."""
    out = []
    for d in describe(cls):
        name = f"{prefix}{d.name}"
        out += leaves(d.section, name + ".") if d.section else [(name, d)]
    return out


def defaults(cls) -> dict:
    """name -> default of every setting `cls` declares (a section: its own defaults, as a dict)."""
    return {d.name: defaults(d.section) if d.section else d.default for d in describe(cls)}


def parse(cls, values: Mapping, *, prefix: str, owner: str):
    """`values` checked against declaration `cls` and filled with its defaults: an instance of `cls`.
    A key `cls` does not declare, or a bad value, is a ConfigError naming ``<prefix>.<key>``;
    `owner` says whose settings these are (e.g. "policy sia")."""
    declared = {d.name: d for d in describe(cls)}
    for key in values:
        if key not in declared:
            known = ", ".join(declared) or "none"
            raise ConfigError(f"{prefix}.{key}", f"not a setting of {owner} (its settings: {known}; "
                              "raysim --help lists them)")
    return cls(**{key: check(d, values[key], f"{prefix}.{key}", owner) for key, d in declared.items()
                  if key in values})


def check(d: Declared, value, key: str, owner: str = ""):
    """`value` as declaration `d` types it, or a ConfigError naming `key`."""
    if value is None:
        if d.optional:
            return None
        raise ConfigError(key, f"must be {_a(d.kind)}, not null")
    if d.section is not None:
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a section of settings ({', '.join(f.name for f in describe(d.section))})",
                              value)
        return parse(d.section, value, prefix=key, owner=owner)
    if d.kind == "list[str]":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ConfigError(key, "must be a list of names, e.g. [a, b]", value)
        value = list(value)
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise ConfigError(f"{key}[{i}]", "must be a non-empty name", item)
        return value
    if d.kind == "dict[str, float]":
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(key, "must be a table of numbers by name, e.g. {default: 30}", value)
        item = dataclasses.replace(d, kind="float", optional=False, choices=None)
        return {str(k): check(item, v, f"{key}.{k}", owner) for k, v in value.items()}
    if d.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(key, "must be true or false", value)
        return value
    if d.kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(key, "must be " + _choices(d) if d.choices else "must be a non-empty text", value)
        if d.choices and value not in d.choices:
            raise ConfigError(key, "must be " + _choices(d), value)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"must be {_a(d.kind)}", value)
    if not math.isfinite(value):
        raise ConfigError(key, f"must be a finite {'integer' if d.kind == 'int' else 'number'}", value)
    if d.kind == "int":
        if value != int(value):
            raise ConfigError(key, "must be an integer", value)
        value = int(value)
    else:
        value = float(value)
    if d.choices and value not in d.choices:
        raise ConfigError(key, "must be " + _choices(d), value)
    if d.above is not None and not value > d.above:
        raise ConfigError(key, f"must be greater than {d.above:g}", value)
    if d.minimum is not None and value < d.minimum:
        raise ConfigError(key, f"must be at least {d.minimum:g}", value)
    if d.maximum is not None and value > d.maximum:
        raise ConfigError(key, f"must be at most {d.maximum:g}", value)
    if d.nonzero and value == 0:
        raise ConfigError(key, "must not be 0", value)
    return value


def _a(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a text"}.get(kind, kind)


def _choices(d: Declared) -> str:
    return "one of " + ", ".join(map(str, d.choices))


def as_options(settings) -> dict:
    """The settings object's fields but its sections, as keyword arguments (a plug-in's constructor
    takes them; its sections are inputs of its run)."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if not dataclasses.is_dataclass(getattr(settings, f.name))}
