"""What was run, in words, without plotting: a run's overrides and semantics mode (from its
.hydra folder), the line a title or a page heading says of it, and the time axis a series is drawn on.
Used by the PNG plots (raysim.report.plots), the HTML pages (raysim.report.page) and the run
pipeline, none of which need matplotlib for it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from raysim.errors import failed_run
from raysim.yamlfile import read_yaml

#: (longest span in seconds, unit name, seconds per unit) for time axes
TIME_UNITS = ((2 * 3600, "minutes", 60.0), (3 * 86400, "hours", 3600.0), (float("inf"), "days", 86400.0))
#: Characters of overrides a title shows, at most (longer lists end in "...").
OVERRIDES_WIDTH = 110


def time_axis(times) -> tuple[float, float, str]:
    """(origin, seconds per unit, axis label) for times in seconds: the axis starts at the earliest
    time and counts minutes, hours or days, whichever suits the span."""
    times = np.asarray(times, dtype=float)
    if not len(times):
        return 0.0, 86400.0, "simulated time (days)"
    first, span = float(times.min()), float(times.max() - times.min())
    name, per = next((name, per) for most, name, per in TIME_UNITS if span <= most)
    if not first:
        return first, per, f"simulated time ({name})"
    start = f"day {first / 86400:.1f} of the trace" if first >= 86400 else f"t = {first:,.0f} s"
    return first, per, f"simulated time ({name} since {start})"


def run_overrides(run_dir) -> list[str]:
    """A run's command-line overrides (Hydra's hydra.overrides.task, from the run folder's
    .hydra/overrides.yaml), hydra.* settings left out; [] for a folder without one."""
    items = read_yaml(Path(run_dir) / ".hydra" / "overrides.yaml", [])
    return [o for o in items if not o.startswith("hydra.")]


def run_compat(run_dir) -> str | None:
    """A run's semantics mode (sim.compat, from its .hydra/config.yaml); None without one."""
    saved = read_yaml(Path(run_dir) / ".hydra" / "config.yaml", {})
    return (saved.get("sim") or {}).get("compat")


def resolved_config(config: dict) -> dict:
    """A run's saved config (.hydra/config.yaml) with its interpolations resolved (e.g.
    ``${raysim_path:traces/venus_synth/maintenance.csv}`` as the path it names); as saved where one
    does not resolve (a path of a project folder that is gone, a resolver of another program)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from raysim.resolvers import register_resolvers

    register_resolvers()
    try:
        return OmegaConf.to_container(OmegaConf.create(config), resolve=True)
    except OmegaConfBaseException:
        return config


def run_description(what: str, compat: str | None = None, overrides=()) -> str:
    """What a plot's title says of the run(s) it shows: `what` (e.g. "venus_synth: fifo / consolidate"),
    the semantics mode ("compat=lucid") and, on a second line, the command-line overrides,
    shortened to OVERRIDES_WIDTH characters."""
    head = f"{what}, compat={compat}" if compat else what
    given = " ".join(overrides)
    return head + ("\n" + textwrap.shorten(given, OVERRIDES_WIDTH, placeholder=" ...") if given else "")


def run_labels(run_dirs: list[Path]) -> list[str]:
    """Label each run by the overrides that differ between the runs (e.g. "policy=srtf")."""
    common = set(common_overrides(run_dirs))
    labels = [",".join(o for o in run_overrides(run) if o not in common) for run in run_dirs]
    return [label or run.name for label, run in zip(labels, run_dirs)]


def common_overrides(run_dirs: list[Path]) -> list[str]:
    """The command-line overrides every run of the sweep has (the first run's order)."""
    overrides = [run_overrides(run) for run in run_dirs]
    return [o for o in overrides[0] if all(o in items for items in overrides[1:])] if overrides else []


#: What a finished run leaves in its folder, by kind of run (trace replay, FGD inflation).
SUMMARY_FILES = ("summary.csv", "fgd_summary.csv")


def run_folders(sweep_dir) -> list[Path]:
    """A multirun's run folders (Hydra's numbered folders), in number order."""
    folders = [p for p in Path(sweep_dir).iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(folders, key=lambda p: int(p.name))


def has_results(run_dir: Path) -> bool:
    """Whether a run folder holds its summary (SUMMARY_FILES) and no failed.json: a run that failed,
    was stopped or is still running has none (a run that failed may have written some files)."""
    return any((run_dir / name).exists() for name in SUMMARY_FILES) and failed_run(run_dir) is None


def why_no_results(run_dir: Path) -> str:
    """Why a run folder has no results (`has_results` False), in one line: its failed.json's reason,
    else that it has no summary."""
    return failed_run(run_dir) or "no summary.csv: the run failed, was stopped or is still running"
