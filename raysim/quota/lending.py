"""The lending policy: from every VC's report at an epoch, the loan operations each VC carries out
at that epoch (raysim.quota.ledger has the operations and the report's fields). It runs wherever a
cohort is decided, in the coordinator or in a VC group (raysim.quota.exchange).

The policy is deterministic: it reads the reports in layout order and breaks every tie by it.
At an epoch, in this order:

1. **Take back.** Nodes a borrower gave back since the last epoch (drained) return to their lender.
2. **Reclaim.** A VC's *shortfall* is the GPUs of its pending jobs minus its free GPUs (on nodes
   open to placement). A lender whose shortfall is positive, after counting the nodes coming back
   to it at this epoch or being drained for it, reclaims lent nodes until the shortfall is covered
   or none is left: one node at a time, from the borrower holding most of its GPUs (ties: layout
   order), the lender's first pool (in layout order) of a GPU type its pending jobs may use. The
   borrower gives them back in the lender's reclaim mode: `preempt` (jobs on them stop; the nodes
   return at once) or `drain` (idle ones return at once, busy ones when their jobs end).
3. **Return.** A borrower without pending jobs gives its idle held nodes back.
4. **Lend.** Per cohort, lenders are the VCs without pending jobs, their supply their idle own
   nodes (within `lending_limit`); borrowers are the VCs whose shortfall is still positive. Nodes
   go out one at a time, max-min fair: to the borrower holding the fewest borrowed GPUs (counting
   this epoch's), among those still short of GPUs a node can serve (their pending jobs may use
   its type) and within `borrow_limit`; the node is the first such in lender then pool order.

A borrowed node serves the borrower until the lender reclaims it or the borrower returns it.

With named loans (`QuotaSettings.named_nodes`: the run's nodes change, raysim.sim.capacity) every
operation also names the lender's nodes it moves, as the VCs would choose them (lent: the lender's
last idle ones in index order; given back: the borrower's idle ones first, then those with the
fewest GPUs in use, borrowed last first; taken back: those given back), so that a node on loan
follows its own capacity events at the borrower and returns as itself.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from raysim.quota.ledger import PoolShape
from raysim.quota.settings import QuotaSettings


def decide(reports: dict[str, dict], settings: QuotaSettings, index: "ReportIndex | None" = None
           ) -> dict[str, list[tuple]]:
    """Per VC (those with something to do), its operations at the epoch, in the order it applies
    them: ("reclaim", lender, shape, count, mode, nodes returned at once), ("take_back", pool, count, borrower),
    ("lend", pool, count, borrower), ("borrow", shape, count, lender), each with the nodes it moves
    as one more argument under named loans (a reclaim: those going back at once first). `reports`: VC -> its
    latest quota report, in layout order; `index`: the reports' ReportIndex, when the caller keeps
    one up to date (else it is built here)."""
    index = index or ReportIndex.of(reports, settings)
    epoch = _Epoch(reports, settings, index.rank)
    for vc in index.ordered(index.transit):  # 1. take back
        r = reports[vc]
        for row in r["returned"]:
            epoch.take_back(row["lender"], row["pool"], row["nodes"], vc, row["gpus_per_node"], row.get("origins"))
            epoch.closed[row["lender"], vc, row["pool"]] += row["nodes"]
        if r["draining_gpus"]:
            for row in r["held"]:
                if row["draining"]:
                    epoch.coming[row["lender"]] += row["draining"] * row["gpus_per_node"]
                    epoch.closed[row["lender"], vc, row["pool"]] += row["draining"]
    for lender in index.ordered(index.pending & index.lending):  # 2. reclaim (a shortfall needs pending jobs)
        short = _shortfall(reports[lender]) - epoch.coming[lender]
        if short > 0:
            epoch.reclaim(lender, short)
    for vc in index.ordered(index.idle_held):  # 3. return
        for (lender, pool), row in epoch.held_rows(vc).items():
            idle = epoch.idle_left(vc, lender, pool)
            if idle:
                epoch.give_back(vc, lender, pool, row["gpu_type"], row["gpus_per_node"], idle, "drain")
    short = [vc for vc in index.ordered(index.pending)
             if reports[vc]["pending_gpus"] - reports[vc]["free_gpus"] > epoch.coming.get(vc, 0)]
    if short and any(reports[vc]["idle_own"] for vc in index.may_lend):
        for cohort in dict.fromkeys(settings.of(vc).cohort for vc in short):  # 4. lend
            epoch.lend(index.members[cohort], index.may_lend)
    return epoch.operations()


class ReportIndex:
    """Which VCs each step of the lending policy looks at, from their reports: those with pending
    jobs, those lending nodes out, those with nodes returned or being drained, borrowers with idle
    held nodes and no pending job, and those that may lend (no pending job and a free GPU: without
    one a VC has no idle node, so its pools need not be read). A caller that keeps it
    up to date (`update` whenever a report changes) makes a decision cost what it concerns rather
    than the number of VCs."""

    def __init__(self, vcs: list[str], settings: QuotaSettings):
        self.order = list(vcs)
        self.rank = {vc: i for i, vc in enumerate(self.order)}
        #: cohort -> its VCs (among `vcs`), in layout order
        self.members: dict[str, list[str]] = {}
        for vc in self.order:
            self.members.setdefault(settings.of(vc).cohort, []).append(vc)
        self.pending: set = set()
        self.lending: set = set()
        self.transit: set = set()
        self.idle_held: set = set()
        self.may_lend: set = set()

    @classmethod
    def of(cls, reports: dict[str, dict], settings: QuotaSettings) -> "ReportIndex":
        index = cls(list(reports), settings)
        for vc, r in reports.items():
            index.update(vc, r)
        return index

    def update(self, vc: str, r: dict) -> None:
        """Place VC `vc` by its report `r` (at every report, so written out rather than looped)."""
        waits = r["pending_jobs"] > 0
        (self.pending.add if waits else self.pending.discard)(vc)
        (self.lending.add if r["lent_gpus"] > 0 else self.lending.discard)(vc)
        (self.transit.add if r["returned"] or r["draining_gpus"] > 0 else self.transit.discard)(vc)
        idle_held = not waits and r["held_gpus"] > 0 and r["held_idle"] > 0
        (self.idle_held.add if idle_held else self.idle_held.discard)(vc)
        (self.may_lend.add if not waits and r["free_gpus"] > 0 else self.may_lend.discard)(vc)

    def ordered(self, vcs) -> list[str]:
        """`vcs` in layout order."""
        return sorted(vcs, key=self.rank.__getitem__)


def _shortfall(report: dict) -> int:
    """GPUs of the VC's pending jobs beyond its free GPUs."""
    return report["pending_gpus"] - report["free_gpus"]


