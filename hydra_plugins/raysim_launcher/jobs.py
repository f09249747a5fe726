"""What raysim's two parallel launchers share (processes.py, ray_tasks.py): Hydra's launcher state,
each job's config composed and numbered, a job run with its printed output captured, and what a
finished job printed and returned reported in the driver.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules (see ray_tasks)."""

import sys
from typing import Any, List, Optional, Sequence, Tuple

from hydra.core.utils import JobReturn, JobStatus, filter_overrides, run_job
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

from raysim.errors import ConfigError
from raysim.forking import usable_cpus


def checked_processes(value: Any) -> int:
    """How many processes `hydra.launcher.processes` asks for: `value` (a whole number from 1 to the
    CPUs this process may use) or, for None, one per usable CPU; any other value is a ConfigError."""
    if value is None:
        return usable_cpus()
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= usable_cpus():
        raise ConfigError("hydra.launcher.processes", "must be a whole number from 1 to the "
                          f"{usable_cpus()} CPUs this process may use, or null (one per CPU)", value)
    return value


def run_captured(hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> Tuple[JobReturn, str]:
    """Run one job of a sweep: (its JobReturn, what it printed), its prints kept to be printed whole
    by the driver (its log lines still stream: run_job set them up)."""
    import contextlib
    import io

    out = io.StringIO()

    def task(cfg: DictConfig) -> Any:
        with contextlib.redirect_stdout(out):
            return task_function(cfg)

    ret = run_job(hydra_context=hydra_context, task_function=task, config=config,
                  job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
    return ret, out.getvalue()


class SweepLauncher(Launcher):
    """A launcher whose jobs run elsewhere (other processes, Ray tasks) and report back here."""

    def __init__(self) -> None:
        self.config: Optional[DictConfig] = None
        self.task_function: Optional[TaskFunction] = None
        self.hydra_context: Optional[HydraContext] = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def job_configs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int,
                    sweep_dir: Optional[str] = None) -> Tuple[List[DictConfig], List[str]]:
        """Each job's config (numbered from `initial_job_idx`; `sweep_dir`: its sweep folder, for
        jobs that run in another working directory) and its label, `#N : overrides`."""
        assert self.config is not None and self.hydra_context is not None
        configs, labels = [], []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            labels.append(f"#{idx} : {' '.join(filter_overrides(overrides))}")
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                cfg.hydra.job.id = idx
                cfg.hydra.job.num = idx
                if sweep_dir is not None:
                    cfg.hydra.sweep.dir = sweep_dir
            configs.append(cfg)
        return configs, labels

    @staticmethod
    def report(label: str, ret: JobReturn, printed: str) -> None:
        """A finished job: what it printed, whole, under its label; its user error recorded (raysim
        exits with status 2 after the sweep)."""
        from raysim.errors import Failure, record_failure

        if printed:
            sys.stdout.write(f"{label}\n{printed}" + ("" if printed.endswith("\n") else "\n"))
            sys.stdout.flush()
        if ret.status == JobStatus.COMPLETED and isinstance(ret.return_value, Failure):
            record_failure(ret.return_value)
