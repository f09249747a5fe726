"""Packing analyzer: share scores (0, 1, 2) saying how much a job slows a GPU partner down.

Measured labels: `label` in single_data.csv (one row per job configuration model, dataset,
batchsize, amp). Colocation labels: from colocate_info.csv, a configuration's mean relative speed
over every measured pair it appears in (either side) maps to 2 below 0.85, 1 below 0.95, else 0;
configurations never measured in a pair get no colocation label (the reference's script gave them
mean 0, hence 2).

Classifier for configurations without a measured label: an EBM classifier (LightGBM baseline) on
the single-job profile amp, batchsize, gpu_util, gmem_util, gmem. The profiled speed is left out:
its unit (samples, images, tokens per second) differs between models, and the simulation's score()
call does not carry it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from raysim.models.features import (TabularModel, as_frame, check_kind, numeric_column,
                                    require_columns)
from raysim.errors import TraceError

KEY = ("model", "dataset", "batchsize", "amp")
FEATURES = ("amp", "batchsize", "gpu_util", "gmem_util", "gmem")
LABELS = (0, 1, 2)
#: mean colocated speed below THRESHOLDS[0] -> 2, below THRESHOLDS[1] -> 1, else 0
THRESHOLDS = (0.85, 0.95)
#: score of a configuration with no measured label and no profile to classify (the most cautious)
UNKNOWN_SCORE = 2


def label_from_speed(mean_speed) -> np.ndarray:
    """Share-score labels for mean colocated speeds; -1 where the speed is NaN (never measured)."""
    s = np.asarray(mean_speed, dtype=np.float64)
    out = np.where(s < THRESHOLDS[0], 2, np.where(s < THRESHOLDS[1], 1, 0))
    return np.where(np.isnan(s), -1, out)


def _key_frame(df: pd.DataFrame, cols, path: str) -> pd.DataFrame:
    """The KEY columns named `cols` of `df` as str, str, int, int."""
    model, dataset, batchsize, amp = cols
    out = pd.DataFrame({"model": df[model].astype(str), "dataset": df[dataset].astype(str)})
    for name, col in (("batchsize", batchsize), ("amp", amp)):
        out[name] = numeric_column(df, col, path).astype(np.int64)
    return out


def read_single(path) -> pd.DataFrame:
    """Read single_data.csv: KEY, profile columns and `label` (0, 1 or 2), one row per config."""
    path = str(path)
    df = _read_csv(path)
    require_columns(df, [*KEY, *FEATURES, "label"], path)
    out = _key_frame(df, KEY, path)
    for col in ("gpu_util", "gmem_util", "gmem"):
        out[col] = numeric_column(df, col, path)
    if "speed" in df.columns:
        out["speed"] = numeric_column(df, "speed", path, allow_missing=True)
    labels = numeric_column(df, "label", path)
    bad = ~np.isin(labels, LABELS)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TraceError(path, "label must be 0, 1 or 2", row=row + 1, column="label", value=df["label"].iloc[row])
    out["label"] = labels.astype(np.int64)
    dup = out.duplicated(list(KEY))
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise TraceError(path, "configuration listed twice", row=row + 1, column="model",
                         value=out["model"].iloc[row])
    return out


def colocation_speeds(path) -> pd.DataFrame:
    """Per configuration in colocate_info.csv: mean colocated speed over all its pairs (either side)
    and the number of speeds averaged (`pairs`; a pair with itself counts twice)."""
    path = str(path)
    df = _read_csv(path)
    sides = []
    for i in ("1", "2"):
        cols = [f"{k}{i}" for k in KEY]
        require_columns(df, [*cols, f"speed{i}"], path)
        side = _key_frame(df, cols, path)
        side["speed"] = numeric_column(df, f"speed{i}", path)
        sides.append(side)
    both = pd.concat(sides, ignore_index=True)
    agg = both.groupby(list(KEY), sort=True)["speed"].agg(["mean", "size"]).reset_index()
    return agg.rename(columns={"mean": "mean_speed", "size": "pairs"})


def auto_labels(single: pd.DataFrame, speeds: pd.DataFrame) -> pd.DataFrame:
    """`single` plus mean_speed, pairs and colocation_label (-1 when the config was never paired)."""
    out = single.merge(speeds, on=list(KEY), how="left")
    out["pairs"] = out["pairs"].fillna(0).astype(np.int64)
    out["colocation_label"] = label_from_speed(out["mean_speed"])
    return out


def agreement(labels: pd.DataFrame) -> dict:
    """How colocation labels agree with single_data's `label`: over measured configs, and with the
    reference's convention (unmeasured -> 2) over all; plus the confusion matrix (rows: label)."""
    measured = labels[labels["colocation_label"] >= 0]
    reference = labels["colocation_label"].where(labels["colocation_label"] >= 0, 2)
    confusion = pd.crosstab(measured["label"], measured["colocation_label"]).reindex(
        index=LABELS, columns=LABELS, fill_value=0)
    same = measured["label"] == measured["colocation_label"]
    return {"measured": len(measured), "agree": int(same.sum()),
            "accuracy": float(same.mean()) if len(measured) else float("nan"),
            "reference_accuracy": float((labels["label"] == reference).mean()) if len(labels) else float("nan"),
            "unmeasured": int((labels["colocation_label"] < 0).sum()), "confusion": confusion}


