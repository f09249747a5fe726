"""Priority classes: high-priority (HP) jobs evict spot jobs (docs/spot.md).

A trace's `priority_class` column makes each job HP or spot (the job input `spot`). Under an
event-driven policy that ranks the classes (`Policy.ranks_classes`: HP jobs first, each class in the
policy's own order), an HP job that cannot start may evict running spot jobs from one node so that it
fits there: `PolicyView.try_start` asks `Spot.evict_for`, which asks the run's victim chooser
(`VICTIMS`, `spot.victims`) which spot jobs to stop. A spot job is not evicted during the first
`guarantee` ticks of each run (from its latest start); an HP job that waits for a guarantee to end
gets a decision when it ends. Evicted jobs stop through the one path of stops (`_stop_for`, cause
EVICTION: with checkpoint-restart they keep their last checkpoint, else their work plus `overhead`
ticks) and go back to their policy (`on_evicted`) once the policy's decision is over, which then
decides again (`Spot.after_schedule`). Spot jobs never evict, and HP jobs larger than the VC's
largest node do not (GFS places HP jobs on one node). Under a spot quota (`quota`: the most GPUs the
VC's spot jobs may hold at once, as GFS's FIFO with spot jobs bounds them) a spot job that would take
the spot GPUs in use above it does not start (`over_quota`): it waits in its queue. A quota from a
forecast (raysim.run.spot_forecast) changes at given times; a rise wakes the policy when a spot job
waited for the quota, and a fall evicts nobody (as in GFS, the quota bounds only starts).

When an HP job evicts (`EVICT`, `spot.evict`): `blocked` (the default), only when the placer finds
it no GPUs; `always`, as GFS's simulator places every HP job (`fifo_spot.place_with_preemption`):
on the node the victim chooser picks among all the nodes it may use, counting free GPUs and those
of spot jobs that may be evicted alike, evicting whatever holds the GPUs it takes there, even where
another node had enough free GPUs (`Spot.place`; the `gfs` chooser only).

A victim chooser is a function (sim, job, GPUs it needs, what may be evicted, now) -> the jobs to
evict, or None when no node can be freed enough. What may be evicted is `Spot.evictable`'s map: per
node of an allowed GPU type that holds a spot job past its guarantee, its GPUs each with its holder
(-1 free, such a spot job, None: held by an HP job or a protected spot job, or for a GPU holding
shares of one GPU (`gpu_milli` < 1000) its `Shares`: the milli no eviction frees, and the shares of
spot jobs that may be evicted). An HP job asking a share fits a GPU with as many milli free; one
asking whole GPUs, GPUs with nothing on them. The spot quota counts a share as its fraction of a GPU.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from raysim.cluster.resources import MILLI
from raysim.registry import Registry
from raysim.sim.extensions import Extension
from raysim.sim.jobs import EVICTION
from raysim.sim.lifecycle import UP
from raysim.sim.vc import SHARED

NEVER = math.inf
#: When an HP job evicts: only when the placer finds it no GPUs, or on every placement (GFS's).
EVICT = ("blocked", "always")
#: Where an evicted spot job waits again: in its place (by submit time), or behind every job waiting
#: at its eviction, in the order jobs entered the queue (GFS's FIFO appends it to its spot queue).
REQUEUE = ("in_place", "back")
#: GFS's guarantee hour, in seconds: a spot job keeps one for each hour it runs uninterrupted.
HOUR_S = 3600


class Spot(Extension):
    """HP jobs evict spot jobs (see the module docs): `victims` names the chooser (VICTIMS),
    `guarantee`, `overhead` and the guarantee `hour` are in clock ticks; `quota` is the most GPUs
    the VC's spot jobs may hold at once (None: no bound; a share of a GPU counts its fraction), or its
    changes ((tick, GPUs), ...; the first at or before the first event)."""

    name = "spot"
    #: Switched on by the trace (its priority_class column), or checked where `spot.*` is set without
    #: it; neither is a setting to change, so a refusal names the setting it refuses (`names_refused`).
    settings = ("priority_class", "spot_without_classes")
    names_refused = True
    refuses = {
        "spot_without_classes": "the trace {trace} has no priority_class column: every job has one class, no job "
                                "is evicted (docs/spot.md)",
        "unranked": "the trace's priority_class column needs a policy that ranks the classes (high-priority jobs "
                    "first, evicting spot jobs): fifo, sjf, qssf, fifo_backfill, srtf or tiresias; Lucid (jobs "
                    "sharing GPUs, profiled outside their VCs), round-based, elastic and harvesting policies do not",
        "sim.compat=lucid": "priority classes (the trace's priority_class column) run under sim.compat=clean only",
        "resources": "the trace's jobs ask for CPU or memory: evicting spot jobs frees their GPUs only, not yet "
                     "their CPU and memory; drop its priority_class column or its cpu_milli and memory_mib columns",
        "quota=borrow": "priority classes (the trace's priority_class column) do not run with quota lending yet: "
                        "run them with quota=none or global",
        "requeue_back": "back re-enters an evicted job in the order jobs entered the queue (GFS's FIFO), which only "
                        "policy=fifo keeps: use in_place",
    }
    countdown = True  # (an evicted job keeps its work)

    def __init__(self, victims: str = "youngest", guarantee: int = 0, overhead: int = 0, hour: int = HOUR_S,
                 evict: str = "blocked", quota: int | tuple | None = None, requeue: str = "in_place"):
        self.victims, self.guarantee, self.overhead, self.hour = victims, int(guarantee), int(overhead), int(hour)
        #: whether an evicted job waits again behind every job waiting (REQUEUE; the policy reads it)
        self.back = requeue == "back"
        #: whether every HP job that fits on one node is placed through the eviction path (`place`)
        self.always = evict == "always"
        #: the quota's changes (tick, GPUs), the next to apply at `_step`; the ticks where it rises in `rises`
        self.steps = tuple(quota) if isinstance(quota, tuple) else ()
        self.rises = [t for (t, q), (_, before) in zip(self.steps[1:], self.steps) if q > before]
        self._step = 0
        self.quota = None if quota is None else self.steps[0][1] if self.steps else int(quota)
        self.held_back = False  # whether the quota held a spot job back during this decision
        self.spot_milli = 0  # GPUs the running spot jobs hold, in milli (bounded by `quota`)
        self.evicted: list[int] = []  # stopped during the policy's current decision, not yet requeued
        self.wake = NEVER  # the earliest end of a guarantee an HP job waits for
        #: node -> its running spot jobs (in start order), kept on every start and release: an HP job
        #: that cannot start looks at these only
        self.on_node: dict[int, dict[int, None]] = {}

    def attach(self, sim) -> None:
        sim.spot = self

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        """`evictions` per job, its guarantee hours kept (`hours_kept`: GFS's count, see `released`,
        and one for a spot job's completion; each eviction broke one) and, under checkpoint-restart,
        `lost_evictions` (the work they lost x GPUs)."""
        jobs = sim.jobs
        kept, spot, end = jobs.hours_kept, jobs.spot, jobs.end
        out = {"evictions": jobs.stop_counts(rows, EVICTION),
               "hours_kept": np.array([kept[j] + (spot[j] and end[j] >= 0) for j in rows], dtype=np.int64)}
        if sim.checkpoints:
            by = sim.jobs.lost_by
            out["lost_evictions"] = np.array([float((by[j] or {}).get(EVICTION, 0)) for j in rows], dtype=np.float64)
        return out

    def started(self, sim, j: int) -> None:
        """Job j has just been placed: a spot job joins the index of its nodes (`on_node`) and holds
        its GPUs of the quota."""
        if sim.jobs.spot[j]:
            self.spot_milli += _milli(sim.jobs, j)
            on_node = self.on_node
            for node, _ in sim.vc.placement[j]:
                held = on_node.get(node)
                if held is None:
                    held = on_node[node] = {}
                held[j] = None

    def released(self, sim, j: int, until: int) -> None:
        """Job j's run ended at `until` (completed, evicted or stopped otherwise), before it gives back
        its GPUs: a spot job leaves the index of its nodes and keeps one guarantee hour per full hour
        it ran (GFS counts one as each hour since the run's start ends, before its stop at the same
        second), and gives back its GPUs of the quota."""
        jobs = sim.jobs
        if jobs.spot[j]:
            self.spot_milli -= _milli(jobs, j)
            on_node = self.on_node
            for node, _ in sim.vc.placement[j]:
                held = on_node[node]
                del held[j]
                if not held:
                    del on_node[node]
            hours = (until - jobs.placed_at[j]) // self.hour
            if hours:
                jobs.keep_hours(j, hours)

    def renumber(self, new: list[int]) -> None:
        """The engine renumbered its jobs (`new[old]`: forgotten finished jobs dropped)."""
        self.on_node = {node: {new[k]: None for k in held} for node, held in self.on_node.items()}

    def over_quota(self, sim, j: int) -> bool:
        """Whether job j is a spot job that would take the spot GPUs in use above the quota (as it
        stands at `sim.now`; a share counts its fraction)."""
        if self.quota is None or not sim.jobs.spot[j]:
            return False
        over = self.spot_milli + _milli(sim.jobs, j) > self.quota_at(sim.now) * MILLI
        self.held_back |= bool(over)
        return over

    def quota_at(self, now: int) -> int | None:
        """The quota as it stands at `now` (GPUs; None: no bound), its changes up to `now` applied."""
        steps = self.steps
        while self._step < len(steps) and steps[self._step][0] <= now:
            self.quota = steps[self._step][1]
            self._step += 1
        return self.quota

    def evict_for(self, sim, j: int, now: int) -> bool:
        """HP job j cannot start: evict spot jobs so that it fits on one node; returns whether any was."""
        jobs, vc = sim.jobs, sim.vc
        g = jobs.gpu[j]
        if jobs.spot[j] or g > vc.max_node_gpus:
            return False
        evictable, protected = self.evictable(sim, j, now)
        victims = VICTIMS[self.victims](sim, j, g, evictable, now) if evictable else None
        if not victims:
            self.wake = min(self.wake, protected)
            return False
        for k in victims:
            sim._stop_for(k, now, EVICTION, self.overhead)
        self.evicted += victims
        return True

    def place(self, sim, j: int, now: int) -> bool | None:
        """Under `evict=always`, place HP job j as GFS does: on the node with the fewest GPUs not held
        by HP jobs or protected spot jobs that still has as many as j asks (the first in scan order on
        ties), on the first that many of them in GPU order, evicting every spot job on one of them
        (where GPUs may hold shares, GFS's rule GPU by GPU: `_place_shares`). Returns whether it started; None where this rule does not apply (a spot job, one larger than
        the VC's largest node, or `evict=blocked`): the placer decides."""
        jobs, vc = sim.jobs, sim.vc
        g = jobs.gpu[j]
        if not self.always or jobs.spot[j] or g > vc.max_node_gpus:
            return None
        if vc.res is not None:  # (GPUs may hold shares: GFS's rule GPU by GPU)
            return self._place_shares(sim, j, now)
        takeable, protected = self._takeable(sim, now)
        c = jobs.constraint[j]
        allowed = sim._allowed[c] if c >= 0 else None
        free, type_of, best, fewest = vc.free, vc.type_of, None, math.inf
        for node in vc.order:
            count = free[node] + takeable.get(node, 0)
            if g <= count < fewest and (allowed is None or type_of[node] in allowed):
                best, fewest = node, count
        if best is None:
            self.wake = min(self.wake, protected)
            return False
        victims, taken = [], 0
        for h in vc.owner[best]:
            if taken == g:
                break
            if h == -1 or jobs.spot[h] and jobs.placed_at[h] + self.guarantee <= now:
                taken += 1
                if h != -1 and h not in victims:
                    victims.append(h)
        for k in victims:
            sim._stop_for(k, now, EVICTION, self.overhead)
        self.evicted += victims
        sim.start_on(j, [(best, g)], now)
        return True

    def _place_shares(self, sim, j: int, now: int) -> bool:
        """`place` where GPUs may hold shares: GFS's choice (`gfs_choice`) over every node j may use,
        in scan order, with its GPUs' holders as `evictable` gives them; j starts on the GPUs chosen."""
        jobs, vc = sim.jobs, sim.vc
        free_to_take, protected = self._past_guarantee(sim, now)
        c = jobs.constraint[j]
        allowed = sim._allowed[c] if c >= 0 else None
        holders = {}
        for node in vc.order:
            if allowed is None or vc.type_of[node] in allowed:
                gpus = holders[node] = [h if h == -1 or h in free_to_take else None for h in vc.owner[node]]
                if SHARED in vc.owner[node]:
                    self._shares(sim, node, gpus, free_to_take)
        chosen = gfs_choice(holders, jobs.gpu[j], jobs.gpu_milli[j])
        if chosen is None:
            self.wake = min(self.wake, protected)
            return False
        node, ids, victims = chosen
        for k in victims:
            sim._stop_for(k, now, EVICTION, self.overhead)
        self.evicted += victims
        sim.start_on(j, [(node, len(ids), ids)], now)
        return True

    def _past_guarantee(self, sim, now: int) -> tuple[set, float]:
        """The running spot jobs past their guarantee at `now` (those that may be evicted), and the
        earliest end of a guarantee that protects one (NEVER: none)."""
        placed_at, guarantee, free_to_take, protected = sim.jobs.placed_at, self.guarantee, set(), NEVER
        for held in self.on_node.values():
            for k in held:
                until = placed_at[k] + guarantee
                if until > now:
                    protected = min(protected, until)
                else:
                    free_to_take.add(k)
        return free_to_take, protected

    def _takeable(self, sim, now: int) -> tuple[dict, float]:
        """(node -> GPUs its spot jobs past their guarantee hold there, over the nodes with such a
        job), and the earliest end of a guarantee that protects a running spot job (NEVER: none)."""
        placed_at, guarantee, placement = sim.jobs.placed_at, self.guarantee, sim.vc.placement
        takeable, protected = {}, NEVER
        for node, held in self.on_node.items():
            for k in held:
                until = placed_at[k] + guarantee
                if until > now:
                    protected = min(protected, until)
                else:
                    takeable[node] = takeable.get(node, 0) + sum(len(ids) for n, ids in placement[k] if n == node)
        return takeable, protected

    def evictable(self, sim, j: int, now: int) -> tuple[dict, float]:
        """(node -> its GPUs' holders for the choosers: -1 free, a spot job that may be evicted, None
        otherwise, or for a GPU holding shares its `Shares`; over the nodes of job j's allowed GPU
        types with a spot job that may be evicted),
        and the earliest end of a guarantee that protects a running spot job (NEVER: none)."""
        jobs, vc = sim.jobs, sim.vc
        state = vc.state
        free_to_take, protected = self._past_guarantee(sim, now)
        c = jobs.constraint[j]
        allowed = sim._allowed[c] if c >= 0 else None
        nodes = [node for node, held in self.on_node.items() if state[node] == UP and not free_to_take.isdisjoint(held)
                 and (allowed is None or vc.type_of[node] in allowed)]
        if vc.held or vc.borrowed or vc.host_order is not None:  # (nodes on loan come last; a host order has its own)
            chosen = set(nodes)
            nodes = [node for node in vc.order if node in chosen]
        else:  # (the scan order is the up nodes by index)
            nodes.sort()
        out = {node: [h if h == -1 or h in free_to_take else None for h in vc.owner[node]] for node in nodes}
        if vc.res is not None:  # (GPUs may hold shares)
            for node, gpus in out.items():
                if SHARED in vc.owner[node]:
                    self._shares(sim, node, gpus, free_to_take)
        return out, protected

    def _shares(self, sim, node: int, gpus: list, free_to_take: set) -> None:
        """Node `node`'s GPUs that hold shares (owner SHARED) get their `Shares` in `gpus`: the shares
        of the spot jobs in `free_to_take` there, in start order, and the milli held by the others."""
        jobs, vc = sim.jobs, sim.vc
        owner, left, spots = vc.owner[node], vc.res.gpu_left[node], {}
        for k in self.on_node.get(node, ()):  # (a node may hold HP jobs' shares only)
            if k in free_to_take and jobs.gpu_milli[k] < MILLI:
                spots.setdefault(vc.placement[k][0][1][0], []).append((k, jobs.gpu_milli[k]))
        for g, h in enumerate(owner):
            if h == SHARED:
                mine = spots.get(g, [])
                gpus[g] = Shares(MILLI - int(left[g]) - sum(m for _, m in mine), tuple(mine))

    def after_schedule(self, sim, now: int) -> None:
        """The policy's decision at `now` is over: the jobs evicted during it return to the policy
        (`on_evicted`), which decides again, until a decision evicts no one."""
        policy = sim.policy
        while self.evicted:
            evicted, self.evicted = self.evicted, []
            for k in evicted:
                policy.on_evicted(sim, k, now)
            policy.schedule(sim, now)

    def next_wake(self, now: int) -> float:
        """The earliest end of a guarantee an HP job waited for during this decision, or the next rise
        of the quota where it held a spot job back (both then forgotten)."""
        wake, self.wake = self.wake, NEVER
        if self.held_back:
            self.held_back = False
            i = bisect.bisect_right(self.rises, now)
            if i < len(self.rises):
                wake = min(wake, self.rises[i])
        return wake if wake > now else NEVER


class Shares(NamedTuple):
    """A GPU holding shares of jobs asking less than one GPU, as the victim choosers see it: `locked`,
    the milli held by jobs that may not be evicted (HP jobs, protected spot jobs), and `spots`, the
    shares of spot jobs that may be, (job, milli) in start order."""

    locked: int
    spots: tuple

    @property
    def free(self) -> int:
        """Milli free on the GPU now."""
        return MILLI - self.locked - sum(m for _, m in self.spots)


def _milli(jobs, j: int) -> int:
    """Job j's GPUs in milli (a share of one GPU: its milli)."""
    return jobs.gpu[j] * jobs.gpu_milli[j]


def _freeable(h) -> bool:
    """Whether a GPU may be freed whole: free, or held only by spot jobs that may be evicted."""
    return h is not None and not (isinstance(h, Shares) and h.locked)


def _holders(gpus: list) -> list[int]:
    """The distinct spot jobs among a node's GPU holders, in GPU order (a GPU's shares in start order)."""
    held = (k for h in gpus for k in ([k for k, _ in h.spots] if isinstance(h, Shares) else [h]))
    return list(dict.fromkeys(h for h in held if h is not None and h != -1))


def gfs(sim, j: int, g: int, evictable: dict, now: int) -> list[int] | None:
    """GFS's FIFO-with-spot choice: the node with the fewest GPUs not held by HP (or protected spot)
    jobs that still has as many as the HP job asks (the first in scan order), and there the first
    that many in GPU order, every spot job on one of them evicted; an HP share first takes, of the
    GPUs holding shares that may not be evicted, the one with the least room that would fit it,
    evicting its spot shares in start order (`gfs_choice`)."""
    chosen = gfs_choice(evictable, g, sim.jobs.gpu_milli[j])
    return None if chosen is None else chosen[2]


def gfs_choice(holders: dict, g: int, milli: int) -> tuple[int, tuple, list[int]] | None:
    """GFS's FIFO-with-spot choice for a job of `g` GPUs of `milli` each over `holders` (node -> its
    GPUs' holders, as `Spot.evictable` gives them): (node, the GPUs it takes, the spot jobs evicted),
    None where none fits. A share first takes the GPU with the least room among those that hold
    unevictable shares and would have more than `milli` free without their spot shares (the first
    in scan order), evicting its spot shares in start order until it fits (`fifo_spot.frag_preempt`);
    else (or whole GPUs) the node with the fewest GPUs not held by HP (or protected spot) jobs that
    still has `g` (one for a share; the first such node in scan order), and there the first `g` of
    them in GPU order: every spot job on one of them is evicted, a share as a whole GPU."""
    if milli < MILLI:
        chosen = _gfs_share(holders, milli)
        if chosen is not None:
            return chosen
    best, fewest = None, math.inf
    for node, gpus in holders.items():
        takeable = sum(1 for h in gpus if _freeable(h))
        if g <= takeable < fewest:
            best, fewest = node, takeable
    if best is None:
        return None
    ids = tuple(i for i, h in enumerate(holders[best]) if _freeable(h))[:g]
    return best, ids, _holders([holders[best][i] for i in ids])


def _gfs_share(holders: dict, milli: int) -> tuple[int, tuple, list[int]] | None:
    """GFS's choice for a share of `milli` on a GPU that holds unevictable shares (`gfs_choice`); None:
    no such GPU. As GFS's, the room left must be strictly above `milli`."""
    best, room = None, MILLI
    for node, gpus in holders.items():
        for i, h in enumerate(gpus):
            if isinstance(h, Shares) and 0 < h.locked < MILLI - milli and MILLI - h.locked < room:
                best, room = (node, i, h), MILLI - h.locked
    if best is None:
        return None
    node, i, shares = best
    free, victims = shares.free, []
    for k, m in shares.spots:
        if free >= milli:
            break
        victims.append(k)
        free += m
    return node, (i,), victims


def youngest(sim, j: int, g: int, evictable: dict, now: int) -> list[int] | None:
    """On each node, its spot jobs youngest first (latest start) until the HP job fits (a share: on
    one GPU with as many milli free; whole GPUs: that many GPUs with nothing on them); of those
    nodes, the one whose victims ran least since their starts (GPUs x seconds, a share its fraction of
    a GPU), then the one that evicts the fewest GPUs, then the first in scan order."""
    jobs = sim.jobs
    placed_at, run_order, milli = jobs.placed_at, jobs.run_order, jobs.gpu_milli[j]
    best, best_cost = None, None
    for node, gpus in evictable.items():
        left, held = [], {}  # (milli free per GPU; each evictable spot job's (GPU, milli) on the node)
        for i, h in enumerate(gpus):
            if isinstance(h, Shares):
                left.append(h.free)
                for k, m in h.spots:
                    held.setdefault(k, []).append((i, m))
            elif h == -1 or h is None:
                left.append(MILLI if h == -1 else 0)
            else:
                left.append(0)
                held.setdefault(h, []).append((i, MILLI))
        if not _fits(_freed(left, held.values()), g, milli):  # (evicting them all would not fit the HP job)
            continue
        victims = []
        for k in sorted(held, key=lambda k: (-placed_at[k], -run_order[k])):
            if _fits(left, g, milli):
                break
            victims.append(k)
            left = _freed(left, [held[k]])
        cost = (sum(_milli(jobs, k) * (now - placed_at[k]) for k in victims), sum(_milli(jobs, k) for k in victims))
        if best_cost is None or cost < best_cost:
            best, best_cost = victims, cost
    return best


def _freed(left: list[int], shares) -> list[int]:
    """Milli free per GPU once the (GPU, milli) of `shares` (lists of them) are freed."""
    left = list(left)
    for held in shares:
        for i, m in held:
            left[i] += m
    return left


def _fits(left: list[int], g: int, milli: int) -> bool:
    """Whether a job of `g` GPUs of `milli` each fits GPUs with `left` milli free."""
    if milli < MILLI:
        return any(x >= milli for x in left)
    return sum(1 for x in left if x == MILLI) >= g


#: Victim choosers (`spot.victims`): which running spot jobs an HP job that cannot start evicts.
VICTIMS = Registry({"youngest": youngest, "gfs": gfs}, what="spot victim chooser")


@dataclass(frozen=True)
class SpotRules:
    """A run's eviction rules (`spot.*`, raysim.run.spot), in seconds: the victim chooser (VICTIMS),
    the guaranteed start of each spot job's run, the work an evicted job redoes without
    checkpoint-restart, when an HP job evicts (EVICT), and the spot quota: (VC, the most GPUs its spot jobs may hold at once) for
    each VC it bounds, a number or, from a forecast, its changes ((time s, GPUs), ...); and where an
    evicted job waits again (REQUEUE)."""

    victims: str = "youngest"
    guarantee_s: int = 0
    overhead_s: int = 0
    evict: str = "blocked"
    quota: tuple[tuple[str, int | tuple], ...] = ()
    requeue: str = "in_place"

    def extension(self, ticks_per_s: int = 1, vc: str | None = None) -> Spot:
        """VC `vc`'s engine's extension of these rules, on a clock of `ticks_per_s` ticks per second."""
        quota = dict(self.quota).get(vc)
        if isinstance(quota, tuple):
            quota = tuple((t * ticks_per_s, q) for t, q in quota)
        return Spot(self.victims, self.guarantee_s * ticks_per_s, self.overhead_s * ticks_per_s, HOUR_S * ticks_per_s,
                    self.evict, quota, self.requeue)
