"""Quota settings (the `quota=` config group): the mode, the epoch period and, per VC, its cohort,
limits and reclaim mode. The group was called `sharing` before; that word is kept for GPU sharing,
and a key or override under the old name is refused (`refuse_old_name`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from raysim.errors import ConfigError

MODES = ("none", "borrow", "global")
RECLAIM_MODES = ("preempt", "drain")
#: settings a VC may override in `quota.vcs.<vc>`
PER_VC = ("cohort", "borrow_limit", "lending_limit", "reclaim")
#: the group's name before it was `quota`
OLD_NAME = "sharing"


@dataclass(frozen=True)
class VCQuota:
    """One VC's part in quota lending."""

    cohort: str = "all"
    #: GPUs the VC may hold on loan at once (None: no limit)
    borrow_limit: int | None = None
    #: GPUs the VC may have lent out at once (None: no limit)
    lending_limit: int | None = None
    #: how the VC gets lent nodes back: "preempt" (the borrower's jobs on them stop) or "drain"
    reclaim: str = "preempt"


_DEFAULT = VCQuota()


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


def quota_settings(conf: dict | None, vcs: list[str]) -> QuotaSettings:
    """Checked settings from the `quota` config group (a plain dict) for a run over VCs `vcs`.
    A bad value is a ConfigError naming its key."""
    conf = dict(conf or {})
    mode = conf.get("mode", "none")
    if mode not in MODES:
        raise ConfigError("quota.mode", f"must be one of {', '.join(MODES)}", mode)
    if mode != "borrow":
        return QuotaSettings(mode=mode)
    period = _whole(conf.get("period_s", 300), "quota.period_s", minimum=1)
    default = _vc_quota(conf, "quota", VCQuota())
    overrides = conf.get("vcs") or {}
    if not isinstance(overrides, dict):
        raise ConfigError("quota.vcs", "must map VC names to their settings", overrides)
    unknown = sorted(set(overrides) - set(vcs))
    if unknown:
        raise ConfigError("quota.vcs", f"names VC(s) the run does not have: {', '.join(map(str, unknown))} "
                          f"(its VCs: {', '.join(vcs[:8])}{', ...' if len(vcs) > 8 else ''})")
    quotas = {}
    for vc in vcs:
        own = overrides.get(vc) or {}
        if not isinstance(own, dict):
            raise ConfigError(f"quota.vcs.{vc}", f"must be a mapping of {', '.join(PER_VC)}", own)
        extra = sorted(set(own) - set(PER_VC))
        if extra:
            raise ConfigError(f"quota.vcs.{vc}", f"unknown setting(s) {', '.join(extra)}; "
                              f"choose from {', '.join(PER_VC)}")
        quotas[vc] = _vc_quota(own, f"quota.vcs.{vc}", default)
    return QuotaSettings(mode=mode, period_s=period, quotas=quotas)


def _vc_quota(conf: dict, where: str, default: VCQuota) -> VCQuota:
    reclaim = conf.get("reclaim", default.reclaim)
    if reclaim not in RECLAIM_MODES:
        raise ConfigError(f"{where}.reclaim", f"must be one of {', '.join(RECLAIM_MODES)}", reclaim)
    cohort = conf.get("cohort", default.cohort)
    if not isinstance(cohort, (str, int)) or isinstance(cohort, bool) or str(cohort) == "":
        raise ConfigError(f"{where}.cohort", "must be a name", cohort)
    limits = {}
    for key in ("borrow_limit", "lending_limit"):
        raw = conf.get(key, getattr(default, key))
        limits[key] = None if raw is None else _whole(raw, f"{where}.{key}", minimum=0)
    return VCQuota(cohort=str(cohort), reclaim=reclaim, **limits)


def _whole(raw, key: str, *, minimum: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or float(raw) != int(raw) or raw < minimum:
        raise ConfigError(key, f"must be a whole number of at least {minimum}", raw)
    return int(raw)


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
