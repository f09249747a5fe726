"""What elastic policies read beyond the kernel's jobs: each job's application and batch size, the
applications' profiles on every GPU kind of the run, and the per-application constants.

Settings (the elastic policy's, raysim.elastic.settings.ElasticSettings): ``policy.profiles`` (a
folder of ``<app>/placements-<kind>.csv``, ``scalability-<kind>.csv`` and ``validation-<batch>.csv``,
e.g. ``data:sia_profiles``), ``policy.apps`` (per application: epochs to train, checkpoint-restore
seconds, calibration slowdown), ``policy.application_column`` and ``policy.batch_size_column`` (the
trace's columns); for ordinary traces ``policy.application_map``, ``policy.share`` and
``policy.match_durations`` (raysim.elastic.mapping).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from raysim.elastic.job import ElasticJob
from raysim.elastic.mapping import applications_by_gpu_hours, elastic_mask, rigid_seconds
from raysim.elastic.profiles import AppProfile, load_profile
from raysim.errors import ConfigError, UserError

if TYPE_CHECKING:
    from raysim.elastic.settings import ElasticSettings
    from raysim.inputs import RunInputs


@dataclass(frozen=True)
class AppConstants:
    max_epochs: int
    restart_s: float
    slowdown: float


@dataclass
class ElasticInputs:
    """Per trace row (``seq``): name, application, initial replicas, batch size and exact arrival;
    per (application, GPU kind): its profile."""

    names: list
    apps: list
    replicas: np.ndarray
    batch: np.ndarray
    arrival: np.ndarray
    profiles: dict            # (app, kind) -> AppProfile
    constants: dict           # app -> AppConstants
    elastic: np.ndarray       # per job: whether it may be resized (else rigid: its GPU count and batch size)
    speed: np.ndarray         # per job: factor on its training speed (policy.match_durations; else 1)
    limit: np.ndarray         # per job: the most GPUs it may use (0: no limit of its own; trace column max_replicas)

    def job(self, seq: int, kinds, *, tune_bsz: bool, pooled: bool = False) -> ElasticJob:
        app = self.apps[seq]
        rigid = not self.elastic[seq]
        return ElasticJob(seq, self.names[seq], {k: self.profiles[app, k] for k in kinds}, float(self.arrival[seq]),
                          target_replicas=int(self.replicas[seq]), target_batch=int(self.batch[seq]),
                          calibration=float(self.speed[seq]) / self.constants[app].slowdown,
                          tune_bsz=tune_bsz and not rigid, pooled=pooled, rigid=rigid,
                          max_replicas=int(self.limit[seq]) or None)

    @property
    def rigid_sizes(self) -> tuple[int, ...]:
        """The GPU counts rigid jobs ask for (configurations elastic policies must offer)."""
        return tuple(sorted({int(r) for r, e in zip(self.replicas, self.elastic) if not e}))

    def ratio(self, app: str, kind: str, dest: str) -> float:
        """One-GPU throughput of `app` on `kind` over that on `dest` (projects goodputs across kinds)."""
        return self.profiles[app, kind].one_gpu_throughput() / self.profiles[app, dest].one_gpu_throughput()


def elastic_options(e: ElasticSettings, run: RunInputs, trace, spec) -> dict:
    """The elastic policy's run options: its inputs, from its checked settings `e`, the run's seed
    (spec.params) and its reference GPU kind (`run`)."""
    from raysim.paths import original_cwd
    from raysim.rounds.inputs import run_types
    from raysim.trace.schema import arrival_seconds

    if not e.profiles:
        raise ConfigError("policy.profiles", "not set: elastic policies need the applications' profiles "
                          "(raysim data fetch sia_profiles; policy.profiles=data:sia_profiles)")
    folder = (original_cwd() / str(e.profiles)).expanduser()
    if not folder.is_dir():
        raise UserError(f"policy.profiles: no folder {folder}")
    table = trace.table
    apps = _applications(e, table, trace.source)
    constants = {app: AppConstants(int(c["max_epochs"]), float(c["restart_s"]), float(c["slowdown"]))
                 for app, c in e.apps.items()}
    for app in sorted(set(apps)):
        if app not in constants:
            raise ConfigError("policy.apps", f"no constants for application {app!r} (trace {trace.source}); "
                              f"known: {', '.join(sorted(constants))}")
    kinds = run_types(spec.layout)
    profiles: dict[tuple, AppProfile] = {}
    for app in sorted(set(apps)):
        c = constants[app]
        for kind in kinds:
            profiles[app, kind] = load_profile(folder, app, kind, max_epochs=c.max_epochs, restart_s=c.restart_s)
    names = [str(x) for x in table.column("job_id").to_pylist()]
    replicas = table.column("gpu_num").to_numpy(zero_copy_only=False).astype(np.int64)
    batch_column = e.batch_size_column
    if batch_column in table.column_names and not e.application_map:
        batch = table.column(batch_column).to_numpy(zero_copy_only=False).astype(np.int64)
        shown = [str(x) for x in table.column("job_name").to_pylist()] if "job_name" in table.column_names else names
        _check_batches(batch, apps, shown, {a: profiles[a, kinds[0]] for a in set(apps)}, folder, trace.source,
                       batch_column)
    else:  # mapped jobs: GPUs the application can use, and the smallest batch size they allow
        first = [profiles[a, kinds[0]] for a in apps]
        limit = np.array([min(min(p.max_batch_size // p.min_local_bsz, p.max_replicas)
                              for (a2, _), p in profiles.items() if a2 == a) for a in apps])
        replicas = np.minimum(replicas, limit)
        batch = np.array([min(max(p.init_batch_size, p.min_local_bsz * r), p.max_batch_size)
                          for p, r in zip(first, replicas)], dtype=np.int64)
    elastic = elastic_mask(names, e.share, int(spec.params.seed))
    limit = np.zeros(len(names), dtype=np.int64)
    if "max_replicas" in table.column_names:
        limit = table.column("max_replicas").fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    inputs = ElasticInputs(names, apps, replicas, batch, arrival_seconds(table), profiles, constants, elastic,
                           np.ones(len(names)), limit)
    if e.match_durations:
        inputs.speed = _matching_speeds(inputs, table, kinds, reference_kind(run, kinds), spec.layout)
    return {"inputs": inputs}


def _check_batches(batch, apps, names, profiles: dict, folder, source: str, column: str) -> None:
    """Each job's batch size within its application's validated ones (validation-<batch>.csv): one
    outside them has no training curve (a validation file missing from the folder, or a bad row)."""
    from raysim.errors import TraceError

    for seq, (b, app) in enumerate(zip(batch, apps)):
        p = profiles[app]
        if not p.init_batch_size <= b <= p.max_batch_size:
            raise TraceError(source, f"job {names[seq]!r}: batch size outside {app}'s validated ones "
                             f"{p.init_batch_size}..{p.max_batch_size} (validation-<batch>.csv in {folder / app})",
                             column=column, value=int(b))


def reference_kind(run: RunInputs, kinds) -> str:
    """The GPU kind trace durations refer to: cluster.reference_gpu_type, else the first kind."""
    name = run.reference_gpu_type
    return name if name in kinds else kinds[0]


def _matching_speeds(inputs: ElasticInputs, table, kinds, kind: str, layout) -> np.ndarray:
    """Per job: the factor that makes its rigid run on `kind` take its trace duration (`inputs` still
    at speed 1)."""
    per_node = {p.gpu_type: p.gpus_per_node for pools in layout.values() for p in pools}[kind]
    duration = table.column("duration").to_numpy(zero_copy_only=False).astype(float)
    cache: dict[tuple, float | None] = {}
    speed = np.ones(len(duration))
    for seq in range(len(duration)):
        r = int(inputs.replicas[seq])
        key = (inputs.apps[seq], r, int(inputs.batch[seq]))
        if key not in cache:
            placement = tuple([per_node] * (r // per_node) + ([r % per_node] if r % per_node else []))
            cache[key] = rigid_seconds(lambda: inputs.job(seq, (kind,), tune_bsz=False), placement, kind)
        seconds = cache[key]
        if seconds and duration[seq] > 0:
            speed[seq] = seconds / duration[seq]
    return speed


def _applications(e: ElasticSettings, table, source: str) -> list:
    if e.application_map:
        duration = table.column("duration").to_numpy(zero_copy_only=False).astype(float)
        gpus = table.column("gpu_num").to_numpy(zero_copy_only=False).astype(float)
        return applications_by_gpu_hours(duration, gpus, e.application_map)
    column = e.application_column
    if column in table.column_names:
        return [str(a) for a in table.column(column).to_pylist()]
    raise ConfigError("policy.application_column", f"trace {source} has no column {column!r}; name the "
                      "column, or map jobs to applications with policy.application_map", column)

