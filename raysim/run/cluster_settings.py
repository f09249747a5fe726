"""Cluster mode's settings (a trace replay, `mode: cluster`), declared once (raysim.settings): the
sections of conf/config.yaml and the `cluster` and `runtime` groups. `cluster_mode(cfg)` checks them
all, before anything is read; what a setting means together with others (a policy that cannot take
it, a period that must be a multiple of the window) is raysim.run.config's check.

The policy, the placer, quotas and failures are plug-ins with declarations of their own
(raysim.policy, raysim.placement, raysim.quota.settings, raysim.run.failures), and so are the
trace readers' options (`trace.reader_options`, raysim.trace.load) and harvesting's section
(raysim.harvest.inputs, read only under policy=bftrainer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from omegaconf import DictConfig

from raysim.cluster.layout import MAX_GPUS_PER_NODE
from raysim.errors import ConfigError
from raysim.models.estimates import SOURCES as ESTIMATE_SOURCES
from raysim.report.settings import ReportSettings
from raysim.rounds.settings import RoundsSettings
from raysim.run.data_names import DataSettings
from raysim.run.grouping import PACKINGS
from raysim.run.spares import SpareSettings
from raysim.run.spot import SpotSettings
from raysim.run.values import plain
from raysim.settings import count_or_word, parse, section, setting
from raysim.sim.capacity import LARGEST
from raysim.trace.load import READERS
from raysim.trace.presets import COMBINED, PRESETS

#: Bounds past which a run would not end or not fit in memory (a value of 1e12 hung or ran out of memory).
TEN_YEARS_S = 10 * 365 * 86_400


def _mapping(value, key: str):
    if not isinstance(value, Mapping):
        raise ConfigError(key, "must be a table {option: value} (the reader's options: raysim --help)", value)
    return value


def _on_off(value, key: str):
    if value not in ("on", "off") and not isinstance(value, bool):
        raise ConfigError(key, "must be on or off", value)
    return value


def _auto_or_count(value, key: str):
    return count_or_word(value, key, ("auto",), "a positive integer or auto")


def _stall(value, key: str):
    return count_or_word(value, key, ("auto", "off"), "a positive number of seconds, auto or off", maximum=LARGEST)


def _layout(value, key: str):
    if not (isinstance(value, str) and value.strip()) and not (isinstance(value, list) and value):
        raise ConfigError(key, "must be a layout CSV (vc,gpu_type,gpus_per_node,nodes) or a list of pools", value)
    return value


@dataclass(frozen=True)
class SynthSettings:
    """`trace.synth`: a generated trace instead of a file."""

    preset: str = setting("venus", "the generator's preset", choices=(*sorted(PRESETS), *sorted(COMBINED)))
    days: float = setting(7.0, "days of jobs to generate", above=0, maximum=3650)
    seed: int = setting(0, "the generator's seed", minimum=0)


@dataclass(frozen=True)
class TraceSettings:
    """`trace:` which jobs the run replays and how bad rows are handled."""

    path: str | None = setting(None, "a trace file, or a folder holding cluster_full_log.csv / cluster_log.csv / "
                                     "jobs.parquet / openb pod lists")
    vc_config: str | None = setting(None, "vc_config.csv (VC -> node count); default: beside the trace")
    format: str = setting("auto", "the trace's reader (auto: from the file)", choices=("auto", "gavel", *sorted(READERS)))
    on_error: str = setting("raise", "a bad row stops the run (raise) or is counted and reported (skip)",
                            choices=("raise", "skip"))
    state_filter: list[str] | None = setting(None, "states kept, e.g. [COMPLETED]; null keeps every state, like the "
                                                   "reference")
    origin: str = setting("auto", "ISO datetime of t=0 for datetime traces; auto = midnight (UTC) of the first "
                                  "submit day")
    max_duration_s: float = setting(31536000, "plausibility: a longer duration (default one year) is a bad row",
                                    above=0)
    max_submit_span_years: float = setting(10, "plausibility: a submit time further than this from the trace's "
                                               "median is a bad row", above=0)
    cache: bool = setting(True, "Parquet cache beside the source (or in cache_dir when that is read-only), keyed by "
                                "content hash")
    cache_dir: str | None = setting(None, "where the Parquet cache goes instead")
    reader_options: object = setting({}, "the reader's options (trace.reader_options.<option>; raysim --help lists "
                                          "each reader's)", check=_mapping, what="a table of options")
    synth: SynthSettings | None = setting(None, "generate instead of reading: {preset, days, seed}")
    failed: str = setting("keep", "keep: a failed job runs once, for its duration; replay: its runs fail and are "
                                  "retried as the trace shows (docs/failures.md)", choices=("keep", "replay"))


@dataclass(frozen=True)
class SimSettings:
    """`sim:` the engine's switches."""

    compat: str = setting("clean", "lucid reproduces the reference simulator, defects included",
                          choices=("clean", "lucid"))
    sample_interval: int = setting(60, "seconds between time-series samples", minimum=1, maximum=TEN_YEARS_S)
    network: object = setting("off", "on: multi-node jobs slow down when their nodes' NICs are oversubscribed",
                              check=_on_off, what="on or off")
    stall_s: object = setting("auto", "a VC with unfinished jobs none of which finished or kept more work for this "
                                      "many seconds stops the run (exit status 2, results so far written; "
                                      "docs/failures.md); auto: 10 x the VC's longest job, at least 30 days; "
                                      "off: never",
                              check=_stall, what="seconds (at most 10^12), auto or off")


