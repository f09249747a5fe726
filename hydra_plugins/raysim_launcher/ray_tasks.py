"""`hydra/launcher=raysim_ray`: each job of a multirun is a Ray task, so jobs run in parallel on one
Ray instance (local, or `hydra.launcher.address`). Hydra only loads launchers from the
`hydra_plugins` package, hence this module's place.

What a job prints (its summary table, its results path) is captured in the task and printed by the
driver, whole, as each job finishes: Ray's streaming of worker output would prefix every line and
fold identical lines of parallel jobs together. A job that stops on a user error returns a
`raysim.errors.Failure`; the driver records it, and `raysim` exits with status 2 after the sweep.

On a cluster (`hydra.launcher.address`) each task takes `num_cpus` of whichever node has them free,
so a sweep runs one job per free CPU of every node. A task runs its job in a scratch folder of its
node and returns the run folder's files, which the driver writes into the sweep folder (gather.py):
the sweep folder need not be shared with the worker nodes. Each run's trace_report.json records
the node it ran on (`ran_on`), and the driver logs it.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules, and dataclasses cannot resolve string annotations then."""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, configure_log, setup_globals
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.raysim_launcher.gather import run_in_scratch
from hydra_plugins.raysim_launcher.jobs import SweepLauncher

log = logging.getLogger(__name__)


@dataclass
class RayTasksLauncherConf:
    _target_: str = "hydra_plugins.raysim_launcher.ray_tasks.RayTasksLauncher"
    address: Optional[str] = None  # null: start (or reuse) a local Ray instance
    num_cpus: float = 1.0  # CPUs reserved by each job's task


ConfigStore.instance().store(group="hydra/launcher", name="raysim_ray", node=RayTasksLauncherConf,
                             provider="raysim")


def _run(hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig):
    """(the job's JobReturn, what it printed, its run folder's files: gather.RunFiles): its output
    goes back to the driver in one piece."""
    from raysim.resolvers import register_resolvers

    register_resolvers()  # raysim's config resolvers, in this worker
    return run_in_scratch(hydra_context, task_function, config)


class RayTasksLauncher(SweepLauncher):
    def __init__(self, address: Optional[str] = None, num_cpus: float = 1.0) -> None:
        super().__init__()
        self.address, self.num_cpus = address, num_cpus

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray

        from raysim.runtime.ray_backend import ensure_ray

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        ensure_ray(self.address)
        remote = ray.remote(num_cpus=self.num_cpus, max_retries=0)(_run)
        log.info(f"Launching {len(job_overrides)} jobs as Ray tasks")
        # (tasks may run in another working directory: the sweep folder is made absolute)
        configs, labels = self.job_configs(job_overrides, initial_job_idx, sweep_dir=str(sweep_dir))
        for label in labels:
            log.info(f"\t{label}")
        # (a finished job's ref is dropped once its files are written: Ray then frees them)
        pending = {remote.remote(self.hydra_context, self.task_function, cfg): i for i, cfg in enumerate(configs)}
        results: list[Any] = [None] * len(configs)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                ret, printed, files = ray.get(ref)
                run_dir = files.write_into(sweep_dir)
                log.info(f"#{configs[i].hydra.job.num} ran on Ray node {files.ran_on['ray_node']} "
                         f"({files.ran_on['host']}, {files.ran_on['address']}): {len(files.files)} files "
                         f"gathered into {run_dir}")
                results[i] = ret
                self.report(labels[i], ret, printed)
        return results


def register() -> None:
    """Make the launcher known even when Hydra's scan of hydra_plugins cannot see this module
    (editable installs hide it behind an import hook). Call before Hydra starts, not at import:
    Hydra's scan imports this module while it builds its registry."""
    from hydra.core.plugins import Plugins

    name = f"{RayTasksLauncher.__module__}.{RayTasksLauncher.__name__}"
    plugins = Plugins.instance()
    if name not in plugins.class_name_to_class:
        plugins.register(RayTasksLauncher)
