"""Resource profiles: Driple-style burst/idle/level descriptions of how a job uses each resource.

Driple (SIGMETRICS'22) describes a training job's use of a resource by its burst duration B, idle
duration I and burst level P (percent of the resource while bursting); the duty cycle is B/(B+I)
and the mean use P x B/(B+I). raysim's traces carry only means, so profiles are derived by a rule:

- Resources: ``gpu`` (trace column gpu_util, the share of time a kernel runs) and ``membw``
  (gmem_util, the share of time the memory controller is busy). Network TX/RX are not in the
  traces and are left out. The memory footprint (gmem, MB) is a capacity, kept as ``memory_mb``.
- Level and duty: both counters are busy-time fractions (nvidia-smi samples whether the GPU, or
  its memory controller, was busy), so while a job bursts the counter reads 100 % and between
  bursts (data loading, host work, communication) 0 %: P = 100 and duty = mean / 100.
- Period B + I: one training iteration, batchsize / speed seconds (speed: samples per second of
  the single-job profile); DEFAULT_PERIOD_S when the speed is unknown.

Workload numbers missing in the trace are predicted by a rule-based lookup over reference profiles
(the trace's own complete rows, then single_data.csv): the median of the same configuration (model,
dataset, batchsize, amp), else of the same model and batch size, else of the same model, else of
all reference profiles. Each profile records which level supplied it (``source``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from raysim.models.features import as_frame, as_strings

KEY = ("model", "dataset", "batchsize", "amp")
#: resource name -> trace column holding its mean utilisation (%)
RESOURCE_COLUMNS = MappingProxyType({"gpu": "gpu_util", "membw": "gmem_util"})
#: workload numbers a profile is built from
NUMBERS = ("gpu_util", "gmem_util", "gmem", "speed")
#: burst level of a busy-time counter (see the module docstring)
BURST_LEVEL = 100.0
#: iteration period when neither the trace nor the reference profiles give a speed
DEFAULT_PERIOD_S = 1.0
#: prediction levels, finest first: (name, grouping columns); "global" groups over everything
LEVELS = (("configuration", KEY), ("model+batchsize", ("model", "batchsize")), ("model", ("model",)),
          ("global", ()))


@dataclass(frozen=True)
class Burst:
    """One resource's profile: bursts of `burst_s` seconds at `level` % alternating with `idle_s` idle."""

    burst_s: float
    idle_s: float
    level: float

    def __post_init__(self):
        if not (self.burst_s >= 0 and self.idle_s >= 0 and self.burst_s + self.idle_s > 0):
            raise ValueError(f"burst and idle durations must be >= 0 with a positive sum, not "
                             f"{self.burst_s!r} and {self.idle_s!r}")
        if not 0 <= self.level <= 100:
            raise ValueError(f"burst level must be within 0..100 %, not {self.level!r}")

    @property
    def period(self) -> float:
        """B + I, seconds."""
        return self.burst_s + self.idle_s

    @property
    def duty(self) -> float:
        """Share of time spent bursting, B / (B + I)."""
        return self.burst_s / self.period

    @property
    def mean(self) -> float:
        """Mean use, P x duty (%)."""
        return self.level * self.duty

    @classmethod
    def from_mean(cls, mean: float, period_s: float = DEFAULT_PERIOD_S, level: float = BURST_LEVEL) -> Burst:
        """The profile of mean use `mean` (%) split by the module's rule: bursts at `level`."""
        duty = min(max(float(mean), 0.0) / level, 1.0) if level > 0 else 0.0
        return cls(duty * float(period_s), (1.0 - duty) * float(period_s), float(level))


@dataclass(frozen=True)
class JobProfile:
    """A workload's resource profile: one Burst per resource, its memory footprint (MB) and the
    prediction level it came from ("trace" or one of LEVELS' names)."""

    bursts: dict
    memory_mb: float
    source: str = "trace"

    def mean(self, resource: str) -> float:
        """Mean use (%) of `resource`; 0 for a resource the profile does not list."""
        burst = self.bursts.get(resource)
        return burst.mean if burst is not None else 0.0


def reference_profiles(table=None, single_csv=None) -> pd.DataFrame:
    """Median workload NUMBERS per configuration (KEY): the trace's complete rows first, then the
    configurations of single_data.csv the trace lacks."""
    parts = []
    if table is not None:
        df = _workloads(as_frame(table))
        parts.append(df[df[["gpu_util", "gmem_util", "gmem"]].notna().all(axis=1)])
    if single_csv is not None:
        from raysim.models.packing import read_single

        single = read_single(single_csv)
        seen = {tuple(k) for p in parts for k in p[list(KEY)].astype(object).itertuples(index=False)}
        new = [tuple(k) not in seen for k in single[list(KEY)].astype(object).itertuples(index=False)]
        parts.append(single.loc[new, [*KEY, *(c for c in NUMBERS if c in single.columns)]])
    if not parts:
        return pd.DataFrame(columns=[*KEY, *NUMBERS])
    ref = pd.concat(parts, ignore_index=True).reindex(columns=[*KEY, *NUMBERS])
    return ref.groupby(list(KEY), sort=False, dropna=False)[list(NUMBERS)].median().reset_index()


