"""The allocations an elastic policy chooses among, and how an allocation becomes GPUs on nodes.

A configuration is (GPU kind, nodes, GPUs): on a kind with G GPUs per node and N nodes, the powers
of two below G on one node, then whole nodes, 1..N of them (N at most the nodes the profiles cover,
as Sia caps it) (Sia's ``CONFIGS_4GPU`` and
``CONFIGS_8GPU`` for G = 4 and 8), and the GPU counts rigid jobs ask for (on as few nodes as hold
them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Kinds:
    """The GPU kinds of a VC, in the policy's column order, with their node shapes."""

    names: tuple[str, ...]
    nodes: tuple[int, ...]          # nodes per kind
    per_node: tuple[int, ...]       # GPUs per node per kind
    max_nodes: tuple[int, ...]      # most nodes one job may span per kind (what the profiles cover)

    @property
    def capacity(self) -> np.ndarray:
        return np.array(self.nodes) * np.array(self.per_node)


@dataclass(frozen=True)
class Configs:
    """All configurations of a VC's kinds, in kind order then GPU count."""

    kind: np.ndarray      # index into Kinds.names
    nodes: np.ndarray
    gpus: np.ndarray

    def of_kind(self, k: int) -> np.ndarray:
        return np.flatnonzero(self.kind == k)


def configurations(kinds: Kinds, sizes=()) -> Configs:
    """The configurations of `kinds`, plus GPU counts `sizes` (rigid jobs' own) that fit a kind (none
    on a kind without nodes)."""
    kind, nodes, gpus = [], [], []
    for k, (n, g) in enumerate(zip(kinds.nodes, kinds.per_node)):
        if not n:
            continue  # no node of this kind now (all down)
        n = min(n, kinds.max_nodes[k])
        counts = [c for c in (1 << i for i in range(8)) if c < g] + [g * m for m in range(1, n + 1)]
        counts = sorted(set(counts) | {c for c in sizes if 0 < c <= n * g})
        for c in counts:
            kind.append(k)
            gpus.append(c)
            nodes.append(-(-c // g))
    return Configs(np.array(kind), np.array(nodes), np.array(gpus))


def place_round_robin(allocs: list[tuple[object, int]], per_node: int, num_nodes: int) -> dict:
    """Node indices (one per GPU) for each (job, GPUs) of one kind, as Sia's fast placement: the
    largest jobs first; whole free nodes for a job's whole-node part, then any free GPUs, scanning
    nodes round-robin from where the last job ended. Jobs with 0 GPUs get []."""
    free = [per_node] * num_nodes
    cursor = 0
    out = {}
    for job, gpus in sorted(allocs, key=lambda a: a[1], reverse=True):
        node, ids = cursor, []
        if gpus == 0:
            out[job] = ids
            continue
        whole = gpus // per_node
        checked = 0
        while checked < num_nodes and whole > 0:
            if free[node] == per_node:
                free[node] = 0
                gpus -= per_node
                ids.extend([node] * per_node)
                whole -= 1
            node = (node + 1) % num_nodes
            checked += 1
        while gpus > 0:
            if free[node]:
                take = min(gpus, free[node])
                gpus -= take
                free[node] -= take
                ids.extend([node] * take)
            node = (node + 1) % num_nodes
        out[job] = ids
        cursor = node
    return out


def node_runs(node_ids) -> list[tuple[int, int]]:
    """(node, GPUs) of consecutive runs in a list of node indices, one per GPU: the placement's
    shape in the order the GPUs were taken."""
    out: list[list[int]] = []
    for node in node_ids:
        if out and out[-1][0] == node:
            out[-1][1] += 1
        else:
            out.append([node, 1])
    return [(node, count) for node, count in out]


def spread(runs: tuple[int, ...], max_nodes: int) -> tuple[int, ...]:
    """A placement's shape as the profiles can price it: over more than `max_nodes` nodes, the same
    GPUs spread evenly over `max_nodes` (Sia's simulator fixes placements so)."""
    if len(runs) <= max_nodes:
        return runs
    gpus, each = sum(runs), -(-sum(runs) // max_nodes)
    out = []
    while gpus > 0:
        out.append(min(each, gpus))
        gpus -= out[-1]
    return tuple(out)
