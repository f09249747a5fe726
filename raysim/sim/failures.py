"""Node failures as capacity producers (`failures=exponential | weibull | lognormal | llama3 | trace`,
docs/failures.md).

A failure model gives each node a stream of capacity events (raysim.sim.capacity's NodeStream): the
node lives for a time drawn from its time-to-failure distribution (exponential, Weibull or lognormal,
of mean `mtbf_s` for that node: a per-GPU rate scales with its GPUs, and a *bad* node, drawn with
probability `bad_fraction` from its own seed, fails `bad_multiplier` times as often), then fails for
a *category* drawn by the categories' shares. Of a bad node's failures, the share beyond a good
node's rate (1 - 1 / bad_multiplier, drawn from its own generator) is counted under the cause
BAD_NODE, the rest under their category (AIReSim's systematic and random failures); the category
still says what the failure does. A ``down`` category (faulty GPU, HBM, host, network)
takes the node out of service until it is repaired (`repair_s`, fixed or exponential; 0: back at
once); a ``restart`` category (software, NCCL timeout) only restarts the jobs on it, the node stays
up. A fresh lifetime starts when the node is up again (at once after a restart): nothing fails while
a node is down. Under `repair=pipeline` a ``down`` failure's repair is the pipeline's instead
(raysim.sim.repairs: automated, maybe manual, maybe a false success), drawn from the node's own
repair generator; a bad node that a repair truly fixes is good from then on. A ``down`` failure is
*diagnosed* (sends the node to repair) with probability `diagnosis`, drawn from the node's own
diagnosis generator (only below 1); an undiagnosed one restarts the node's jobs and leaves it up,
as it was. Under a retirement policy (raysim.sim.retirement) a node that the policy retires after a
repair never comes back: its stream ends with that repair's ``down`` (a node log's ``leave``), then
one ``restart`` at the repair's end, which stops no job (the node is down): it only keeps a run
whose other events are over going until the retirement, so that its time series samples it.

Streams are lazy (the next failure is drawn when the engine asks for it: cost grows with failures,
not with simulated time), deterministic and picklable, and seeded per node by (run seed, VC name,
node index; whether it is bad by the same and one word more), so a node's failures never depend on
actor packing, windows or runtime. Failure times are drawn in real seconds and applied at the whole
second they fall in.
"""

from __future__ import annotations

import bisect
import functools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from raysim.sim.busy import BusyFailures
from raysim.sim.capacity import BLAME, DOWN, RESTART, UP
from raysim.sim.repairs import REPAIR

#: What a failure category does to its node.
KINDS = ("down", "restart")
#: Time-to-failure distributions.
DISTRIBUTIONS = ("exponential", "weibull", "lognormal")
#: When a node's failure clock runs: while it is up, or only while work on it progresses.
CLOCKS = ("up", "busy")
#: Repair time distributions (`repair_s` is the mean of an exponential one).
REPAIRS = ("fixed", "exponential")
#: The last word of a node's health seed ([seed, VC, node, HEALTH]): whether it is bad is drawn apart
#: from its failure times, so a run without bad nodes draws exactly what it drew before they existed.
HEALTH = 1
#: The last word of a node's diagnosis seed ([seed, VC, node, DIAGNOSIS]; raysim.sim.repairs.REPAIR is 2).
DIAGNOSIS = 3
#: The last word of a bad node's cause seed ([seed, VC, node, SYSTEMATIC]): which of its failures are
#: counted under BAD_NODE.
SYSTEMATIC = 4
#: The last word of a node's regeneration seed ([seed, VC, node, REGENERATION]): when a good node turns bad.
REGENERATION = 6
#: The cause a bad node's failures beyond a good node's rate are counted under (with bad_fraction > 0).
BAD_NODE = "bad_node"


@dataclass(frozen=True)
class Category:
    """A failure category: its name (a cause counted per job), its share of failures, whether the node
    goes ``down`` until repaired or only its jobs ``restart``, and its own mean repair time (None:
    the model's)."""

    name: str
    share: float
    kind: str = "down"
    repair_s: float | None = None


