"""Which GPU types a placer tries for a job, and in which order (`placer.type_order`)."""

from __future__ import annotations

TYPE_ORDERS = ("any", "given", "fastest", "slowest")


def check_type_order(order: str) -> str:
    if order not in TYPE_ORDERS:
        raise ValueError(f"placer.type_order must be one of {', '.join(TYPE_ORDERS)}, not {order!r}")
    return order


def type_groups(vc, demand, order: str) -> list[frozenset]:
    """The sets of GPU-type indices to try in turn for `demand`: with "any", one set of every type
    the job may use (nodes of all of them compete); otherwise one type at a time, in layout order
    ("given"), or by the job's speed on them, fastest or slowest first (ties: layout order)."""
    allowed = range(len(vc.types)) if demand.types is None else sorted(demand.types)
    if order == "any":
        return [frozenset(allowed)] if allowed else []
    ranked = list(allowed)
    if order in ("fastest", "slowest") and demand.speed is not None:
        sign = -1 if order == "fastest" else 1
        ranked.sort(key=lambda t: (sign * demand.speed[t], t))
    return [frozenset((t,)) for t in ranked]


def nodes_of(vc, types: frozenset) -> list[int]:
    """The VC's nodes (scan order) whose GPU type is in `types`."""
    if len(types) == len(vc.types):
        return vc.order
    type_of = vc.type_of
    return [n for n in vc.order if type_of[n] in types]