def fill_workloads(df: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """`df` (KEY and NUMBERS columns, missing values allowed) with every missing number predicted
    from `reference` by the LEVELS rule, plus `source`: "trace" for rows complete on input, else the
    coarsest level that had to fill one of gpu_util, gmem_util, gmem.

    Raises ValueError when a number is missing and `reference` has nothing to predict it from.
    """
    out = df.reset_index(drop=True).copy()
    needed = ["gpu_util", "gmem_util", "gmem"]
    source = np.where(out[needed].notna().all(axis=1), "trace", "").astype(object)
    for name, cols in LEVELS:
        missing = out[list(NUMBERS)].isna()
        if not missing.to_numpy().any():
            break
        if cols:
            medians = reference.groupby(list(cols), dropna=True)[list(NUMBERS)].median()
            found = out[list(cols)].merge(medians, left_on=list(cols), right_index=True, how="left")
            found = found[list(NUMBERS)].reset_index(drop=True)
        else:
            found = pd.DataFrame({c: np.full(len(out), pd.to_numeric(reference[c]).median()) for c in NUMBERS})
        for col in NUMBERS:
            out[col] = out[col].fillna(found[col])
        done = (source == "") & out[needed].notna().all(axis=1).to_numpy()
        source[done] = name
    incomplete = out[needed].isna().any(axis=1).to_numpy()
    if incomplete.any():
        row = int(np.flatnonzero(incomplete)[0])
        col = next(c for c in needed if pd.isna(out[c].iloc[row]))
        raise ValueError(f"no {col} for workload {tuple(out.loc[row, list(KEY)])} (row {row}) and no reference "
                         "profiles to predict it from: give the trace's workload columns or policy.profiles.single")
    out["source"] = source
    return out


def job_profiles(table, single_csv=None) -> pd.DataFrame:
    """One row per job of `table`: for each resource r, r_level, r_duty, r_burst_s, r_idle_s, r_mean;
    memory_mb, period_s and source. Missing workload numbers are predicted (module docstring)."""
    df = _workloads(as_frame(table))
    filled = fill_workloads(df, reference_profiles(table, single_csv))
    period = _period(filled)
    out = pd.DataFrame(index=filled.index)
    for resource, col in RESOURCE_COLUMNS.items():
        mean = filled[col].to_numpy(dtype=np.float64).clip(0, BURST_LEVEL)
        duty = mean / BURST_LEVEL
        out[f"{resource}_level"] = BURST_LEVEL
        out[f"{resource}_duty"] = duty
        out[f"{resource}_burst_s"] = duty * period
        out[f"{resource}_idle_s"] = (1 - duty) * period
        out[f"{resource}_mean"] = mean
    out["memory_mb"] = filled["gmem"].to_numpy(dtype=np.float64)
    out["period_s"] = period
    out["source"] = filled["source"].to_numpy()
    return out


def key_profiles(keys, table=None, single_csv=None) -> dict:
    """JobProfile per workload key (model, dataset, batchsize, amp), e.g. the keys of
    colocation.workload_ids: the median of the trace's rows of that key where `table` has them,
    predicted from the reference profiles (trace rows, single_data.csv) otherwise."""
    keys = [tuple(k) for k in keys]
    if not keys:
        return {}
    df = pd.DataFrame(keys, columns=list(KEY))
    ref = reference_profiles(table, single_csv)
    if table is not None:
        own = _workloads(as_frame(table)).groupby(list(KEY), sort=False)[list(NUMBERS)].median()
        df = df.merge(own, left_on=list(KEY), right_index=True, how="left")
    else:
        df = df.assign(**{c: np.nan for c in NUMBERS})
    filled = fill_workloads(df, ref)
    period = _period(filled)
    profiles = {}
    for i, key in enumerate(keys):
        row = filled.iloc[i]
        bursts = {r: Burst.from_mean(row[col], period[i]) for r, col in RESOURCE_COLUMNS.items()}
        profiles[key] = JobProfile(bursts, float(row["gmem"]), row["source"])
    return profiles


def _workloads(df: pd.DataFrame) -> pd.DataFrame:
    """KEY and NUMBERS columns of a job table (absent ones as missing), keys normalised."""
    out = pd.DataFrame(index=df.index)
    for col in ("model", "dataset"):
        out[col] = as_strings(df[col]) if col in df.columns else None
    for col in ("batchsize", "amp"):
        values = pd.to_numeric(df[col], errors="coerce") if col in df.columns else pd.Series(np.nan, index=df.index)
        out[col] = values.astype("Int64")
    for col in NUMBERS:
        out[col] = pd.to_numeric(df[col], errors="coerce").astype(np.float64) if col in df.columns else np.nan
    return out.reset_index(drop=True)


def _period(df: pd.DataFrame) -> np.ndarray:
    """Iteration period batchsize / speed (s); DEFAULT_PERIOD_S where either is unknown or not positive."""
    batch = pd.to_numeric(df["batchsize"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    speed = df["speed"].to_numpy(dtype=np.float64)
    ok = (batch > 0) & (speed > 0)
    return np.where(ok, batch / np.where(ok, speed, 1.0), DEFAULT_PERIOD_S)
