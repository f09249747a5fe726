"""Shared pieces of raysim's models: the EBM/LightGBM wrapper, settings, input checks, metrics.

Every model trains single-threaded (it runs inside a Ray actor next to others) and deterministically
(fixed seeds; LightGBM's `deterministic` mode). The EBM settings are chosen so that a fit takes
seconds on 2 cores, not minutes:

- ``interactions=0``: a pure additive model (one shape function per feature), the most readable
  form and the one Lucid's figures show; pairwise terms cost time and did not help on these data.
- ``outer_bags=2`` (default 14): bagging mostly smooths the shape functions; 2 bags keep that
  effect at a seventh of the cost.
- ``max_bins=256`` (default 1024) and ``max_rounds=3000`` (default 50,000): bounded work per fit;
  early stopping (100 rounds without improvement on a 15% validation split) usually ends sooner.
- learning rate and all other settings: interpret's defaults.

LightGBM baselines use LightGBM's defaults (100 trees, 31 leaves, learning rate 0.1), as the
reference's notebooks did, with ``n_jobs=1`` and ``deterministic=True``.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.errors import TraceError

KINDS = ("ebm", "lightgbm")

EBM_SETTINGS = dict(outer_bags=2, inner_bags=0, interactions=0, max_bins=256, max_rounds=3000, n_jobs=1)
LGBM_SETTINGS = dict(n_jobs=1, deterministic=True, force_row_wise=True, verbose=-1)


def check_kind(kind: str) -> str:
    """Return `kind` if it names a model family, else raise a ValueError listing the choices."""
    if kind not in KINDS:
        raise ValueError(f"model kind must be one of {KINDS}, not {kind!r}")
    return kind


def as_frame(jobs) -> pd.DataFrame:
    """A pandas view of a job table (pyarrow Table or pandas DataFrame)."""
    if isinstance(jobs, pa.Table):
        return jobs.to_pandas()
    if isinstance(jobs, pd.DataFrame):
        return jobs
    raise TypeError(f"expected a pyarrow.Table or pandas.DataFrame of jobs, not {type(jobs).__name__}")


def require_columns(df: pd.DataFrame, columns, source: str) -> None:
    """Raise TraceError naming `source` and the first of `columns` that `df` lacks."""
    for col in columns:
        if col not in df.columns:
            raise TraceError(source, f"missing column; it has {list(df.columns)}", column=col)


def numeric_column(df: pd.DataFrame, col: str, source: str, *, allow_missing: bool = False) -> np.ndarray:
    """Column `col` as float64, raising TraceError at the first non-numeric (or, unless allowed,
    missing) value."""
    raw = df[col]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(values) & (raw.notna().to_numpy() | (not allow_missing))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(source, "not a number", row=row + 1, column=col, value=raw.iloc[row])
    return values


def as_strings(series: pd.Series) -> pd.Series:
    """Category-like column as Python strings (object dtype), missing values as None."""
    out = series.astype(object)
    missing = out.isna().to_numpy()
    out = out.map(str)
    out[missing] = None
    return out


def parse_origin(origin: str) -> pd.Timestamp:
    """The trace's time origin (ISO date-time) as a naive UTC timestamp.

    "0" (a trace with plain integer seconds) maps to 1970-01-01 00:00, so calendar features count
    hours and days from the trace's time 0.
    """
    if str(origin).strip() == "0":
        return pd.Timestamp(0)
    try:
        ts = pd.Timestamp(origin)
    except (TypeError, ValueError):
        ts = None
    if ts is None or ts is pd.NaT:
        raise ValueError(f"origin must be an ISO date-time such as '2020-09-01T00:00:00', not {origin!r}")
    return ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo is not None else ts


def calendar(times: pd.Series, fields) -> pd.DataFrame:
    """Calendar features of datetimes: any of hour, minute, dayofweek (Monday = 0)."""
    getters = {"hour": lambda t: t.dt.hour, "minute": lambda t: t.dt.minute,
               "dayofweek": lambda t: t.dt.day_of_week}
    return pd.DataFrame({f: getters[f](times).to_numpy(dtype=np.int16) for f in fields}, index=times.index)


class TabularModel:
    """An EBM or LightGBM regressor/classifier over a pandas frame, with categorical columns named.

    Categorical columns are strings; values not seen in training (or missing) get EBM's "unknown"
    score of 0 and LightGBM's missing-value branch. A classification target with a single class is
    predicted as that class without fitting.
    """

    def __init__(self, kind: str = "ebm", *, task: str = "regression", seed: int = 0, categorical=()):
        if task not in ("regression", "classification"):
            raise ValueError(f"task must be regression or classification, not {task!r}")
        self.kind, self.task, self.seed = check_kind(kind), task, seed
        self.categorical = tuple(categorical)
        self.columns: list[str] = []
        self.estimator = None
        self._constant = None
        self._categories: dict[str, pd.Index] = {}

    def fit(self, X: pd.DataFrame, y) -> TabularModel:
        """Fit on features `X` and target `y`; returns self."""
        y = np.asarray(y)
        self.columns = list(X.columns)
        if self.task == "classification" and len(np.unique(y)) == 1:
            self._constant = y[0]
            return self
        if self.kind == "ebm":
            # interpret logs its native library's every step (loading, each boosting) at INFO, which a
            # run's INFO log shows between raysim's own lines: its warnings are what matter here
            logging.getLogger("interpret").setLevel(logging.WARNING)
            from interpret.glassbox import ExplainableBoostingClassifier, ExplainableBoostingRegressor

            cls = ExplainableBoostingRegressor if self.task == "regression" else ExplainableBoostingClassifier
            types = ["nominal" if c in self.categorical else "continuous" for c in self.columns]
            self.estimator = cls(feature_types=types, random_state=self.seed, **EBM_SETTINGS)
        else:
            import lightgbm as lgb

            cls = lgb.LGBMRegressor if self.task == "regression" else lgb.LGBMClassifier
            self._categories = {c: pd.Index(sorted(X[c].dropna().unique())) for c in self.categorical}
            self.estimator = cls(random_state=self.seed, **LGBM_SETTINGS)
        self.estimator.fit(self._prepare(X), y)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predictions for the rows of `X` (same columns as in fit)."""
        if self._constant is not None:
            return np.full(len(X), self._constant)
        if self.estimator is None:
            raise RuntimeError("model is not fitted; call fit() first")
        return np.asarray(self.estimator.predict(self._prepare(X[self.columns])))

    def _prepare(self, X: pd.DataFrame) -> pd.DataFrame:
        X = X.copy()
        for c in self.columns:
            if c not in self.categorical:
                X[c] = X[c].astype(np.float64)
            elif self.kind == "lightgbm":
                cats = self._categories[c]
                X[c] = pd.Categorical(X[c].where(X[c].isin(cats)), categories=cats)
        return X


def mae(y_true, y_pred) -> float:
    """Mean absolute error."""
    return float(np.mean(np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))))


def accuracy(y_true, y_pred) -> float:
    """Share of equal labels."""
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def macro_f1(y_true, y_pred, labels) -> float:
    """Unweighted mean of the per-class F1 scores over `labels` (a class never predicted nor
    present scores 0)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    scores = []
    for c in labels:
        tp = np.sum((y_pred == c) & (y_true == c))
        wrong = np.sum((y_pred == c) != (y_true == c))
        scores.append(2 * tp / (2 * tp + wrong) if tp else 0.0)
    return float(np.mean(scores))
