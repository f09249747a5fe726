"""The `report.*` settings of a trace replay (conf/config.yaml), checked once into a typed object:
which pages, plots and extra result files a run writes (docs/outputs.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig

from raysim.errors import ConfigError
from raysim.run.values import boolean, choice, integer, value

#: report.plots: which PNG plots are written (the HTML pages have their own charts either way)
PLOTS = ("auto", "run", "sweep", "none")


@dataclass(frozen=True)
class ReportSettings:
    """What a run writes besides its tables and summaries."""

    #: report.html, one self-contained page of the run (raysim.report.run_page)
    html: bool = True
    #: PNG plots: run (every run writes its own, a sweep its comparison too), sweep (a sweep's
    #: comparison only, no per-run PNGs), none, or auto (run for one run, sweep in a multirun)
    plots: str = "auto"
    #: out_jobs.csv, the jobs in Batsim's job table (raysim.report.batsim)
    out_jobs: bool = True
    #: timeline.json, the per-job timeline in Chrome's trace event format (raysim.report.timeline)
    timeline: bool = False
    #: the timeline's jobs at most (those that start first)
    timeline_max_jobs: int = 20000
    #: (t0, t1): only jobs that ran in this span (seconds on the trace clock); None: the whole run
    timeline_range: tuple[float, float] | None = None

    def run_plots(self, multirun: bool) -> bool:
        """Whether a run writes its own PNG plots (`multirun`: it is one job of a sweep)."""
        return self.plots == "run" or (self.plots == "auto" and not multirun)

    def sweep_plots(self) -> bool:
        """Whether a sweep writes its comparison PNG plots."""
        return self.plots != "none"


def report_settings(cfg: DictConfig) -> ReportSettings:
    """The run's `report.*` settings; a bad value is a ConfigError naming its key (one line). A
    config without a `report` section gets the defaults."""
    if value(cfg, "report") is None:
        return ReportSettings()
    return ReportSettings(html=boolean(cfg, "report.html"), plots=choice(cfg, "report.plots", PLOTS),
                          out_jobs=boolean(cfg, "report.out_jobs"), timeline=boolean(cfg, "report.timeline"),
                          timeline_max_jobs=integer(cfg, "report.timeline_max_jobs", minimum=1),
                          timeline_range=_span(value(cfg, "report.timeline_range")))


def _span(raw) -> tuple[float, float] | None:
    """[t0, t1] as two finite numbers with t0 < t1, or None."""
    if raw is None:
        return None
    key = "report.timeline_range"
    if not isinstance(raw, (list, tuple, ListConfig)) or len(raw) != 2:
        raise ConfigError(key, "must be [t0, t1] (seconds on the trace clock) or null", raw)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in raw):
        raise ConfigError(key, "must be two numbers [t0, t1] (seconds on the trace clock)", list(raw))
    t0, t1 = float(raw[0]), float(raw[1])
    if not t0 < t1:
        raise ConfigError(key, "t0 must be before t1", list(raw))
    return t0, t1
