"""The Ray executor: one actor per VC group, plus one profiler actor when Lucid's profiling pool
runs (the pass-through stage of every other policy only routes jobs: the driver does it).

Jobs travel as Arrow tables by object reference: the profiler stage's per-group outputs are passed
to the VC actors as refs; the driver never fetches those of a profiler actor. Actors are kept in a
pool and reset between runs in the same driver, so a Hydra sweep pays for their start-up once.
On a cluster the VC group actors are spread over its nodes (Ray's SPREAD scheduling; on one node
they all run there), and the run records which node ran each group (`RayExecutor.placement`).
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
from pathlib import Path

import ray
from ray.exceptions import RayActorError

from raysim.errors import UserError
from raysim.profiler import make_profiler
from raysim.runtime.coordinator import GroupLost, StageLost
from raysim.runtime.spec import RunSpec
from raysim.runtime.timing import run_timed
from raysim.runtime.vcgroup import VCGroup

log = logging.getLogger("raysim")


def ensure_ray(address=None, num_cpus=None, namespace: str = "raysim") -> bool:
    """Start a local Ray instance, or connect to `address` ("auto" or host:port); never re-initialise.
    True when this call did it (then stopping or leaving Ray is the caller's to do), False when Ray
    was already initialised in this process."""
    if _STOPPING["thread"] is not None:  # a run's Ray still stopping: wait, then start afresh
        _STOPPING["thread"].join()
        _STOPPING["thread"] = None
    if ray.is_initialized():
        return False
    # RAY_AUTH_MODE=token clusters need RAY_AUTH_TOKEN (or its file) in this environment; say so clearly.
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token" and not (
            os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
        log.warning("RAY_AUTH_MODE=token but neither RAY_AUTH_TOKEN nor RAY_AUTH_TOKEN_PATH is set: "
                    "connecting will fail unless Ray finds the token in its default location")
    kwargs = {"namespace": namespace, "logging_level": logging.WARNING, "log_to_driver": True}
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, **kwargs)
    except Exception as exc:  # (Ray raises plain exceptions: a start-up timeout, a refused connection)
        if ray.is_initialized():
            ray.shutdown()
        raise RayStartError(address, exc) from exc
    return True


def stop_ray_in_background() -> threading.Thread:
    """Stop the Ray this process started (or leave the cluster it connected to) in a thread, and
    return the thread: a local Ray's processes take a second or two to go, which the run's writing
    of results overlaps (Python waits for the thread before it exits, and ensure_ray before it
    starts Ray again)."""
    thread = threading.Thread(target=ray.shutdown, name="raysim-ray-shutdown")
    thread.start()
    _STOPPING["thread"] = thread
    return thread


_STOPPING: dict = {"thread": None}  # the thread stopping Ray after a run, until ensure_ray waits for it


class RayStartError(UserError):
    """Ray could not start here, or not connect to the given address: one line saying what Ray
    said and that runtime=local gives the same results."""

    def __init__(self, address, cause: BaseException):
        self.address, self.cause_text = address, _first_line(cause)
        where = f"connect to the Ray cluster at {address}" if address else "start on this machine"
        super().__init__(f"Ray could not {where} ({self.cause_text}); runtime=local runs the same "
                         "simulation in one process and gives the same results")

    def __reduce__(self):
        return (_rebuilt, (self.address, self.cause_text))


def _rebuilt(address, text: str) -> "RayStartError":
    return RayStartError(address, RuntimeError(text))


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of what `exc` says (Ray's messages run to many lines), or its type."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


#: A slow window whose process used at least this share of one CPU since the last look is simulating.
BUSY_SHARE = 0.1


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process `pid` of this machine has used, from /proc; None where it
    cannot be read (another system, a process gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _GroupActor:
    """Actor body hosting a VCGroup."""

    def __init__(self):
        self.group = None

    def reset(self, spec: RunSpec, vcs: list[str]) -> bool:
        self.group = VCGroup(spec, vcs)
        return True

    def restore(self, state: bytes) -> bool:
        self.group = VCGroup.restore(state)
        return True

    def run_window(self, batch, t_end, snapshot: bool, orders=None):
        """(window output, its raysim.runtime.timing.GroupCost), and the group's state at the
        window's end when asked (its seconds in the cost's `state_s`)."""
        out, cost = run_timed(self.group, batch, t_end, orders)
        if snapshot:
            t = time.perf_counter()
            state = self.group.checkpoint()
            cost.state_s = time.perf_counter() - t
            return (out, cost), state
        return (out, cost), None

    def finish(self, end):
        return self.group.finish(end)

    def pid(self) -> tuple[int, str]:
        """(process id, Ray node id) of this actor."""
        return os.getpid(), ray.get_runtime_context().get_node_id()


class _ProfilerActor:
    """Actor body hosting the profiler stage."""

    def __init__(self):
        self.profiler = None

    def reset(self, settings, group_of_vc: dict, n_groups: int, t0: int) -> bool:
        self.profiler = make_profiler(settings, group_of_vc, n_groups, t0)
        return True

    def process(self, jobs, t_start, t_end):
        """One return value per VC group, then the stage's status and its state after the window."""
        outputs, status = self.profiler.process(jobs, t_start, t_end)
        return (*outputs, status, pickle.dumps(self.profiler, protocol=pickle.HIGHEST_PROTOCOL))

    def restore(self, state: bytes) -> bool:
        self.profiler = pickle.loads(state)  # noqa: S301 - produced by process() of this run
        return True


