"""Quotas between VCs, the VC side: reports, lending, borrowing, reclaiming and taking back nodes.

A VC that takes part in quota lending (`VCSimulator(..., extensions=[QuotaLending()])`, whose `loans` are a
QuotaLoans: its ledger and the operations below) holds two kinds of
nodes: its *own* nodes (its layout pools) and *held* nodes, on loan from another VC and tagged with
that lender and the lender's pool (`PoolShape`). The coordinator decides loans at epochs t between
windows: at an epoch every VC has processed every event before t and none at t. Each operation
below acts at t, before the events of second t (completions, arrivals, decisions), and makes t an
event of the VC, so its policy decides (and its time series is sampled) at t with the new nodes:

- `quota_report(t)`: what the lending policy decides from (a plain dict, one row per VC): per own
  pool its nodes and idle nodes; its nodes lent out per pool (with the pool's shape) and borrower;
  the held nodes per lender and pool (open to placement, idle among those, being drained); every
  loan it is part of, as its own books have it (`loans`, which the conservation check reads,
  raysim.quota.exchange); the pending jobs and GPUs, also per set of GPU types they may use;
  the free GPUs on nodes open to placement; nodes given back since the last report; the GPUs held
  on loan and lent out now, and of those being drained; the idle held nodes open to placement
  and the idle own nodes; a number that changes whenever its loans change; borrowed and lent
  GPU-seconds.
  `report_at(t)` is the same report with its costlier fields computed when first read.
- `apply_loan_operations(t, ops)`: the operations the lending policy decided for this VC, in order.
- `lend(t, pool, count, to_vc)`: the last `count` idle own nodes of `pool` in scan order leave;
  their slots stay, idle and out of the node order, until `take_back`.
- `borrow(t, shape, count, from_vc)`: `count` nodes shaped like the lender's pool join at the end of
  the node order; pending jobs may start on them at t.
- `reclaim(t, from_vc, shape, count, mode)` on the borrower: `count` nodes held from `from_vc`'s
  pool and not being drained go back: those with the fewest GPUs in use (idle ones first; ties: the
  node borrowed last). With mode "preempt", jobs on them that end at t finish (their work is
  done), the others are stopped (a multi-node job as a whole) and the nodes go back at once. With
  "drain", the idle ones go back at once, the others take no new job and each goes back when its
  last job ends (at t for a job ending at t). Returns the nodes given back at once (with "drain":
  as many as were idle, so a coordinator knows it from the report); drained ones are listed in
  the next report's `returned`.
- `take_back(t, pool, count, from_vc)` on the lender: `count` of its nodes of `pool` that `from_vc`
  gave back return idle to their original place in the node order (own nodes keep their index,
  so once all are back the lender's scan order is as before the loan).

A job stopped by a reclaim waits again (`Policy.on_requeue`); its `reclaims` counter grows, not
its `preemptions`. Under a policy that preempts (`Policy.preemptive`) it checkpoints, exactly as
when the policy preempts it: it later continues its remaining work plus the policy's
`preempt_overhead`. Under any other policy there is no checkpoint to resume from and it restarts
from the beginning. Every job record also says on which VC's nodes the job's latest run was
(`ran_on_vc`: the lender of the first held node of its placement, else its own VC).

Borrowed GPU-seconds count a held node from its borrow until it goes back; lent GPU-seconds count an
own node from its lend until its take-back (a drained node is thus counted as lent, not borrowed,
from its return until the next epoch's take-back). Between epochs, per lender, borrower and pool:
nodes lent = nodes held + nodes returned and not yet taken back (`check_conservation`).

With named loans (the run's nodes change: raysim.sim.capacity) the operations carry the lender's
nodes they move (raysim.quota.lending names them): a held node remembers which of its lender's
nodes it is (`QuotaLedger.origins`) and follows that node's capacity events while held (down, its
jobs are interrupted here and counted once; given back down, it returns down), and `take_back`
takes back the very nodes given back (drained ones are reported with their `origins`).

Quota lending and the Lucid profiler's node loans (`VCSimulator.add_node_events`) do not mix.

On a VC that counts CPU, memory and GPU shares (`VCState.res`), a node is idle when no job at all
holds it (`VCState.idle`: a CPU-only job holds none of its GPUs but keeps it busy), reclaims stop
every job on the node, and a held node brings the CPU and memory of its lender's pool (from the
run's layout, `VCSimulator.layout`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from raysim.sim.extensions import Extension
from raysim.sim.jobs import RECLAIM
from raysim.sim.lifecycle import DRAINING, UP

MODES = ("preempt", "drain")
#: The time-series columns of a VC with quota lending: GPUs it holds on loan from other VCs, and its
#: own GPUs lent out (from the lend until the lender takes them back).
LOAN_COLUMNS = ("borrowed_gpu_num", "lent_gpu_num")


class QuotaLending(Extension):
    """Quota lending as an extension of the VC engine (raysim.sim.extensions): the VC's `loans` (its
    ledger of own pools from the run's start, and the loan operations), the GPUs held on loan and
    lent out in its time series, and per job the VC whose nodes it ran on and its reclaims."""

    name = "quota"
    #: (any mode but none: quota=global's one cluster-wide queue, raysim.sim.extensions.SharedQueue, is
    #: refused the same)
    settings = ("quota",)
    refuses = {"outside_vcs": "{stage} takes a VC's idle nodes into its own pool at its own times, and quota lending "
                              "lends them to other VCs at its epochs: which claim on an idle node comes first is part "
                              "of neither model: run policy={policy} with {off}"}
    series_columns = LOAN_COLUMNS
    countdown = False

    def attach(self, sim) -> None:
        sim.loans = QuotaLoans(sim, QuotaLedger(sim.own_pool_nodes(), since=sim.t0))

    def series_row(self, sim) -> tuple[int, int]:
        return sim.loans.ledger.held_gpus, sim.loans.ledger.lent_gpus

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        return sim.loans.results(rows)


class PoolShape(NamedTuple):
    """A lender's pool as its borrowers see it: its index in the lender's layout and its node shape."""

    pool: int
    gpu_type: str
    gpus_per_node: int


class QuotaReport(dict):
    """A VC's quota report at an epoch (QuotaLoans.report_at): a dict whose costlier fields, `LAZY`,
    are computed when first read. The lending policy reads most of them only for the few VCs a loan
    concerns; `complete()` fills them all in."""

    LAZY = ("pools", "lent", "held", "loans", "pending_by_types", "held_idle", "idle_own", "idle_ids", "held_nodes")
    __slots__ = ("_loans",)

    def __init__(self, loans, fields: dict):
        super().__init__(fields)
        self._loans = loans

    def __missing__(self, key):
        if key not in self.LAZY:
            raise KeyError(key)
        value = self[key] = getattr(self._loans, f"_report_{key}")()
        return value

    def complete(self) -> dict:
        """Every field, as a plain dict (no reference to the VC)."""
        for key in self.LAZY:
            self[key]  # noqa: B018 - computes it
        return dict(self)


@dataclass
class QuotaLedger:
    """A VC's loan bookkeeping besides the nodes themselves (which raysim.sim.vc.VCState keeps)."""

    #: per own pool, its nodes' indices (own nodes are created first, pool by pool)
    pool_nodes: list[range]
    #: time up to which the GPU-second counters are integrated
    since: int
    #: names of the VCs this one lent to or borrowed from; nodes are tagged with their index
    partners: list[str] = field(default_factory=list)
    #: (lender index, shape) -> drained nodes that went back since the last report
    returned: dict = field(default_factory=dict)
    #: (lender, borrower, pool) -> nodes on this VC's books: minus those it lent out, plus those it
    #: holds (open to placement or being drained); VCs by name, the lender's pool by index
    loans: dict = field(default_factory=dict)
    #: (lender index, shape) -> nodes held on loan (open to placement or being drained)
    held_nodes: dict = field(default_factory=dict)
    held_gpus: int = 0
    lent_gpus: int = 0
    #: changes whenever the nodes lent, held, being drained or returned change (reports carry it)
    loan_state: int = 0
    borrowed_gpu_s: int = 0
    lent_gpu_s: int = 0
    #: with named loans: held node -> the lender's own node it is
    origins: dict = field(default_factory=dict)
    #: with named loans: (lender index, shape) -> the lender's nodes among `returned`, in return order
    returned_origins: dict = field(default_factory=dict)

    @property
    def pool_starts(self) -> list[int]:
        """The first node of each own pool (for bisection)."""
        return [nodes.start for nodes in self.pool_nodes]

    def code(self, vc: str) -> int:
        """The tag of partner VC `vc` (registered on first use)."""
        if vc not in self.partners:
            self.partners.append(vc)
        return self.partners.index(vc)

    def account(self, t: int) -> None:
        """Integrate the borrowed and lent GPU-seconds up to time t."""
        self.borrowed_gpu_s += self.held_gpus * (t - self.since)
        self.lent_gpu_s += self.lent_gpus * (t - self.since)
        self.since = t


