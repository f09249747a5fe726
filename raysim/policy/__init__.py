"""Scheduling policies behind one small interface (`raysim.policy.base.Policy`).

A new policy is one file with a Policy subclass plus one line in POLICIES.
"""

from __future__ import annotations

from raysim.policy.fifo import FIFO
from raysim.policy.lucid import Lucid
from raysim.policy.qssf import QSSF
from raysim.policy.sjf import SJF
from raysim.policy.srtf import SRTF
from raysim.policy.tiresias import Tiresias

POLICIES = {cls.name: cls for cls in (FIFO, SJF, SRTF, QSSF, Tiresias, Lucid)}

#: Policies that rank jobs by an estimated duration (they need `estimator.source`).
NEEDS_ESTIMATE = {"qssf", "lucid"}


def make_policy(name: str, *, params, **options):
    """Build the policy called `name` (options: policy-specific inputs, e.g. Lucid's pair speeds)."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of {sorted(POLICIES)}") from None
    return cls(params, **options)
