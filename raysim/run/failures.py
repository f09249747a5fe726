"""The `failures` config group: its producers (FAILURES, one per preset of conf/failures/), each
declaring its settings (raysim.settings), checked once, and turned into the run's failures
(raysim.sim.failures, raysim.sim.failure_trace). A bad value or a key the producer does not declare
is one line naming it; what the settings say together (exactly one MTBF, `shape` with Weibull only,
`sigma` with lognormal only, a bad fraction with its multiplier, a trace's path) is each producer's
`relations`, next to its declaration."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from raysim.errors import ConfigError
from raysim.registry import Registry
from raysim.run.values import value
from raysim.settings import NoSettings, parse, setting
from raysim.sim.capacity import STOP_CAUSES
from raysim.sim.failures import BAD_NODE, CLOCKS, DISTRIBUTIONS, KINDS, REPAIRS, Category, FailureModel

#: The longest mean time between failures or repair a setting may give (hours: about 1,140 years), so
#: that every drawn time fits the engine's clock, even at a million ticks per second.
MAX_HOURS = 1e7
#: The largest share of a failure category (shares are weights: counts, percentages).
MAX_SHARE = 1e12
#: The largest lognormal sigma: its median lifetime is then exp(-4.5), about 1 %, of the mean.
MAX_SIGMA = 3.0
#: The largest ratio of a bad node's failure rate to a good one's.
MAX_MULTIPLIER = 1e6
_NAME = re.compile(r"[A-Za-z0-9_]+")
HOUR = 3600


def _a_name(name: str, key: str) -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(key, "must be a name of letters, digits and _", name)
    if name in STOP_CAUSES:
        raise ConfigError(key, f"may not be {', '.join(STOP_CAUSES)}: those count the stops no failure made", name)
    if name == BAD_NODE:
        raise ConfigError(key, f"may not be {BAD_NODE}: it counts the failures bad nodes have beyond good ones' "
                               "(failures.bad_fraction)", name)
    return name


@dataclass(frozen=True)
class CategorySettings:
    """A failure category of a model (failures.categories[i])."""

    name: str = setting("failure", "the category: a cause counted per job (letters, digits and _)", check=_a_name)
    # (at most 1e12: shares are normalised by their sum, which two shares of 1e308 overflowed to inf, and
    # every failure then fell in the last category)
    share: float = setting(1.0, "its share of failures (drawn by share)", above=0, maximum=MAX_SHARE)
    kind: str = setting("down", "down: the node is out until repaired | restart: only its jobs restart", choices=KINDS)
    repair_h: float | None = setting(None, "its own mean repair time, hours (null: the model's repair_h)",
                                     minimum=0, maximum=MAX_HOURS)


def _categories(categories: list, key: str) -> list:
    if not categories:
        raise ConfigError(key, "must be a list of {name, share, kind[, repair_h]}", categories)
    names = [c.name for c in categories]
    if len(set(names)) < len(names):
        raise ConfigError(key, "category names must differ", names)
    return categories


@dataclass(frozen=True)
class ModelSettings:
    """A failure model's settings (conf/failures/exponential.yaml holds the defaults)."""

    distribution: str = setting("exponential", "time to failure: exponential | weibull | lognormal",
                                choices=DISTRIBUTIONS)
    # (at least 0.1: the scale is the MTBF over gamma(1 + 1/k), which overflowed in a traceback below
    # about 0.006; at 0.1 the median time to failure is already 1e-8 of the mean)
    shape: float | None = setting(None, "Weibull shape k, only with distribution weibull (< 1: infant mortality; > 1: "
                                  "wear-out)", minimum=0.1)
    sigma: float | None = setting(None, "lognormal sigma (the spread of the log of a lifetime), only with distribution "
                                  "lognormal", above=0, maximum=MAX_SIGMA)
    node_mtbf_h: float | None = setting(1000.0, "mean time between failures of one node, hours ...",
                                        above=0, maximum=MAX_HOURS)
    gpu_mtbf_h: float | None = setting(None, "... or of one GPU: a node of g GPUs fails g times as often (set "
                                       "exactly one)", above=0, maximum=MAX_HOURS)
    repair_h: float | None = setting(4.0, "mean time a node that goes down takes to come back, hours (0: at once; "
                                     "null, and only null, under repair=pipeline, which draws its own)",
                                     minimum=0, maximum=MAX_HOURS)
    repair: str | None = setting("fixed", "fixed | exponential (of mean repair_h; null under repair=pipeline)",
                                 choices=REPAIRS)
    categories: list[CategorySettings] = setting([CategorySettings()], "failure categories, drawn by share",
                                                 check=_categories)
    bad_fraction: float = setting(0.0, "share of nodes that are bad (each drawn from its own seed), failing "
                                  "bad_multiplier times as often as the others", minimum=0, maximum=1)
    bad_multiplier: float | None = setting(None, "a bad node's failure rate over a good one's, only with "
                                           "bad_fraction > 0", minimum=1, maximum=MAX_MULTIPLIER)
    bad_regen_h: float | None = setting(None, "bad nodes regenerated every this many hours: at each, every good node "
                                        "turns bad with probability bad_fraction x bad_regen_share (null: never; "
                                        "AIReSim's bad_server_regeneration)", above=0, maximum=MAX_HOURS)
    bad_regen_share: float = setting(0.1, "with bad_regen_h: the share of bad_fraction a good node turns bad with at "
                                     "each regeneration (AIReSim's 0.1)", minimum=0, maximum=1)
    clock: str = setting("up", "up: a node ages while it is up | busy: only while a job on it progresses (not idle, "
                         "not restoring, not down; AIReSim's)", choices=CLOCKS)
    diagnosis: float = setting(1.0, "probability that a down failure sends its node to repair (else its jobs "
                               "restart and the node stays up, unrepaired)", minimum=0, maximum=1)
    wrong_node: float = setting(0.0, "probability that a diagnosed down failure blames another node of its jobs, "
                                "which goes to repair in its place while the failed one stays up (AIReSim's "
                                "diagnosis uncertainty; failures.clock=busy only)", minimum=0, maximum=1)


