"""`hydra/launcher=raysim_local` (the default): a multirun's in-process runs, several at a time, each
in a process forked from this one once the sweep is composed (raysim.forking), so a sweep of short
runs uses every CPU without paying the imports again per run.

Jobs run in parallel only where that is safe and gives the same results: every job of the batch
runs in-process (`runtime=local`, or the FGD experiment), the system is Linux (where forking a
process that holds numpy, Arrow and Hydra is safe; macOS discourages it, Windows cannot), and more
than one process is asked for. Otherwise (a job on Ray, whose runs share the Ray the first one starts;
`hydra.launcher.processes=1`) the jobs run one after another in this process, exactly as Hydra's
basic launcher runs them. A run's results do not depend on which process ran it (each is seeded and
reads only its own config); folders are numbered by job as always.

What a job prints (its summary table, its results path) is captured in its process and printed
here, whole, as each job finishes; its log lines stream as they are written (to its run folder's
raysim.log as always). A job that stops on a user error returns a `raysim.errors.Failure`, which is
recorded here, and `raysim` exits with status 2 after the sweep. A job that raised anything else
ends the sweep with that error and the job's traceback.

Each process holds one run's trace and state at a time: a sweep over a large trace needs
`processes` times one run's memory (`hydra.launcher.processes=N` caps it). Jobs are composed and
launched at most the sweeper's KEPT at a time, so a large sweep holds no more configs than that.

Its settings are conf/hydra/launcher/raysim_local.yaml (a file of raysim's config tree, so that a
config composed without raysim's command line, e.g. in a test, finds it).

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules (see ray_tasks)."""

import logging
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from omegaconf import DictConfig

from hydra_plugins.raysim_launcher.jobs import SweepLauncher, checked_processes, run_captured
from hydra_plugins.raysim_launcher.sweeper import KEPT
from raysim.forking import forked_as_done, usable_cpus

log = logging.getLogger(__name__)


def runs_in_process(config: DictConfig) -> bool:
    """Whether a job's run simulates in its own process (no Ray): the FGD experiment, or a cluster
    run with runtime=local."""
    if config.get("mode") == "fgd":
        return True
    runtime = config.get("runtime")
    return runtime is not None and runtime.get("name") == "local"


def _run_one(hydra_context, task_function, config: DictConfig):
    """Run one job (in a forked process): (its JobReturn, what it printed)."""
    import traceback

    ret, printed = run_captured(hydra_context, task_function, config)
    if ret.status == JobStatus.FAILED:  # its traceback does not travel: send it as text
        error = ret._return_value
        text = "".join(traceback.format_exception(error))
        ret.return_value = JobFailed(f"job {config.hydra.job.num} ({' '.join(ret.overrides or [])}) failed in "
                                     f"its process:\n{text}")
    return ret, printed


class JobFailed(RuntimeError):
    """A job of a parallel sweep raised an error that is not a user error (its traceback as text)."""


class LocalProcessesLauncher(SweepLauncher):
    def __init__(self, processes: Optional[int] = None) -> None:
        super().__init__()
        self.processes = processes  # (checked by launch: an error raised here reaches the user wrapped)

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        checked_processes(self.processes)
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        runs: List[JobReturn] = []
        for start in range(0, len(job_overrides), KEPT):  # (at most KEPT composed configs held at a time)
            runs += self._launch_part(job_overrides[start:start + KEPT], initial_job_idx + start)
        return runs

    def _launch_part(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> List[JobReturn]:
        configs, labels = self.job_configs(job_overrides, initial_job_idx)
        processes = self._processes(configs)
        if processes == 1:
            log.info(f"Launching {len(configs)} jobs locally, one after another")
        else:
            log.info(f"Launching {len(configs)} jobs locally, {processes} at a time "
                     "(hydra.launcher.processes=1: one after another)")
        for label in labels:
            log.info(f"\t{label}")
        if processes == 1:
            return self._one_after_another(configs)
        return self._in_processes(configs, labels, processes)

    def _processes(self, configs: List[DictConfig]) -> int:
        """How many jobs run at a time: 1 unless every job runs in-process and the system is Linux."""
        wanted = self.processes if self.processes is not None else usable_cpus()  # (checked by launch)
        if wanted == 1 or len(configs) == 1 or not sys.platform.startswith("linux"):
            return 1
        if not all(runs_in_process(cfg) for cfg in configs):
            return 1  # runs on Ray share the one Ray this process starts
        return min(wanted, len(configs))

    def _one_after_another(self, configs: List[DictConfig]) -> List[JobReturn]:
        """Hydra's basic launcher's loop, on configs composed already."""
        assert self.config is not None
        runs = []
        for cfg in configs:
            runs.append(run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=cfg,
                                job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir"))
            configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        return runs

    def _in_processes(self, configs: List[DictConfig], labels: List[str], processes: int) -> List[JobReturn]:
        results: List[Any] = [None] * len(configs)
        tasks = [(_run_one, (self.hydra_context, self.task_function, cfg)) for cfg in configs]
        for i, (ret, printed) in forked_as_done(tasks, processes):
            results[i] = ret
            self.report(labels[i], ret, printed)
        return results


def register() -> None:
    """Make the launcher known to Hydra (see ray_tasks.register)."""
    from hydra.core.plugins import Plugins

    name = f"{LocalProcessesLauncher.__module__}.{LocalProcessesLauncher.__name__}"
    plugins = Plugins.instance()
    if name not in plugins.class_name_to_class:
        plugins.register(LocalProcessesLauncher)