#: The longest single wait for an actor (32 years): Ray takes a wait's timeout in milliseconds as a
#: C long, which ray.slow_min_s, ray.lost_after_s or ray.slow_factor x a window's time may exceed.
LONGEST_WAIT_S = 1e9


def _ready(ref, timeout_s: float | None) -> bool:
    """Whether `ref` is ready within `timeout_s` seconds (None: however long it takes)."""
    ready, _ = ray.wait([ref], timeout=None if timeout_s is None else min(timeout_s, LONGEST_WAIT_S))
    return bool(ready)


_POOL: dict = {"session": None, "groups": [], "profiler": []}


def _pool() -> dict:
    """Actors kept for reuse, valid only within the Ray session (driver job) that created them."""
    ctx = ray.get_runtime_context()
    session = (ctx.get_job_id(), ctx.get_node_id())  # job ids restart in each new cluster
    if _POOL["session"] != session:
        _POOL.update(session=session, groups=[], profiler=[])
    return _POOL


class RayExecutor:
    """Runs the coordinator's calls on Ray actors (handles are ObjectRefs)."""

    #: actors can die: the coordinator takes snapshots of their states to rebuild them
    snapshots_groups = True

    def __init__(self, spec: RunSpec, groups: list[list[str]], *, actor_cpus: float = 0.1,
                 slow_factor: float = 10.0, slow_min_s: float = 60.0, lost_after_s: float | None = None):
        self.spec = spec
        self.groups = groups
        self.actor_cpus = actor_cpus
        #: a window slower than slow_factor x the slowest so far (and than slow_min_s) is warned
        #: about; one still running after lost_after_s (None: never) counts as a lost actor
        self.slow_factor, self.slow_min_s, self.lost_after_s = slow_factor, slow_min_s, lost_after_s
        self._slowest = 0.0  # the slowest window result any group has delivered
        # (SPREAD: actors of fractional CPUs would otherwise all fit on the driver's node)
        self.group_cls = ray.remote(num_cpus=actor_cpus, max_restarts=0, scheduling_strategy="SPREAD")(_GroupActor)
        self.prof_cls = ray.remote(num_cpus=actor_cpus, max_restarts=0)(_ProfilerActor)
        self.actors: list = []
        self.pids: list[int] = []
        self.local: list[bool] = []
        self.nodes: list[str] = []  # per group: the Ray node id of its actor
        self.profiler = None  # the profiler actor (Lucid's profiling pool)
        #: the pass-through stage, run in the driver: an actor of its own would only add a process
        #: to start and a round trip per window
        self.stage_here = None
        #: seconds this driver spent serialising batches into Ray's object store and fetching
        #: results from it (the coordinator reads it per window)
        self.transfer_s = 0.0

    def start(self, groups):
        pool = _pool()["groups"]
        while len(pool) < len(groups):
            pool.append(self.group_cls.remote())
        self.actors = pool[: len(groups)]
        resets = [a.reset.remote(self.spec, vcs) for a, vcs in zip(self.actors, groups)]
        if self.spec.profiler:
            profilers = _pool()["profiler"]
            if not profilers:
                profilers.append(self.prof_cls.remote())
            self.profiler = profilers[0]
            resets.append(self._reset_stage(self.profiler))
        else:
            self.stage_here = make_profiler(None, self._routing(), len(self.groups), self.spec.t0)
        ray.get(resets)
        self._find_processes()

    def _find_processes(self) -> None:
        """Each group's actor process, named when a window of it is slow (to inspect it), and
        whether it runs on this machine (where its CPU use tells a busy window from a hung one)."""
        here = ray.get_runtime_context().get_node_id()
        found = ray.get([a.pid.remote() for a in self.actors])
        self.pids = [pid for pid, _ in found]
        self.nodes = [node for _, node in found]
        self.local = [node == here for node in self.nodes]

    def placement(self) -> dict:
        """Where the run ran, for trace_report.json's `ray_nodes`: the driver's Ray node id, each
        group's (in group order, as its last actor ran it) and each such node's host name and address."""
        here = ray.get_runtime_context().get_node_id()
        hosts = {n["NodeID"]: {"host": n["NodeManagerHostname"], "address": n["NodeManagerAddress"]}
                 for n in ray.nodes() if n["NodeID"] in {here, *self.nodes}}
        return {"driver": here, "groups": list(self.nodes), "nodes": hosts}

    def _routing(self) -> dict[str, int]:
        """VC -> index of the group simulating it."""
        return {vc: g for g, vcs in enumerate(self.groups) for vc in vcs}

    def _reset_stage(self, actor):
        """Ref of `actor` starting the profiler stage afresh."""
        return actor.reset.remote(self.spec.profiler, self._routing(), len(self.groups), self.spec.t0)

    def profile(self, jobs, t_start, t_end):
        """(per-group output refs, handle of the stage's status and state). A profiler actor's
        outputs are never fetched by the driver, and its state only to write a checkpoint or
        rebuild a lost stage; the pass-through stage routes in the driver (status, no snapshot)."""
        if self.stage_here is not None:
            outputs, status = self.stage_here.process(jobs, t_start, t_end)
            t = time.perf_counter()
            refs = [ray.put(out) for out in outputs]
            self.transfer_s += time.perf_counter() - t
            return refs, (status, None)
        t = time.perf_counter()
        jobs_ref = ray.put(jobs)
        self.transfer_s += time.perf_counter() - t
        refs = self.profiler.process.options(num_returns=len(self.groups) + 2).remote(jobs_ref, t_start, t_end)
        return list(refs[:-2]), (refs[-2], refs[-1])

    def profile_status(self, handle):
        """(status, ref to the stage's state after the window); StageLost if the actor died. The
        state lives in the object store, owned by the driver, so it outlives the actor. The driver's
        pass-through stage: (status, None)."""
        if self.stage_here is not None:
            return handle
        status_ref, state_ref = handle
        if self._wait(status_ref, "the profiler stage") is None:
            ray.kill(self.profiler, no_restart=True)
            raise StageLost(TimeoutError(f"no result after {self.lost_after_s:g} s (ray.lost_after_s)"))
        try:
            return ray.get(status_ref), state_ref
        except RayActorError as exc:
            raise StageLost(exc) from exc

    def rebuild_stage(self, state):
        """A fresh profiler actor, from the stage's state after its last window (None: from scratch)."""
        actor = self.prof_cls.remote()
        ray.get(self._reset_stage(actor) if state is None else actor.restore.remote(state))
        self.profiler = actor
        _pool()["profiler"][0] = actor

    def stage_state(self, snapshot) -> bytes | None:
        """The profiler stage's state for a checkpoint: the one it returned with its last window
        (None: it has not run a window yet); the driver's pass-through stage as it is now."""
        if self.stage_here is not None:
            return pickle.dumps(self.stage_here, protocol=pickle.HIGHEST_PROTOCOL)
        return self.materialize(None, snapshot)

    def restore_stage(self, state: bytes) -> None:
        if self.stage_here is not None:
            self.stage_here = pickle.loads(state)  # noqa: S301 - written by stage_state() of this run
            return
        ray.get(self.profiler.restore.remote(state))

    def run_window(self, g, batch_ref, t_end, snapshot: bool = True, orders: dict | None = None):
        return self.actors[g].run_window.options(num_returns=2).remote(batch_ref, t_end, snapshot, orders)

    def get(self, g, handle):
        """(window output, its raysim.runtime.timing.GroupCost, ref to the group's state at the
        window's end or None); GroupLost if the actor died. The state lives in the object store,
        owned by the driver, so it outlives the actor."""
        out_ref, state_ref = handle
        waited = self._wait(out_ref, f"VC group {g} ({','.join(self.groups[g])}; process {self.pids[g]})",
                            self.pids[g] if self.local[g] else None)
        if waited is None:
            ray.kill(self.actors[g], no_restart=True)
            raise GroupLost(g, TimeoutError(f"no result after {self.lost_after_s:g} s (ray.lost_after_s)"))
        t = time.perf_counter()
        try:
            out, cost = ray.get(out_ref)
        except RayActorError as exc:
            raise GroupLost(g, exc) from exc
        self.transfer_s += time.perf_counter() - t
        self._slowest = max(self._slowest, waited)
        return out, cost, state_ref

    def _wait(self, ref, who: str, pid: int | None = None) -> float | None:
        """Seconds until `ref` is ready; None when it is still not ready after lost_after_s. A window
        far slower than the windows so far is looked at: while its actor's process (`pid`, on this
        machine) keeps using CPU it is simulating, said in a progress line each such interval;
        otherwise (idle, or a process elsewhere) it is warned of once as maybe hung."""
        start = time.perf_counter()
        warn_s = max(self.slow_min_s, self.slow_factor * self._slowest)
        if self.lost_after_s is not None:
            warn_s = min(warn_s, self.lost_after_s)
        cpu = cpu_seconds(pid) if pid is not None else None
        ready = _ready(ref, warn_s)
        while not ready:
            waited = time.perf_counter() - start
            rest = None if self.lost_after_s is None else max(0.0, self.lost_after_s - waited)
            used = cpu_seconds(pid) if cpu is not None else None
            if used is not None and used - cpu >= BUSY_SHARE * warn_s and rest != 0.0:
                log.info("%s: this window has run %.0f s (its windows so far took at most %.1f s) and is still "
                         "simulating: its process used %.0f s of CPU in the last %.0f s", who, waited, self._slowest,
                         used - cpu, warn_s)
                cpu = used
                ready = _ready(ref, warn_s if rest is None else min(warn_s, rest))
                continue
            log.warning("%s: this window has run %.0f s, its windows so far took at most %.1f s, and its process %s; "
                        "the actor may be hung (it counts as lost after ray.lost_after_s=%s)", who, waited,
                        self._slowest, "is idle" if used is not None else "cannot be looked at from here",
                        self.lost_after_s)
            ready = _ready(ref, rest)
            if not ready:
                return None
        return time.perf_counter() - start

    def materialize(self, g, state):
        return ray.get(state) if isinstance(state, ray.ObjectRef) else state

    def restore(self, g, state):
        ray.get(self.actors[g].restore.remote(state))

    def rebuild(self, g, state):
        """A fresh actor for group g, from its last state (or empty when it died in the first window)."""
        actor = self.group_cls.remote()
        if state is None:
            ray.get(actor.reset.remote(self.spec, self.groups[g]))
        else:
            ray.get(actor.restore.remote(state))
        self.actors[g] = actor
        _pool()["groups"][g] = actor
        self.pids[g], self.nodes[g] = ray.get(actor.pid.remote())
        self.local[g] = self.nodes[g] == ray.get_runtime_context().get_node_id()

    def finish(self, g, end):
        return ray.get(self.actors[g].finish.remote(end))

    def actor(self, g):
        """The actor running group g (tests use it to kill one)."""
        return self.actors[g]
