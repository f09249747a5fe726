"""Quota settings (the `quota=` config group): the mode (QUOTAS, one per conf/quota/<mode>.yaml)
and, with borrow, the settings it declares (raysim.settings): the epoch period and every VC's
cohort, limits and reclaim mode, which a VC's own entry in `quota.vcs` overrides. The group was
called `sharing` before; that word is kept for GPU sharing, and a key or override under the old name
is refused (`refuse_old_name`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from raysim.errors import ConfigError
from raysim.registry import Registry
from raysim.settings import NoSettings, parse, setting

RECLAIM_MODES = ("preempt", "drain")
#: the group's name before it was `quota`
OLD_NAME = "sharing"


@dataclass(frozen=True)
class VCQuota:
    """One VC's part in quota lending (quota.<key>: every VC's; quota.vcs.<vc>.<key>: one VC's,
    over every VC's)."""

    cohort: str = setting("all", "the VC's cohort: VCs lend only within their cohort")
    borrow_limit: int | None = setting(None, "GPUs the VC may hold on loan at once (null: no limit)", minimum=0)
    lending_limit: int | None = setting(None, "GPUs the VC may have lent out at once (null: no limit)", minimum=0)
    reclaim: str = setting("preempt", "how the VC gets lent nodes back: preempt (the borrower's jobs on them stop) "
                           "| drain", choices=RECLAIM_MODES)


_DEFAULT = VCQuota()


@dataclass(frozen=True)
class BorrowSettings(VCQuota):
    """quota=borrow's settings: every VC's part (VCQuota's), the epoch period and per-VC overrides."""

    period_s: int = setting(300, "seconds between epochs (loan decisions)", minimum=1)
    vcs: dict[str, VCQuota] = setting({}, "a VC's own settings, over every VC's (e.g. {vc8Gr: {cohort: a}})")


class Mode:
    """A quota mode as QUOTAS registers it: its one-line doc and the settings it declares."""

    def __init__(self, doc: str, settings=NoSettings):
        self.__doc__, self.Settings = doc, settings


#: quota=NAME (conf/quota/NAME.yaml's `mode`) -> its mode.
QUOTAS = Registry({
    "none": Mode("Every VC keeps its own nodes (the default)"),
    "borrow": Mode("VCs lend idle nodes within their cohort and take them back when their own jobs wait; "
                   "quota.vcs sets a VC's own settings, over every VC's (docs/quota.md)", BorrowSettings),
    "global": Mode("One cluster-wide queue: every VC's jobs wait for every VC's nodes"),
}, what="quota mode")
MODES = tuple(QUOTAS)


@dataclass(frozen=True)
class QuotaSettings:
    """`mode` none | borrow | global; with borrow, loans are decided every `period_s` seconds
    (from the trace's t0) under each VC's `quotas` entry."""

    mode: str = "none"
    period_s: int = 300
    quotas: dict = field(default_factory=dict)  # VC -> VCQuota
    #: loans name the nodes they move, so that a node keeps its identity on loan (set when the run's
    #: nodes change: raysim.sim.capacity)
    named_nodes: bool = False

    @property
    def borrow(self) -> bool:
        return self.mode == "borrow"

    def of(self, vc: str) -> VCQuota:
        return self.quotas.get(vc, _DEFAULT)


def declared_quota(conf: dict | None) -> tuple[str, object]:
    """The mode of the `quota` config group (a plain dict) and its declared settings, checked: a bad
    or unknown one is a ConfigError naming ``quota.<key>``. Needs none of the run's inputs."""
    conf = dict(conf or {})
    mode = conf.pop("mode", "none")
    if not isinstance(mode, str) or mode not in QUOTAS:
        raise ConfigError("quota.mode", f"must be one of {', '.join(MODES)}", mode)
    return mode, parse(QUOTAS[mode].Settings, conf, prefix="quota", owner=f"quota={mode}")


def quota_settings(conf: dict | None, vcs: list[str]) -> QuotaSettings:
    """Checked settings from the `quota` config group (a plain dict) for a run over VCs `vcs`: its
    declared ones (declared_quota), and `quota.vcs` naming VCs of the run only."""
    mode, declared = declared_quota(conf)
    if mode != "borrow":
        return QuotaSettings(mode=mode)
    unknown = sorted(set(declared.vcs) - set(vcs))
    if unknown:
        raise ConfigError("quota.vcs", f"names VC(s) the run does not have: {', '.join(map(str, unknown))} "
                          f"(its VCs: {', '.join(vcs[:8])}{', ...' if len(vcs) > 8 else ''})")
    every = VCQuota(**{f.name: getattr(declared, f.name) for f in fields(VCQuota)})
    given = {str(vc): own for vc, own in (conf or {}).get("vcs", {}).items()}  # the keys a VC's entry sets
    quotas = {vc: replace(every, **{key: getattr(declared.vcs[vc], key) for key in given.get(vc, {})})
              for vc in vcs}
    return QuotaSettings(mode=mode, period_s=declared.period_s, quotas=quotas)


def refuse_old_name(keys) -> None:
    """Refuse a config key or command-line override (`key=value`, with Hydra's + ~ prefixes) under
    the group's old name: `sharing=borrow`, `sharing.period_s=600`, a `sharing:` key of a config
    file. The ConfigError gives the new name."""
    for key in map(str, keys):
        name = key.lstrip("+~")
        if name.split("=", 1)[0].split(".", 1)[0] == OLD_NAME:
            new = key[:len(key) - len(name)] + "quota" + name[len(OLD_NAME):]
            raise ConfigError(key, f"renamed to {new}: quotas between VCs are the quota group now "
                              f"({OLD_NAME} is GPU sharing only)")
