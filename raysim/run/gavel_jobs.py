"""Gavel's jobs as a run's trace: a Gavel trace file (trace.format=gavel) or Gavel's continuous
generator (`rounds.generate`), on the cluster layout's one VC, for any policy (docs/gavel.md)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from raysim.cluster.throughput import ThroughputTable
from raysim.errors import ConfigError, SkipReport, TraceError
from raysim.rounds.settings import RoundsSettings, reference_type, throughput_table
from raysim.run.values import plain, value
from raysim.settings import parse


def rounds_settings(cfg: DictConfig) -> RoundsSettings:
    """The run's `rounds:` section, checked (one line naming a bad key)."""
    return parse(RoundsSettings, plain(cfg, "rounds") or {}, prefix="rounds", owner="Gavel's jobs (rounds)")


def is_gavel_input(cfg: DictConfig) -> bool:
    """Whether the run's jobs come from a Gavel trace file (trace.format=gavel, or auto and a
    ``.trace`` file) or from Gavel's generator (rounds.generate)."""
    if value(cfg, "rounds.generate"):
        return True
    fmt, path = value(cfg, "trace.format"), value(cfg, "trace.path")
    return fmt == "gavel" or fmt == "auto" and bool(path) and Path(str(path)).suffix == ".trace"


def gavel_trace(cfg: DictConfig, layout: dict):
    """The jobs of a Gavel trace file or of Gavel's generator as a raysim Trace on the layout's one VC."""
    from raysim.inputs import RunInputs
    from raysim.rounds.inputs import gavel_trace_table, run_types
    from raysim.trace.load import Trace

    if len(layout) != 1:
        raise ConfigError("cluster.layout", f"a Gavel trace names no VC: its cluster must have one VC, not "
                          f"{len(layout)} ({', '.join(layout)})")
    (vc,) = layout
    table = throughput_table(value(cfg, "cluster.throughput"))
    rounds = rounds_settings(cfg)
    run = RunInputs(reference_type=rounds.reference_type, reference_gpu_type=value(cfg, "cluster.reference_gpu_type"))
    reference = reference_type(run, run_types(layout))
    jobs, source = _gavel_jobs(cfg, rounds, table)
    trace = gavel_trace_table(jobs, table, reference=reference, vc=vc, source=source,
                              max_duration_s=value(cfg, "trace.max_duration_s"))
    nodes = {vc: sum(p.nodes for p in layout[vc])}
    return Trace(trace, nodes, SkipReport(file=source), source)


def _gavel_jobs(cfg: DictConfig, rounds: RoundsSettings, table: ThroughputTable):
    """The job table (raysim.trace.gavel.SCHEMA) and a label for its source."""
    seed = int(value(cfg, "seed"))
    g = rounds.generate
    if g is not None:
        from raysim.rounds.generate import generate_jobs

        lam_s = 3600.0 / rounds.rate_jobs_per_hour if rounds.rate_jobs_per_hour else g.lam_s
        try:
            jobs = generate_jobs(table, g.templates, jobs=g.jobs, lam_s=lam_s, seed=seed,
                                 reference_type=str(rounds.reference_type or value(cfg, "cluster.reference_gpu_type")),
                                 multi_gpu=g.multi_gpu)
        except ValueError as exc:
            raise ConfigError("rounds.generate", str(exc)) from None
        return jobs, f"generated (Gavel continuous, lam {lam_s:.0f} s, seed {seed})"
    path = value(cfg, "trace.path")
    if not path:
        raise ConfigError("trace.path", "not set: give a Gavel trace (trace.format=gavel) or set rounds.generate")
    from raysim.paths import original_cwd
    from raysim.trace.gavel import read_gavel_trace

    file = original_cwd() / str(path)
    if file.is_dir():
        raise TraceError(str(file), "trace.format=gavel reads one Gavel trace file, not a folder")
    return read_gavel_trace(file), str(path)
