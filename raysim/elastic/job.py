"""One elastic job's training state and how it advances, as Sia's simulator (SOSP'23) defines it.

A job trains towards a number of epochs of its application (``AppProfile.completion_epoch``). Its
true progress rate comes from the measured profiles: the step time of its placement and atomic
batch size on its GPU kind, times Pollux's statistical efficiency (the gradient noise scale of the
validated batch sizes at its epoch), divided by the application's calibration slowdown. Each change
of allocation costs the application's checkpoint-restore time, during which the job holds its GPUs
and makes no progress.

What the scheduler believes is separate: each run of the job adds the configurations it ran to the
job's own profile per GPU kind, and Pollux's performance model is refitted to them
(:func:`raysim.elastic.goodput.fit_perf_params`). The scheduler sees only these fitted models, and a
GPU kind the job has not run on is unknown to it until then. For a heterogeneity-unaware scheduler
(Pollux) the job keeps one profile for every kind (``pooled``), as Sia's simulator does for it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from raysim.elastic.goodput import GoodputModel, GradParams, PerfParams, fit_perf_params
from raysim.errors import UserError

#: the one profile slot of a job whose scheduler does not tell GPU kinds apart
POOLED = "*"


class ElasticJob:
    """State of one elastic job (times in seconds)."""

    __slots__ = ("seq", "name", "app", "apps", "submit", "target_replicas", "target_batch", "tune_bsz",
                 "calibration", "kind", "placement", "atomic_bsz", "accum_steps", "grad", "profiles", "perf",
                 "progress", "epoch", "rescale_left", "restarts", "completion", "attained", "gpu_s", "_batch_for",
                 "pooled", "rigid", "max_replicas", "run")

    def __init__(self, seq: int, name: str, apps: dict, submit: float, *, target_replicas: int,
                 target_batch: int, calibration: float, tune_bsz: bool, pooled: bool = False,
                 rigid: bool = False, max_replicas: int | None = None):
        self.seq, self.name, self.apps, self.submit = seq, name, apps, submit
        self.app = next(iter(apps.values())).app
        self.target_replicas, self.target_batch, self.tune_bsz = target_replicas, target_batch, tune_bsz
        self.rigid = rigid                    # runs on exactly target_replicas GPUs, at its own batch size
        self.max_replicas = max_replicas      # the most GPUs it may get (None: what the policy allows)
        self.calibration = calibration        # 1 / the application's slowdown (Sia's calibration)
        self.kind: str | None = None          # GPU kind it runs on (None: no allocation)
        self.placement: tuple[int, ...] = ()  # GPUs per node it spans
        self.atomic_bsz = 0
        self.accum_steps = 0
        self.grad: GradParams | None = None   # the gradient statistics last observed
        self.pooled = pooled                  # one profile for all kinds (a heterogeneity-unaware scheduler)
        slots = (POOLED,) if pooled else tuple(apps)
        self.profiles: dict[str, dict] = {k: {} for k in slots}  # kind -> {(nodes, replicas, bsz): (step, sync)}
        self.perf: dict[str, object] = {k: None for k in slots}  # kind -> fitted PerfParams
        self.progress = 0.0
        self.epoch = 0
        self.rescale_left = 0.0               # checkpoint-restore seconds still to pay
        self.restarts: int | None = None      # None until the first start
        self.completion: float | None = None
        self.attained = 0.0                   # GPU-seconds held
        self.gpu_s = dict.fromkeys(apps, 0.0)  # GPU-seconds held per kind
        self._batch_for = None                # what the batch size was last chosen for
        self.run: CheckpointedRun | None = None  # checkpoint-restart (checkpoint.*): the current run's timeline

    # -- what the scheduler knows ----------------------------------------------------------
    def model(self, kind: str) -> GoodputModel | None:
        """The fitted goodput model on `kind` (None until the job has run there; pooled: anywhere)."""
        perf = self.perf[POOLED if self.pooled else kind]
        if perf is None or self.grad is None:
            return None
        return GoodputModel(perf, self.grad, self.apps[kind].init_batch_size)

    def max_profiled_replicas(self, kind: str) -> int:
        return max((key[1] for key in self.profiles[POOLED if self.pooled else kind]), default=0)

    # -- allocation changes ------------------------------------------------------------------
    def allocate(self, kind: str | None, placement: tuple[int, ...]) -> bool:
        """Run on `placement` of GPU kind `kind` from now (kind None: no GPUs). Returns whether this
        is a (re)start, which costs the checkpoint-restore time."""
        placement = tuple(placement)
        if kind is None or not placement:
            self.kind, self.placement, self.atomic_bsz, self._batch_for = None, (), 0, None
            return False
        if kind == self.kind and placement == self.placement:
            return False
        self.kind, self.placement = kind, placement
        self._set_batch()
        self.rescale_left = self.apps[kind].restart_s
        if self.run is not None:  # a new run: from a checkpoint's restore after a stop, else Sia's own
            self.rescale_left = self.run.begin(self, sum(placement), self.rescale_left)
        self.restarts = 0 if self.restarts is None else self.restarts + 1
        return True

    def _set_batch(self) -> None:
        """Atomic batch size and accumulation steps for the current placement (Sia's
        update_local_bsz): Pollux's goodput-maximising choice once a model exists, else the initial
        batch size; the job's own batch size when batch-size tuning is off."""
        app = self.apps[self.kind]
        placement = self.placement
        basis = (self.kind, placement, self.perf[POOLED if self.pooled else self.kind], self.grad)
        if basis == self._batch_for:
            return  # same model, same placement: same choice
        self._batch_for = basis
        nodes, replicas = len(placement), sum(placement)
        max_local = app.max_local_bsz_for(placement)
        model = self.model(self.kind) if self.tune_bsz else None
        if model is not None:
            _, atomic, accum = model.optimize(nodes, replicas, app.max_batch_size, (app.min_local_bsz, max_local),
                                              accumulation=True)
            self.atomic_bsz, self.accum_steps = int(atomic), int(accum)
        else:
            batch = self.target_batch if not self.tune_bsz else max(app.init_batch_size, app.min_local_bsz * replicas)
            local = math.ceil(batch / replicas - 1e-8)
            accum = math.ceil(local / max_local - 1e-8) - 1
            if replicas == 1 and batch > app.init_batch_size:
                accum = max(1, accum)
            self.accum_steps = accum
            self.atomic_bsz = math.ceil(local / (accum + 1) - 1e-8)
        largest = app.max_local_bsz_at_replicas(replicas)  # memory: the largest size measured at this count
        if largest is not None:
            self.atomic_bsz = min(self.atomic_bsz, int(largest))
        count = replicas * (self.accum_steps + 1)
        self.atomic_bsz = min(self.atomic_bsz, int(app.max_batch_size / count))

    # -- progress --------------------------------------------------------------------------------
    def advance(self, now: float, seconds: float) -> None:
        """Train from `now` for `seconds` on the current allocation (Sia's Job.step); sets
        `completion` when the last epoch ends inside the interval (whole seconds, as Sia)."""
        if self.completion is not None or not self.placement:
            return
        gpus = sum(self.placement)
        delay = min(self.rescale_left, seconds)
        self.rescale_left -= delay
        now += delay
        self.attained += delay * gpus
        self.gpu_s[self.kind] += delay * gpus
        seconds -= delay
        if self.run is not None:
            self.run.advance(self, now, seconds)
        else:
            self._train(now, seconds)

    def _train(self, now: float, seconds: float) -> None:
        """Train from `now` for `seconds` at the profiles' goodput (no checkpoint-restore to pay)."""
        gpus = sum(self.placement)
        app = self.apps[self.kind]
        while seconds > 0 and self.completion is None:
            placement = self.placement
            replicas = gpus
            batch = replicas * self.atomic_bsz * (self.accum_steps + 1)
            scale = batch / app.init_batch_size
            sqr, var = app.grad_stats(batch, self.epoch)
            gain = (var + sqr) / (var / scale + sqr)
            times = app.step_time(placement, self.atomic_bsz)
            if times is None:
                raise UserError(f"policy.profiles: {app.app}/placements-{app.kind}.csv and scalability-{app.kind}.csv "
                                f"do not cover placement {placement} at {self.atomic_bsz} samples per GPU")
            step, sync = times
            self._observe(len(placement), replicas, self.atomic_bsz, step, sync, sqr, var)
            goodput = gain / (step + (step - sync) * self.accum_steps) * self.calibration
            target = app.progress_at(self.epoch + 1)
            if self.progress + goodput * seconds < target:
                self.progress += goodput * seconds
                self._hold(gpus, seconds)
                now += seconds
                seconds = 0
            else:
                self.epoch += 1
                delta = round(float((target - self.progress) / goodput))
                if self.epoch > app.completion_epoch(batch):
                    self.completion = now + delta
                self.progress = target
                self._hold(gpus, delta)
                now += delta
                seconds -= delta
            self._set_batch()

    def _hold(self, gpus: int, seconds: float) -> None:
        self.attained += seconds * gpus
        self.gpu_s[self.kind] += seconds * gpus

    def _observe(self, nodes, replicas, bsz, step, sync, sqr, var) -> None:
        """What the job's run reports to the scheduler: gradient statistics, and the step time of
        a configuration not seen before on this kind (the kind's model is refitted)."""
        self.grad = GradParams(sqr, var)
        slot = POOLED if self.pooled else self.kind
        profile = self.profiles[slot]
        key = (nodes, replicas, bsz)
        if key in profile:
            return
        profile[key] = (step, sync)
        self.perf[slot] = fitted(tuple(profile.items()))


