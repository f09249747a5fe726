"""A sweep job run as a Ray task on any node of a cluster, its run folder gathered by the driver.

The task runs the job in a scratch folder of its node's temporary directory (a worker node's disk
is not the driver's), records in the run's trace_report.json where it ran (`ran_on`: Ray node id,
host name, node address, scratch folder), and returns every file of its run folder; the driver
writes them into the sweep folder, where the sweep summary reads them. The run's
.hydra/hydra.yaml is written again naming the sweep folder, as a run written there directly
names it. The scratch folder is removed once the files are read.

No `from __future__ import annotations` here: Hydra's plugin scan executes this module without
registering it in sys.modules (see ray_tasks)."""

import json
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Tuple

from hydra.core.utils import JobReturn
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from hydra_plugins.raysim_launcher.jobs import run_captured


@dataclass
class RunFiles:
    """A job's run folder as it left its node: `folder` (relative to the sweep folder), `scratch`
    (where it ran, on its node), `ran_on` (trace_report.json's record) and `files` (path relative
    to the run folder -> bytes)."""

    folder: str
    scratch: str
    ran_on: dict
    files: Dict[str, bytes] = field(default_factory=dict)

    def write_into(self, sweep_dir: Path) -> Path:
        """Write the files into `sweep_dir`/folder; return that run folder."""
        run_dir = sweep_dir / self.folder
        for name, data in self.files.items():
            path = run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return run_dir


def where_am_i(folder: str) -> dict:
    """This process's Ray node id, host name and node address, and the folder it runs in."""
    import ray

    return {"ray_node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
            "address": ray.util.get_node_ip_address(), "folder": folder}


def run_in_scratch(hydra_context: HydraContext, task_function: TaskFunction,
                   config: DictConfig) -> Tuple[JobReturn, str, RunFiles]:
    """Run one job of a sweep in a scratch folder on this node: (its JobReturn, what it printed,
    its run folder's files). `config`'s hydra.sweep.dir is the driver's sweep folder."""
    sweep_dir = str(config.hydra.sweep.dir)
    scratch = tempfile.mkdtemp(prefix="raysim-job-")
    try:
        with open_dict(config):
            config.hydra.sweep.dir = scratch
        ret, printed = run_captured(hydra_context, task_function, config)
        run_dir = Path(str(ret.hydra_cfg.hydra.runtime.output_dir))
        folder = str(run_dir.relative_to(scratch))
        ran_on = where_am_i(str(run_dir))
        _record(run_dir / "trace_report.json", ran_on)
        _name_sweep_dir(ret, run_dir, Path(sweep_dir) / folder, sweep_dir)
        files = {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}
        return ret, printed.replace(str(run_dir), str(Path(sweep_dir) / folder)), RunFiles(folder, str(run_dir),
                                                                                          ran_on, files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _record(report: Path, ran_on: dict) -> None:
    """Add `ran_on` to the run's trace_report.json (a run that stopped before writing one has none)."""
    if report.exists():
        data = json.loads(report.read_text())
        data["ran_on"] = ran_on
        report.write_text(json.dumps(data, indent=2))


def _name_sweep_dir(ret: JobReturn, run_dir: Path, gathered: Path, sweep_dir: str) -> None:
    """The job's Hydra config (returned, and its .hydra/hydra.yaml) naming the folder it is gathered
    into instead of the scratch folder it ran in."""
    hydra_cfg: Optional[DictConfig] = ret.hydra_cfg
    assert hydra_cfg is not None
    for node, key, value in ((hydra_cfg.hydra.sweep, "dir", sweep_dir), (hydra_cfg.hydra.runtime, "output_dir",
                                                                          str(gathered))):
        with read_write(node), open_dict(node):  # (as Hydra's run_job sets output_dir)
            node[key] = value
    saved = run_dir / str(hydra_cfg.hydra.output_subdir) / "hydra.yaml"
    if hydra_cfg.hydra.output_subdir is not None and saved.exists():
        saved.write_text(OmegaConf.to_yaml(hydra_cfg))