@dataclass(frozen=True)
class NetworkSettings:
    """`network:` NIC contention (sim.network=on, raysim.sim.network)."""

    # (the bounds keep a slowdown, at most about gbps_per_gpu x GPUs per node / nic_gbps, below 1e9:
    # 1e300 Gb/s per GPU overflowed the jobs' end times into a traceback)
    nic_gbps: float = setting(100, "NIC bandwidth per node (Gb/s)", minimum=0.01)
    gbps_per_gpu: float = setting(25, "traffic per GPU of a multi-node job while it communicates (Gb/s)", minimum=0,
                                  maximum=10_000)
    duty: float = setting(0.3, "fraction of its time a multi-node job communicates", minimum=0, maximum=1)


@dataclass(frozen=True)
class AppCheckpoint:
    """One application's checkpoint-restart (`checkpoint.apps.<application>`); a key left out is the
    run's, interval_s: null means it does not checkpoint."""

    interval_s: int | None = setting(None, "work between its checkpoints (s)", minimum=1, maximum=LARGEST)
    write_s: int | None = setting(None, "time a checkpoint write takes (s)", minimum=0, maximum=LARGEST)
    restart_s: int | None = setting(None, "time from a restart to progress again (s)", minimum=0, maximum=LARGEST)


@dataclass(frozen=True)
class CheckpointSettings:
    """`checkpoint:` what every interruption costs a job (docs/failures.md)."""

    interval_s: int | None = setting(None, "work between checkpoints (s); null: interruptions cost what they always "
                                           "did", minimum=1, maximum=LARGEST)
    write_s: int | None = setting(None, "time a checkpoint write takes, the job holding its GPUs (s; null: 0)",
                                  minimum=0, maximum=LARGEST)
    restart_s: int | None = setting(None, "time from a restart to progress again, the job holding its GPUs (s; "
                                          "null: 0)", minimum=0, maximum=LARGEST)
    column: str | None = setting(None, "the trace column naming each job's application (with apps)")
    apps: dict[str, AppCheckpoint] = setting({}, "per application: its own settings")


@dataclass(frozen=True)
class EstimatorSettings:
    """`estimator:` duration estimates for policies that rank by them (qssf, lucid)."""

    source: str = setting("none", "none | file | oracle (true durations) | model (learned while the run goes on)",
                          choices=ESTIMATE_SOURCES)
    path: str | None = setting(None, "CSV with a job_id column and an estimate column (source=file)")
    column: str = setting("priority", "column holding the estimated duration in seconds")
    negative_to: float = setting(1000, "negative estimates are replaced by this value (as in the reference)")
    kind: str = setting("ebm", "source=model: the learner", choices=("ebm", "lightgbm"))
    period_days: float = setting(7, "source=model: retrain every period on jobs finished by its start", above=0,
                                 maximum=3650)