def model_relations(s: ModelSettings) -> None:
    """What a model's settings say together: exactly one MTBF, `shape` with Weibull only, `sigma` with
    lognormal only, `bad_multiplier` exactly with a bad fraction."""
    if (s.node_mtbf_h is None) == (s.gpu_mtbf_h is None):
        raise ConfigError("failures.node_mtbf_h", "set exactly one of failures.node_mtbf_h (per node) and "
                          "failures.gpu_mtbf_h (per GPU)", s.node_mtbf_h)
    if s.distribution == "weibull" and s.shape is None:
        raise ConfigError("failures.shape", "must be set with failures.distribution=weibull (a number > 0)")
    if s.distribution != "weibull" and s.shape is not None:
        raise ConfigError("failures.shape", "only with failures.distribution=weibull", s.shape)
    if s.distribution == "lognormal" and s.sigma is None:
        raise ConfigError("failures.sigma", "must be set with failures.distribution=lognormal (a number > 0)")
    if s.distribution != "lognormal" and s.sigma is not None:
        raise ConfigError("failures.sigma", "only with failures.distribution=lognormal", s.sigma)
    if s.bad_fraction > 0 and s.bad_multiplier is None:
        raise ConfigError("failures.bad_multiplier", "must be set with failures.bad_fraction > 0 (a bad node's "
                          "failure rate over a good one's, >= 1)")
    if s.bad_fraction == 0 and s.bad_multiplier is not None:
        raise ConfigError("failures.bad_multiplier", "only with failures.bad_fraction > 0", s.bad_multiplier)
    if s.bad_regen_h is not None and s.bad_fraction == 0:
        raise ConfigError("failures.bad_regen_h", "only with failures.bad_fraction > 0 (the share it regenerates "
                          "from, with failures.bad_multiplier)", s.bad_regen_h)
    if s.bad_regen_h is None and s.bad_regen_share != 0.1:
        raise ConfigError("failures.bad_regen_share", "only with failures.bad_regen_h (the regeneration's interval)",
                          s.bad_regen_share)
    if s.wrong_node > 0 and s.clock != "busy":
        raise ConfigError("failures.wrong_node", "only with failures.clock=busy: under clock=up a node's next "
                          "failure is drawn ahead, and a node blamed in another's place goes to repair before it",
                          s.wrong_node)


def _kinds(kinds: dict, key: str) -> dict:
    if not kinds:
        raise ConfigError(key, "must map each category to down or restart, e.g. {failure: down}", kinds)
    for category in kinds:
        _a_name(category, key)
    return kinds


@dataclass(frozen=True)
class FailureTraceSettings:
    """A failure trace's settings (conf/failures/trace.yaml holds the defaults)."""

    path: str | None = setting(None, "the failure trace, CSV or Parquet time,vc,node,category,repair_s (must be set)")
    kinds: dict[str, str] = setting({"failure": "down", "software": "restart"},
                                    "category -> down (node out for repair_s) | restart (only its jobs restart)",
                                    choices=KINDS, check=_kinds)


def trace_relations(s: FailureTraceSettings) -> None:
    """A trace's path must be set."""
    if s.path is None:
        raise ConfigError("failures.path", "must be a failure trace file (CSV or Parquet; docs/failures.md)", None)