@dataclass(frozen=True)
class FailureModel:
    """Per-node failures: time to failure (`distribution`, of mean `node_mtbf_s` per node, or
    `gpu_mtbf_s` per GPU: a node of g GPUs then fails g times as often; Weibull `shape`, lognormal
    `sigma`), bad nodes (each node is bad with probability `bad_fraction` and then fails
    `bad_multiplier` times as often), repairs (`repair_s`, `repair`: fixed or exponential; or the
    `pipeline`'s), `categories` and the `clock` of its lifetimes (up: a node ages while it is up;
    busy: only while work on it progresses, raysim.sim.busy)."""

    categories: tuple
    node_mtbf_s: float | None = None
    gpu_mtbf_s: float | None = None
    distribution: str = "exponential"
    shape: float = 1.0
    repair_s: float = 0.0
    repair: str = "fixed"
    sigma: float = 1.0
    bad_fraction: float = 0.0
    bad_multiplier: float = 1.0
    pipeline: object = None  # a raysim.sim.repairs.Pipeline (repair=pipeline), or None: repair_s
    clock: str = "up"
    diagnosis: float = 1.0  # the probability that a down failure sends its node to repair
    regen_s: float | None = None  # bad nodes regenerated every regen_s seconds (None: never)
    regen_share: float = 0.1  # ... each good node turning bad at each with probability bad_fraction x this
    wrong_node: float = 0.0  # the probability that a diagnosed failure blames another node of its jobs
    retire: object = None  # a raysim.sim.retirement policy (retire=threshold | scored), or None: never

    def mtbf_s(self, gpus: int) -> float:
        """Mean time to failure of a node of `gpus` GPUs."""
        return self.node_mtbf_s if self.node_mtbf_s is not None else self.gpu_mtbf_s / gpus

    def stream(self, seed: int, vc: str, node: int, gpus: int, *, causes: tuple, rank: int):
        """Node `node` (of `gpus` GPUs) of VC `vc`'s failures, its events naming causes by their index
        in `causes` and ordered among same-second events of other nodes by `rank`; a bad node's
        failures are split under BAD_NODE only where `causes` names it."""
        bad = self.is_bad(seed, vc, node)
        split = (bad or self.regen_s is not None) and BAD_NODE in causes
        failures = NodeFailures(self, (seed, stable_hash(vc), node),
                                self.mtbf_s(gpus) / (self.bad_multiplier if bad else 1.0),
                                tuple(causes.index(c.name) for c in self.categories), rank, bad,
                                good_mtbf_s=self.mtbf_s(gpus), bad_cause=causes.index(BAD_NODE) if split else None)
        return BusyFailures(failures) if self.clock == "busy" else failures

    def is_bad(self, seed: int, vc: str, node: int) -> bool:
        """Whether node `node` of VC `vc` is bad: drawn from its own health seed, never with
        `bad_fraction` 0."""
        return self.bad_fraction > 0 and bool(
            np.random.default_rng([seed, stable_hash(vc), node, HEALTH]).random() < self.bad_fraction)


@functools.lru_cache(maxsize=64)
def cumulative_shares(categories: tuple) -> tuple:
    """The categories' cumulative shares, normalised to end at 1 (bisected as numpy's searchsorted,
    side="right", but faster)."""
    return tuple((np.cumsum([c.share for c in categories]) / sum(c.share for c in categories)).tolist())


def stable_hash(text: str) -> int:
    """A hash of `text` that is the same in every process (Python's hash() is salted)."""
    return zlib.crc32(text.encode())


def scale(model: FailureModel, mtbf_s: float) -> float:
    """The scale of `model`'s distribution that gives lifetimes of mean `mtbf_s`: the mean itself
    (exponential), mtbf / gamma(1 + 1/k) (Weibull), the median exp(mu) = mtbf x exp(-sigma^2 / 2)
    (lognormal, whose mean is exp(mu + sigma^2 / 2))."""
    if model.distribution == "exponential":
        return mtbf_s
    if model.distribution == "weibull":
        return mtbf_s / math.gamma(1 + 1 / model.shape)
    return mtbf_s * math.exp(-model.sigma ** 2 / 2)