@dataclass(frozen=True)
class RaySettings:
    """`ray:` how runtime=ray runs (raysim.runtime.ray_backend)."""

    address: str | None = setting(None, "null: start a local Ray; auto or host:port: connect (e.g. under "
                                        "`ray job submit`)")
    vcs_per_actor: object = setting("auto", "VCs simulated by one actor: auto (one actor per CPU) or a number",
                                    check=_auto_or_count, what="a positive integer or auto")
    packing: str = setting("cost", "how VCs are packed into actors: cost (estimated from each VC's jobs and GPUs, "
                                   "the costliest first to the least loaded actor; auto: one actor per CPU) or count "
                                   "(layout order)",
                           choices=PACKINGS)
    num_cpus: float | None = setting(None, "CPUs of a locally started Ray (null: all)", above=0)
    actor_cpus: float = setting(0.1, "CPU reservation of each actor (fractional: actors mostly wait)", minimum=0)
    slow_factor: float = setting(10, "a window slower than this x the slowest so far (and than slow_min_s) logs a "
                                     "warning", above=0)
    slow_min_s: float = setting(60, "seconds a window may take before it can count as slow", minimum=0)
    lost_after_s: float | None = setting(3600, "a window still running after this: its actor counts as lost and is "
                                               "rebuilt (null: wait forever)", above=0)


@dataclass(frozen=True)
class RuntimeSettings:
    """The `runtime` group: where the VCs are simulated, in windows of simulated time."""

    name: str = setting("ray", "ray: one Ray actor per VC group; local: every VC in this process",
                        choices=("local", "ray"))
    window_s: int = setting(86400, "simulated seconds per coordinator window", minimum=1, maximum=TEN_YEARS_S)
    checkpoint_dir: str | None = setting(None, "write a resumable checkpoint here (with runtime.resume=true to "
                                               "continue)")
    checkpoint_every: int = setting(1, "windows between checkpoints on disk", minimum=1)
    resume: bool = setting(False, "continue from runtime.checkpoint_dir")


@dataclass(frozen=True)
class ClusterSettings:
    """The `cluster` group: the nodes, their GPU types and how fast jobs run on them."""

    gpus_per_node: int = setting(8, "GPUs per node of a vc_config.csv layout", minimum=1, maximum=MAX_GPUS_PER_NODE)
    gpu_type: str = setting("gpu", "their GPU type")
    layout: object | None = setting(None, "a layout CSV (vc,gpu_type,gpus_per_node,nodes) or a list of pools",
                                    check=_layout, what="a layout CSV or a list of pools")
    reference_gpu_type: str | None = setting(None, "GPU type trace durations refer to when a job's gpu_type is empty "
                                                   "(null: the first type)")
    throughput: str | None = setting(None, "job speed per GPU type: a CSV job_type,gpu_type,throughput or Gavel's "
                                           "simulation_throughputs.json")
    capacity: str | None = setting(None, "a node log (time,vc,node,event[,cause]): nodes go down, come back up, join, "
                                         "leave (docs/capacity.md)")


@dataclass(frozen=True)
class ClusterMode:
    """What a trace replay reads of the config root, but its plug-ins' groups (policy, placer, quota,
    failures), the policies table and harvesting's section."""

    seed: int = setting(0, "the run's seed", minimum=0)
    trace: TraceSettings = section(TraceSettings, "which jobs the run replays")
    sim: SimSettings = section(SimSettings, "the engine's switches")
    network: NetworkSettings = section(NetworkSettings, "NIC contention (sim.network=on)")
    checkpoint: CheckpointSettings = section(CheckpointSettings, "checkpoint-restart")
    estimator: EstimatorSettings = section(EstimatorSettings, "duration estimates")
    ray: RaySettings = section(RaySettings, "how runtime=ray runs")
    runtime: RuntimeSettings = section(RuntimeSettings, "where the VCs are simulated")
    cluster: ClusterSettings = section(ClusterSettings, "the nodes")
    report: ReportSettings = section(ReportSettings, "what a run writes besides its tables")
    data: DataSettings = section(DataSettings, "datasets by name")
    rounds: RoundsSettings = section(RoundsSettings, "Gavel's jobs for any policy")
    spot: SpotSettings = section(SpotSettings, "high-priority jobs evicting spot jobs (a trace's priority_class)")
    spares: SpareSettings = section(SpareSettings, "a spare pool per VC")


def cluster_mode(cfg: DictConfig) -> ClusterMode:
    """The run's cluster-mode settings, checked (one ConfigError naming the first bad key)."""
    from raysim.settings import describe

    present = set(cfg.keys())
    values = {d.name: plain(cfg, d.name) for d in describe(ClusterMode) if d.name in present}
    return parse(ClusterMode, values, prefix="", owner="a trace replay")
