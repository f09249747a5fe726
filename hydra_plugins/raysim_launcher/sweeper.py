"""raysim's sweeper (conf/config.yaml's `hydra.sweeper`): Hydra's basic sweeper, composing each
job's config once instead of twice.

Hydra's BasicSweeper composes the config of every job of a batch before launching it (so that an
override that does not compose stops the sweep before any job runs), then its launcher composes
each config again to run the job: two compositions per job, each reading and merging every YAML
file of the run's config tree. This sweeper checks the batch the same way and keeps what it
composed; the launcher (Hydra's basic one, or raysim_ray) is handed each kept config on its first
request, as Hydra would have composed it then (`load_sweep_config` is deterministic: the sweep's
resolved values, such as `${now:...}`, come from the master config). At most KEPT configs are
kept at a time; the launcher composes the others itself. The batch's configs are composed in
processes forked from this one (raysim.forking), one per CPU or `hydra.launcher.processes`: composing
is a tenth of a second per job, all of it before the first job starts.

The sweeper wraps a BasicSweeper rather than subclassing it: Hydra's plugin scan executes Hydra's
own plugin modules again, so a BasicSweeper class imported before the scan is no longer the one
whose `__init__` names itself in `super(BasicSweeper, self)` (a subclass of the old one fails
there), whereas the wrapped one is made from the module as the scan left it.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules (see ray_tasks)."""

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.raysim_launcher.jobs import checked_processes

#: Job configs kept between the check and the launch at most (each takes ~0.2 MB of memory).
KEPT = 128


class ComposedConfigs:
    """A config loader that hands out the job configs composed for the sweep's check (`keep`), each
    once, and composes any other itself; everything else is the wrapped loader's."""

    def __init__(self, loader: Any):
        self.loader = loader
        self.kept: Dict[tuple, DictConfig] = {}

    def keep(self, master_config: DictConfig, batch: Sequence[Sequence[str]], processes: int) -> None:
        """Compose the job config of each overrides of `batch` (raising what composing the first that
        does not compose raises), in up to `processes` forked processes (raysim.forking), and keep
        them while fewer than KEPT are kept."""
        from raysim.forking import forked_map

        room = KEPT - len(self.kept)
        tasks = [(_composed, (self.loader, master_config, list(overrides), i < room)) for i, overrides in enumerate(batch)]
        for i, (overrides, config) in enumerate(zip(batch, forked_map(tasks, processes))):
            if config is None:  # it did not compose: compose it here, raising what Hydra raises
                config = self.loader.load_sweep_config(master_config, list(overrides))
            if i < room:
                self.kept[tuple(overrides)] = config

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: List[str]) -> DictConfig:
        config = self.kept.pop(tuple(sweep_overrides), None)
        return config if config is not None else self.loader.load_sweep_config(master_config, sweep_overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def __reduce__(self):
        return ComposedConfigs, (self.loader,)  # (a launcher that ships the context ships no kept config)


def _composed(loader: Any, master_config: DictConfig, sweep_overrides: List[str], keep: bool) -> Any:
    """The job config of `sweep_overrides` (True where it is not to be kept), or None where it does
    not compose (the error is raised again where the batch is checked: Hydra's errors do not all
    travel between processes)."""
    try:
        config = loader.load_sweep_config(master_config, sweep_overrides)
    except Exception:  # noqa: BLE001 - composed again by ComposedConfigs.keep, which raises it
        return None
    return config if keep else True


class ComposeOnceSweeper(Sweeper):
    """Hydra's BasicSweeper (same settings and batches) whose launcher runs the configs its batch
    check composed (see the module docs); with replicate.metric set, its batches are rounds of
    seeds, until each combination of the other overrides has a narrow enough interval of that
    metric (raysim.report.replicate)."""

    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Dict[str, str]] = None) -> None:
        from hydra._internal.core_plugins import basic_sweeper  # the module as Hydra's plugin scan left it

        super().__init__()
        self.basic = basic_sweeper.BasicSweeper(max_batch_size=max_batch_size, params=params)
        self.basic.validate_batch_is_legal = self.validate_batch_is_legal  # its check of each batch: ours
        self.configs: Optional[ComposedConfigs] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.configs = ComposedConfigs(hydra_context.config_loader)
        context = replace(hydra_context, config_loader=self.configs)
        self.basic.setup(hydra_context=context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> List[Sequence[JobReturn]]:
        from raysim.report.replicate import replicate_settings

        assert self.basic.config is not None
        section = OmegaConf.select(self.basic.config, "replicate", default=None)
        settings = replicate_settings(None if section is None else OmegaConf.to_container(section, resolve=True))
        if settings.metric is not None:
            self._replicate(settings)
        return self.basic.sweep(arguments)

    def _replicate(self, settings: Any) -> None:
        """Make the basic sweeper's batches those of adaptive replications (raysim.report.replicate):
        its combinations of the overrides are the groups, each batch a round of seeds."""
        from raysim.report.replicate import SeedRounds

        basic, state = self.basic, {}

        def is_done() -> bool:
            if "rounds" not in state:  # the first call: the basic sweeper has split the overrides
                combinations = [combo for batch in basic.overrides for combo in batch]
                state["rounds"] = SeedRounds(settings, combinations, basic.config.seed, basic.config.hydra.sweep.dir)
                state["batch"] = state["rounds"].first()
            else:
                state["batch"] = state["rounds"].next()
            return not state["batch"]

        basic.is_done = is_done
        basic.get_job_batch = lambda: state["batch"]

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.configs is not None and self.basic.config is not None
        processes = checked_processes(OmegaConf.select(self.basic.config, "hydra.launcher.processes", default=None))
        self.configs.keep(self.basic.config, batch, processes)


def register() -> None:
    """Make the sweeper known to Hydra (see ray_tasks.register)."""
    from hydra.core.plugins import Plugins

    name = f"{ComposeOnceSweeper.__module__}.{ComposeOnceSweeper.__name__}"
    plugins = Plugins.instance()
    if name not in plugins.class_name_to_class:
        plugins.register(ComposeOnceSweeper)

