"""Plots of a harvest replay (matplotlib object API on the Agg canvas: no pyplot, no global state)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from raysim.harvest.engine import HarvestResult


def plot_nodes(res: HarvestResult, path: Path) -> None:
    """Idle pool size and nodes allocated to tasks over time (top), tasks running/active (bottom)."""
    st = res.steps
    hours = st["evtTime"] / 3600
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    top.step(hours, st["nNd"], where="post", lw=0.8, label="idle pool")
    top.fill_between(hours, st["nNrun"], step="post", alpha=0.5, label="allocated to tasks")
    top.set_ylabel("nodes")
    top.legend(loc="upper right")
    done = np.sort(res.finished[~np.isnan(res.finished)]) / 3600
    bottom.step(hours, st["nJob"], where="post", lw=0.8, label="active tasks")
    bottom.step(hours, st["nJrun"], where="post", lw=0.8, label="running tasks")
    bottom.plot(done, np.zeros_like(done), "|", ms=8, color="k", label="completions")
    bottom.set_ylabel("tasks")
    bottom.set_xlabel(f"hours since {str(np.datetime64(res.t0_ns, 'ns'))[:19]}")
    bottom.legend(loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
