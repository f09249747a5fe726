"""Declared settings of the failure producers (`failures=`) and the quota modes (`quota=`)
(raysim.settings, issue 35): the conf files agree with the declarations, and every declared field
refuses a wrong type, nan, inf, an empty string, a value out of bounds and an unknown key, each in
one ConfigError naming the setting."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from raysim.errors import ConfigError
from raysim.settings import describe, defaults, leaves, parse, setting


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
    assert [name for name, _ in leaves(Holder)] == ["entries[<i>].name", "entries[<i>].size", "more"]
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
