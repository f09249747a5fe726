"""What elastic policies read beyond the kernel's jobs: each job's application and batch size, the
applications' profiles on every GPU kind of the run, and the per-application constants.

Settings (``elastic:`` in conf/config.yaml): ``profiles`` (a folder of ``<app>/placements-<kind>.csv``,
``scalability-<kind>.csv`` and ``validation-<batch>.csv``, e.g. ``data:sia_profiles``), ``apps``
(per application: epochs to train, checkpoint-restore seconds, calibration slowdown),
``application_column`` and ``batch_size_column`` (the trace's columns), and ``application_map``
(for traces without an application column: which application stands in for which jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from omegaconf import DictConfig, OmegaConf

from raysim.elastic.job import ElasticJob
from raysim.elastic.profiles import AppProfile, load_profile
from raysim.errors import ConfigError, UserError


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

    def job(self, seq: int, kinds, *, tune_bsz: bool, pooled: bool = False) -> ElasticJob:
        app = self.apps[seq]
        return ElasticJob(seq, self.names[seq], {k: self.profiles[app, k] for k in kinds}, float(self.arrival[seq]),
                          target_replicas=int(self.replicas[seq]), target_batch=int(self.batch[seq]),
                          calibration=1.0 / self.constants[app].slowdown, tune_bsz=tune_bsz, pooled=pooled)

    def ratio(self, app: str, kind: str, dest: str) -> float:
        """One-GPU throughput of `app` on `kind` over that on `dest` (projects goodputs across kinds)."""
        return self.profiles[app, kind].one_gpu_throughput() / self.profiles[app, dest].one_gpu_throughput()


def elastic_options(cfg: DictConfig, trace, spec) -> dict:
    """The elastic policy's run options: inputs and round length (checked, one line naming the key)."""
    from raysim.paths import original_cwd
    from raysim.rounds.inputs import exact_arrivals, run_types

    e = cfg.elastic
    if not e.get("profiles"):
        raise ConfigError("elastic.profiles", "not set: elastic policies need the applications' profiles "
                          "(raysim data fetch sia_profiles; elastic.profiles=data:sia_profiles)")
    folder = (original_cwd() / str(e.profiles)).expanduser()
    if not folder.is_dir():
        raise UserError(f"elastic.profiles: no folder {folder}")
    table = trace.table
    apps = _applications(cfg, table, trace.source)
    constants = _constants(e)
    for app in sorted(set(apps)):
        if app not in constants:
            raise ConfigError("elastic.apps", f"no constants for application {app!r} (trace {trace.source}); "
                              f"known: {', '.join(sorted(constants))}")
    kinds = run_types(spec.layout)
    profiles: dict[tuple, AppProfile] = {}
    for app in sorted(set(apps)):
        c = constants[app]
        for kind in kinds:
            profiles[app, kind] = load_profile(folder, app, kind, max_epochs=c.max_epochs, restart_s=c.restart_s)
    batch_column = str(e.batch_size_column)
    if batch_column in table.column_names:
        batch = table.column(batch_column).to_numpy(zero_copy_only=False).astype(np.int64)
    else:  # no batch size: each job's application's initial one
        batch = np.array([profiles[a, kinds[0]].init_batch_size for a in apps], dtype=np.int64)
    names = [str(x) for x in table.column("job_id").to_pylist()]
    replicas = table.column("gpu_num").to_numpy(zero_copy_only=False).astype(np.int64)
    inputs = ElasticInputs(names, apps, replicas, batch, exact_arrivals(table), profiles, constants)
    return {"inputs": inputs}


def _applications(cfg: DictConfig, table, source: str) -> list:
    e = cfg.elastic
    column = str(e.application_column)
    if column in table.column_names:
        return [str(a) for a in table.column(column).to_pylist()]
    mapping = e.get("application_map")
    if not mapping:
        raise ConfigError("elastic.application_column", f"trace {source} has no column {column!r}; name the "
                          "column, or map jobs to applications with elastic.application_map", column)
    raise ConfigError("elastic.application_map", "not supported yet", OmegaConf.to_container(mapping))


def _constants(e: DictConfig) -> dict:
    out = {}
    for app, c in OmegaConf.to_container(e.apps, resolve=True).items():
        try:
            out[app] = AppConstants(int(c["max_epochs"]), float(c["restart_s"]), float(c["slowdown"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"elastic.apps.{app}", "needs max_epochs, restart_s and slowdown (numbers)", c) from None
    return out