def _usable(report: dict, gpu_type: str) -> int:
    """GPUs of the VC's pending jobs that may run on `gpu_type`."""
    groups = report["pending_by_types"]
    if len(groups) == 1 and groups[0]["gpu_types"] is None:
        return groups[0]["gpus"]
    return sum(g["gpus"] for g in report["pending_by_types"] if g["gpu_types"] is None or gpu_type in g["gpu_types"])


class _Epoch:
    """The decisions of one epoch being made: operations per VC and what they change."""

    ORDER = ("reclaim", "take_back", "lend", "borrow")

    def __init__(self, reports: dict[str, dict], settings: QuotaSettings, rank: dict[str, int]):
        self.reports, self.settings, self.rank = reports, settings, rank
        #: VC -> kind -> its operations of that kind
        self.ops: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        #: lender -> GPUs coming back to it at this epoch or being drained for it
        self.coming: dict[str, int] = defaultdict(int)
        #: lender -> GPUs taken back at this epoch
        self.back: dict[str, int] = defaultdict(int)
        #: borrower -> GPUs it holds on loan (open and being drained), after this epoch's operations
        self.held = _HeldGPUs(reports)
        #: (lender, borrower, pool) -> lent nodes not open to the borrower's placement at the epoch:
        #: given back since the last epoch, or being drained
        self.closed: dict = defaultdict(int)
        #: (lender, borrower, pool) -> nodes the borrower gives back at this epoch
        self.given: dict = defaultdict(int)
        self._held_rows: dict[str, dict] = {}  # borrower -> (lender, pool) -> its report's held row
        #: named loans: (borrower, lender, pool) -> the lender's nodes the borrower gives back at this epoch
        self.named = settings.named_nodes
        self.given_nodes: dict = defaultdict(set)

    def held_rows(self, borrower: str) -> dict:
        """(lender, pool) -> the borrower's held row in its report (counts before this epoch's operations)."""
        rows = self._held_rows.get(borrower)
        if rows is None:
            rows = self._held_rows[borrower] = {(row["lender"], row["pool"]): row
                                                for row in self.reports[borrower]["held"]}
        return rows

    def idle_left(self, borrower: str, lender: str, pool: int) -> int:
        """Idle nodes of the borrower's held row (lender, pool) not given back at this epoch yet (those
        given back are its idle nodes first)."""
        row = self.held_rows(borrower)[lender, pool]
        return max(0, row["idle"] - self.given.get((lender, borrower, pool), 0))

    def operations(self) -> dict[str, list[tuple]]:
        """VC -> its operations in the order it applies them (ORDER, then as decided)."""
        return {vc: [(kind, *args) for kind in self.ORDER if kind in per for args in per[kind]]
                for vc, per in self.ops.items()}  # (every VC in `ops` has an operation)

    def take_back(self, lender: str, pool: int, count: int, borrower: str, gpus_per_node: int,
                  nodes=None) -> None:
        self.ops[lender]["take_back"].append((pool, count, borrower) + ((tuple(nodes),) if self.named else ()))
        self.coming[lender] += count * gpus_per_node
        self.back[lender] += count * gpus_per_node

    def give_back(self, borrower: str, lender: str, pool: int, gpu_type: str, gpus: int, count: int, mode: str
                  ) -> None:
        """`borrower` gives back `count` nodes it holds open of `lender`'s pool (gpu_type, gpus per
        node); those that return at once (all with preempt, the idle ones with drain) the lender
        takes back at once."""
        now = count if mode == "preempt" else min(count, self.idle_left(borrower, lender, pool))
        named = self._given(borrower, lender, pool, count) if self.named else None
        self.ops[borrower]["reclaim"].append((lender, PoolShape(pool, gpu_type, gpus), count, mode, now)
                                             + ((named,) if self.named else ()))
        if now:
            self.take_back(lender, pool, now, borrower, gpus, named and named[:now])
        self.coming[lender] += (count - now) * gpus
        self.given[lender, borrower, pool] += count
        self.held[borrower] -= now * gpus

    def _given(self, borrower: str, lender: str, pool: int, count: int) -> tuple:
        """The lender's nodes the borrower gives back, as its reclaim chooses them: idle first, then
        by GPUs in use, borrowed last first, among those not given back at this epoch."""
        taken = self.given_nodes[borrower, lender, pool]
        rows = [row for row in self.reports[borrower]["held_nodes"]
                if row["lender"] == lender and row["pool"] == pool and row["node"] not in taken]
        chosen = tuple(row["node"] for row in sorted(rows, key=lambda row: (not row["idle"], row["used"]))[:count])
        taken.update(chosen)
        return chosen

    def reclaim(self, lender: str, short: int) -> None:
        """Reclaim `lender`'s lent nodes until `short` GPUs are covered (see the module docstring)."""
        report, mode = self.reports[lender], self.settings.of(lender).reclaim
        # (borrower, pool) -> the lent row, and the nodes the borrower holds open (by conservation,
        # which the reports passed: lent - closed), borrowers in layout order, then pools
        rows, open_nodes = {}, {}
        for row in sorted(report["lent"], key=lambda row: (self.rank[row["vc"]], row["pool"])):
            n = row["nodes"] - self.closed.get((lender, row["vc"], row["pool"]), 0)
            if n:
                rows[row["vc"], row["pool"]], open_nodes[row["vc"], row["pool"]] = row, n
        left = dict(open_nodes)  # nodes not reclaimed yet
        holding = defaultdict(int)  # borrower -> the lender's GPUs it still holds
        for (vc, _), row in rows.items():
            holding[vc] += open_nodes[vc, row["pool"]] * row["gpus_per_node"]
        useful = [key for key, row in rows.items() if _usable(report, row["gpu_type"])]
        while short > 0:
            useful = [key for key in useful if left[key]]
            if not useful:
                break  # nothing lent out that its pending jobs may use
            # the borrower holding most of the lender's GPUs, then the lender's first pool
            key = min(useful, key=lambda k: (-holding[k[0]], self.rank[k[0]], k[1]))
            gpus = rows[key]["gpus_per_node"]
            left[key] -= 1
            holding[key[0]] -= gpus
            short -= gpus
        for key, row in rows.items():
            if left[key] < open_nodes[key]:
                self.give_back(key[0], lender, key[1], row["gpu_type"], row["gpus_per_node"],
                               open_nodes[key] - left[key], mode)

    def lend(self, members: list[str], may_lend: set) -> None:
        """Max-min fair lending within one cohort (see the module docstring; `may_lend`: the VCs
        that may lend)."""
        reports, settings = self.reports, self.settings
        want = {vc: _shortfall(reports[vc]) - self.coming[vc] for vc in members if reports[vc]["pending_jobs"]}
        want = {vc: w for vc, w in want.items() if w > 0}
        supply = _Supply(reports, settings, [vc for vc in members if vc in may_lend], self.back)
        granted: dict = defaultdict(int)  # borrower -> GPUs lent to it at this epoch
        loans: dict = defaultdict(int)  # (lender, pool, borrower) -> nodes
        # the next node goes to the first borrower, by (GPUs held, layout order), that a node of the
        # supply can serve. One that none can serve is dropped for good: the supply only shrinks,
        # and what the borrower holds and was granted only grow.
        queue = [(self.held[vc], self.rank[vc], vc) for vc in want]
        heapq.heapify(queue)
        while queue:
            vc = heapq.heappop(queue)[2]
            item = self._node_for(vc, supply, granted[vc])
            if item is None:
                continue
            lender, pool, _ = item
            gpus = pool["gpus_per_node"]
            item[2] -= 1
            if lender in supply.lendable:
                supply.lendable[lender] -= gpus
            loans[lender, pool["pool"], vc] += 1
            self.held[vc] += gpus
            granted[vc] += gpus
            want[vc] -= gpus
            if want[vc] > 0:
                heapq.heappush(queue, (self.held[vc], self.rank[vc], vc))
        idle = {}  # named loans: (lender, pool) -> its idle nodes not lent yet, in index order
        for (lender, pool, vc), count in loans.items():
            row = reports[lender]["pools"][pool]
            named = ()
            if self.named:
                left = idle.setdefault((lender, pool), list(reports[lender]["idle_ids"][pool]))
                named = (tuple(reversed(left[-count:])),)
                del left[-count:]
            self.ops[lender]["lend"].append((pool, count, vc) + named)
            self.ops[vc]["borrow"].append((PoolShape(pool, row["gpu_type"], row["gpus_per_node"]), count, lender)
                                          + named)

    def _node_for(self, vc: str, supply: "_Supply", granted: int) -> list | None:
        """The first supply item with a node borrower `vc` may take (within the lender's lending
        limit and its own borrow limit, of a GPU type its pending jobs beyond the `granted` GPUs
        may use); None if there is none."""
        limit, report = self.settings.of(vc).borrow_limit, self.reports[vc]
        items, lendable = supply.items, supply.lendable
        i = supply.first_open()
        while i < len(items) or supply.more():
            item = items[i]
            i += 1
            lender, pool, left = item
            gpus = pool["gpus_per_node"]
            if not left or lendable.get(lender, gpus) < gpus:
                continue
            if limit is not None and self.held[vc] + gpus > limit:
                continue
            if _usable(report, pool["gpu_type"]) <= granted:
                continue
            return item
        return None


