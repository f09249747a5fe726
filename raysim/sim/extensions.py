"""The engine's features as declared extensions: each says which settings switch it on, what it cannot
run with or without, what it adds to a VC's time series and job results and what its run needs, and
attaches itself to one VC simulator when it is built.

`VCSimulator(name, pools, policy, placer, params, extensions=[...])` takes one list of them instead
of a keyword per feature; the run's spec builds the list from its settings (raysim.runtime.spec).
An extension declares

- `settings`: the settings that switch it on (`key`: set to anything but its off value, e.g.
  `cluster.capacity`; `key=value`: set to that value); a refusal names the first of them the run sets;
- `refuses` and `requires`: what it cannot run with, and what it cannot run without -> the one-line
  reason. Each key is a setting (as in `settings`), a trait of the run's policy (`outside_vcs`: a
  stage that runs jobs outside their VCs; `unranked`: it does not rank priority classes) or of its
  trace (`priority_class`: the trace has that column; `spot_without_classes`: `spot.*` is set on a
  trace without it; `resources`: VCs count GPU shares, CPU and memory); a line may name the
  `{policy}`, and with `outside_vcs` its `{stage}` and the setting that turns it off, `{off}`, with
  the trace's traits the `{trace}`. A refusal names the first setting that switched the extension on;
  one switched on by its trace (`names_refused`) names the setting it refuses instead;
- `series_columns`: the time-series columns it adds (their values: `series_row(sim)`, sampled with
  the VC's own at every snapshot);
- `results(sim, rows)`: the result columns it adds per job of `rows` (its view of the job table and
  the stop ledger);
- `countdown`: whether jobs' remaining work must count down at a rate under it (stops that keep
  work, rates that change);
- `resources`: whether the VC must count CPU, memory and GPU shares per node (raysim.sim.vc.VCState.res);

and `attach(sim)` sets it up on the simulator (the attributes the engine's event loop reads, such as
`sim.network` or `sim.checkpoint`, stay None without it). The run checks its settings against these
declarations, and against what its policy declares it cannot run with (raysim.policy.base.Policy.
refuses), in one loop (raysim.run.config.refuse_together): one line per refusal, naming the setting.
Quota lending is the extension of raysim.quota.ledger (`QuotaLending`), the package above the engine; priority classes
(high-priority jobs evicting spot jobs) are raysim.sim.spot's `Spot`.

Results come out in the order of the list (jobs.parquet's column order): the spec lists them as
`ORDER` names them.
"""

from __future__ import annotations

import numpy as np

from raysim.sim.recorder import CAPACITY_COLUMNS, COUNT_COLUMNS, REPAIR_COLUMNS, RESOURCE_COLUMNS

#: The order of extensions in a spec's list (results and time-series columns come out in it).
ORDER = ("network", "quota", "shared_queue", "resources", "capacity", "checkpoints", "replays", "spot", "spares",
         "host_selection", "standbys")


class Extension:
    """A feature of the VC engine (see the module docstring); the default adds nothing."""

    name = ""
    settings: tuple = ()
    refuses: dict = {}
    requires: dict = {}
    names_refused = False
    series_columns: tuple = ()
    countdown = False
    resources = False

    def attach(self, sim) -> None:
        """Set the feature up on simulator `sim` (once, while it is built, before its first snapshot)."""

    def series_row(self, sim) -> tuple:
        """The values of `series_columns` now."""
        return ()

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        """Result columns per job of `rows` (job indices)."""
        return {}


class Network(Extension):
    """NIC contention (raysim.sim.network.NetworkModel): multi-node jobs slow down when their NICs are
    oversubscribed."""

    name = "network"
    settings = ("sim.network",)
    countdown = True

    def __init__(self, model):
        self.model = model

    def attach(self, sim) -> None:
        sim.network = self.model


class Resources(Extension):
    """GPU shares, CPU and memory per node (VCState.res); with `fragmentation`
    (raysim.placement.frag.FragTracker) FGD's fragment amount in the time series; with `layout` (a
    run with quota lending) where a held node's CPU and memory come from (its lender's pool)."""

    name = "resources"
    resources = True
    series_columns = RESOURCE_COLUMNS

    def __init__(self, fragmentation=None, layout: dict | None = None):
        self.fragmentation = fragmentation
        self.layout = layout

    def attach(self, sim) -> None:
        sim.fragmentation = self.fragmentation
        sim.layout = self.layout

    def series_row(self, sim) -> tuple:
        vc = sim.vc
        return vc.used_milli, self.fragmentation.amount(vc.res) if self.fragmentation is not None else 0


class SharedQueue(Extension):
    """One cluster-wide queue (quota=global): the layout is one merged VC whose pools came from the
    VCs `pool_homes` names; results say on which VC's nodes each job ran (and no reclaims)."""

    name = "shared_queue"

    def __init__(self, pool_homes: tuple):
        self.pool_homes = tuple(pool_homes)

    def attach(self, sim) -> None:
        #: per node, the VC whose pool it came from
        self.home = [home for home, nodes in zip(self.pool_homes, sim.own_pool_nodes()) for _ in nodes]

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        home, first = self.home, sim.jobs.first_node
        return {"ran_on_vc": np.array([None if first[j] < 0 else home[first[j]] for j in rows], dtype=object),
                "reclaims": np.zeros(len(rows), dtype=np.int64)}