class BusyClock:
    """What failures.clock=busy cannot run with, declared as the engine's extensions declare theirs
    (raysim.sim.extensions; checked with them, raysim.run.config.DECLARED): a busy clock follows the
    runs of one VC's jobs on its own nodes, and a restore that ends at the rate its run began with."""

    settings = ("failures.clock=busy",)
    refuses = {
        "cluster.capacity": "busy failure clocks are not merged with a node log: leave cluster.capacity null, or "
                            "use failures.clock=up",
        "quota=borrow": "a node lent to another VC would age with two VCs' work, which busy failure clocks do not "
                        "follow: use quota=none or quota=global, or failures.clock=up",
        "sim.network": "under NIC contention a job's rate changes during its restore, which busy failure clocks do "
                       "not follow: use sim.network=off, or failures.clock=up",
    }
    requires: dict = {}
    names_refused = False


class Producer:
    """A preset of the `failures` group as FAILURES registers it: its one-line doc, its declared
    `Settings`, their `relations`, the causes its failures name and the run's capacity plan."""

    kind = ""  # producers of one kind share their settings ("model": the drawn ones, whose plan also takes
    # repair=pipeline's `pipeline`)
    Settings = NoSettings

    def __init__(self, doc: str):
        self.__doc__ = doc

    def relations(self, settings) -> None:
        """Raise ConfigError where `settings` disagree among themselves."""

    def causes(self, settings) -> tuple:
        """The causes its failures name, in order."""
        return ()

    def plan(self, settings, seed: int, layout: dict, homes: tuple, jobs: dict, log_plan):
        """The run's capacity plan (see failure_plan)."""
        return log_plan


class Drawn(Producer):
    """Failures drawn per node from a failure model, repaired by the model's repair time or by
    `pipeline` (repair=pipeline's, raysim.sim.repairs), its nodes retired by `retire` (a
    raysim.sim.retirement policy, or None)."""

    kind = "model"
    Settings = ModelSettings

    def relations(self, settings: ModelSettings) -> None:
        model_relations(settings)

    def causes(self, settings: ModelSettings) -> tuple:
        """The categories' names, then BAD_NODE with bad nodes (raysim.sim.failures)."""
        return tuple(c.name for c in settings.categories) + ((BAD_NODE,) if settings.bad_fraction > 0 else ())

    def plan(self, settings: ModelSettings, seed: int, layout: dict, homes: tuple, jobs: dict, log_plan,
             pipeline=None, retire=None):
        from raysim.sim.capacity import CapacityPlan
        from raysim.sim.failures import failing_vcs

        causes, logs = _merged(self.causes(settings), log_plan)
        model = replace(model_of(settings), pipeline=pipeline, retire=retire)
        counts = (("undiagnosed",) if model.diagnosis < 1 else ()) + (("wrong_node",) if model.wrong_node > 0 else ()) \
            + (("turned_bad",) if model.regen_s is not None else ()) + (("retired",) if retire is not None else ())
        return CapacityPlan(causes, failing_vcs(model, seed, layout, homes, causes, logs, jobs),
                            repairs=pipeline is not None, busy=settings.clock == "busy", counts=counts)


class Replayed(Producer):
    """Failures replayed from a file."""

    Settings = FailureTraceSettings

    def relations(self, settings: FailureTraceSettings) -> None:
        trace_relations(settings)

    def causes(self, settings: FailureTraceSettings) -> tuple:
        return tuple(settings.kinds)

    def plan(self, settings: FailureTraceSettings, seed: int, layout: dict, homes: tuple, jobs: dict, log_plan):
        from raysim.sim.capacity import CapacityPlan, own_layout
        from raysim.sim.failure_trace import read_failure_trace, traced_vcs

        causes, logs = _merged(self.causes(settings), log_plan)
        own = own_layout(layout, homes) if homes else layout
        by_node = read_failure_trace(Path(settings.path).expanduser(), own, settings.kinds, causes)
        return CapacityPlan(causes, traced_vcs(by_node, layout, homes, causes, logs, jobs))


def _merged(causes: tuple, log_plan) -> tuple[tuple, dict]:
    """The plan's causes (the node log's, then the failures') and the node log's VCs."""
    if log_plan is None:
        return tuple(dict.fromkeys(causes)), {}
    return tuple(dict.fromkeys(log_plan.causes + causes)), dict(log_plan.vcs)


#: Preset name (failures=NAME, conf/failures/NAME.yaml) -> its producer.
FAILURES = Registry({
    "none": Producer("No failures (the default): nodes change only as cluster.capacity says"),
    "exponential": Drawn("Node failures with exponential times to failure, one category (docs/failures.md)"),
    "weibull": Drawn("Node failures with Weibull times to failure: shape < 1, infant mortality; > 1, wear-out"),
    "lognormal": Drawn("Node failures with lognormal times to failure (sigma: the spread), mean-matched"),
    "llama3": Drawn("The Llama 3 405B pre-training run's interruptions: one per 50,677 GPU-hours, in the "
                    "report's 18 categories (docs/failures.md)"),
    "trace": Replayed("Failures replayed from a file: time,vc,node,category,repair_s (docs/failures.md)"),
}, what="failure model")


