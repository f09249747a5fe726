"""Learned colocation speed: a job's relative speed next to a GPU partner, from both jobs' profiles.

Training data: the measured pairs of colocate_info.csv (each job's speed relative to running alone)
joined with single_data.csv, the single-job profile (amp, batchsize, gpu_util, gmem_util, gmem) of
each side. A pair gives two training rows, one per side: the features of the job whose speed is the
target ("own"), those of its partner, and the sums of the partner's and own gpu_util, gmem_util and
gmem (symmetric in the two jobs). The same function predicts both sides, so the pair (a, b) and
(b, a) get the same two speeds. Model names are not features: the model has to serve workloads that
were never measured in a pair. Predictions are clipped to the range of the training speeds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from raysim.models.features import TabularModel, check_kind, numeric_column
from raysim.models.packing import FEATURES, KEY, read_single
from raysim.csvfile import read_csv_columns

SIDES = ("a", "b")


def read_pairs(colocation_csv, single_csv) -> pd.DataFrame:
    """One row per measured pair: for each side s in SIDES, s_model, s_dataset, s_batchsize, s_amp,
    the single-job FEATURES as s_<feature> and the measured relative speed as s_speed.

    Pairs with a side that single_csv does not profile are left out (`attrs["unprofiled"]` counts them).
    """
    path = str(colocation_csv)
    raw = read_csv_columns(path, [f"{k}{i}" for i in ("1", "2") for k in (*KEY, "speed")], "colocation profile")
    single = read_single(single_csv)
    profile = single[list(KEY) + [f for f in FEATURES if f not in KEY]]
    sides = []
    for i, side in zip(("1", "2"), SIDES):
        part = pd.DataFrame({"model": raw[f"model{i}"].astype(str), "dataset": raw[f"dataset{i}"].astype(str)})
        for k in ("batchsize", "amp"):
            part[k] = numeric_column(raw, f"{k}{i}", path).astype(np.int64)
        part["speed"] = numeric_column(raw, f"speed{i}", path)
        part = part.merge(profile, on=list(KEY), how="left")
        sides.append(part.add_prefix(f"{side}_"))
    pairs = pd.concat(sides, axis=1)
    known = pairs[[f"{s}_{f}" for s in SIDES for f in FEATURES]].notna().all(axis=1)
    out = pairs[known].reset_index(drop=True)
    out.attrs["unprofiled"] = int((~known).sum())
    return out


def oriented(pairs: pd.DataFrame) -> pd.DataFrame:
    """Two rows per pair (own = a, then own = b): own_* and partner_* columns (KEY and FEATURES),
    the target `speed`, the pair's row number `pair` and its `group`, the unordered model pair."""
    rows = []
    for own, partner in (SIDES, SIDES[::-1]):
        part = pd.DataFrame({"pair": np.arange(len(pairs)), "speed": pairs[f"{own}_speed"].to_numpy()})
        for col in dict.fromkeys([*KEY, *FEATURES]):
            part[f"own_{col}"] = pairs[f"{own}_{col}"].to_numpy()
            part[f"partner_{col}"] = pairs[f"{partner}_{col}"].to_numpy()
        rows.append(part)
    out = pd.concat(rows, ignore_index=True)
    out["group"] = [" + ".join(sorted(p)) for p in zip(out["own_model"], out["partner_model"])]
    return out


def pair_features(own: pd.DataFrame, partner: pd.DataFrame) -> pd.DataFrame:
    """Model inputs from two aligned frames of FEATURES: own_*, partner_* and sum_* of the
    utilisations and memory."""
    out = pd.DataFrame(index=range(len(own)))
    for name, frame in (("own", own), ("partner", partner)):
        for f in FEATURES:
            out[f"{name}_{f}"] = frame[f].to_numpy(dtype=np.float64)
    for f in ("gpu_util", "gmem_util", "gmem"):
        out[f"sum_{f}"] = out[f"own_{f}"] + out[f"partner_{f}"]
    return out


def sides(data: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The own and partner FEATURES frames of an `oriented` frame."""
    own = data[[f"own_{f}" for f in FEATURES]].set_axis(list(FEATURES), axis=1)
    partner = data[[f"partner_{f}" for f in FEATURES]].set_axis(list(FEATURES), axis=1)
    return own, partner


class SpeedModel:
    """EBM or LightGBM regressor of a job's colocated speed from pair_features."""

    def __init__(self, kind: str = "lightgbm", seed: int = 0):
        self.kind, self.seed = check_kind(kind), seed
        self.model: TabularModel | None = None
        self.range = (0.0, np.inf)

    def fit(self, data: pd.DataFrame) -> SpeedModel:
        """Fit on an `oriented` frame; returns self."""
        if data.empty:
            raise ValueError("no measured pairs with profiled jobs to train the colocation-speed model on")
        y = data["speed"].to_numpy(dtype=np.float64)
        self.range = (float(y.min()), float(y.max()))
        self.model = TabularModel(self.kind, seed=self.seed).fit(pair_features(*sides(data)), y)
        return self

    def predict(self, own: pd.DataFrame, partner: pd.DataFrame) -> np.ndarray:
        """Speed of each `own` job next to the aligned `partner` job (frames with FEATURES)."""
        if self.model is None:
            raise RuntimeError("model is not fitted; call fit() first")
        return np.clip(self.model.predict(pair_features(own, partner)), *self.range)