class QuotaLoans:
    """One VC's side of quota lending (see the module docstring): its ledger and the operations the
    coordinator's epochs carry out on its simulator's nodes (`sim`, raysim.sim.engine.VCSimulator,
    whose `loans` this is)."""

    def __init__(self, sim, ledger: QuotaLedger):
        self.sim = sim
        self.ledger = ledger

    @property
    def named(self) -> bool:
        """Loans name their nodes (the run's nodes change: a node on loan follows its own events)."""
        return self.sim.capacity_plan is not None

    # ------------------------------------------------------------------ the coordinator's calls
    def quota_report(self, t: int) -> dict:
        """The VC at epoch t, every field filled in (what crosses to another process): own pools,
        held nodes, pending demand, nodes returned since the last report (which this report
        empties), and the borrowed and lent GPU-seconds up to t."""
        return self.report_at(t).complete()

    def report_at(self, t: int) -> "QuotaReport":
        """The VC's report at epoch t with only its cheap fields computed; the others
        (`QuotaReport.LAZY`) are computed when first read, from the state as it is then: read them
        before the VC changes (the lending policy does, at the epoch)."""
        ledger, vc = self.ledger, self.sim.vc
        if t <= self.sim.now:  # (cheaper than _epoch's check: reports are many, operations few)
            raise ValueError(f"{self.sim.name}: a report at t={t} after the simulation reached {self.sim.now}")
        ledger.account(t)
        returned = []
        if ledger.returned:
            origins = ledger.returned_origins
            returned = [{**self._loan_key(key), "nodes": k, "origins": origins[key] if self.named else None}
                        for key, k in self._by_lender(ledger.returned)]
            ledger.returned, ledger.returned_origins = {}, {}
            ledger.loan_state += 1
        draining = sum(vc.size[n] for n in vc.draining) if vc.draining else 0
        return QuotaReport(self, {
            "vc": self.sim.name, "time": t, "returned": returned,
            "pending_jobs": len(self.sim.pending), "pending_gpus": self.sim.pending_gpus,
            "free_gpus": vc.free_gpus - (sum(vc.free[n] for n in vc.draining) if vc.draining else 0),
            "held_gpus": ledger.held_gpus, "lent_gpus": ledger.lent_gpus, "draining_gpus": draining,
            "loan_state": ledger.loan_state,
            "borrowed_gpu_s": ledger.borrowed_gpu_s, "lent_gpu_s": ledger.lent_gpu_s,
        })

    def _report_pools(self) -> list[dict]:
        """Per own pool: its shape, nodes and idle nodes (present and idle)."""
        vc = self.sim.vc
        # one pool holds all the VC's idle own nodes, which its counts give without a scan
        idle = [self._report_idle_own()] if len(vc.pools) == 1 else self._idle_by_scan()
        return [{"pool": p, "gpu_type": pool.gpu_type, "gpus_per_node": pool.gpus_per_node, "nodes": pool.nodes,
                 "idle": idle[p]} for p, pool in enumerate(vc.pools)]

    def _idle_by_scan(self) -> list[int]:
        """Per own pool, its idle nodes up (not lent out, down or yet to join), counted node by node."""
        ledger, vc = self.ledger, self.sim.vc
        state = vc.state  # per pool, nodes not up (idle in their slots)
        away = [len(nodes) - state[nodes.start:nodes.stop].count(UP) for nodes in ledger.pool_nodes]
        if vc.res is not None:  # (a node running CPU-only jobs has all its GPUs free but is not idle)
            return [sum(map(vc.idle, nodes)) - away[p] for p, nodes in enumerate(ledger.pool_nodes)]
        free, size = vc.free, vc.size
        return [sum(map(operator.eq, free[nodes.start:nodes.stop], size[nodes.start:nodes.stop])) - away[p]
                for p, nodes in enumerate(ledger.pool_nodes)]

    def _report_held_idle(self) -> int:
        """Idle held nodes open to placement."""
        vc = self.sim.vc
        draining = vc.draining
        return sum(1 for n in vc.held if vc.idle(n) and n not in draining) if vc.held else 0

    def _report_idle_own(self) -> int:
        """Idle own nodes (present: not lent out); from the VC's count of nodes without a job."""
        vc = self.sim.vc
        idle_held = sum(1 for n in vc.held if vc.idle(n) and n not in vc.down) if vc.held else 0
        return vc.num_nodes - vc.nodes_one_job - vc.nodes_multi_job - idle_held

    def _report_idle_ids(self) -> list[list[int]] | None:
        """With named loans: per own pool, its idle nodes present (not lent out, not down), in index
        order (the lending policy names the nodes it lends from these); else None."""
        if not self.named:
            return None
        vc = self.sim.vc
        state = vc.state
        return [[n for n in nodes if state[n] == UP and vc.idle(n)] for nodes in self.ledger.pool_nodes]

    def _report_held_nodes(self) -> list[dict] | None:
        """With named loans: the held nodes not being drained, borrowed last first: lender, pool, the
        lender's node it is, idle or not, and GPUs in use (the lending policy names the nodes a
        reclaim gives back from these, as `reclaim` would choose them); else None."""
        if not self.named:
            return None
        vc, ledger = self.sim.vc, self.ledger
        partners = ledger.partners
        return [{"lender": partners[vc.held[n][0]], "pool": vc.held[n][1].pool, "node": ledger.origins[n],
                 "idle": vc.idle(n), "used": vc.size[n] - vc.free[n]}
                for n in reversed(vc.held) if n not in vc.draining]

    def _report_lent(self) -> list[dict]:
        """Own nodes out on loan per pool (with its shape) and borrower (pools in order, then
        borrowers by name)."""
        name, pools = self.sim.name, self.sim.vc.pools
        return sorted(({"pool": p, "gpu_type": pools[p].gpu_type, "gpus_per_node": pools[p].gpus_per_node,
                        "vc": borrower, "nodes": -k}
                       for (lender, borrower, p), k in self.ledger.loans.items() if lender == name),
                      key=lambda row: (row["pool"], row["vc"]))

    def _report_loans(self) -> dict:
        """Every loan the VC is part of, as its books have it (QuotaLedger.loans)."""
        return dict(self.ledger.loans)

    def _report_held(self) -> list[dict]:
        """The held nodes per lender and pool: open to placement, idle among those, being drained."""
        vc = self.sim.vc
        held = {key: {"nodes": k, "idle": 0, "draining": 0} for key, k in self.ledger.held_nodes.items()}
        draining = vc.draining
        for node in draining:
            row = held[vc.held[node]]
            row["nodes"] -= 1
            row["draining"] += 1
        for node, key in vc.held.items():  # (few: held nodes only)
            if vc.idle(node) and node not in draining:
                held[key]["idle"] += 1
        partners = self.ledger.partners
        return [{"lender": partners[code], "pool": shape.pool, "gpu_type": shape.gpu_type,
                 "gpus_per_node": shape.gpus_per_node, **row} for (code, shape), row in self._by_lender(held)]

    def lend(self, t: int, pool: int, count: int, to_vc: str, nodes: tuple | None = None) -> None:
        """Lend `count` idle own nodes of pool `pool` to `to_vc`: the last ones in scan order, or with
        named loans the ones the lending policy names (`nodes`)."""
        ledger, vc = self._epoch(t), self.sim.vc
        state = vc.state
        candidates = reversed(ledger.pool_nodes[pool]) if nodes is None else nodes
        idle = list(itertools.islice((n for n in candidates if state[n] == UP and vc.idle(n)
                                      and n in ledger.pool_nodes[pool]), count))
        if count > len(idle):
            raise ValueError(f"{self.sim.name}: cannot lend {count} nodes of pool {pool} at t={t}: "
                             f"{len(idle)} are idle")
        ledger.account(t)
        ledger.loan_state += 1
        borrower = ledger.code(to_vc)
        for node in idle:
            vc.change(node, "lend", "quota", tag=borrower)
            ledger.lent_gpus += vc.size[node]
        _count(ledger.loans, (self.sim.name, to_vc, pool), -count)
        self._decide_at(t)

    def borrow(self, t: int, shape: PoolShape, count: int, from_vc: str, nodes: tuple | None = None) -> None:
        """Take `count` nodes of `from_vc`'s pool `shape` on loan; they join at the end of the node
        order. With named loans they are `from_vc`'s nodes `nodes`, and follow its capacity events."""
        ledger, vc = self._epoch(t), self.sim.vc
        ledger.account(t)
        ledger.loan_state += 1
        key = (ledger.code(from_vc), PoolShape(*shape))
        types = len(vc.types)
        cpu = mem = None
        if vc.res is not None:  # the node brings its CPU and memory (the lender's pool's)
            pool = self.sim.layout[from_vc][key[1].pool]
            cpu, mem = pool.cpu_milli, pool.memory_mib
        streams = self.sim.capacity_plan.of(from_vc) if self.named else None
        for i in range(count):
            node = vc.add_held(key[1].gpu_type, key[1].gpus_per_node, key, cpu, mem)
            ledger.held_gpus += vc.size[node]
            if self.named:
                ledger.origins[node] = nodes[i]
                self.sim.follow(node, streams.stream(nodes[i]) if streams is not None else None, t)
        _count(ledger.held_nodes, key, count)
        _count(ledger.loans, (from_vc, self.sim.name, key[1].pool), count)
        if len(vc.types) != types:
            self.sim.reindex_types()
        self.sim.policy.on_capacity(self.sim, t)
        self._decide_at(t)

    def reclaim(self, t: int, from_vc: str, shape: PoolShape, count: int, mode: str, nodes: tuple | None = None,
                at_once: int = 0) -> int:
        """Give back `count` nodes held from `from_vc`'s pool `shape` (see the module docstring for
        which ones and what happens to their jobs). With named loans they are `from_vc`'s nodes
        `nodes`, of which the first `at_once` were idle at the epoch and go back at once, and the
        others (with mode "drain") are drained. Returns the number given back at once."""
        ledger, vc = self._epoch(t), self.sim.vc
        if mode not in MODES:
            raise ValueError(f"reclaim mode must be one of {', '.join(MODES)}, not {mode!r}")
        key = (ledger.code(from_vc), PoolShape(*shape))
        # borrowed last first (held nodes join the node order's end in the order `held` lists them)
        held, draining = vc.held, vc.draining
        open_nodes = [n for n in reversed(held) if held[n] == key and n not in draining]
        if count > len(open_nodes):
            raise ValueError(f"{self.sim.name}: cannot reclaim {count} nodes of {from_vc}'s pool {key[1].pool} "
                             f"at t={t}: {len(open_nodes)} are held and not being drained")
        if nodes is None:
            chosen = sorted(open_nodes, key=lambda n: (not vc.idle(n), vc.size[n] - vc.free[n]))[:count]
        else:
            which = {ledger.origins[n]: n for n in open_nodes}
            chosen = [which[origin] for origin in nodes]
            busy = set(chosen[at_once:])
        ledger.account(t)
        ledger.loan_state += 1
        on = self.sim.jobs_on(chosen)
        if mode == "preempt":
            for j in on:
                if self.sim.jobs.end_due[j] == t:  # its work is done: it finishes, it is not stopped
                    self.sim.finish_due(j, t)
            self.sim.stop_jobs([j for j in on if j in self.sim.running], t, RECLAIM)
        back = 0
        for node in chosen:
            if node not in vc.held:
                continue  # (a drained node that went back as its jobs stopped: the next report lists it)
            if vc.idle(node) and (nodes is None or mode == "preempt" or node not in busy):
                self._give_back(node)
                back += 1
            else:
                vc.change(node, "drain", "quota")
        if nodes is not None and vc.draining:
            self.return_drained(t)  # (a named node idle by now, whose return the policy expects later)
        self._decide_at(t)
        return back

    def take_back(self, t: int, pool: int, count: int, from_vc: str, nodes: tuple | None = None) -> None:
        """`count` own nodes of pool `pool` that `from_vc` gave back (the lowest-indexed of those lent
        to it; with named loans, `nodes`) return, idle, to their place in the scan order (a node that
        is down, once it comes up)."""
        ledger, vc = self._epoch(t), self.sim.vc
        borrower = ledger.code(from_vc)
        mine = ledger.pool_nodes[pool]
        away = sorted(n for n, to in vc.lent.items() if to == borrower and n in mine)
        if nodes is not None:
            if not set(nodes) <= set(away):
                raise ValueError(f"{self.sim.name}: cannot take back nodes {sorted(set(nodes) - set(away))} of pool "
                                 f"{pool} from {from_vc} at t={t}: they are not lent to it")
            away = list(nodes)
        if count > len(away):
            raise ValueError(f"{self.sim.name}: cannot take back {count} nodes of pool {pool} from {from_vc} "
                             f"at t={t}: {len(away)} are lent to it")
        ledger.account(t)
        ledger.loan_state += 1
        for node in away[:count]:
            vc.change(node, "return", "quota")
            ledger.lent_gpus -= vc.size[node]
        _count(ledger.loans, (self.sim.name, from_vc, pool), count)
        self.sim.policy.on_capacity(self.sim, t)
        self._decide_at(t)

    def check_loans(self) -> None:
        """Assert the node state's invariants (VCState.check) and that the ledger agrees with it:
        no own node is held or drains, and the held and lent GPU counts are right."""
        vc, ledger = self.sim.vc, self.ledger
        vc.check()
        for p, nodes in enumerate(ledger.pool_nodes):
            assert all(n not in vc.held and vc.state[n] != DRAINING for n in nodes), f"an own node of pool {p} is lost"
        assert ledger.held_gpus == sum(vc.size[n] for n in vc.held), "held GPU count is off"
        assert ledger.lent_gpus == sum(vc.size[n] for n in vc.lent), "lent GPU count is off"
        loans, held = {}, {}
        starts, partners = ledger.pool_starts, ledger.partners
        for node, code in vc.lent.items():
            _count(loans, (self.sim.name, partners[code], bisect.bisect_right(starts, node) - 1), -1)
        for code, shape in vc.held.values():
            _count(held, (code, shape), 1)
            _count(loans, (partners[code], self.sim.name, shape.pool), 1)
        assert ledger.loans == loans, "loan counts are off"
        assert self._report_idle_own() == sum(self._idle_by_scan()), "idle own nodes are off"
        assert ledger.held_nodes == held, "held node counts are off"

    def apply_loan_operations(self, t: int, ops: list[tuple]) -> None:
        """Carry out this VC's operations of epoch t, in order (raysim.quota.lending.decide says
        what they are); a reclaim must give back at once what the lending policy expects."""
        for kind, *args in ops:
            if kind == "reclaim":
                lender, shape, count, mode, expected, *nodes = args
                back = self.reclaim(t, lender, shape, count, mode, *nodes, at_once=expected)
                if back != expected:
                    raise AssertionError(f"{self.sim.name}: reclaim of {count} node(s) of {lender}'s pool {shape.pool} "
                                         f"at t={t} gave back {back} at once, the lending policy expected {expected}")
            elif kind == "take_back":
                self.take_back(t, *args)
            elif kind == "lend":
                self.lend(t, *args)
            elif kind == "borrow":
                self.borrow(t, *args)
            else:
                raise ValueError(f"unknown quota operation {kind!r}")

    # ------------------------------------------------------------------ engine hooks
    def ran_on(self, alloc) -> int:
        """Tag of the VC whose nodes a placement uses: the first held node's lender, or -1 (own)."""
        held = self.sim.vc.held
        for entry in alloc:
            if entry[0] in held:
                return held[entry[0]][0]
        return -1

    def return_drained(self, t: int) -> None:
        """Drained nodes that became idle go back at t (the next report lists them)."""
        vc, ledger = self.sim.vc, self.ledger
        for node in [n for n in vc.draining if vc.idle(n)]:
            key = vc.held[node]
            ledger.account(t)
            ledger.loan_state += 1
            if self.named:
                ledger.returned_origins.setdefault(key, []).append(ledger.origins[node])
            self._give_back(node)
            ledger.returned[key] = ledger.returned.get(key, 0) + 1

    def results(self, rows) -> dict[str, np.ndarray]:
        """`ran_on_vc` (None before a job's first start) and `reclaims` of the jobs `rows`."""
        jobs, partners = self.sim.jobs, self.ledger.partners
        ran = [None if jobs.start[j] < 0 else self.sim.name if jobs.ran_on[j] < 0 else partners[jobs.ran_on[j]]
               for j in rows]
        return {"ran_on_vc": np.array(ran, dtype=object),
                "reclaims": jobs.stop_counts(rows, RECLAIM)}

    # ------------------------------------------------------------------ internals
    def _epoch(self, t: int) -> QuotaLedger:
        """The ledger, after checking that t is an epoch for this VC (events before t done, none at t)."""
        if t <= self.sim.now or self.sim.next_event_time() < t:
            raise ValueError(f"{self.sim.name}: a loan operation at t={t} needs every event before t "
                             f"processed and none at t (processed up to {self.sim.now})")
        return self.ledger

    def _decide_at(self, t: int) -> None:
        """Make t an event: the policy decides, and the state is sampled, after this operation."""
        self.sim.wake_at(t)

    def _give_back(self, node: int) -> None:
        """Idle held node `node` leaves the VC."""
        ledger = self.ledger
        ledger.held_gpus -= self.sim.vc.size[node]
        code, shape = key = self.sim.vc.held[node]
        _count(ledger.held_nodes, key, -1)
        _count(ledger.loans, (ledger.partners[code], self.sim.name, shape.pool), -1)
        if self.named:
            del ledger.origins[node]
            self.sim.unfollow(node)
        self.sim.vc.change(node, "leave", "quota")

    def _loan_key(self, key) -> dict:
        code, shape = key
        return {"lender": self.ledger.partners[code], "pool": shape.pool, "gpu_type": shape.gpu_type,
                "gpus_per_node": shape.gpus_per_node}

    def _by_lender(self, per_key: dict) -> list:
        """Items of a dict keyed by (lender tag, shape), by lender name, then pool."""
        partners = self.ledger.partners
        return sorted(per_key.items(), key=lambda kv: (partners[kv[0][0]], kv[0][1]))

    def _report_pending_by_types(self) -> list[dict]:
        """Pending jobs and GPUs per set of GPU types they may use (None: any type)."""
        sim = self.sim
        jobs, constraints = sim.jobs, sim._catalog.constraints
        if not constraints:  # no job of the run is constrained
            return [{"gpu_types": None, "jobs": len(sim.pending), "gpus": sim.pending_gpus}] if sim.pending else []
        groups: dict = {}
        for j in sim.pending:
            c = jobs.constraint[j]
            row = groups.setdefault(c, [0, 0])
            row[0] += 1
            row[1] += jobs.gpu[j]
        return [{"gpu_types": None if c < 0 else sorted(constraints[c]), "jobs": k, "gpus": g}
                for c, (k, g) in sorted(groups.items())]


