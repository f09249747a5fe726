"""Turns a composed config into a run and owns the run folder."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig


def run(cfg: DictConfig, run_dir: Path) -> dict:
    """Run the experiment described by `cfg`, writing every result into `run_dir`; return its summary."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.mode == "harvest":
        from raysim.harvest.run import run_harvest

        return run_harvest(cfg, run_dir)
    if cfg.mode == "cluster":
        from raysim.cluster_run import run_cluster

        return run_cluster(cfg, run_dir)
    raise ValueError(f"unknown mode {cfg.mode!r}: expected 'cluster' or 'harvest'")