class NodeFailures:
    """One node's failure events (a NodeStream): `next()` gives (time s, rank, kind, cause index), one
    event at a time, drawing the next failure only when the last one has been handed out. `key`: the
    node's seed (run seed, VC hash, node index): its generators are seeded by it (`rng`: lifetimes,
    categories and fixed-model repairs; `repairs`, `diagnoses`, `systematic`: the key and one word
    more), each made when first drawn from. `bad`:
    whether the node is a bad one (its `mtbf_s` already divided by the model's multiplier). Under the
    model's `pipeline`, `repairs` draws its repairs (a bad node truly fixed then lives `good_mtbf_s`),
    counted in `auto_repairs`, `manual_repairs` and `false_successes` as each begins (its DOWN handed
    out, and the UP that ends it). Below a `diagnosis` of 1, `diagnoses` draws whether a down failure
    is diagnosed, those that are not counted in `undiagnosed`; a bad node's failures are split under
    `bad_cause` (None: not split) by `systematic`; under the model's retirement policy the node
    keeps its `record` there, and `retired` (0 or 1) counts its retirement as its last repair begins
    (the stream then ends with a restart at that repair's end)."""

    def __init__(self, model: FailureModel, key: tuple, mtbf_s: float, causes: tuple, rank: int,
                 bad: bool = False, *, good_mtbf_s: float | None = None, bad_cause: int | None = None):
        self.model, self.key, self.rank, self.causes, self.bad = model, key, rank, causes, bad
        self.bad_cause = bad_cause
        self.scale = scale(model, mtbf_s)
        self.good_mtbf_s = good_mtbf_s
        self._generators: dict = {}
        self.auto_repairs = self.manual_repairs = self.false_successes = 0
        self.undiagnosed = self.retired = self.wrong_node = self.turned_bad = 0
        #: under the model's regeneration, when this good node turns bad (inf: never; it stays bad until
        #: a repair truly fixes it); its lifetimes drawn from then on are a bad node's (`refresh`)
        self.bad_at = math.inf if bad or model.regen_s is None else self.next_bad_at(0.0)
        self.blame = None  # (category, cause) of the latest failure blamed on another node
        self.record = None if model.retire is None else model.retire.record()
        #: the categories' cumulative shares (a tuple: bisected as numpy's searchsorted, side="right", but faster)
        self.shares = cumulative_shares(model.categories)
        self.up_at = 0.0  # when the node's current lifetime began (real seconds)
        self.repair_due = None  # (time, cause, pipeline repair or None) of the UP that follows the
        # DOWN handed out last

    def next_bad_at(self, t: float) -> float:
        """When this good node next turns bad after `t`: the regeneration after `t` (every `regen_s`)
        at which its draw (a geometric count of them, drawn from its own regeneration generator, of
        probability bad_fraction x regen_share each) first says so."""
        model = self.model
        p = model.bad_fraction * model.regen_share
        if p <= 0:
            return math.inf
        first = math.floor(t / model.regen_s) + 1
        return (first + int(self.generator(REGENERATION).geometric(p)) - 1) * model.regen_s

    def refresh(self, t: float) -> None:
        """A lifetime begins at `t`: a good node whose regeneration fell at or before it is bad from
        this lifetime on (counted in `turned_bad`)."""
        if t >= self.bad_at:
            self.bad, self.bad_at = True, math.inf
            self.scale = scale(self.model, self.good_mtbf_s / self.model.bad_multiplier)
            self.turned_bad += 1

    def generator(self, word: int | None = None) -> np.random.Generator:
        """The node's generator of seed `key` (and `word`, when given), made when first asked for."""
        rng = self._generators.get(word)
        if rng is None:
            rng = self._generators[word] = np.random.default_rng(list(self.key) + ([] if word is None else [word]))
        return rng

    @property
    def rng(self) -> np.random.Generator:
        return self.generator()

    def next(self) -> tuple[int, int, int, int] | None:
        if self.retired:
            return None
        if self.repair_due is not None:
            t, cause, repair = self.repair_due
            self.repair_due = None
            if repair is not None:  # (counted as it begins: the engine asks for its end once it applies the DOWN)
                self.auto_repairs += 1
                self.manual_repairs += repair.manual
                self.false_successes += repair.false
            if self.record is not None and self.record.retires(t):
                self.retired = 1  # (the stream's last event: a restart at the repair's end, on a node down for good)
                return int(t), self.rank, RESTART, cause
            return int(t), self.rank, UP, cause
        self.refresh(self.up_at)
        life = self.life(self.rng)
        return self.fail(self.up_at + life, life=life)

    def outcome(self, k: int) -> int:
        """What a failure of category `k` does, its diagnosis drawn from the node's own diagnosis
        generator: RESTART (a ``restart`` category, or a ``down`` failure not diagnosed), DOWN (the
        node goes to repair) or BLAME (the diagnosis blames another node of its jobs, with
        probability `wrong_node`)."""
        model = self.model
        if model.categories[k].kind != "down":
            return RESTART
        if model.diagnosis < 1 and self.generator(DIAGNOSIS).random() >= model.diagnosis:
            return RESTART
        if model.wrong_node > 0 and self.generator(DIAGNOSIS).random() < model.wrong_node:
            return BLAME
        return DOWN

    def fail(self, t: float, k: int | None = None, *, life: float, cause: int | None = None,
             kind: int | None = None) -> tuple[int, int, int, int]:
        """The node fails at `t` (real seconds), `life` seconds into its lifetime (the retirement
        policy's record counts it), for its category `k`, under `cause` and with the `outcome`
        `kind` (None: drawn now, by share, by `cause_of` and by `outcome`): its RESTART, its BLAME
        (it stays up: `blame` keeps the category and cause for the node blamed in its place), or its
        DOWN with the repair that follows it drawn."""
        if k is None:
            k = self.category()
        if cause is None:
            cause = self.cause_of(k)
        if kind is None:
            kind = self.outcome(k)
        if self.record is not None:
            self.record.failed(t, life, kind == DOWN)
        if kind != DOWN:
            self.undiagnosed += kind == RESTART and self.model.categories[k].kind == "down"
            self.blame = (k, cause) if kind == BLAME else None
            self.up_at = t
            return int(t), self.rank, kind, cause
        return self.go_down(t, k, cause)

    def blamed(self, t: float, k: int, cause: int) -> tuple[int, int, int, int]:
        """A failure of another node (category `k`, `cause`) is blamed on this one at `t`: it goes to
        repair in its place (its DOWN, the repair that follows drawn; the retirement policy's record
        counts it as its own), counted in `wrong_node`."""
        self.wrong_node += 1
        if self.record is not None:
            self.record.failed(t, t - self.up_at, True)
        return self.go_down(t, k, cause)

    def pick(self, n: int) -> int:
        """Which of `n` other nodes a failure of this node is blamed on, drawn from its own diagnosis
        generator."""
        return int(self.generator(DIAGNOSIS).integers(n))

    def go_down(self, t: float, k: int, cause: int) -> tuple[int, int, int, int]:
        """The node goes to repair at `t` for a failure of category `k`: its DOWN, with the repair
        that follows drawn (the pipeline's, or the model's fixed or exponential time)."""
        model, rng = self.model, self.rng
        category = model.categories[k]
        drawn = None if model.pipeline is None else self.pipeline_repair(t)
        if drawn is not None:
            repair = drawn.time_s
        else:
            mean = model.repair_s if category.repair_s is None else category.repair_s
            repair = rng.exponential(mean) if model.repair == "exponential" and mean > 0 else mean
        self.up_at = t + repair
        self.repair_due = (self.up_at, cause, drawn)
        return int(t), self.rank, DOWN, cause

    def pipeline_repair(self, t: float):
        """A repair drawn from the model's pipeline (a raysim.sim.repairs.Repair) for a failure at `t`;
        a bad node truly fixed is good from its next lifetime on (and, under regeneration, may turn
        bad again at a regeneration after `t`)."""
        repair = self.model.pipeline.draw(self.generator(REPAIR))
        if self.bad and not repair.false:
            self.bad, self.scale = False, scale(self.model, self.good_mtbf_s)
            if self.model.regen_s is not None:
                self.bad_at = self.next_bad_at(t)
        return repair

    def cause_of(self, k: int) -> int:
        """The cause index a failure of category `k` is counted under: BAD_NODE's for the share of a
        bad node's failures beyond a good node's rate (drawn from its own generator), else the
        category's."""
        if self.bad and self.bad_cause is not None and \
                self.generator(SYSTEMATIC).random() >= 1 / self.model.bad_multiplier:
            return self.bad_cause
        return self.causes[k]

    def category(self) -> int:
        """The index of a failure's category, drawn by the categories' shares."""
        return min(bisect.bisect_right(self.shares, self.rng.random()), len(self.shares) - 1)

    def life(self, rng: np.random.Generator) -> float:
        """A lifetime drawn from the model's distribution (of mean the node's MTBF)."""
        model = self.model
        if model.distribution == "exponential":
            return rng.exponential(self.scale)
        if model.distribution == "weibull":
            return self.scale * rng.weibull(model.shape)
        return self.scale * rng.lognormal(0.0, model.sigma)


