"""Every plug-in a run can name, with its one-line doc and its declared settings: what
``raysim --help`` prints and what docs/configuration.md's section "Plug-ins and their settings"
holds (written by ``python -m raysim.plugins --markdown``; a test keeps it current).

Each kind of plug-in is one registry (raysim.registry.Registry), chosen by one setting:
`GROUPS` says which. A plug-in that reads settings declares them (raysim.settings): a policy as its
class's ``Settings``, a trace reader as its function's ``Settings`` (its ``trace.reader_options``),
a failure producer or a quota mode as its ``Settings`` attribute, the placers as
raysim.placement.PlacerSettings.
"""

from __future__ import annotations

import importlib
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
    noun: str = ""     # what one plug-in is called ("every model preset"; default: the setting's name)

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

    def common(self) -> dict[str, list[tuple[str, Declared]]]:
        """What is shown once: kind of plug-in ("" for the group's shared settings) -> the settings
        every plug-in of that kind declares alike (e.g. the round mechanism's, every round-based
        policy's)."""
        if self.shared:
            return {"": self.settings("")}
        plugins, by_kind, out = self.plugins(), {}, {}
        for name in plugins if self.prefix else ():
            by_kind.setdefault(getattr(plugins[name], "kind", ""), []).append(name)
        for kind, names in by_kind.items():
            first, *rest = [self.settings(n) for n in names]
            same = [s for s in first if rest and all(s in other for other in rest)]
            if same:
                out[kind] = same
        return out

    def own(self, name: str) -> list[tuple[str, Declared]]:
        """The settings of plug-in `name` that `common` does not show."""
        if self.shared:
            return []
        shown = self.common().get(getattr(self.plugins()[name], "kind", ""), [])
        return [s for s in self.settings(name) if s not in shown]

    def every(self, kind: str) -> str:
        """"every placer", "every round policy"."""
        return f"every {kind + ' ' if kind else ''}{self.noun or self.setting.split('.')[0]}"


GROUPS = (
    Group("policy", "raysim.policy:POLICIES", prefix="policy"),
    Group("placer", "raysim.placement:PLACERS", prefix="placer", shared="raysim.placement:PlacerSettings"),
    Group("trace.format", "raysim.trace.load:READERS", prefix="trace.reader_options"),
    Group("harvest.allocator", "raysim.harvest.allocators:ALLOCATORS"),
    Group("fgd.policy", "raysim.placement.scored:SCORERS"),
    Group("failures", "raysim.run.failures:FAILURES", prefix="failures", noun="preset"),
    Group("repair", "raysim.run.repair:REPAIRS", prefix="repair", noun="repair preset"),
    Group("retire", "raysim.run.retire:RETIRES", prefix="retire", noun="retirement policy"),
    Group("host_selection", "raysim.sim.host_selection:HOST_SELECTIONS", prefix="host_selection",
          noun="host selection"),
    Group("quota", "raysim.quota.settings:QUOTAS", prefix="quota"),
    Group("spot.victims", "raysim.sim.spot:VICTIMS", noun="victim chooser"),
)


#: The run modes' own settings (raysim.settings declarations): (title, "module:attribute", prefix).
MODES = (
    ("Trace replays (`mode: cluster`, the default)", "raysim.run.cluster_settings:ClusterMode", ""),
    ("Idle-node harvesting (`harvest:`, policy=bftrainer)", "raysim.harvest.inputs:HarvestSettings", "harvest"),
    ("The FGD inflation experiment (`mode: fgd`)", "raysim.run.fgd:FgdMode", ""),
)


def mode_settings(where: str) -> list[tuple[str, Declared]]:
    """(dotted name, declaration) of every setting a run mode's declaration `where` holds."""
    module, attribute = where.split(":")
    return leaves(getattr(importlib.import_module(module), attribute))


def setting_line(prefix: str, setting: tuple[str, Declared], quote: str = "") -> str:
    """policy.p (float, not 0; default -0.5): fairness power ... (`quote`: around the key)"""
    name, d = setting
    what = ", ".join(filter(None, (d.what or d.kind, d.constraint())))
    key = f"{prefix}.{name}" if prefix else name
    return f"{quote}{key}{quote} ({what}; default {_shown(d.default)}): {d.doc}"


def _shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_shown, value)) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _short(text: str, most: int = 100) -> str:
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0] + " ..."


def help_text() -> str:
    """The plug-ins section of ``raysim --help``."""
    lines = ["plug-ins (choose one with SETTING=NAME; a plug-in's settings: PREFIX.KEY=VALUE; every other setting, "
             "declared the same way: docs/configuration.md, \"Run settings\"):"]
    for group in GROUPS:
        plugins = group.plugins()
        lines.append(f"  {group.setting}=")
        for kind, settings in group.common().items():
            lines.append(f"      {group.every(kind)}:")
            lines += [f"        {setting_line(group.prefix, s)}" for s in settings]
        width = max(map(len, plugins))
        for name in plugins:
            lines.append(f"    {name:<{width}}  {_short(plugins.summary(name))}")
            lines += [f"    {'':<{width}}    {setting_line(group.prefix, s)}" for s in group.own(name)]
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
        common = group.common()
        for name in plugins:
            kind = "" if group.shared else getattr(plugins[name], "kind", "")
            cell = "<br>".join(_md(setting_line(group.prefix, s, "`")) for s in group.own(name))
            if kind in common:
                cell = "<br>".join(filter(None, [f"those of {group.every(kind)} (below)", cell]))
            out.append(f"| `{name}` | {_md(plugins.summary(name))} | {cell or 'none'} |")
        for kind, settings in common.items():
            out += ["", f"{group.every(kind).capitalize()} takes:", ""]
            out += [f"- {_md(setting_line(group.prefix, s, '`'))}" for s in settings]
        out.append("")
    out += ["## Run settings", "",
            "Each run mode's own settings, from their declarations, checked the same way before anything is read.", ""]
    for title, where, prefix in MODES:
        out += [f"### {title}", ""]
        out += [f"- {_md(setting_line(prefix, s, '`'))}" for s in mode_settings(where)]
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
