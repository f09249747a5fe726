"""Where a cohort's loans are decided, and how VCs are packed so that cohorts stay whole.

Loans never cross cohorts, so each cohort's decisions depend on its own VCs' reports only. A
cohort all of whose VCs live in one VC group is decided inside that group (raysim.quota.exchange
.CohortEpochs): no coordinator window per epoch, no round trip. A cohort split over several groups
is decided by the coordinator (raysim.quota.exchange.EpochExchange), whose windows then end at
the epochs. Both run the same checks and lending policy at the same epochs, so where a cohort is
decided never changes a result. A cohort of one VC has no partner and takes no part at all.
"""

from __future__ import annotations

from raysim.packing import lpt
from raysim.quota.settings import QuotaSettings


def cohorts(settings: QuotaSettings, vcs: list[str]) -> dict[str, list[str]]:
    """Cohort -> its VCs in layout order, for the cohorts of at least two VCs (`vcs`: layout order)."""
    members: dict[str, list[str]] = {}
    for vc in vcs:
        members.setdefault(settings.of(vc).cohort, []).append(vc)
    return {name: group for name, group in members.items() if len(group) > 1}


def decided_in_group(settings: QuotaSettings, vcs: list[str], group: list[str]) -> list[str]:
    """VCs of `group` whose cohort lies wholly in it (decided there), in layout order."""
    if not settings.borrow:
        return []
    inside = set(group)
    return [vc for members in cohorts(settings, vcs).values() if inside.issuperset(members) for vc in members]


def decided_by_coordinator(settings: QuotaSettings, vcs: list[str], groups: list[list[str]]) -> list[str]:
    """VCs whose cohort is split over several groups (decided by the coordinator), in layout order."""
    if not settings.borrow:
        return []
    group_of = {vc: g for g, group in enumerate(groups) for vc in group}
    split = {vc for members in cohorts(settings, vcs).values()
             if len({group_of[vc] for vc in members}) > 1 for vc in members}
    return [vc for vc in vcs if vc in split]


def cohort_groups(settings: QuotaSettings, vcs: list[str], n_groups: int,
                  costs: dict[str, float] | None = None) -> list[list[str]]:
    """At most `n_groups` groups of VCs that keep every cohort whole: cohorts (and VCs alone in
    theirs) are packed longest first onto the least loaded group (raysim.packing.lpt), a cohort
    weighing its VCs' summed `costs` (VC -> estimated cost, positive; None: its number of VCs;
    ties: the earlier cohort, the earlier group). Each group lists its VCs in layout order; groups
    are ordered by their first VC."""
    units: dict[str, list[str]] = {}
    for vc in vcs:
        units.setdefault(settings.of(vc).cohort, []).append(vc)
    members = list(units.values())
    weights = [sum(costs[vc] for vc in m) if costs is not None else len(m) for m in members]
    packed = lpt(weights, max(1, min(n_groups, len(members))))
    rank = {vc: i for i, vc in enumerate(vcs)}
    groups = [sorted((vc for u in b for vc in members[u]), key=rank.__getitem__) for b in packed]
    return sorted((g for g in groups if g), key=lambda g: rank[g[0]])