def repair_counts(streams, keys: tuple = ("auto_repairs", "manual_repairs", "false_successes")) -> tuple:
    """Automated repairs, manual repairs and false successes begun so far (or the counts `keys` name:
    `undiagnosed`, `retired`) on the nodes of `streams` (capacity streams: a node's failures, alone or
    merged with its node log; others count none)."""
    counted = [getattr(s, "failures", s) for s in streams]
    return tuple(sum(getattr(f, key, 0) for f in counted) for key in keys)


class Merged:
    """A node's failures (a NodeStream) merged with its node log's events (another, or None), in time
    order, the log's first among same-second events: the node is down while either says so. A
    failure that falls while the log has the node down (maintenance) does not happen, nor does the
    repair that would have followed it; the log's ``up`` brings the node back only once no failure
    repair is under way, and a failure's repair only once the log has it up. A node that a retirement
    policy retired (even after a failure that did not happen) goes down, if it is not, at the end of
    the repair it retired after, and stays down whatever the log says."""

    def __init__(self, failures, log, absent: bool):
        self.failures, self.log = failures, log
        self.heads = [log.next() if log is not None else None, failures.next()]
        self.down = [absent, False]  # per source (0: log, 1: failures): whether it has the node down

    def next(self) -> tuple[int, int, int, int] | None:
        while True:
            live = [i for i in (0, 1) if self.heads[i] is not None]
            if not live or self.down[0] and self.heads[0] is None:
                return None  # (the log has the node down for good: no failure can follow)
            i = min(live, key=lambda k: (self.heads[k][0], k))
            event = self.heads[i]
            self.heads[i] = (self.log if i == 0 else self.failures).next()
            kind, other = event[2], self.down[1 - i]
            if i == 1 and self.heads[1] is None and getattr(self.failures, "retired", 0):
                was_down = self.down[0] or self.down[1]  # (the failures' last event: the node is retired)
                self.down[1] = True
                return event if was_down else (event[0], event[1], DOWN, event[3])
            if i == 1 and self.down[0]:  # a failure while the log has the node down does not happen
                if kind == UP:
                    self.down[1] = False  # (its repair is over, unseen)
                continue
            if kind == RESTART:
                return event
            was_down = self.down[0] or self.down[1]
            self.down[i] = kind == DOWN
            if (kind == DOWN) != was_down and not (kind == UP and other):
                return event