class Capacity(Extension):
    """Nodes that go down, come back, join or leave (raysim.sim.capacity.CapacityPlan): each node
    follows its stream of events, jobs on a node going down stop for the event's cause. A plan whose
    repairs are counted (repair=pipeline) adds REPAIR_COLUMNS, and one that counts more (`counts`:
    undiagnosed failures, retired nodes) their COUNT_COLUMNS, summed over the VC's own nodes."""

    name = "capacity"
    settings = ("cluster.capacity", "failures")
    refuses = {"outside_vcs": "{stage} runs the start of jobs on a pool of its own, whose nodes no node log or "
                              "failure model describes: run policy={policy} with {off}"}
    series_columns = CAPACITY_COLUMNS

    def __init__(self, plan):
        self.plan = plan
        self.counted = (REPAIR_COLUMNS if plan.repairs else ()) + plan.counts
        self.series_columns = CAPACITY_COLUMNS + tuple(COUNT_COLUMNS.get(c, c) for c in self.counted)
        self.own = ()  # the streams the VC's own nodes follow (repairs counted)
        self.totals: list = []  # the counted counts summed over `own`, kept up as their streams move on
        self.last: list = []  # per own node, its counts as last summed

    def attach(self, sim) -> None:
        sim.capacity_plan = self.plan
        self.own = sim.follow_plan(self.plan)
        if self.counted:
            from raysim.sim.failures import repair_counts

            self.last = [repair_counts((stream,), self.counted) for stream in self.own]
            self.totals = [sum(column) for column in zip(*self.last)] or [0] * len(self.counted)
            sim.advanced = []

    def series_row(self, sim) -> tuple:
        """The VC's GPUs down, and its counts summed over its own nodes: only the nodes whose streams
        the engine advanced since the last row (`sim.advanced`: (node, stream)) change them."""
        if not self.counted:
            return (sim.vc.down_gpus,)
        if sim.advanced:
            from raysim.sim.failures import repair_counts

            own, totals = self.own, self.totals
            for node, stream in sim.advanced:
                if node < len(own) and own[node] is stream:
                    now = repair_counts((stream,), self.counted)
                    for i, (count, was) in enumerate(zip(now, self.last[node])):
                        totals[i] += count - was
                    self.last[node] = now
            sim.advanced.clear()
        return (sim.vc.down_gpus, *self.totals)

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        return sim.jobs.interruption_results(rows, len(self.plan.causes))


class Checkpoints(Extension):
    """Checkpoint-restart (raysim.sim.checkpoint.Checkpointing): every stop costs a job its work since
    its last checkpoint and a restore, and its runs include checkpoint writes; jobs whose
    `checkpoint_kind` names one of `kinds` (their application's settings; None: no checkpoints)
    follow that instead of `default`."""

    name = "checkpoints"
    settings = ("checkpoint.interval_s", "checkpoint.apps")
    refuses = {"outside_vcs": "{stage} runs jobs outside their VCs, where no checkpoint is modelled: run "
                              "policy={policy} with {off}",
               "spot.overhead_s": "with checkpoint-restart an evicted job pays checkpoint.restart_s and loses its "
                                  "work since its last checkpoint instead: leave spot.overhead_s at 0"}
    requires = {"sim.compat=clean": "checkpoints are modelled under sim.compat=clean only (Lucid's compatibility "
                                    "counts down a second late)"}
    countdown = True

    def __init__(self, default=None, kinds: tuple = ()):
        self.default = default
        self.kinds = tuple(kinds)

    def attach(self, sim) -> None:
        sim.checkpoint = self.default
        sim.checkpoint_kinds = self.kinds
        sim.checkpoints = True

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        causes = len(sim.capacity_plan.causes) if sim.capacity_plan is not None else 0
        return sim.jobs.checkpoint_results(rows, causes)


class Replays(Extension):
    """trace.failed=replay (raysim.sim.attempts.Attempts): jobs that ran several times in their trace
    fail after each run but the last and arrive again after the trace's gap."""

    name = "replays"
    settings = ("trace.failed",)
    refuses = {"outside_vcs": "{stage} runs jobs outside their VCs, where no failed run is replayed: run "
                              "policy={policy} with {off}",
               **dict.fromkeys(Checkpoints.settings, "a replayed run's length is the trace's, lost work included: "
                               "the checkpoint model (checkpoint.interval_s) does not apply to it")}
    requires = {"sim.compat=clean": "failed runs are replayed under sim.compat=clean only"}
    countdown = True

    def __init__(self, attempts):
        self.attempts = attempts

    def attach(self, sim) -> None:
        sim.attempts = self.attempts

    def results(self, sim, rows) -> dict[str, np.ndarray]:
        return sim.jobs.attempt_results(rows)
