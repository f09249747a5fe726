"""The `report.*` settings of a trace replay (conf/config.yaml), declared once (raysim.settings):
which pages, plots and extra result files a run writes (docs/outputs.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from raysim.errors import ConfigError
from raysim.settings import parse, setting

#: report.plots: which PNG plots are written (the HTML pages have their own charts either way)
PLOTS = ("auto", "run", "sweep", "none")


def _span(raw, key: str) -> tuple[float, float]:
    """[t0, t1] as two finite numbers with t0 < t1."""
    if isinstance(raw, (str, bytes, Mapping)) or not hasattr(raw, "__len__") or len(raw) != 2:
        raise ConfigError(key, "must be [t0, t1] (seconds on the trace clock) or null", raw)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in raw):
        raise ConfigError(key, "must be two numbers [t0, t1] (seconds on the trace clock)", list(raw))
    t0, t1 = float(raw[0]), float(raw[1])
    if not t0 < t1:
        raise ConfigError(key, "t0 must be before t1", list(raw))
    return t0, t1


@dataclass(frozen=True)
class ReportSettings:
    """What a run writes besides its tables and summaries."""

    html: bool = setting(True, "report.html: one self-contained page of the run (and of a sweep), opens in any "
                               "browser offline")
    plots: str = setting("auto", "PNG plots: run (each run's and the sweep's), sweep (the sweep's comparison "
                                 "only), none, or auto (run alone, sweep in a multirun)", choices=PLOTS)
    out_jobs: bool = setting(True, "out_jobs.csv: every job in Batsim's job table (evalys and Batsim users' "
                                   "scripts read it)")
    timeline: bool = setting(False, "timeline.json: a per-job timeline in Chrome's trace event format (Perfetto, "
                                    "chrome://tracing)")
    timeline_max_jobs: int = setting(20000, "the timeline's jobs at most (those that start first); the run logs "
                                            "how many were left out", minimum=1)
    timeline_range: object | None = setting(None, "[t0, t1]: only jobs that ran in this span (seconds on the trace "
                                           "clock); null: the whole run", check=_span, what="[t0, t1]")

    def run_plots(self, multirun: bool) -> bool:
        """Whether a run writes its own PNG plots (`multirun`: it is one job of a sweep)."""
        return self.plots == "run" or (self.plots == "auto" and not multirun)

    def sweep_plots(self) -> bool:
        """Whether a sweep writes its comparison PNG plots."""
        return self.plots != "none"


def report_settings(section: Mapping | None) -> ReportSettings:
    """The `report:` section (plain values) checked into ReportSettings; a bad value is a ConfigError
    naming its key (one line). No section: the defaults."""
    return ReportSettings() if section is None else parse(ReportSettings, section, prefix="report", owner="report")