class MergesLog:
    """A VC's capacity (`stream(node)`, `absent`, `jobs`) made of failures merged with its node log
    (`log`, a raysim.sim.capacity.VCCapacity, or None): the nodes absent at the start are the log's."""

    log: object

    @property
    def absent(self) -> tuple:
        return self.log.absent if self.log is not None else ()


@dataclass(frozen=True)
class FailingVC(MergesLog):
    """One VC's capacity under a failure model (the engine's per-VC capacity: `stream(node)`,
    `absent`, `jobs`): each node's failures, merged with the VC's node log (`log`, a
    raysim.sim.capacity.VCCapacity, or None). `homes`: per node, the (VC, node index) its failures are
    seeded by (its own VC's, where quota=global merged the VCs into one)."""

    model: FailureModel
    seed: int
    homes: tuple
    gpus: tuple
    causes: tuple
    log: object = None
    jobs: int = 0

    def stream(self, node: int):
        vc, own = self.homes[node]
        return with_log(self.model.stream(self.seed, vc, own, self.gpus[node], causes=self.causes, rank=node),
                        self.log, node)


def with_log(failures, log, node: int):
    """Node `node`'s stream: its `failures` (a stream or None) merged with its events in node log
    `log` (a raysim.sim.capacity.VCCapacity, or None)."""
    events = log.stream(node) if log is not None else None
    if events is None or failures is None:
        return failures if events is None else events
    return Merged(failures, events, node in log.absent)


def node_homes(vc: str, pools, homes: tuple) -> list[tuple[str, int]]:
    """Per node of VC `vc` (of `pools`), the (VC, node index) that names it in its own VC: itself, or
    where quota=global merged the VCs into one (`homes`: per pool, the VC it came from), its place
    among its own VC's nodes."""
    out, seen = [], {}
    for k, pool in enumerate(pools):
        home = homes[k] if homes else vc
        start = seen.get(home, 0)
        out += [(home, start + i) for i in range(pool.nodes)]
        seen[home] = start + pool.nodes
    return out


def failing_vcs(model: FailureModel, seed: int, layout: dict, homes: tuple, causes: tuple, logs: dict,
                jobs: dict) -> dict:
    """Per VC of `layout` (VC -> pools), its capacity under `model` with its node log (`logs`: VC ->
    VCCapacity) merged in; `jobs`: trace jobs per VC."""
    return {vc: FailingVC(model, seed, tuple(node_homes(vc, pools, homes)),
                          tuple(p.gpus_per_node for p in pools for _ in range(p.nodes)), causes, logs.get(vc),
                          int(jobs.get(vc, 0))) for vc, pools in layout.items()}
