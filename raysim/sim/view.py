"""What a policy sees of one VC and what it may do there: the view half of the VC simulator.

`PolicyView` is a mixin of raysim.sim.engine.VCSimulator: the read-only state a policy may use
(free and total GPUs, per type too, demands, remaining work, attained service) and the actions it
may take (start a job, on a given placement or on a GPU type, preempt, share, end a lease, finish,
drop, set a rate factor, borrow or lend a node), with the progress-rate arithmetic they need.
raysim.policy.base.VIEW lists everything a policy may read or call (a test enforces it). The
simulator's own loop, feeding and bookkeeping stay in raysim.sim.engine.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from raysim.cluster.resources import MILLI
from raysim.sim.checkpoint import charge, stopped
from raysim.sim.demand import Demand
from raysim.sim.jobs import DROPPED, PREEMPTION

NEVER = math.inf


class PolicyView:
    """The policy-facing half of VCSimulator (see the module docs); relies on the simulator's state
    (`jobs`, `vc`, `placer`, `policy`, `params`, `pending`, `running`, ...)."""

    # ------------------------------------------------------------------ what policies see
    # Policies receive this simulator as their view and act on it only through the actions below;
    # raysim.policy.base.VIEW lists everything a policy may read or call (a test enforces it).
    @property
    def free_gpus(self) -> int:
        """Idle GPUs of the VC, all types together."""
        return self.vc.free_gpus

    @property
    def total_gpus(self) -> int:
        """GPUs of the VC, all types together."""
        return self.vc.total_gpus

    @property
    def max_node_gpus(self) -> int:
        """GPUs of the VC's largest node."""
        return self.vc.max_node_gpus

    @property
    def num_nodes(self) -> int:
        """Nodes the VC has now (loans included)."""
        return self.vc.num_nodes

    @property
    def nodes_down(self) -> int:
        """Nodes of the VC out of service now or yet to join (raysim.sim.capacity), which may come back."""
        return len(self.vc.down) + self.joining

    def gpu_quota(self):
        """(per job, indexable by job index, the GPUs it occupies; the VC's GPUs) in one unit:
        GPUs (`jobs.gpu`, `total_gpus`), or, where GPU shares are counted, GPU milli (a share of a
        GPU is its milli, a CPU-only job none), so that sums are exact."""
        jobs = self.jobs
        if self.vc.res is None:
            return jobs.gpu, self.vc.total_gpus
        return [g * m for g, m in zip(jobs.gpu, jobs.gpu_milli)], self.vc.total_gpus * 1000

    def free_by_type(self) -> dict[str, int]:
        """Idle GPUs per GPU type."""
        return dict(zip(self.vc.types, self.vc.type_free))

    def gpus_by_type(self) -> dict[str, int]:
        """GPUs per GPU type (of the nodes the VC has now)."""
        return dict(zip(self.vc.types, self.vc.type_total))

    def quiet_until(self) -> float:
        """The tick before which nothing happens on this VC but what its policy does at its own
        wake-ups: the next arrival, completion, returning job, node loan or capacity event the VC
        knows of, and at most the end of the stretch being simulated (`run`'s `until`: later
        arrivals are not known yet). Now, while the VC owes or lends nodes (each event may move one)."""
        if self._node_debt or self.loans is not None:
            return self.now
        t, jobs = self._until, self.jobs
        for heap in (self._completions, self._returns, self._node_events, self._cap_heap):
            if heap and heap[0][0] < t:
                t = heap[0][0]  # (a stale entry makes it earlier, never later)
        if self._next_arrival < jobs.n and jobs.submit[self._next_arrival] < t:
            t = jobs.submit[self._next_arrival]
        return t

    def nodes_by_type(self) -> dict[str, list[tuple[int, int]]]:
        """(node, GPUs) of the VC's nodes now, per GPU type, in node order: for policies that
        place jobs on nodes themselves (elastic ones)."""
        vc, out = self.vc, {name: [] for name in self.vc.types}
        for node in sorted(vc.order):
            out[vc.types[vc.type_of[node]]].append((node, vc.size[node]))
        return out

    def demand(self, j: int) -> Demand:
        """What job j asks of the placer: its GPU count, allowed GPU types, speed per type and workers
        (and with CPU, memory and GPU shares counted, its GPU milli, CPU, memory and shape)."""
        jobs = self.jobs
        c, p = jobs.constraint[j], jobs.speed_profile[j]
        types, speed = self._allowed[c] if c >= 0 else None, self._speeds[p] if p >= 0 else None
        if self.vc.res is None:
            return Demand(jobs.gpu[j], types, speed, workers=jobs.workers[j])
        return Demand(jobs.gpu[j], types, speed, jobs.gpu_milli[j], jobs.cpu_milli[j], jobs.mem_mib[j], jobs.shape[j],
                      jobs.workers[j])

    # ------------------------------------------------------------------ actions for policies
    def try_start(self, j: int, now: int) -> bool:
        """Place job j now if the placer finds GPUs; returns whether it started. In a run with
        priority classes (raysim.sim.spot) a high-priority job that does not fit may evict spot jobs
        (under `spot.evict=always` every high-priority job is placed through the eviction path), and a
        spot job above the spot quota does not start."""
        if self.over_spot_quota(j):
            return False
        if self.spot is not None and self.spot.always:
            placed = self.spot.place(self, j, now)
            if placed is not None:
                return placed
        if self._place(j, now):
            return True
        if self.spot is None or not self.spot.evict_for(self, j, now):
            return False
        if not self._place(j, now):  # (else its victims would start there again, and be evicted again)
            raise AssertionError(f"{self.name}: the placer found no GPUs for job {j} on the node freed for it")
        return True

    def over_spot_quota(self, j: int) -> bool:
        """Whether job j is a spot job that would take its VC's spot GPUs in use above the spot quota
        (raysim.sim.spot; never without one)."""
        return self.spot is not None and self.spot.over_quota(self, j)

    def spot_quota(self) -> int | None:
        """The most GPU milli the VC's spot jobs may hold at once, as the quota stands now
        (raysim.sim.spot: a share counts its milli; None: no bound)."""
        quota = None if self.spot is None else self.spot.quota_at(self.now)
        return None if quota is None else quota * MILLI

    def evicted_wait_last(self) -> bool:
        """Whether an evicted spot job waits again behind every job waiting (spot.requeue=back)."""
        return self.spot is not None and self.spot.back

    def spot_held_back(self) -> None:
        """The policy passed a spot job over for the spot quota: a rise of the quota wakes it."""
        self.spot.held_back = True

    def _place(self, j: int, now: int) -> bool:
        """Place job j now if the placer finds GPUs; returns whether it started."""
        jobs, vc = self.jobs, self.vc
        g = jobs.gpu[j]
        if vc.res is None:
            if g > vc.free_gpus:
                return False
            if jobs.constraint[j] < 0 and jobs.speed_profile[j] < 0 and jobs.workers[j] == 1:  # one Demand per size
                demand = self._plain_demand.get(g) or self._plain_demand.setdefault(g, Demand(g))
            else:
                demand = self.demand(j)
        elif g > vc.free_gpus and jobs.gpu_milli[j] >= 1000:  # (a share may fit a GPU that is not free)
            return False
        else:
            demand = self.demand(j)
        alloc = self.placer.select(vc, demand)
        if alloc is None:
            return False
        self.start_on(j, alloc, now)
        return True

    def start_on(self, j: int, alloc: list[tuple], now: int) -> None:
        """Start pending job j on a placement: (node, GPU count) pairs, all of one allowed GPU type
        (with CPU, memory and GPU shares counted, an entry may name its GPUs: (node, count, GPU ids))."""
        jobs, vc = self.jobs, self.vc
        if not vc.single_type:
            t = vc.type_of[alloc[0][0]]
            c = jobs.constraint[j]
            if any(vc.type_of[e[0]] != t for e in alloc) or c >= 0 and t not in self._allowed[c]:
                raise AssertionError(f"{self.name}: placement {alloc} breaks job {j}'s GPU-type constraint")
        if vc.res is None:
            vc.allocate(j, alloc, jobs.util_milli[j], jobs.gmem[j])
        else:
            vc.allocate(j, alloc, jobs.util_milli[j], jobs.gmem[j], (jobs.gpu_milli[j], jobs.cpu_milli[j], jobs.mem_mib[j]))
        if self.loans is not None:
            jobs.ran_on[j] = self.loans.ran_on(alloc)
        self._dequeue(j)
        self.running[j] = None
        p = jobs.speed_profile[j]
        if p >= 0:
            jobs.type_speed[j] = self._speeds[p][vc.type_of[alloc[0][0]]]
            jobs.rate[j] = jobs.type_speed[j] * jobs.share_speed[j] * jobs.net_speed[j]
        self._started(j, now, alloc[0][0], len(alloc))
        if self.standbys is not None:  # (a job on several nodes takes its standbys)
            self.standbys.started(self, j)
        if self.network is not None:
            self._reprice(self.network.add(j, vc.placement[j]), now)

    def start_on_type(self, j: int, gpu_type: str, now: int) -> None:
        """Start pending job j on free GPUs of `gpu_type`, which the caller counted: the placer's
        choice among them, else (the placer finds no placement it likes, e.g. a consolidating one
        on fragmented nodes) free GPUs node by node in scan order. For policies that allocate GPUs
        by count per type (round-based ones, as Gavel's mechanism does)."""
        vc, g = self.vc, self.jobs.gpu[j]
        k = vc.types.index(gpu_type)
        demand = Demand(g, frozenset((k,))) if vc.res is None else self.demand(j)._replace(types=frozenset((k,)))
        alloc = self.placer.select(vc, demand) or self._free_of_type(k, g)
        if alloc is None:
            raise AssertionError(f"{self.name}: job {j} asks {g} {gpu_type} GPUs; fewer are free")
        self.start_on(j, alloc, now)

    def _free_of_type(self, k: int, g: int) -> list[tuple] | None:
        """`g` free GPUs of type index `k`, node by node in scan order (None: fewer are free)."""
        vc, alloc = self.vc, []
        draining = vc.draining
        for node in vc.order:
            if vc.type_of[node] != k or vc.free[node] <= 0 or node in draining:
                continue
            take = min(vc.free[node], g)
            alloc.append((node, take))
            g -= take
            if not g:
                return alloc
        return None

    def resize(self, j: int, gpus: int) -> None:
        """Waiting job j asks for `gpus` GPUs from now on: an elastic job between allocations."""
        jobs = self.jobs
        if j not in self.pending:
            raise AssertionError(f"{self.name}: job {j} is not waiting; only a waiting job changes size")
        old = jobs.gpu[j]
        self.pending_gpus += gpus - old
        self.pending_small += (gpus < self.small_below) - (old < self.small_below)
        jobs.gpu[j] = gpus

    def end_lease(self, j: int, now: int) -> None:
        """Running job j gives its GPUs back and waits again, at no cost and without counting a
        preemption: for policies that time jobs themselves (`Policy.times_jobs`), whose leases end
        by design (a round-based policy's round)."""
        jobs = self.jobs
        jobs.ckpt_time[j] = now
        jobs.version[j] += 1
        jobs.end_due[j] = -1
        self._release(j, now)
        del self.running[j]
        self._enqueue(j)
        self.progress_at = now  # (its policy keeps the work the lease did)
        if self.vc.draining:
            self.loans.return_drained(now)

    def finish(self, j: int, now: int, end: int | None = None) -> None:
        """Running job j completes at `now`, its end time recorded as `end` (default now; a policy
        that times jobs itself may say it finished earlier, e.g. mid-round). A job that waits again
        may complete too: its work was done before a node going down stopped it (a round-based
        job between its last step and its round's end)."""
        jobs = self.jobs
        if j in self.pending:
            self._dequeue(j)
            jobs.end[j] = now if end is None else end
            jobs.end_due[j] = -1
            jobs.remain[j] = 0
            self.finished += 1
            self.progress_at = now
            self.finished_log.append(j)
            self.policy.on_complete(self, j)
            return
        jobs.version[j] += 1
        self._complete(j, now, end)
        if end is not None:
            jobs.end[j] = end

    def drop(self, j: int, now: int) -> None:
        """Job j (pending or running) leaves unfinished: its record says it never ended (a
        round-based job whose micro-tasks kept failing, as Gavel drops it)."""
        jobs = self.jobs
        if j in self.running:
            jobs.version[j] += 1
            self._release(j, now)
            del self.running[j]
        else:
            self._dequeue(j)
        jobs.end_due[j] = -1
        jobs.end[j] = DROPPED
        self.finished += 1
        self.progress_at = now
        self.finished_log.append(j)
        self.policy.on_complete(self, j)

    def share(self, j: int, host: int, now: int, speed: float, host_speed: float,
              pair_util: float, pair_gmem: float) -> None:
        """Start pending job j on the GPUs of running job `host`; their sharing factors become
        `speed` and `host_speed` (their speeds as a pair, relative to running alone)."""
        jobs = self.jobs
        self.vc.share(j, host, jobs.util_milli[j], jobs.gmem[j], int(round(pair_util * 1000)), pair_gmem)
        self._dequeue(j)
        self.running[j] = None
        p = jobs.speed_profile[j]
        if p >= 0:
            jobs.type_speed[j] = self._speeds[p][self.vc.gpu_type_of(host)]
        jobs.share_speed[j] = speed
        jobs.rate[j] = jobs.type_speed[j] * speed * jobs.net_speed[j]
        jobs.shared[j] = jobs.shared[host] = True
        jobs.ran_on[j] = jobs.ran_on[host]
        self._started(j, now, jobs.first_node[host], jobs.num_nodes[host])
        self.set_rate_factor(host, "share", host_speed, now)

    def _dequeue(self, j: int) -> None:
        """Waiting job j leaves the queue (it starts, finishes or is dropped)."""
        g = self.jobs.gpu[j]
        del self.pending[j]
        self.pending_gpus -= g
        self.pending_small -= g < self.small_below

    def borrow_node(self, pool=None) -> bool:
        """Add a node on loan to this VC (shaped like `pool`; default its first pool). Returns
        whether a node was added (under reference naming a second temporary node is refused)."""
        return self.vc.add_node(self.params.reference_node_naming, pool)

    def lend_node(self) -> bool:
        """Give away an idle node (a borrowed one first); returns False when none is idle."""
        return self.vc.lend_node(self.params.reference_node_naming)

    def borrowed_idle(self) -> bool:
        """Whether a node this VC holds on loan is idle."""
        return self.vc.borrowed_idle()

    def joinable(self, host: int) -> bool:
        """Whether a job may join running job `host` on its GPUs (not while one of its nodes is
        being drained)."""
        draining = self.vc.draining
        return not draining or not any(node in draining for node, _ in self.vc.placement[host])

    def _started(self, j: int, now: int, first_node: int, num_nodes: int) -> None:
        jobs = self.jobs
        if jobs.start[j] < 0:
            jobs.start[j] = now
            jobs.queue[j] = now - jobs.submit[j]
        else:
            jobs.queue[j] += now - jobs.ckpt_time[j]
        jobs.first_node[j] = first_node
        jobs.num_nodes[j] = num_nodes
        jobs.placed_at[j] = now
        if self.type_time:
            jobs.gpu_type[j] = self._run_type[self.vc.type_of[first_node]]
        if self.vc.res is not None:  # (jobs.parquet names a job's first GPU only where GPUs are shared)
            ids = self.vc.placement[j][0][1]
            jobs.first_gpu[j] = ids[0] if ids else -1
        jobs.run_since[j] = now
        if self.spot is not None:
            self.spot.started(self, j)
        if self.busy_clock:
            self._busy_nodes(j, now, self._progress_from(j, now))
        jobs.run_order[j] = self._starts
        self._starts += 1
        if self.policy.times_jobs:  # the policy ends the job (finish / end_lease), no completion event
            jobs.end_due[j] = NEVER
            return
        if self.countdown:  # (the current run ends, or fails, where the remaining work drops to fail_at)
            due = self._due(jobs.remain[j] - jobs.fail_at[j], jobs.rate[j], now)
        else:
            due = now + jobs.duration[j]
        jobs.end_due[j] = due
        heapq.heappush(self._completions, (due, jobs.version[j], j))

    def set_rate_factor(self, j: int, factor: str, value: float, now: int) -> None:
        """Set one named factor of running job j's progress rate from the next second on:
        "type" (speed of its GPU type), "share" (slowdown from a GPU partner) or "network" (NIC
        contention). The rate is their product, so the mechanisms compose."""
        jobs = self.jobs
        col = {"type": jobs.type_speed, "share": jobs.share_speed, "network": jobs.net_speed}[factor]
        col[j] = value
        self._set_rate(j, jobs.type_speed[j] * jobs.share_speed[j] * jobs.net_speed[j], now)

    def _set_rate(self, j: int, rate: float, now: int) -> None:
        """Running job j progresses at `rate` from the next second on."""
        jobs = self.jobs
        if jobs.rate[j] == rate:
            return
        jobs.remain[j] = self._remain_at(j, now)
        jobs.run_since[j] = now
        jobs.rate[j] = rate
        jobs.version[j] += 1
        due = self._due(jobs.remain[j] - jobs.fail_at[j], rate, now)
        jobs.end_due[j] = due
        heapq.heappush(self._completions, (due, jobs.version[j], j))

    def _reprice(self, affected, now: int) -> None:
        """New progress rates for running jobs whose network contention changed."""
        for j in sorted(affected):
            if j in self.running:
                self.set_rate_factor(j, "network", self.network.rate(j), now)

    def _due(self, work, rate: float, since: int) -> int:
        """Completion time of `work` seconds of work done at `rate` from `since` on.

        With countdown_lag (Lucid) the reference subtracts the rate once per second starting the
        second after `since` and ends the job the second after the remainder drops to <= 0; its
        floating-point subtractions are replayed exactly (numpy's accumulate is sequential).
        """
        lag = self.params.countdown_lag
        if rate == 1.0:
            return since + math.ceil(work) + lag
        if lag:
            steps = np.subtract.accumulate(np.concatenate(([work], np.full(int(work / rate) + 3, rate))))
            return since + int(np.argmax(steps <= 0)) + lag
        return since + math.ceil(work / rate - 1e-9)

    def _remain_at(self, j: int, now: int):
        """Remaining work of running job j after the progress of second `now`."""
        jobs = self.jobs
        work, rate, elapsed = jobs.remain[j], jobs.rate[j], now - jobs.run_since[j]
        if rate == 1.0:
            return work - elapsed
        if self.params.countdown_lag:
            return float(np.subtract.accumulate(np.concatenate(([work], np.full(elapsed, rate))))[-1])
        return work - rate * elapsed

    def preempt(self, j: int, now: int) -> None:
        """Stop running job j: it checkpoints, frees its GPUs and waits again (pays the overhead; with
        checkpoint-restart on, its work since its last checkpoint and a restore instead)."""
        self._stop_for(j, now, PREEMPTION, self.policy.preempt_overhead(self.jobs.gpu[j]))

    def _stop_for(self, j: int, now: int, cause: int, overhead: int | None) -> None:
        """The one path of every stop: running job j stops at `now` for `cause` (raysim.sim.jobs), is
        counted in its stop ledger with the work the stop cost it, and waits again (`_stop`)."""
        jobs = self.jobs
        before = jobs.lost_gpu_s[j]
        self._stop(j, now, overhead)
        jobs.count_stop(j, cause, jobs.lost_gpu_s[j] - before)

    def _stop(self, j: int, now: int, overhead: int | None) -> None:
        """Running job j frees its GPUs and waits again: it will continue its remaining work plus
        `overhead` seconds, or, with None, restart from the beginning; with checkpoint-restart on
        (`checkpointing(j)`) it keeps its last completed checkpoint and restores from it, whatever the
        `overhead` (raysim.sim.checkpoint.stopped). In a run where some jobs checkpoint, the others'
        stops are counted too: the work a restart from the beginning loses, and the overhead redone."""
        jobs = self.jobs
        jobs.ckpt_time[j] = now
        jobs.attained[j] = self.attained(j, now)
        cp = self.checkpointing(j) if self.checkpoints else None
        if cp is not None and self.policy.times_jobs:  # (it keeps its jobs' runs: it prices the stop)
            charge(jobs, j, *self.policy.stop_cost(self, j, now, cp))
        elif cp is not None:
            stopped(cp, jobs, j, self._remain_at(j, now))
        elif overhead is None:  # from the beginning (of its current run, if its trace has several)
            left = self._remain_at(j, now) if self.checkpoints else 0
            jobs.remain[j] = jobs.duration[j] if jobs.retry[j] is None else jobs.retry[j][0]
            if self.checkpoints:
                jobs.lost_gpu_s[j] += (jobs.remain[j] - left) * jobs.gpu[j]
        else:
            jobs.remain[j] = self._remain_at(j, now) + overhead
            if self.checkpoints:
                jobs.overhead_gpu_s[j] += overhead * jobs.gpu[j]
        if jobs.remain[j] < jobs.least_remain[j]:  # it kept more work than ever before
            jobs.least_remain[j] = jobs.remain[j]
            self.progress_at = now
        self._leave(j, now)
        self._enqueue(j)

    def _leave(self, j: int, now: int) -> None:
        """Running job j, stopped at `now` before its end, frees its GPUs and is no longer running."""
        jobs = self.jobs
        jobs.version[j] += 1
        jobs.end_due[j] = -1
        jobs.rate[j] = jobs.type_speed[j] = jobs.share_speed[j] = jobs.net_speed[j] = 1.0
        self._release(j, now)
        del self.running[j]
        if self.network is not None:
            self._reprice(self.network.remove(j), now)
        if self.vc.draining:
            self.loans.return_drained(now)

    def remaining(self, j: int, now: int) -> int:
        """Seconds of work job j still has at time `now` (after that second's progress)."""
        jobs = self.jobs
        due = jobs.end_due[j]
        if due < 0:
            return jobs.remain[j]
        if jobs.rate[j] == 1.0 and type(jobs.remain[j]) is int:
            return due - now - self.params.countdown_lag + jobs.fail_at[j]  # whole seconds at full speed
        return self._remain_at(j, now)

    def attained(self, j: int, now: int) -> int:
        """GPU-seconds of service job j has received by time `now`."""
        jobs = self.jobs
        if jobs.end_due[j] < 0:
            return jobs.attained[j]
        return jobs.attained[j] + jobs.gpu[j] * (now - jobs.run_since[j])
