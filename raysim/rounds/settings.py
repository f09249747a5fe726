"""From a round-based policy's settings, `rounds:` and the cluster's throughput table to what a round-based run needs:
the policy's run options (raysim.policy.rounds.RoundBased) and, for Gavel's traces and generator,
the jobs as a raysim trace."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from raysim.cluster.throughput import ThroughputTable, read_throughput_table
from raysim.errors import ConfigError, SkipReport, TraceError, UserError
from raysim.policy.base import RunInputs
from raysim.rounds.policies.base import RoundSettings

log = logging.getLogger("raysim")

TABLE_HELP = ("Gavel's throughput table is public: github.com/stanford-futuredata/gavel, file "
              "scheduler/simulation_throughputs.json (MIT); docs/gavel.md")


def throughput_table(cfg: DictConfig | str | None, *, required: bool = True) -> ThroughputTable | None:
    """`cluster.throughput` (Gavel's JSON or a throughput CSV; `cfg`: the run's config, or that
    setting's value); None when not set and not `required`."""
    from raysim.paths import original_cwd

    path = cfg.cluster.get("throughput") if isinstance(cfg, DictConfig) else cfg
    if not path and not required:
        return None
    if not path:
        raise ConfigError("cluster.throughput", f"not set: Gavel's traces need a throughput table. {TABLE_HELP}")
    p = (original_cwd() / str(path)).expanduser()
    if not p.is_file():
        raise UserError(f"cluster.throughput: no file {p}. {TABLE_HELP}")
    return read_throughput_table(p)


def reference_type(cfg: DictConfig | RunInputs, types) -> str:
    """The reference GPU type: rounds.reference_type, else cluster.reference_gpu_type, else the
    first type by name (`cfg`: the run's config or its RunInputs)."""
    from raysim.rounds.inputs import index_of

    for key in ("rounds.reference_type", "cluster.reference_gpu_type"):
        if isinstance(cfg, DictConfig):
            name = OmegaConf.select(cfg, key)
        else:
            name = cfg.reference_type if key.startswith("rounds") else cfg.reference_gpu_type
        if name:
            try:
                return types[index_of(types, [name], key)[0]]
            except ValueError as exc:
                raise ConfigError(key, str(exc).split(": ", 1)[1], name) from None
    return types[0]


def round_options(settings: RoundSettings, run: RunInputs, trace, spec, *, packing: bool) -> dict:
    """The round-based policy's run options: its inputs (raysim.rounds.inputs.RoundInputs) and the
    round mechanism's `settings` (the policy's, checked), with the run's throughput table and
    reference type (`run`: cluster.throughput, rounds.reference_type)."""
    from raysim.rounds.inputs import index_of, round_inputs, run_types

    types = run_types(spec.layout)
    order = settings.type_order or None
    if order:
        try:
            index_of(types, order, "policy.type_order")
        except ValueError as exc:
            raise ConfigError("policy.type_order", str(exc).split(": ", 1)[1], order) from None
    reference = reference_type(run, types)
    table = throughput_table(run.throughput, required=False)
    if table is None:
        log.info("round-based policy without cluster.throughput: every job runs at the same speed on every GPU "
                 "type (steps: milliseconds of its duration)")
    inputs = round_inputs(trace.table, spec.layout, table, reference=reference, source=trace.source,
                          job_type_column=settings.job_type_column, job_type_map=settings.job_type_map,
                          packing=packing)
    return {"inputs": inputs, "round_s": settings.round_s, "reset_min_s": settings.reset_min_s,
            "type_order": order, "reference_type": reference, "lp_method": settings.lp_method}


def gavel_trace(cfg: DictConfig, layout: dict):
    """The jobs of a Gavel trace file (trace.format=gavel) or of Gavel's generator
    (rounds.generate) as a raysim Trace on the layout's one VC."""
    from raysim.rounds.inputs import gavel_trace_table, run_types
    from raysim.trace.load import Trace

    if len(layout) != 1:
        raise ConfigError("cluster.layout", f"a Gavel trace names no VC: its cluster must have one VC, not "
                          f"{len(layout)} ({', '.join(layout)})")
    (vc,) = layout
    table = throughput_table(cfg)
    reference = reference_type(cfg, run_types(layout))
    jobs, source = _gavel_jobs(cfg, table)
    trace = gavel_trace_table(jobs, table, reference=reference, vc=vc, source=source)
    nodes = {vc: sum(p.nodes for p in layout[vc])}
    return Trace(trace, nodes, SkipReport(file=source), source)


def _gavel_jobs(cfg: DictConfig, table: ThroughputTable):
    """The job table (raysim.trace.gavel.SCHEMA) and a label for its source."""
    r, t = cfg.rounds, cfg.trace
    if r.get("generate"):
        from raysim.rounds.generate import generate_jobs

        g = r.generate
        templates = [(str(e["model"]), bool(e["distributed"])) for e in g.templates]
        lam_s = 3600.0 / float(r.rate_jobs_per_hour) if r.get("rate_jobs_per_hour") else float(g.lam_s)
        try:
            jobs = generate_jobs(table, templates, jobs=int(g.jobs), lam_s=lam_s, seed=int(cfg.seed),
                                 reference_type=str(r.reference_type or cfg.cluster.reference_gpu_type),
                                 multi_gpu=bool(g.multi_gpu))
        except ValueError as exc:
            raise ConfigError("rounds.generate", str(exc)) from None
        return jobs, f"generated (Gavel continuous, lam {lam_s:.0f} s, seed {int(cfg.seed)})"
    if not t.path:
        raise ConfigError("trace.path", "not set: give a Gavel trace (trace.format=gavel) or set rounds.generate")
    from raysim.paths import original_cwd
    from raysim.trace.gavel import read_gavel_trace

    path = original_cwd() / str(t.path)
    if path.is_dir():
        raise TraceError(str(path), "trace.format=gavel reads one Gavel trace file, not a folder")
    return read_gavel_trace(path), str(t.path)


def is_gavel_input(cfg: DictConfig) -> bool:
    """Whether the run's jobs come from a Gavel trace file (trace.format=gavel, or auto and a
    ``.trace`` file) or from Gavel's generator (rounds.generate)."""
    t, rounds = cfg.trace, cfg.get("rounds")
    if rounds is not None and rounds.get("generate"):
        return True
    return t.format == "gavel" or t.format == "auto" and bool(t.path) and Path(str(t.path)).suffix == ".trace"