class _HeldGPUs(dict):
    """Borrower -> GPUs it holds on loan, read from its report when first asked for."""

    def __init__(self, reports: dict):
        super().__init__()
        self._reports = reports

    def __missing__(self, vc: str) -> int:
        value = self[vc] = self._reports[vc]["held_gpus"]
        return value


class _Supply:
    """A cohort's idle nodes, as [lender, its pool's report row, idle nodes left] items in lender
    (layout) then pool order: the lenders (`lenders`, VCs that may lend, in layout order) and their
    idle own nodes. `more()` adds the next lender's pools, and is called only when the items so far
    are used up, so the pools of lenders the epoch does not reach are never read. `lendable`:
    lender -> GPUs it may still lend under its lending limit (for the lenders reached)."""

    def __init__(self, reports: dict, settings: QuotaSettings, lenders: list[str], back: dict):
        self.items: list = []
        self.lendable: dict = {}
        self._reports, self._settings, self._back = reports, settings, back
        self._lenders = iter(lenders)
        self._used = 0  # items before this one are used up

    def first_open(self) -> int:
        """Index of the first item not used up yet (used-up items stay used up: later scans start
        after them)."""
        items = self.items
        while self._used < len(items) and not items[self._used][2]:
            self._used += 1
        return self._used

    def more(self) -> bool:
        """Add the next lender with idle nodes; False when none is left."""
        for vc in self._lenders:
            r = self._reports[vc]
            if not r["idle_own"]:
                continue
            idle = [[vc, p, p["idle"]] for p in r["pools"] if p["idle"]]
            if idle:
                limit = self._settings.of(vc).lending_limit
                if limit is not None:
                    self.lendable[vc] = limit - (r["lent_gpus"] - self._back[vc])
                self.items.extend(idle)
                return True
        return False
