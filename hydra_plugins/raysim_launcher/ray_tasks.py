"""`hydra/launcher=raysim_ray`: each job of a multirun is a Ray task, so jobs run in parallel on one
Ray instance (local, or `hydra.launcher.address`). Hydra only loads launchers from the
`hydra_plugins` package, hence this module's place.

What a job prints (its summary table, its results path) is captured in the task and printed by the
driver, whole, as each job finishes: Ray's streaming of worker output would prefix every line and
fold identical lines of parallel jobs together. A job that stops on a user error returns a
`raysim.errors.Failure`; the driver records it, and `raysim` exits with status 2 after the sweep.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules, and dataclasses cannot resolve string annotations then."""

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


@dataclass
class RayTasksLauncherConf:
    _target_: str = "hydra_plugins.raysim_launcher.ray_tasks.RayTasksLauncher"
    address: Optional[str] = None  # null: start (or reuse) a local Ray instance
    num_cpus: float = 1.0  # CPUs reserved by each job's task


ConfigStore.instance().store(group="hydra/launcher", name="raysim_ray", node=RayTasksLauncherConf,
                             provider="raysim")


def _run(hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig):
    """(the job's JobReturn, what it printed): its output goes back to the driver in one piece."""
    import contextlib
    import io

    from raysim.resolvers import register_resolvers

    register_resolvers()  # raysim's config resolvers, in this worker

    out = io.StringIO()

    def task(cfg: DictConfig) -> Any:  # only the task's prints: its log lines still stream (run_job set them up)
        with contextlib.redirect_stdout(out):
            return task_function(cfg)

    ret = run_job(hydra_context=hydra_context, task_function=task, config=config,
                  job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
    return ret, out.getvalue()


class RayTasksLauncher(Launcher):
    def __init__(self, address: Optional[str] = None, num_cpus: float = 1.0) -> None:
        self.address, self.num_cpus = address, num_cpus
        self.config: Optional[DictConfig] = None
        self.task_function: Optional[TaskFunction] = None
        self.hydra_context: Optional[HydraContext] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray

        from raysim.errors import Failure, record_failure
        from raysim.runtime.ray_backend import ensure_ray

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        ensure_ray(self.address)
        remote = ray.remote(num_cpus=self.num_cpus, max_retries=0)(_run)
        log.info(f"Launching {len(job_overrides)} jobs as Ray tasks")
        refs: list[Any] = []
        labels: list[str] = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            labels.append(f"#{idx} : {' '.join(filter_overrides(overrides))}")
            log.info(f"\t{labels[-1]}")
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                cfg.hydra.job.id = idx
                cfg.hydra.job.num = idx
                cfg.hydra.sweep.dir = str(sweep_dir)  # tasks may run in another working directory
            refs.append(remote.remote(self.hydra_context, self.task_function, cfg))
        results: list[Any] = [None] * len(refs)
        pending = {ref: i for i, ref in enumerate(refs)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                ret, printed = ray.get(ref)
                results[i] = ret
                if printed:
                    sys.stdout.write(f"{labels[i]}\n{printed}" + ("" if printed.endswith("\n") else "\n"))
                    sys.stdout.flush()
                if ret.status == JobStatus.COMPLETED and isinstance(ret.return_value, Failure):
                    record_failure(ret.return_value)
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
