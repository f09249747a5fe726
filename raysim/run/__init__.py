"""The run pipeline, read top-down.

`run(cfg, run_dir)` (below) turns a composed Hydra config into a run and owns its folder:
- `cluster.run_cluster`: a trace replay. It loads the trace and the cluster (`config`: trace,
  layout, GPU-type inputs, estimates, the RunSpec, and the policy's own `prepare` step, e.g.
  `lucid_inputs`), simulates every VC (`simulate`: VC groups, coordinator, result files) and
  writes the summary, plots and reports (`outputs`).
- `raysim.harvest.run.run_harvest`: an idle-node harvesting replay.
- `raysim.sharing.run.run_fgd`: the FGD placement ("inflation") experiment under GPU sharing.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from raysim.errors import ConfigError
from raysim.quota.settings import refuse_old_name


def run(cfg: DictConfig, run_dir: Path) -> dict:
    """Run the experiment described by `cfg`, writing every result into `run_dir`; return its summary."""
    refuse_old_name(cfg.keys())  # e.g. a `sharing:` key in an experiment file
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.mode == "harvest":
        from raysim.harvest.run import run_harvest

        return run_harvest(cfg, run_dir)
    if cfg.mode == "cluster":
        from raysim.run.cluster import run_cluster

        return run_cluster(cfg, run_dir)
    if cfg.mode == "fgd":
        from raysim.sharing.run import run_fgd

        return run_fgd(cfg, run_dir)
    if cfg.mode == "rounds":
        raise ConfigError("mode", "round-based policies run in cluster mode now: drop mode=rounds "
                          "(+experiment=gavel_trace, docs/gavel.md)", "rounds")
    raise ConfigError("mode", "must be one of cluster, harvest, fgd", cfg.mode)
