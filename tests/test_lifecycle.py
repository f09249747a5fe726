"""The node lifecycle (raysim.sim.lifecycle): one function, VCState.change, moves a node between its
states, and the scan order, totals and indexes follow the states."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from simutil import pools

from raysim.sim.lifecycle import ABSENT, DOWN, DRAINING, LENT, LENT_DOWN, MOVES, REPAIR, SPARE, STATES, UP
from raysim.sim.vc import VCState

PACKAGE = Path(__file__).resolve().parent.parent / "raysim"


def test_every_move_keeps_the_order_totals_and_indexes_in_step():
    vc = VCState(pools(4))  # 4 nodes of 8 GPUs
    steps = [(1, "down", DOWN), (1, "up", UP), (2, "lend", LENT), (2, "down", LENT_DOWN), (2, "return", DOWN),
             (2, "up", UP), (3, "repair", REPAIR), (3, "up", UP), (0, "spare", SPARE), (0, "up", UP),
             (3, "leave", ABSENT), (3, "up", UP)]
    for node, event, state in steps:
        assert vc.change(node, event, "test") == state
        vc.check()
        up = [n for n in range(4) if vc.state[n] == UP]
        assert vc.order == up  # own nodes back in their place
        assert vc.total_gpus == vc.free_gpus == 8 * len(up)
        assert vc.down_gpus == 8 * sum(vc.state[n] in (DOWN, LENT_DOWN, REPAIR) for n in range(4))
        assert vc.cause[node] == "test"


def test_a_move_the_table_lacks_or_a_busy_node_is_refused():
    vc = VCState(pools(2))
    with pytest.raises(AssertionError, match="node 0 is up: it cannot take the event 'return'"):
        vc.change(0, "return", "test")
    vc.allocate(7, [(1, 8)], 0, 0.0)
    with pytest.raises(AssertionError, match="node 1 is not idle"):
        vc.change(1, "down", "test")
    assert all(event in ("down", "up", "lend", "return", "drain", "leave", "repair", "spare")
               for _, event in MOVES) and len(STATES) == 8


def test_a_held_node_drains_while_busy_and_its_slot_is_reused():
    vc = VCState(pools(1))
    node = vc.add_held("gpu", 8, ("lender", 0))
    vc.allocate(3, [(node, 4)], 0, 0.0)
    assert vc.change(node, "drain", "quota") == DRAINING and node not in vc.order and vc.total_gpus == 16
    vc.release(3)
    assert vc.change(node, "leave", "quota") == ABSENT and node not in vc.held and vc.total_gpus == 8
    vc.check()
    assert vc.add_held("gpu", 8, ("lender", 0)) == node  # the free slot of its shape
    vc.check()


def test_only_the_lifecycle_changes_membership():
    """Outside VCState.change (and VCState's construction, and VCState.failed, which moves an up node
    to where its host order places it), no code adds to or takes from the scan order or the
    lifecycle's indexes."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or (path.name == "vc.py" and fn.name in ("change", "__init__")):
                continue
            for node in ast.walk(fn):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("append", "remove", "insert", "add", "discard", "pop")
                        and isinstance(node.func.value, ast.Attribute)
                        and node.func.value.attr in ("order", "down", "lent", "draining")):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{fn.name}")
    # (change's helper, where the host order places a node; a failure that moves a node in the host order)
    assert offenders == ["sim/vc.py:_insert", "sim/vc.py:failed"]
