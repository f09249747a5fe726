"""Adaptive replications (`replicate.*`, conf/config.yaml): a multirun (-m) with replicate.metric set
runs every combination of its other overrides (a *group*) with seeds seed, seed + 1, ... until the
95 % confidence interval of that metric of the cluster (raysim.report.replicas) is within
`replicate.target` of its mean, as AIReSim's adaptive runner does for its training time. Each
group starts with `min_seeds` runs; then, round after round, each group still short of the target
gets `step` more, never past `max_seeds`. Every round is one batch of the sweep's launcher (in-process
runs one per CPU; on Ray), its runs numbered on in the one multirun folder; the sweep ends when no
group needs more, and its summary (raysim.report.sweep) reports every metric's interval and each
group's outcome. raysim's sweeper (hydra_plugins/raysim_launcher/sweeper.py) asks `SeedRounds`
for each batch."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from raysim.errors import ConfigError
from raysim.report.describe import has_results, run_folders, run_overrides
from raysim.report.replicas import half_width, without_seed
from raysim.report.run_files import read_summary
from raysim.settings import parse, setting
from raysim.tables import plural

log = logging.getLogger(__name__)

#: The most seeds a group may be given (replicate.max_seeds).
MOST_SEEDS = 10_000


@dataclass(frozen=True)
class ReplicateSettings:
    """A multirun's adaptive replications (off while `metric` is null)."""

    metric: str | None = setting(None, "a numeric column of the runs' summary.csv (the cluster's row), e.g. avg_jct: "
                                       "add seeds until its 95 % interval is narrow enough; null: off")
    target: float = setting(0.05, "the interval's half-width at most this share of the mean", above=0, maximum=1)
    min_seeds: int = setting(3, "runs per group before the first check", minimum=2, maximum=MOST_SEEDS)
    max_seeds: int = setting(30, "runs per group at most (a group that has not reached the target by then stops "
                                 "there, as the sweep summary says)", minimum=2, maximum=MOST_SEEDS)
    step: int = setting(1, "seeds added per round to each group short of the target (1: it stops at the first "
                           "count that meets it; more: rounds keep more CPUs busy)", minimum=1, maximum=MOST_SEEDS)

    def __post_init__(self):
        if self.target >= 1:
            raise ConfigError("replicate.target", "must be below 1 (a share of the mean)", self.target)
        if self.min_seeds > self.max_seeds:
            raise ConfigError("replicate.min_seeds", f"must be at most replicate.max_seeds ({self.max_seeds})",
                              self.min_seeds)


def replicate_settings(section: Mapping | None) -> ReplicateSettings:
    """The `replicate:` section (plain values) checked: a bad value, or a setting given while
    replicate.metric is null (it would do nothing), is a ConfigError naming it."""
    settings = ReplicateSettings() if section is None else parse(ReplicateSettings, section, prefix="replicate",
                                                                 owner="replicate")
    if settings.metric is None:
        for f in fields(ReplicateSettings):
            if getattr(settings, f.name) != f.default:
                raise ConfigError(f"replicate.{f.name}", "set with replicate.metric null: without a metric nothing "
                                                         "is replicated", getattr(settings, f.name))
    return settings


def cluster_value(run: Path, metric: str) -> float:
    """`metric` of the cluster's row of a run's summary.csv; a metric the summary lacks (or holds as
    text) is a ConfigError listing the ones it has."""
    summary = read_summary(run / "summary.csv")
    numeric = [c for c in summary.columns if c != "vc" and pd.api.types.is_numeric_dtype(summary[c])]
    if metric not in numeric:
        raise ConfigError("replicate.metric", f"not a numeric column of the runs' summary.csv (one of: "
                                              f"{', '.join(numeric)})", metric)
    return float(summary.loc[summary["vc"] == "all", metric].iloc[0])


class SeedRounds:
    """The batches of an adaptive multirun: `first` (min_seeds per group), then `next` after each
    batch has run, until no group needs more (an empty batch)."""

    def __init__(self, settings: ReplicateSettings, combinations, base_seed: int, sweep_dir):
        self.settings, self.base_seed, self.sweep_dir = settings, int(base_seed), Path(sweep_dir)
        seeds = {o.split("=", 1)[1] for combo in combinations for o in combo if o.lstrip("+~").startswith("seed=")}
        if len(seeds) > 1:
            raise ConfigError("seed", "swept while replicate.metric chooses the seeds (seed, seed + 1, ...): give "
                                      "one seed or none", ",".join(sorted(seeds)))
        self.groups = list(dict.fromkeys(without_seed(combo) for combo in combinations))
        self.launched = {group: 0 for group in self.groups}

    def first(self) -> list[list[str]]:
        return self._batch({group: self.settings.min_seeds for group in self.groups})

    def next(self) -> list[list[str]]:
        """The next round: `step` more seeds (at most up to max_seeds) for each group whose interval
        of the metric over its runs with results is not yet within the target."""
        values = self.values()
        more, short = {}, 0
        for group in self.groups:
            if not self.within(values.get(group, [])):
                short += 1
                room = self.settings.max_seeds - self.launched[group]
                if room > 0:
                    more[group] = min(self.settings.step, room)
        log.info(f"replicate: {short} of {plural(len(self.groups), 'group')} short of {self.settings.metric} within "
                 f"{self.settings.target:.2%} of the mean" + (f"; {plural(sum(more.values()), 'more run')}" if more
                                                              else "; max_seeds reached" if short else ""))
        return self._batch(more)

    def within(self, values: list[float]) -> bool:
        """Whether the 95 % interval of the mean of `values` is within the target share of the mean."""
        if len(values) < 2:
            return False
        mean = sum(values) / len(values)
        hw = half_width(values)
        return hw == 0 if mean == 0 else hw / abs(mean) <= self.settings.target

    def values(self) -> dict[tuple[str, ...], list[float]]:
        """The metric of each group's runs that have results so far."""
        out: dict[tuple[str, ...], list[float]] = {}
        for run in run_folders(self.sweep_dir):
            if has_results(run):
                group = without_seed(run_overrides(run))
                if group in self.launched:
                    out.setdefault(group, []).append(cluster_value(run, self.settings.metric))
        return out

    def _batch(self, counts: dict) -> list[list[str]]:
        batch = []
        for group, count in counts.items():
            start = self.base_seed + self.launched[group]
            batch += [[*group, f"seed={start + k}"] for k in range(count)]
            self.launched[group] += count
        return batch