class CheckpointedRun:
    """An elastic job's runs under checkpoint-restart (`checkpoint.*`, raysim.sim.checkpoint): a run
    is one allocation, its timeline in seconds of it (`elapsed`) as Checkpointing counts it (the
    restore after a stop, then `interval_s` of training and a write of `write_s`, and so on), the
    training state of its last completed checkpoint kept (`saved`). A change of allocation is Sia's
    own checkpoint-restore (the application's `restart_s`, all progress kept); a stop by the VC (a
    node going down) keeps the last checkpoint's state and the next run restores it for `restart_s`
    instead. `unpriced`: GPU-seconds of restores and writes of runs not yet priced."""

    __slots__ = ("cp", "elapsed", "restore", "gpus", "saved", "stopped", "unpriced")

    def __init__(self, cp):
        self.cp = cp
        self.elapsed, self.restore, self.gpus, self.saved = 0.0, False, 0, None
        self.stopped, self.unpriced = False, 0.0

    def where(self) -> tuple:
        """(kept, lost, overhead): seconds of training kept in this run, lost since its last
        checkpoint, and spent restoring and writing (Checkpointing.at, the run's end not in sight)."""
        return self.cp.at(0, None, self.restore, self.elapsed)

    def begin(self, job: ElasticJob, gpus: int, rescale: float) -> float:
        """A run begins on `gpus` GPUs; returns the reconfiguration time it pays first (`rescale`,
        Sia's; none after a stop: its restore is the run's own)."""
        self.unpriced += self.where()[2] * self.gpus
        self.restore, self.stopped = self.stopped, False
        self.elapsed, self.gpus, self.saved = 0.0, gpus, (job.progress, job.epoch)
        return 0.0 if self.restore else rescale

    def advance(self, job: ElasticJob, now: float, seconds: float) -> None:
        """`seconds` of the run from `now`: restoring, training and writing as its timeline says."""
        cp = self.cp
        restore = cp.restart_s if self.restore else 0
        period = cp.interval_s + cp.write_s
        while seconds > 0 and job.completion is None:
            if self.elapsed < restore:
                piece = min(restore - self.elapsed, seconds)
                job._hold(self.gpus, piece)
            else:
                at = (self.elapsed - restore) % period
                if at < cp.interval_s:
                    piece = min(cp.interval_s - at, seconds)
                    job._train(now, piece)
                else:
                    piece = min(period - at, seconds)
                    job._hold(self.gpus, piece)
                    if at + piece >= period:  # the write completed
                        self.saved = (job.progress, job.epoch)
            self.elapsed += piece
            now += piece
            seconds -= piece

    def stop(self, job: ElasticJob) -> tuple:
        """The VC stops the run: the job goes back to its last checkpoint; returns (seconds of training
        lost, GPU-seconds of restores and writes not yet priced), its next run restoring."""
        _, lost, overhead = self.where()
        job.progress, job.epoch = self.saved
        unpriced = self.unpriced + overhead * self.gpus
        self.elapsed, self.restore, self.unpriced, self.stopped = 0.0, False, 0.0, True
        return lost, unpriced

    def finish(self) -> float:
        """The job completes: GPU-seconds of restores and writes not yet priced."""
        unpriced = self.unpriced + self.where()[2] * self.gpus
        self.elapsed, self.restore, self.unpriced = 0.0, False, 0.0
        return unpriced


@functools.lru_cache(maxsize=4096)
def fitted(points: tuple) -> PerfParams:
    """Pollux's performance model fitted to ((nodes, replicas, batch size), (step, sync)) points,
    in the order observed. Jobs of one application that ran the same configurations in the same
    order have the same points: the fit is a pure function of them, computed once."""
    keys = np.array([key for key, _ in points], dtype=float)
    times = np.array([time for _, time in points], dtype=float)
    return fit_perf_params(keys[:, 0], keys[:, 1], keys[:, 2], times[:, 0] - times[:, 1], times[:, 0])
