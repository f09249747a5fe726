"""Throughput predictor: GPU jobs and GPUs submitted per 10-minute bin (Lucid's cluster predictor).

Input: a CSV with `time` (bin start) and the counts `submit_gpu_job`, `submit_gpu_num` per
10-minute bin (Lucid's `cluster_throughput.csv`). One model per target, each seeing the features of
both series:

- calendar: hour, minute, day of week of the bin start;
- lags of each series 1 h, 3 h and 1 day back (6, 18, 144 bins), and their smoothed neighbours
  ``0.5 x[k-l] + 0.25 (x[k-l-1] + x[k-l+1])``;
- mean, median and standard deviation of the 6 bins ending 1 h back (bins k-11..k-6).

Horizon: every feature of bin k uses only bins <= k-5 (the nearest is the smoothed 1-hour lag's
k-5), so a forecast for any of the next 5 bins uses only bins already complete when the current bin
starts; that is what Lucid's packing switch averages. Evaluation is a one-step-ahead walk over the
test bins using the actual past counts (not recursive predictions). Month, day of year and week
number are left out: a model trained on April-August cannot use them for September.

Training bins: before `split` with all lags available (the first day is dropped). Predictions are
clipped at 0 and rounded to 0.1 like the reference's forecast file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from raysim.models.features import TabularModel, calendar, check_kind, mae, require_columns
from raysim.errors import TraceError

#: target column -> forecast column, as in Lucid's throughput_forecast.csv
TARGETS = {"submit_gpu_job": "pred_gpu_job", "submit_gpu_num": "pred_gpu_num"}
SHORT = {"submit_gpu_job": "njob", "submit_gpu_num": "ngpu"}
LAGS = {"1h": 6, "3h": 18, "1d": 144}
ROLL_LAG, ROLL_WINDOW = 6, 6
CALENDAR = ("hour", "minute", "dayofweek")
DEFAULT_SPLIT = "2020-09-01"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def read_throughput(path) -> pd.DataFrame:
    """Read a throughput CSV: `time` (bin start) plus the TARGETS columns, on a 10-minute grid.

    Bins absent from the file count as zero submissions. Raises TraceError naming the file, row and
    column of bad input.
    """
    path = str(path)
    try:
        raw = pd.read_csv(path)
    except FileNotFoundError:
        raise TraceError(path, "throughput file not found") from None
    require_columns(raw, ["time", *TARGETS], path)
    if raw.empty:
        raise TraceError(path, "no bins in the file")
    times = pd.to_datetime(raw["time"], errors="coerce", format="mixed")
    _first_bad(path, "time", times.isna(), raw["time"], "not a date-time")
    _first_bad(path, "time", (times - times.dt.floor("10min")) != pd.Timedelta(0), raw["time"],
               "not the start of a 10-minute bin")
    _first_bad(path, "time", times.duplicated(), raw["time"], "bin listed twice")
    out = pd.DataFrame({"time": times})
    for col in TARGETS:
        values = pd.to_numeric(raw[col], errors="coerce")
        _first_bad(path, col, values.isna() | (values < 0), raw[col], "not a count >= 0")
        out[col] = values.astype(np.float64)
    out = out.sort_values("time").set_index("time")
    grid = pd.date_range(out.index[0], out.index[-1], freq="10min", name="time")
    return out.reindex(grid, fill_value=0.0).reset_index()


def _first_bad(path, col, mask, raw, message):
    mask = np.asarray(mask)
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise TraceError(path, message, row=row + 1, column=col, value=raw.iloc[row])


def make_features(series: pd.DataFrame) -> pd.DataFrame:
    """Feature frame (one row per bin of `series`, same index) from a frame with `time` and TARGETS.

    Row k depends only on the time of bin k and on counts of bins <= k-5.
    """
    X = calendar(series["time"], CALENDAR)
    for target, short in SHORT.items():
        x = series[target]
        for name, lag in LAGS.items():
            X[f"shift_{name}_{short}"] = x.shift(lag)
            X[f"soft_{name}_{short}"] = 0.5 * x.shift(lag) + 0.25 * (x.shift(lag + 1) + x.shift(lag - 1))
        window = x.shift(ROLL_LAG).rolling(ROLL_WINDOW)
        X[f"roll_mean_1h_{short}"] = window.mean()
        X[f"roll_median_1h_{short}"] = window.median()
        X[f"roll_std_1h_{short}"] = window.std()
    return X


@dataclass
class Forecast:
    """A fitted throughput predictor and its forecast for the bins from `split` on.

    `table` has Lucid's columns (time, submit_gpu_job, submit_gpu_num, pred_gpu_job, pred_gpu_num),
    `mae` the mean absolute error per target over those bins, `fit_seconds` the training time per
    target.
    """

    kind: str
    table: pd.DataFrame
    models: dict[str, TabularModel]
    mae: dict[str, float]
    n_train: int
    fit_seconds: dict[str, float]

    def write(self, path) -> None:
        """Write the forecast table as CSV (Lucid's throughput_forecast.csv format)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.table.to_csv(path, index=False)


def fit_forecast(series: pd.DataFrame, *, split: str = DEFAULT_SPLIT, kind: str = "ebm",
                 seed: int = 0) -> Forecast:
    """Train one model per target on the bins before `split`, forecast the bins from `split` on."""
    check_kind(kind)
    X = make_features(series)
    split_ts = pd.Timestamp(split)
    before = (series["time"] < split_ts).to_numpy()
    train = before & X.notna().all(axis=1).to_numpy()
    test = ~before
    if not train.any():
        raise ValueError(f"no training bins before {split} with a full day of history")
    if not test.any():
        raise ValueError(f"no bins to forecast at or after {split} (data end at {series['time'].iloc[-1]})")
    table = pd.DataFrame({"time": series["time"][test].dt.strftime(TIME_FORMAT)})
    models, errors, seconds = {}, {}, {}
    for target in TARGETS:
        table[target] = series[target][test].round().astype(np.int64)
    for target, pred_col in TARGETS.items():
        t0 = time.perf_counter()
        model = TabularModel(kind, seed=seed).fit(X[train], series[target][train])
        seconds[target] = time.perf_counter() - t0
        table[pred_col] = np.round(np.clip(model.predict(X[test]), 0, None), 1)
        models[target] = model
        errors[target] = mae(table[target], table[pred_col])
    return Forecast(kind, table.reset_index(drop=True), models, errors, int(train.sum()), seconds)


def persistence_mae(series: pd.DataFrame, *, split: str = DEFAULT_SPLIT, lag: int = 5) -> dict[str, float]:
    """MAE of the naive forecast "same as `lag` bins ago" over the bins from `split` on (context for
    the models: bin k-5 is the latest one the models may use)."""
    test = (series["time"] >= pd.Timestamp(split)).to_numpy()
    return {t: mae(series[t][test], series[t].shift(lag)[test].fillna(0)) for t in TARGETS}
