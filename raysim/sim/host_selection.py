"""Host selection (`host_selection=`, docs/failures.md): the order in which a VC's idle nodes are taken.

Placers that scan (first fit, consolidate's ties, workers) and warm standbys (raysim.sim.standbys)
take nodes in the VC's scan order (raysim.sim.vc.VCState.order). A host selection is the one rule
that keeps that order: where a node joins it when it comes back in service (from down, repair, the
spare pool, a standby given back: `place`), and, for a rule that counts failures, whether a failure
moves a node that stays up (`failed`); the VC itself moves its nodes (raysim.sim.vc.VCState._insert,
the one place besides its lifecycle's `change`). So a job placed anew after a failure, a job taking its
standbys and a standby chosen all follow it, with no copy of the order per placer:

- `in_place` (the default): a node rejoins in its own place (own nodes by index, a node on loan at
  the end), as every run before the group existed; no extension is attached;
- `returns_last`: a node back in service joins the end, as a repaired server joins the end of
  AIReSim's working pool, whose default host selection takes the first idle servers in pool order;
- `fewest_failures` (AIReSim's FewestFailuresFirst): the order is kept sorted by each node's
  failures so far (every failure event of the node while it was up: down, restart or undiagnosed),
  ties in node order (`ties=order`), or in an order drawn afresh at every failure and for each node
  back in service (`ties=random`: AIReSim's, which draws its ties at every host selection, so that a
  job placed anew meets fresh nodes); a node that fails and stays up moves behind the nodes with
  fewer failures;
- `random`: the order is a seeded shuffle of the VC's nodes, and a node back in service joins at a
  uniformly drawn place, from one generator per VC (run seed, VC name), so its draws depend only on
  the VC's own events, never on the runtime.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from raysim.registry import Registry
from raysim.settings import NoSettings, setting
from raysim.sim.extensions import Extension
from raysim.sim.failures import stable_hash

#: The last word of a VC's host-order seed ([seed, stable_hash(VC), HOST_ORDER]): a large number, so it
#: is no node index of a failure stream's seed ([seed, stable_hash(VC), node]).
HOST_ORDER = stable_hash("host_selection")


class HostOrder(Extension):
    """A rule that keeps a VC's scan order (see the module docs); attached, it is the VC's `host_order`."""

    name = "host_selection"
    Settings = NoSettings

    def __init__(self, seed: int = 0, settings=None):
        self.seed = int(seed)
        self.options = settings  # (the rule's checked Settings; None: their defaults)

    def attach(self, sim) -> None:
        sim.vc.host_order = self

    def place(self, vc, node: int) -> int:
        """Where in `vc.order` node `node`, back in service, goes (an index)."""
        raise NotImplementedError

    def failed(self, vc, node: int) -> bool:
        """Node `node` of `vc`, up, failed now (it may go down at once: raysim.sim.vc.VCState.failed);
        returns whether it moves in the order (to where `place` then says)."""
        return False

    def generator(self, vc_name: str) -> np.random.Generator:
        """The VC's own generator of draws (run seed, VC name)."""
        return np.random.default_rng([self.seed, stable_hash(vc_name), HOST_ORDER])


class InPlace(HostOrder):
    """A node back in service rejoins the scan order in its own place (own nodes by index, one on loan
    at the end): the default, as every run before host selection was a choice. A run attaches none
    (raysim.run.host_selection): the VC places its nodes so without a host order."""

    def attach(self, sim) -> None:
        """Nothing to keep: the VC's own placing is this rule."""


class ReturnsLast(HostOrder):
    """A node back in service (from down, repair, the spare pool, a standby given back) joins the end of
    the scan order, as a repaired server joins the end of AIReSim's working pool (its default host
    selection takes the first idle servers in pool order): placers prefer nodes that were not out lately."""

    def place(self, vc, node: int) -> int:
        return len(vc.order)


@dataclass(frozen=True)
class FewestFailuresSettings:
    """`host_selection=fewest_failures`'s settings."""

    ties: str = setting("order", "nodes with as many failures: in node order (order), or in an order drawn afresh at "
                                 "every failure (random: AIReSim's, drawn at every host selection)",
                        choices=("order", "random"))


class FewestFailures(HostOrder):
    """AIReSim's FewestFailuresFirst: idle nodes with fewer failures so far are taken first (a job placed
    anew, its standbys, a standby refilled), ties in node order or drawn. Needs failures drawn or replayed."""

    Settings = FewestFailuresSettings
    settings = ("host_selection=fewest_failures",)
    requires = {"failures": "fewest_failures orders nodes by their failures: set failures=exponential, weibull, "
                            "lognormal, llama3 or trace"}
    refuses = {"cluster.capacity": "a node log's downs and leaves are not failures fewest_failures could count: "
                                   "leave cluster.capacity null",
               "quota=borrow": "a node lent on takes its place in another VC's order, with failures this VC "
                               "counts: use quota=none or quota=global"}

    def __init__(self, seed: int = 0, settings: FewestFailuresSettings | None = None):
        super().__init__(seed, settings or FewestFailuresSettings())
        self.failures: dict[int, int] = {}  # node -> its failures so far (none: 0)
        self.rng = None  # ties=random: the VC's generator
        self.tie: dict[int, float] = {}  # ties=random: node -> its latest draw

    def attach(self, sim) -> None:
        super().attach(sim)
        if self.options.ties == "random":
            self.rng = self.generator(sim.name)
            self._draw(sim.vc)

    def _key(self, node: int) -> tuple:
        return self.failures.get(node, 0), (node if self.rng is None else self.tie[node])

    def _draw(self, vc) -> None:
        """Fresh ties for every node in the order, which is sorted again."""
        self.tie.update(zip(vc.order, self.rng.random(len(vc.order)).tolist()))
        vc.reorder(sorted(vc.order, key=self._key))

    def place(self, vc, node: int) -> int:
        if self.rng is not None:
            self.tie[node] = float(self.rng.random())
        return bisect.bisect_left(vc.order, self._key(node), key=self._key)

    def failed(self, vc, node: int) -> bool:
        self.failures[node] = self.failures.get(node, 0) + 1
        if self.rng is None:
            return True
        self._draw(vc)
        return False


class RandomOrder(HostOrder):
    """Idle nodes in a seeded random order: the VC's nodes shuffled at the start, a node back in service
    at a uniformly drawn place (one generator per VC, from the run seed and the VC's name)."""

    settings = ("host_selection=random",)

    def attach(self, sim) -> None:
        super().attach(sim)
        self.rng = self.generator(sim.name)
        order = sim.vc.order
        sim.vc.reorder([order[i] for i in self.rng.permutation(len(order))])

    def place(self, vc, node: int) -> int:
        return int(self.rng.integers(len(vc.order) + 1))


#: host_selection=NAME -> its rule (conf/host_selection/NAME.yaml's `name`).
HOST_SELECTIONS = Registry({"in_place": InPlace, "returns_last": ReturnsLast, "fewest_failures": FewestFailures,
                            "random": RandomOrder}, what="host selection")


@dataclass(frozen=True)
class HostSelection:
    """A run's host selection other than in_place (a name of HOST_SELECTIONS), the run's seed and the
    rule's checked settings (None: their defaults); carried by raysim.sim.spares.SpareRules, which
    attaches one rule per VC."""

    name: str
    seed: int = 0
    settings: object = None

    def extension(self) -> HostOrder:
        """A fresh rule for one VC."""
        return HOST_SELECTIONS[self.name](self.seed, self.settings)