def fit_classifier(single: pd.DataFrame, kind: str = "ebm", seed: int = 0) -> TabularModel:
    """Classifier of `label` from the profile FEATURES of `single`'s rows."""
    return TabularModel(kind, task="classification", seed=seed).fit(single[list(FEATURES)], single["label"])


def cross_validate(single: pd.DataFrame, kind: str = "ebm", seed: int = 0) -> np.ndarray:
    """Leave-one-model-out predictions: each row predicted by a classifier that saw no row of its
    model (no configuration of that model leaks into training)."""
    pred = np.zeros(len(single), dtype=np.int64)
    groups = single["model"].to_numpy()
    for model in np.unique(groups):
        test = groups == model
        clf = fit_classifier(single[~test], kind, seed)
        pred[test] = clf.predict(single.loc[test, list(FEATURES)]).astype(np.int64)
    return pred


def _read_csv(path: str) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise TraceError(path, "profile file not found") from None


class ShareScores:
    """Share score per job: the measured label when its configuration is known, else a prediction.

    Known labels come from single_data.csv and, for configurations missing there, from the
    colocation measurements (when a colocation CSV is given). Unknown configurations are classified
    from their profile (amp, batchsize, gpu_util, gmem_util, gmem); without those numbers the score
    is UNKNOWN_SCORE.
    """

    def __init__(self, labels: dict, classifier: TabularModel):
        self.labels = labels
        self.classifier = classifier
        self._cache: dict = {}

    @classmethod
    def from_files(cls, single_csv, colocation_csv=None, classifier: str = "ebm", seed: int = 0) -> ShareScores:
        """Labels from `single_csv` (and `colocation_csv`), classifier of kind `classifier` fitted
        on `single_csv`."""
        check_kind(classifier)
        single = read_single(single_csv)
        labels = {}
        if colocation_csv is not None:
            speeds = colocation_speeds(colocation_csv)
            measured = label_from_speed(speeds["mean_speed"])
            for row, label in zip(speeds[list(KEY)].itertuples(index=False), measured):
                labels[tuple(row)] = int(label)
        for row, label in zip(single[list(KEY)].itertuples(index=False), single["label"]):
            labels[tuple(row)] = int(label)
        return cls(labels, fit_classifier(single, classifier, seed))

    def score(self, model, dataset, batchsize, amp, gpu_util=None, gmem_util=None, gmem=None) -> int:
        """Share score (0, 1 or 2) of one job configuration."""
        key = _key(model, dataset, batchsize, amp)
        if key is not None and key in self.labels:
            return self.labels[key]
        profile = (amp, batchsize, gpu_util, gmem_util, gmem)
        if any(v is None or pd.isna(v) for v in profile):
            return UNKNOWN_SCORE
        profile = tuple(float(v) for v in profile)
        if profile not in self._cache:
            X = pd.DataFrame([profile], columns=list(FEATURES))
            self._cache[profile] = int(self.classifier.predict(X)[0])
        return self._cache[profile]

    def scores(self, table) -> np.ndarray:
        """Share score per row of a trace table (pyarrow or pandas with KEY and profile columns)."""
        df = as_frame(table)
        require_columns(df, [*KEY, "gpu_util", "gmem_util", "gmem"], "jobs table")
        keys = [_key(*row) for row in df[list(KEY)].itertuples(index=False)]
        out = np.array([self.labels.get(k, -1) if k is not None else -1 for k in keys], dtype=np.int64)
        todo = out < 0
        if todo.any():
            X = df.loc[todo, list(FEATURES)].apply(pd.to_numeric, errors="coerce").astype(np.float64)
            complete = X.notna().all(axis=1).to_numpy()
            pred = np.full(len(X), UNKNOWN_SCORE, dtype=np.int64)
            if complete.any():
                pred[complete] = self.classifier.predict(X[complete]).astype(np.int64)
            out[todo] = pred
        return out


def _key(model, dataset, batchsize, amp):
    """Normalised lookup key, or None when any part is missing."""
    if any(v is None or pd.isna(v) for v in (model, dataset, batchsize, amp)):
        return None
    return (str(model), str(dataset), int(batchsize), int(amp))
