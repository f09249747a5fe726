"""Every plug-in a run can name, with its one-line doc and its declared settings: what
``raysim --help`` prints and what docs/configuration.md's section "Plug-ins and their settings"
holds (written by ``python -m raysim.plugins --markdown``; a test keeps it current).

Each kind of plug-in is one registry (raysim.registry.Registry), chosen by one setting:
`GROUPS` says which. A plug-in that reads settings declares them (raysim.settings): a policy as its
class's ``Settings``, the placers as raysim.placement.PlacerSettings.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from raysim.settings import Declared, NoSettings, leaves


@dataclass(frozen=True)
class Group:
    """One kind of plug-in: the setting that names it and its registry (module:attribute)."""

    setting: str       # e.g. "policy" (chosen as policy=NAME), "trace.format"
    registry: str      # e.g. "raysim.policy:POLICIES"
    prefix: str = ""   # where its settings are set ("policy": policy.KEY=VALUE); "": it declares none
    shared: str = ""   # module:attribute of settings every plug-in of the group takes

    def plugins(self):
        import importlib

        module, _, attribute = self.registry.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def settings(self, name: str) -> list[tuple[str, Declared]]:
        """(dotted name, declaration) of each setting plug-in `name` reads (the group's shared ones,
        or its own, sections' settings included)."""
        if self.shared:
            import importlib

            module, _, attribute = self.shared.partition(":")
            return leaves(getattr(importlib.import_module(module), attribute))
        if self.prefix:
            return leaves(getattr(self.plugins()[name], "Settings", NoSettings))
        return []


GROUPS = (
    Group("policy", "raysim.policy:POLICIES", prefix="policy"),
    Group("placer", "raysim.placement:PLACERS", prefix="placer", shared="raysim.placement:PlacerSettings"),
    Group("trace.format", "raysim.trace.load:READERS"),
    Group("harvest.allocator", "raysim.harvest.allocators:ALLOCATORS"),
    Group("fgd.policy", "raysim.placement.scored:SCORERS"),
)


def setting_line(prefix: str, setting: tuple[str, Declared], quote: str = "") -> str:
    """policy.p (float, not 0; default -0.5): fairness power ... (`quote`: around the key)"""
    name, d = setting
    what = ", ".join(filter(None, (d.kind, d.constraint())))
    return f"{quote}{prefix}.{name}{quote} ({what}; default {_shown(d.default)}): {d.doc}"


def _shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v:g}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _short(text: str, most: int = 100) -> str:
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0] + " ..."


def help_text() -> str:
    """The plug-ins section of ``raysim --help``."""
    lines = ["plug-ins (choose one with SETTING=NAME; a plug-in's settings: PREFIX.KEY=VALUE):"]
    for group in GROUPS:
        plugins = group.plugins()
        lines.append(f"  {group.setting}=")
        if group.shared:
            lines += [f"      every {group.setting}: " + setting_line(group.prefix, d) for d in group.settings("")]
        width = max(map(len, plugins))
        for name in plugins:
            lines.append(f"    {name:<{width}}  {_short(plugins.summary(name))}")
            if not group.shared:
                lines += [f"    {'':<{width}}    {setting_line(group.prefix, d)}" for d in group.settings(name)]
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """docs/configuration.md's section on plug-ins: one table per kind of plug-in."""
    out = [MARK_BEGIN, "", "## Plug-ins and their settings", "",
           "Written by `python -m raysim.plugins --markdown` from the plug-ins' registries and declared "
           "settings (`raysim --help` prints the same). Each setting is checked before anything is read: a "
           "wrong type, `nan`, `inf`, an empty text, a value out of bounds and a key the plug-in does not "
           "declare each stop the run with one line naming it (exit status 2).", ""]
    for group in GROUPS:
        plugins = group.plugins()
        out += [f"### `{group.setting}=`", "", "| name | what it is | settings |", "|---|---|---|"]
        for name in plugins:
            settings = [] if group.shared else group.settings(name)
            cell = "<br>".join(_md(setting_line(group.prefix, d, "`")) for d in settings)
            cell = cell or ("those below" if group.shared else "none")
            out.append(f"| `{name}` | {_md(plugins.summary(name))} | {cell} |")
        if group.shared:
            out += ["", f"Every `{group.setting}=` takes:", ""]
            out += [f"- {_md(setting_line(group.prefix, d, '`'))}" for d in group.settings("")]
        out.append("")
    out.append(MARK_END)
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


MARK_BEGIN = "<!-- plug-ins: written by `python -m raysim.plugins --markdown`; do not edit by hand -->"
MARK_END = "<!-- end of plug-ins -->"


def main(argv: list[str] | None = None) -> int:
    """`python -m raysim.plugins [--markdown FILE]`: print the listing, or rewrite FILE's section."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["--markdown"]:
        sys.stdout.write(help_text())
        return 0
    if len(argv) < 2:
        sys.stdout.write(markdown())
        return 0
    from pathlib import Path

    path = Path(argv[1])
    text = path.read_text()
    begin, end = text.index(MARK_BEGIN), text.index(MARK_END) + len(MARK_END) + 1
    path.write_text(text[:begin] + markdown() + text[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
