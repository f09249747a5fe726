"""From a round-based policy's settings and the cluster's throughput table to what a round-based run
needs (the policy's run options, raysim.policy.rounds.RoundBased), and the `rounds:` section declared:
Gavel's jobs, from its generator, for any policy (raysim.run.gavel_jobs makes them)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from raysim.cluster.throughput import ThroughputTable, read_throughput_table
from raysim.errors import ConfigError, UserError
from raysim.inputs import RunInputs
from raysim.rounds.policies.base import RoundSettings
from raysim.settings import setting

log = logging.getLogger("raysim")

TABLE_HELP = ("Gavel's throughput table is public: github.com/stanford-futuredata/gavel, file "
              "scheduler/simulation_throughputs.json (MIT); docs/gavel.md")


#: The most jobs Gavel's generator may make (more would not fit in memory).
MAX_GENERATED_JOBS = 1_000_000
#: The generator's longest mean inter-arrival time, seconds (rate_jobs_per_hour: 3600 / it at least).
MAX_LAM_S = 1e9


def _templates(value, key: str) -> list[tuple[str, bool]]:
    """`rounds.generate.templates`: a non-empty list of {model: NAME, distributed: BOOL}."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, list) or not value:
        raise ConfigError(key, "must be a list of {model: NAME, distributed: true|false}", value)
    out = []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping) or set(entry) != {"model", "distributed"}:
            raise ConfigError(f"{key}[{i}]", "must be {model: NAME, distributed: true|false}", entry)
        if not isinstance(entry["model"], str) or not entry["model"].strip():
            raise ConfigError(f"{key}[{i}].model", "must be a model name of the throughput table", entry["model"])
        if not isinstance(entry["distributed"], bool):
            raise ConfigError(f"{key}[{i}].distributed", "must be true or false", entry["distributed"])
        out.append((entry["model"], entry["distributed"]))
    return out


@dataclass(frozen=True)
class GenerateSettings:
    """Gavel's continuous generator (`rounds.generate`, +experiment=gavel_continuous)."""

    jobs: int = setting(300, "jobs generated (and simulated to completion)", minimum=1, maximum=MAX_GENERATED_JOBS)
    # (at most MAX_LAM_S, 32 years between arrivals: MAX_GENERATED_JOBS jobs then still arrive within
    # int64 seconds; 1e300 overflowed the submit times)
    lam_s: float = setting(8000.0, "mean inter-arrival time in seconds (3600 / rate)", minimum=0, maximum=MAX_LAM_S)
    multi_gpu: bool = setting(True, "Gavel's continuous-multiple: scale factors 1/2/4/8")
    templates: object = setting([], "Gavel's job templates [{model, distributed}], in its JobTable order (the draw "
                                    "order matters)", check=_templates, what="a list of {model, distributed}")


@dataclass(frozen=True)
class RoundsSettings:
    """The `rounds:` section: Gavel's jobs for any policy."""

    reference_type: str | None = setting(None, "GPU type Gavel's jobs refer to (null: cluster.reference_gpu_type; "
                                               "agnostic finish-time fairness uses its throughput)")
    generate: GenerateSettings | None = setting(None, "Gavel's continuous generator instead of a trace "
                                                      "(+experiment=gavel_continuous)")
    rate_jobs_per_hour: float | None = setting(None, "jobs per hour of the generator (null: generate.lam_s)",
                                               minimum=3600 / MAX_LAM_S)


def throughput_table(path: str | None, *, required: bool = True) -> ThroughputTable | None:
    """The table of `cluster.throughput` (`path`: Gavel's JSON or a throughput CSV); None when not
    set and not `required`."""
    from raysim.paths import original_cwd

    if not path and not required:
        return None
    if not path:
        raise ConfigError("cluster.throughput", f"not set: Gavel's traces need a throughput table. {TABLE_HELP}")
    p = (original_cwd() / str(path)).expanduser()
    if not p.is_file():
        raise UserError(f"cluster.throughput: no file {p}. {TABLE_HELP}")
    return read_throughput_table(p)


def reference_type(run: RunInputs, types) -> str:
    """The reference GPU type: rounds.reference_type, else cluster.reference_gpu_type, else the
    first type by name."""
    from raysim.rounds.inputs import index_of

    for key, name in (("rounds.reference_type", run.reference_type),
                      ("cluster.reference_gpu_type", run.reference_gpu_type)):
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
