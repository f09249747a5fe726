"""Measured colocation: pair speeds of two jobs sharing GPUs (Lucid's colocate_info.csv), by workload.

A workload is a (model, dataset, batch size, AMP) configuration. Jobs get integer workload ids;
the pair table maps (id_a, id_b) -> (speed of a, speed of b, joint GPU util %, joint memory MB).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from raysim.csvfile import read_csv_columns

KEY = ("model", "dataset", "batchsize", "amp")
#: Models the reference never measured in pairs; it treats their pairs as free of interference.
UNMEASURED_MODELS = ("NeuMF", "ResNet50", "BERT", "Transformer")
PAIR_COLUMNS = [f"{c}{i}" for i in (1, 2) for c in KEY] + ["speed1", "speed2", "gpu_util", "gmem"]


def workload_ids(table: pa.Table) -> tuple[np.ndarray, list[tuple]]:
    """Per-row workload id (-1 when the trace lacks the profile columns) and the id -> key list."""
    if not all(c in table.column_names for c in KEY) or table.num_rows == 0:
        return np.full(table.num_rows, -1, dtype=np.int64), []
    df = table.select(list(KEY)).to_pandas()
    for c in ("model", "dataset"):
        df[c] = df[c].astype(object)
    known = df.notna().all(axis=1).to_numpy()
    keys = list(dict.fromkeys(map(tuple, df[known].astype({"batchsize": int, "amp": int}).to_numpy().tolist())))
    index = {k: i for i, k in enumerate(keys)}
    ids = np.full(len(df), -1, dtype=np.int64)
    rows = df[known].astype({"batchsize": int, "amp": int}).to_numpy().tolist()
    ids[known] = [index[tuple(r)] for r in rows]
    return ids, keys


def pair_table(keys: list[tuple], path: str | Path) -> dict:
    """(id_a, id_b) -> (speed_a, speed_b, util, gmem) for every measured pair among `keys`.

    Pairs involving an unmeasured model get speeds 1 and 1 with summed memory (the reference's
    rule; its joint utilisation there is min(1, util_a + util_b), kept for compatibility).
    """
    df = read_csv_columns(path, PAIR_COLUMNS, "colocation profile")
    index = {k: i for i, k in enumerate(keys)}
    pairs = {}
    for row in df[PAIR_COLUMNS].itertuples(index=False):
        a = index.get((row.model1, row.dataset1, int(row.batchsize1), int(row.amp1)))
        b = index.get((row.model2, row.dataset2, int(row.batchsize2), int(row.amp2)))
        if a is not None and b is not None and (a, b) not in pairs:
            pairs[(a, b)] = (float(row.speed1), float(row.speed2), float(row.gpu_util), float(row.gmem))
    for i, ki in enumerate(keys):
        for j, kj in enumerate(keys):
            if ki[0] in UNMEASURED_MODELS or kj[0] in UNMEASURED_MODELS:
                pairs.pop((i, j), None)  # the reference ignores measurements of these models
    return pairs
