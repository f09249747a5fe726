"""Network contention between multi-node jobs on the nodes' NICs (`sim.network=on`).

A job spanning several nodes exchanges gradients over each node's NIC: it communicates a fraction
`duty` of its time at `gbps_per_gpu` per GPU it has on that node. Each NIC of `nic_gbps` is shared
max-min fairly among the jobs' mean demands; a job whose share f < 1 stretches only its
communication phases, so it progresses at 1 / ((1 - duty) + duty / f), limited by its worst node.
Jobs on a single node talk over NVLink and are never slowed.
"""

from __future__ import annotations


def fair_shares(demands: list[float], capacity: float) -> list[float]:
    """Max-min fair allocation of `capacity` among `demands` (water-filling), as fractions of demand."""
    order = sorted(range(len(demands)), key=demands.__getitem__)
    left, n, share = capacity, len(demands), [1.0] * len(demands)
    for k, i in enumerate(order):
        fair = left / (n - k)
        give = min(demands[i], fair)
        share[i] = give / demands[i] if demands[i] > 0 else 1.0
        left -= give
    return share


class NetworkModel:
    """Keeps which multi-node jobs use which NIC and tells the engine their progress rates."""

    def __init__(self, nic_gbps: float, gbps_per_gpu: float, duty: float):
        if nic_gbps <= 0 or gbps_per_gpu < 0 or not 0 <= duty <= 1:
            raise ValueError("network: nic_gbps must be > 0, gbps_per_gpu >= 0 and 0 <= duty <= 1")
        self.capacity, self.per_gpu, self.duty = nic_gbps, gbps_per_gpu, duty
        self.on_node: dict[int, dict[int, float]] = {}  # node -> {job: mean demand in Gb/s}
        self.nodes_of: dict[int, list[int]] = {}

    def add(self, job: int, placement: list[tuple[int, list[int]]]) -> set[int]:
        """A job started; returns the jobs whose rate may have changed."""
        if len(placement) < 2:
            return set()
        self.nodes_of[job] = [node for node, _ in placement]
        for node, gpus in placement:
            self.on_node.setdefault(node, {})[job] = self.per_gpu * len(gpus) * self.duty
        return self._neighbours(job)

    def remove(self, job: int) -> set[int]:
        """A job ended or was preempted; returns the other jobs whose rate may have changed."""
        nodes = self.nodes_of.pop(job, None)
        if nodes is None:
            return set()
        affected = set()
        for node in nodes:
            users = self.on_node[node]
            del users[job]
            affected |= set(users)
        return affected

    def rate(self, job: int) -> float:
        """Progress per second of a multi-node job under the current contention (1 = unslowed)."""
        worst = 1.0
        for node in self.nodes_of.get(job, ()):
            users = self.on_node[node]
            if sum(users.values()) <= self.capacity:
                continue
            jobs = list(users)
            share = fair_shares([users[j] for j in jobs], self.capacity)[jobs.index(job)]
            worst = min(worst, share)
        if worst >= 1.0 or self.duty == 0:
            return 1.0
        return 1.0 / ((1.0 - self.duty) + self.duty / worst)

    def renumber(self, new: list[int]) -> None:
        """Job j is now called new[j] (only running jobs are kept here)."""
        self.on_node = {node: {new[j]: d for j, d in users.items()} for node, users in self.on_node.items()}
        self.nodes_of = {new[j]: nodes for j, nodes in self.nodes_of.items()}

    def _neighbours(self, job: int) -> set[int]:
        out = set()
        for node in self.nodes_of[job]:
            out |= set(self.on_node[node])
        return out