def _count(counts: dict, key, delta: int) -> None:
    """Add delta to counts[key], dropping the key at zero."""
    n = counts.get(key, 0) + delta
    if n:
        counts[key] = n
    else:
        del counts[key]


def check_conservation(sims: dict, in_transit: dict | None = None) -> None:
    """Assert, between epochs, that every node a VC lent is held by its borrower, or was given back
    and is not yet taken back: reported (`in_transit`: (lender, borrower, pool) -> nodes, the
    coordinator's) or not yet reported (the borrower's `returned`). `sims`: VC name -> simulator."""
    lent: dict = {}
    for name, sim in sims.items():
        vc, ledger = sim.vc, sim.loans.ledger
        sim.loans.check_loans()
        for p, nodes in enumerate(ledger.pool_nodes):
            for node in nodes:
                if node in vc.lent:
                    key = (name, ledger.partners[vc.lent[node]], p)
                    lent[key] = lent.get(key, 0) - 1
    for name, sim in sims.items():
        vc, ledger = sim.vc, sim.loans.ledger
        owed = [(key, 1) for key in vc.held.values()] + list(ledger.returned.items())
        for (code, shape), n in owed:
            key = (ledger.partners[code], name, shape.pool)
            lent[key] = lent.get(key, 0) + n
    for key, n in (in_transit or {}).items():
        lent[key] = lent.get(key, 0) + n
    wrong = {key: n for key, n in lent.items() if n}
    assert not wrong, f"loans not conserved ((lender, borrower, pool): held + returned - lent): {wrong}"
