"""The node lifecycle: the states a node of a VC can be in and the events that move it between them.

Every change of a VC's membership is one event on one node, carrying a cause, applied by
`raysim.sim.vc.VCState.change` (the one function that changes membership). Its producers are the
capacity streams (node logs, failure models: ``down``, ``up``, ``leave``), quota lending (``lend``,
``return``, ``drain``, ``leave``; a held node arrives with ``up``), Lucid's profiling pool (``lend``
an idle node to it; a node it sends back arrives with ``up``) and the start of a run (own nodes
that join later begin ``absent``).

A node's state says where it is and whether it serves:

- ``absent``: not part of the VC (an own node that has not joined yet, or the free slot of a held
  node given back); idle, out of the scan order and the totals.
- ``up``: in service, in the scan order: placers may use it.
- ``down``: out of service (a capacity event); idle, out of the scan order and the totals, in its
  place again when it comes ``up``.
- ``draining``: a held node going back to its lender: no new job, counted until its last job ends.
- ``lent``: an own node on loan elsewhere (another VC, or Lucid's profiling pool); idle here.
- ``lent_down``: a node on loan elsewhere that is down there (it follows its events where it is),
  ``down`` here once it is returned.
- ``repair`` and ``spare``: out of service in a repair, or kept idle as a spare, out of the scan
  order and the totals; ``up`` ends either.

`MOVES` is the whole table: (state, event) -> next state. An event a state has no entry for is an
error of its producer.
"""

from __future__ import annotations

ABSENT, UP, DOWN, DRAINING, LENT, LENT_DOWN, REPAIR, SPARE = range(8)
STATES = ("absent", "up", "down", "draining", "lent", "lent_down", "repair", "spare")

#: Events a producer sends, with the cause it carries (a capacity cause, "quota", "profiler", ...).
EVENTS = ("down", "up", "lend", "return", "drain", "leave", "repair", "spare")

#: (state, event) -> the state the node moves to.
MOVES = {
    (UP, "down"): DOWN, (LENT, "down"): LENT_DOWN,
    (DOWN, "up"): UP, (LENT_DOWN, "up"): LENT, (ABSENT, "up"): UP, (REPAIR, "up"): UP, (SPARE, "up"): UP,
    (UP, "lend"): LENT,
    (LENT, "return"): UP, (LENT_DOWN, "return"): DOWN,
    (UP, "drain"): DRAINING,
    (UP, "leave"): ABSENT, (DRAINING, "leave"): ABSENT, (DOWN, "leave"): ABSENT,
    (UP, "repair"): REPAIR, (DOWN, "repair"): REPAIR,
    (UP, "spare"): SPARE,
}

#: States whose node is part of the VC's GPU totals (free and total GPUs count it).
COUNTED = frozenset((UP, DRAINING))
#: States of a node out of service (an own node's GPUs count as down: `VCState.down_gpus`).
OUT_OF_SERVICE = frozenset((DOWN, LENT_DOWN, REPAIR))
#: States of an own node away on loan.
AWAY = frozenset((LENT, LENT_DOWN))
#: Moves a busy node may make (its jobs keep running): a held node starts draining.
BUSY_MOVES = frozenset(((UP, "drain"),))


def next_state(node: int, state: int, event: str) -> int:
    """The state node `node` moves to from `state` on `event`; an impossible move is an AssertionError
    (a producer's bug, not a user's input)."""
    to = MOVES.get((state, event))
    if to is None:
        raise AssertionError(f"node {node} is {STATES[state]}: it cannot take the event {event!r}")
    return to