def failures_name(cfg: DictConfig) -> str:
    """The chosen preset (`none` where the group is absent)."""
    return "none" if value(cfg, "failures") is None else FAILURES.chosen(value(cfg, "failures.name"), "failures.name")


def failure_settings(cfg: DictConfig):
    """The chosen producer's checked settings (`failures.*` but its name)."""
    name = failures_name(cfg)
    conf = OmegaConf.to_container(cfg.failures, resolve=True) if value(cfg, "failures") is not None else {}
    conf.pop("name", None)
    settings = parse(FAILURES[name].Settings, conf, prefix="failures", owner=f"failures={name}")
    FAILURES[name].relations(settings)
    return settings


def check_failures_config(cfg: DictConfig) -> None:
    """Check the `failures` group and the `repair` group with it: their keys and values (one line
    naming a bad one)."""
    from raysim.run.repair import check_repair_config, repair_name
    from raysim.run.retire import check_retire_config

    drawn = FAILURES[failures_name(cfg)].kind == "model"
    check_repair_config(cfg, drawn)
    check_retire_config(cfg, drawn)
    settings = failure_settings(cfg)
    if drawn:
        repair_relations(settings, repair_name(cfg) == "pipeline")


def repair_relations(s: ModelSettings, pipeline: bool) -> None:
    """Who gives a drawn failure's repair time: the model (`repair_h`, `repair`, a category's
    `repair_h`) under repair=fixed, the pipeline alone under repair=pipeline (a model repair time set
    there would be ignored: refused)."""
    if not pipeline:
        for key in ("repair_h", "repair"):
            if getattr(s, key) is None:
                raise ConfigError(f"failures.{key}", "must be set (null only under repair=pipeline)")
        return
    for key in ("repair_h", "repair"):
        if getattr(s, key) is not None:
            raise ConfigError(f"failures.{key}", "repair=pipeline draws every repair (repair.auto_h, repair.manual_h, "
                              "...): leave it unset", getattr(s, key))
    for i, c in enumerate(s.categories):
        if c.repair_h is not None:
            raise ConfigError(f"failures.categories[{i}].repair_h", "repair=pipeline draws every repair: a category "
                              "may not set its own", c.repair_h)


def model_of(settings: ModelSettings) -> FailureModel:
    """The failure model a model's checked settings give."""
    categories = tuple(Category(c.name, c.share, c.kind, None if c.repair_h is None else c.repair_h * HOUR)
                       for c in settings.categories)
    return FailureModel(categories, node_mtbf_s=None if settings.node_mtbf_h is None else settings.node_mtbf_h * HOUR,
                        gpu_mtbf_s=None if settings.gpu_mtbf_h is None else settings.gpu_mtbf_h * HOUR,
                        distribution=settings.distribution,
                        shape=settings.shape if settings.distribution == "weibull" else 1.0,
                        repair_s=(settings.repair_h or 0.0) * HOUR, repair=settings.repair or "fixed",
                        sigma=settings.sigma if settings.distribution == "lognormal" else 1.0,
                        bad_fraction=settings.bad_fraction,
                        bad_multiplier=1.0 if settings.bad_multiplier is None else settings.bad_multiplier,
                        clock=settings.clock, diagnosis=settings.diagnosis, wrong_node=settings.wrong_node,
                        regen_s=None if settings.bad_regen_h is None else settings.bad_regen_h * HOUR,
                        regen_share=settings.bad_regen_share)


def failure_model(cfg: DictConfig) -> FailureModel:
    """The failure model of failures=exponential, weibull, lognormal or llama3."""
    return model_of(failure_settings(cfg))


def failure_plan(cfg: DictConfig, layout: dict, homes: tuple, jobs: dict, log_plan):
    """The run's capacity plan with failures (None under failures=none: `log_plan`, the node log's
    plan or None, stands): per VC, each node's failures merged with its node log events; the causes
    are the node log's, then the failure categories. `jobs`: trace jobs per VC of `layout`. Drawn
    failures are repaired as the `repair` group says and their nodes retired as the `retire` group
    says (its pipeline and policy, which only they take, are passed to them alone)."""
    from raysim.run.repair import pipeline
    from raysim.run.retire import retirement

    drawn = {key: v for key, v in (("pipeline", pipeline(cfg)), ("retire", retirement(cfg))) if v is not None}
    return FAILURES[failures_name(cfg)].plan(failure_settings(cfg), int(value(cfg, "seed")), layout, homes, jobs,
                                              log_plan, **drawn)
