"""Summary statistics of a trace (the numbers the generator is calibrated on), side by side for
several traces: job counts and rates, the GPU-count mix, durations, per-VC shares, diurnal and
weekly cycles and per-user repetition."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE
from raysim.trace.schema import metadata

DAY = 86400
#: GPU-count bins (inclusive; None = no upper bound) beyond 1 GPU.
SIZE_BINS = ((2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, None))
QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.99)
TOP_VCS = 12


def _coded(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A (dictionary) string column as integer codes and the names they stand for."""
    values = column.combine_chunks()
    if not pa.types.is_dictionary(values.type):
        values = values.dictionary_encode()
    names = np.asarray(values.dictionary.to_pylist(), dtype=object)
    return values.indices.to_numpy(zero_copy_only=False), names


def _origin(table: pa.Table) -> dt.datetime:
    origin = metadata(table).get("origin", "0")
    return dt.datetime(1970, 1, 1) if origin in ("", "0") else dt.datetime.fromisoformat(origin)


def trace_stats(table: pa.Table, vc_nodes: dict[str, int],
                gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, object]:
    """Statistics of one trace, as an ordered {label: value} dict (per-VC rows are "VC <name>")."""
    gpu = table.column("gpu_num").to_numpy().astype(np.int64)
    duration = table.column("duration").to_numpy().astype(np.float64)
    submit = table.column("submit_time").to_numpy()
    vc, vc_names = _coded(table.column("vc"))
    user, _ = _coded(table.column("user"))
    n = len(gpu)
    if n == 0:
        return {"jobs": 0, "GPUs": sum(vc_nodes.values()) * gpus_per_node, "VCs": len(vc_nodes)}
    meta = metadata(table)
    days = float(meta["days"]) if "days" in meta else max(float(submit.max() - submit.min()), 1.0) / DAY
    gpus = sum(vc_nodes.values()) * gpus_per_node
    out: dict[str, object] = {
        "jobs": n,
        "days": round(days, 1),
        "GPU jobs per day": round(n / days, 1),
        "GPUs": gpus,
        "VCs": len(vc_nodes),
        "users": int(np.unique(user).size),
        "mean GPUs per job": round(float(gpu.mean()), 2),
        "max GPUs per job": int(gpu.max()),
        "1-GPU share": round(float((gpu == 1).mean()), 3),
        "power-of-two share": round(float(((gpu & (gpu - 1)) == 0).mean()), 3),
    }
    for lo, hi in SIZE_BINS:
        label = f"{lo}+" if hi is None else str(lo) if lo == hi else f"{lo}-{hi}"
        inside = (gpu >= lo) & (gpu <= (hi or gpu.max()))
        out[f"{label} GPUs share"] = round(float(inside.mean()), 3)
    for q, value in zip(QUANTILES, np.quantile(duration, QUANTILES)):
        out[f"duration p{round(q * 100)} (s)"] = round(float(value))
    out["duration mean (s)"] = round(float(duration.mean()))
    out["offered load"] = round(float((gpu * duration).sum() / (gpus * days * DAY)), 3)
    state, state_names = _coded(table.column("state"))
    counts = np.bincount(state, minlength=len(state_names))
    for i in np.argsort(-counts, kind="stable"):
        if counts[i]:
            out[f"state {state_names[i]}"] = round(float(counts[i] / n), 3)

    t0 = _origin(table)
    wall = submit + (t0.hour * 3600 + t0.minute * 60 + t0.second)
    hourly = np.bincount((wall // 3600) % 24, minlength=24).astype(float)
    ranked = np.sort(hourly)
    out["diurnal peak/trough (4 h each)"] = round(float(ranked[-4:].mean() / max(ranked[:4].mean(), 1)), 2)
    out["peak hour"], out["trough hour"] = int(hourly.argmax()), int(hourly.argmin())
    weekday = (t0.weekday() + wall // DAY) % 7
    per_day = np.bincount(weekday, minlength=7) / np.maximum(_weekday_count(t0, days), 1)
    out["weekend / weekday rate"] = round(float(per_day[5:].mean() / max(per_day[:5].mean(), 1e-9)), 2)

    jobs = pd.DataFrame({"user": user, "gpu": gpu})
    by_size = jobs.groupby(["user", "gpu"], sort=False).size()
    out["jobs at the user's usual GPU count"] = round(float(by_size.groupby(level=0).max().sum() / n), 3)
    per_user = jobs["user"].value_counts()
    out["top-10 users' job share"] = round(float(per_user.iloc[:10].sum() / n), 3)

    share = pd.Series(np.bincount(vc, minlength=len(vc_names)) / n).groupby(vc_names).sum()
    for name in sorted(vc_nodes, key=lambda v: -share.get(v, 0.0)):
        out[f"VC {name}"] = f"{share.get(name, 0.0):.3f} of jobs, {vc_nodes[name] * gpus_per_node} GPUs"
    return out


def _weekday_count(t0: dt.datetime, days: float) -> np.ndarray:
    """How many of each weekday (Monday first) the span covers (partial days count)."""
    return np.bincount((t0.weekday() + np.arange(int(np.ceil(days)))) % 7, minlength=7)


def format_stats(columns: dict[str, dict[str, object]], top_vcs: int = TOP_VCS) -> str:
    """A text table: one row per statistic, one column per trace. Only the `top_vcs` largest VCs (by
    job share) of each trace are listed."""
    labels: list[str] = []
    for stats in columns.values():
        vcs = [k for k in stats if k.startswith("VC ")][:top_vcs]
        labels += [k for k in stats if not k.startswith("VC ") or k in vcs]
    labels = list(dict.fromkeys(labels))
    names = list(columns)
    cells = [[str(columns[c].get(label, "-")) for c in names] for label in labels]
    width = [max([len(label) for label in labels] + [9])]
    width += [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(names)]
    lines = ["  ".join(["".ljust(width[0])] + [name.rjust(w) for name, w in zip(names, width[1:])])]
    for label, row in zip(labels, cells):
        lines.append("  ".join([label.ljust(width[0])] + [v.rjust(w) for v, w in zip(row, width[1:])]))
    return "\n".join(lines)
