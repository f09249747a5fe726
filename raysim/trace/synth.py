"""Seeded synthetic traces: Venus-like jobs drawn from a compact table of statistics.

:func:`generate` draws a trace from the distributions a preset describes (numbers per VC,
duration quantiles per size class, arrival profiles, behaviour parameters; the presets and where
their numbers come from are in :mod:`raysim.trace.presets`). It is fully vectorised (no per-job
Python loop), so the same code scales from the shipped one-week trace to multi-month,
datacenter-sized ones.

Model, in generation order (every random aspect draws from its own named stream, so adding an aspect
later does not reshuffle the others):

1. ``round(jobs_per_day * days)`` jobs are split into *batches*: bursts of jobs a user submits
   together (sweeps, retries). Batch sizes follow a Zipf law truncated at ``batch_max``.
2. Batch start times follow a non-homogeneous Poisson process with hourly rate
   ``hourly[hour] * weekday[day of week] * day factor`` (log-normal day-to-day factor); the jobs of a
   batch follow each other with exponential gaps of mean ``batch_gap``. Jobs past the span are
   dropped.
3. Each batch gets a VC (by job share), a user of that VC (Zipf activity), a size class (the user's
   favourite with probability ``user_size_repeat``, else from the VC's mix), a workload (the user's
   favourite model with probability ``user_model_repeat``) and a CPU-per-GPU ratio.
4. Durations come from the size class's quantile table (log-linear between knots) through a
   Gaussian copula: jobs of one batch share part of their normal score (``batch_corr``), so retries
   and sweeps have similar lengths. The scores are turned into stratified uniforms per (VC, size
   class), so even a short trace covers each distribution's whole range. Each VC's durations are
   scaled to put its median at ``median_duration``; then its tail (quantiles above the median) is
   stretched or shrunk so that its offered load ``sum(gpu_num * duration) / (VC GPUs * span)``
   equals ``load_factor * load`` exactly (a VC with very few jobs may not reach it).
5. The final state depends on the duration band (short jobs fail more often).

COMBINED presets (``helios``) generate several clusters into one trace (:func:`generate_named`).
:func:`load_synth` serves config ``trace.synth`` from a Parquet cache. Regenerate the shipped
trace with::

    python -m raysim.trace.synth --preset venus --days 7 --seed 0 --out traces/venus_synth
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raysim.cluster.layout import Layout, write_layout_csv
from raysim.errors import SkipReport
from raysim.trace.load import LAYOUT_FILE, Trace, read_cache, write_cache
from raysim.trace.presets import (
    COMBINED,
    DAY,
    PRESETS,
    SynthPreset,
    normalise,
    preset_layout,
    preset_parts,
    vc_duration_scale,
)
from raysim.trace.schema import conform, with_metadata

HOUR = 3600

# Named random streams, one per aspect (append new names at the end to keep old traces stable).
_STREAMS = ("batch_size", "day_factor", "batch_time", "vc", "user", "user_fav", "size", "workload",
            "gap", "duration", "state", "cpu")


# ---------------------------------------------------------------------------------------------
# Sampling helpers (all vectorised)
# ---------------------------------------------------------------------------------------------


def _categorical(rng: np.random.Generator, probs, rows=None, n: int | None = None) -> np.ndarray:
    """Draw category indices: from one distribution (1-D probs, n draws) or row `rows[i]` of a
    matrix of distributions, with one uniform per draw (inverse CDF on offset cumulative sums)."""
    p = normalise(probs)
    if p.ndim == 1:
        cdf = np.cumsum(p)
        cdf[-1] = 1.0
        idx = np.searchsorted(cdf, rng.random(n), side="right")
        return np.minimum(idx, len(p) - 1)
    g, k = p.shape
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    rows = np.asarray(rows, dtype=np.int64)
    flat = (cdf + np.arange(g)[:, None]).ravel()
    pos = np.searchsorted(flat, rows + rng.random(len(rows)), side="right")
    return np.clip(pos - rows * k, 0, k - 1)


def _zipf_weights(n: int, s: float, width: int | None = None) -> np.ndarray:
    w = np.arange(1, n + 1, dtype=float) ** -s
    if width is not None:
        w = np.pad(w, (0, width - n))
    return w


def _segment_cumsum(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sum of `values` restarting at every segment start."""
    c = np.cumsum(values)
    before = np.concatenate(([0.0], c))[starts]
    return c - np.repeat(before, lengths)


def _rank_uniform(z: np.ndarray, group: np.ndarray, n_group: int, rng: np.random.Generator
                  ) -> np.ndarray:
    """Stratified uniforms in the order of `z` within each group: the i-th smallest of n gets a
    uniform draw from [i/n, (i+1)/n). Keeps the dependence of `z`, removes sampling gaps."""
    order = np.lexsort((z, group))
    counts = np.bincount(group, minlength=n_group)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    g = group[order]
    u = np.empty(len(z))
    u[order] = (np.arange(len(z)) - first[g] + rng.random(len(z))) / counts[g]
    return u


def _calibrate_tail(logd: np.ndarray, u: np.ndarray, gpu_num: np.ndarray, group: np.ndarray,
                    target: np.ndarray, log_cap: float, max_factor: float = 100.0,
                    iterations: int = 48) -> np.ndarray:
    """Log-durations adjusted so that each group's sum(gpu_num * duration) equals `target`.

    Job i is multiplied by f_g ** w_i with w_i = clip(2 u_i - 1, 0, 1) and capped at exp(log_cap):
    durations below the median quantile stay as drawn, the tail stretches or shrinks most. f_g is
    found by bisection on log f (vectorised over groups), bounded to [1/max_factor, max_factor];
    a group whose target is out of reach ends at the bound."""
    n_group = len(target)
    w = np.clip(2.0 * u - 1.0, 0.0, 1.0)
    gpus = gpu_num.astype(float)
    lo = np.full(n_group, -math.log(max_factor))
    hi = -lo
    for _ in range(iterations):
        mid = (lo + hi) / 2
        work = gpus * np.exp(np.minimum(logd + w * mid[group], log_cap))
        high = np.bincount(group, work, minlength=n_group) > target
        hi = np.where(high, mid, hi)
        lo = np.where(high, lo, mid)
    return np.minimum(logd + w * ((lo + hi) / 2)[group], log_cap)


def _dictionary(indices: np.ndarray, names) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(list(names), pa.string()))


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------


def vc_gpus(preset: SynthPreset) -> np.ndarray:
    """GPUs of each VC, in preset order."""
    return np.array([vc.nodes * preset.gpus_per_node for vc in preset.vcs], dtype=np.int64)


def class_gpus(preset: SynthPreset) -> np.ndarray:
    """GPUs per (VC, size class): the class size capped at the VC's GPUs."""
    return np.minimum(np.asarray(preset.size_classes)[None, :], vc_gpus(preset)[:, None])


def generate(preset: SynthPreset, *, days: float, seed: int, origin: str | None = None
             ) -> tuple[pa.Table, dict[str, int]]:
    """Draw a trace of `days` days from `preset`; return (trace table, VC -> node count).

    Deterministic in (preset, days, seed, origin). The table conforms to JOB_SCHEMA, is sorted by
    submit time and carries raysim metadata (cluster, origin, source, preset, days, seed).
    """
    if not days > 0:
        raise ValueError(f"days must be positive, got {days!r}")
    days = float(days)
    origin = origin or preset.origin
    t0 = dt.datetime.fromisoformat(origin)
    span = int(round(days * DAY))
    rng = {name: np.random.Generator(np.random.PCG64(s))
           for name, s in zip(_STREAMS, np.random.SeedSequence(seed).spawn(len(_STREAMS)))}
    n_vc = len(preset.vcs)
    gpus = vc_gpus(preset)

    # 1. batches that add up to the target number of jobs
    n_jobs = max(1, round(preset.jobs_per_day * days))
    size_p = _zipf_weights(preset.batch_max, preset.batch_zipf)
    mean_batch = float((np.arange(1, preset.batch_max + 1) * size_p).sum() / size_p.sum())
    chunks, total = [], 0
    while total < n_jobs:
        draw = _categorical(rng["batch_size"], size_p, n=int(n_jobs / mean_batch * 1.2) + 16) + 1
        chunks.append(draw)
        total += int(draw.sum())
    bsize = np.concatenate(chunks)
    cum = np.cumsum(bsize)
    n_batch = int(np.searchsorted(cum, n_jobs)) + 1
    bsize = bsize[:n_batch]
    bsize[-1] -= int(cum[n_batch - 1]) - n_jobs

    # 2. batch start times: piecewise-constant hourly intensity
    sod = t0.hour * HOUR + t0.minute * 60 + t0.second
    bin_start = np.arange(0, span, HOUR, dtype=np.int64)
    width = np.minimum(HOUR, span - bin_start)
    wall = sod + bin_start
    day = wall // DAY
    day_factor = np.exp(preset.daily_sigma * rng["day_factor"].standard_normal(int(day[-1]) + 1)
                        - preset.daily_sigma**2 / 2)
    rate = (np.asarray(preset.hourly)[(wall // HOUR) % 24]
            * np.asarray(preset.weekday)[(t0.weekday() + day) % 7] * day_factor[day] * width / HOUR)
    bins = _categorical(rng["batch_time"], rate, n=n_batch)
    btime = bin_start[bins] + rng["batch_time"].random(n_batch) * width[bins]

    # 3. who submits what
    share = [vc.job_share for vc in preset.vcs]
    bvc = _categorical(rng["vc"], share, n=n_batch)
    users = np.array([vc.users for vc in preset.vcs])
    user_off = np.concatenate(([0], np.cumsum(users)[:-1]))
    user_w = np.stack([_zipf_weights(u, preset.user_zipf, users.max()) for u in users])
    buser = user_off[bvc] + _categorical(rng["user"], user_w, rows=bvc)
    user_vc = np.repeat(np.arange(n_vc), users)
    mix = np.array([vc.size_mix for vc in preset.vcs])
    wl_w = [w.weight for w in preset.workloads]
    fav_size = _categorical(rng["user_fav"], mix, rows=user_vc)
    fav_wl = _categorical(rng["user_fav"], wl_w, n=len(user_vc))
    fresh_size = _categorical(rng["size"], mix, rows=bvc)
    bclass = np.where(rng["size"].random(n_batch) < preset.user_size_repeat, fav_size[buser], fresh_size)
    fresh_wl = _categorical(rng["workload"], wl_w, n=n_batch)
    bwl = np.where(rng["workload"].random(n_batch) < preset.user_model_repeat, fav_wl[buser], fresh_wl)
    bcpu = np.asarray(preset.cpu_ratios)[_categorical(rng["cpu"], preset.cpu_ratio_probs, n=n_batch)]

    # 4. jobs: expand batches, spread them in time, drop those past the span
    jb = np.repeat(np.arange(n_batch), bsize)
    starts = np.concatenate(([0], np.cumsum(bsize)[:-1]))
    gaps = rng["gap"].exponential(preset.batch_gap, n_jobs)
    gaps[starts] = 0.0
    submit = np.floor(btime[jb] + _segment_cumsum(gaps, starts, bsize)).astype(np.int64)
    keep = submit < span
    jb, submit = jb[keep], submit[keep]
    vc, c = bvc[jb], bclass[jb]
    gpu_num = class_gpus(preset)[vc, c]

    # 5. durations: Gaussian copula (jobs of a batch share part of their normal score), made
    #    uniform by rank within each (VC, size class), mapped through the size class's log-linear
    #    quantile function, scaled to the VC's median and tail-calibrated to the VC's load
    rho = preset.batch_corr
    z = (rho * rng["duration"].standard_normal(n_batch)[jb]
         + math.sqrt(1 - rho * rho) * rng["duration"].standard_normal(len(jb)))
    n_class = len(preset.size_classes)
    u = _rank_uniform(z, vc * n_class + c, n_vc * n_class, rng["duration"])
    probs = np.asarray(preset.duration_probs)
    lq = np.log(np.asarray(preset.duration_quantiles, dtype=float))
    k = np.clip(np.searchsorted(probs, u, side="right") - 1, 0, len(probs) - 2)
    frac = (u - probs[k]) / (probs[k + 1] - probs[k])
    logd = lq[c, k] + frac * (lq[c, k + 1] - lq[c, k]) + np.log(vc_duration_scale(preset))[vc]
    target = np.array([v.load for v in preset.vcs]) * preset.load_factor * gpus * span
    logd = _calibrate_tail(logd, u, gpu_num, vc, target, math.log(preset.max_duration))
    duration = np.maximum(1, np.rint(np.exp(logd))).astype(np.int64)

    # 6. the rest of the row
    cpu_num = np.maximum(1, np.rint(gpu_num * bcpu[jb])).astype(np.int64)
    band = np.searchsorted(np.asarray(preset.state_edges), duration, side="left")
    state = _categorical(rng["state"], preset.state_probs, rows=band)
    wl = bwl[jb]

    order = np.argsort(submit, kind="stable")
    n = len(order)

    wls = preset.workloads
    models = list(dict.fromkeys(w.model for w in wls))
    datasets = list(dict.fromkeys(w.dataset for w in wls))
    wl_model = np.array([models.index(w.model) for w in wls])
    wl_dataset = np.array([datasets.index(w.dataset) for w in wls])

    def wl_col(attr, dtype):
        return pa.array(np.array([getattr(w, attr) for w in wls], dtype=dtype)[wl[order]])

    user_names = [f"u{i:04d}" for i in range(int(users.sum()))]

    table = pa.table({
        "job_id": pa.array(np.arange(1, n + 1, dtype=np.int64)),
        "vc": _dictionary(vc[order], (v.name for v in preset.vcs)),
        "user": _dictionary(buser[jb][order], user_names),
        "gpu_num": pa.array(gpu_num[order].astype(np.int32)),
        "cpu_num": pa.array(cpu_num[order].astype(np.int32)),
        "submit_time": pa.array(submit[order]),
        "duration": pa.array(duration[order]),
        "state": _dictionary(state[order], preset.states),
        "model": _dictionary(wl_model[wl[order]], models),
        "dataset": _dictionary(wl_dataset[wl[order]], datasets),
        "batchsize": wl_col("batchsize", np.int32),
        "amp": wl_col("amp", np.int8),
        "speed": wl_col("speed", np.float64),
        "gpu_util": wl_col("gpu_util", np.float64),
        "gmem_util": wl_col("gmem_util", np.float64),
        "gmem": wl_col("gmem", np.float64),
    })
    table = with_metadata(conform(table), cluster=preset.cluster, origin=t0.isoformat(),
                          source=f"raysim.trace.synth:{preset.name}", preset=preset.name,
                          days=days, seed=seed, generator="raysim.trace.synth")
    return table, preset.vc_nodes


def offered_load(table: pa.Table, vc_nodes: dict[str, int], days: float,
                 gpus_per_node: int = 8) -> dict[str, float]:
    """Per-VC offered load: sum(gpu_num * duration) / (VC GPUs * span)."""
    vc = table.column("vc").combine_chunks()
    names = np.asarray(vc.dictionary.to_pylist(), dtype=object)[vc.indices.to_numpy()]
    work = table.column("gpu_num").to_numpy().astype(float) * table.column("duration").to_numpy()
    out = {}
    for name, nodes in vc_nodes.items():
        out[name] = float(work[names == name].sum() / (nodes * gpus_per_node * days * DAY))
    return out


# ---------------------------------------------------------------------------------------------
# Multi-cluster generation and the cache behind trace.synth
# ---------------------------------------------------------------------------------------------

#: Bump when the same (preset, days, seed) would generate a different trace (invalidates caches).
GENERATOR_VERSION = "2"



def generate_named(name: str, *, days: float, seed: int, origin: str | None = None
                   ) -> tuple[pa.Table, dict[str, int]]:
    """Generate preset `name` from PRESETS, or all clusters of COMBINED[name] merged into one trace.

    Each cluster of a combined preset is drawn with its own seed (derived from `seed`) from one
    origin; VC and user names get the cluster's prefix ("saturn/vc01") so they stay unique, and jobs
    are renumbered in submit order (ties: cluster order).
    """
    parts = preset_parts(name)
    if name in PRESETS:
        return generate(parts[0][1], days=days, seed=seed, origin=origin)
    origin = origin or parts[0][1].origin
    tables = []
    for i, (prefix, preset) in enumerate(parts):
        child = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
        table, _ = generate(preset, days=days, seed=child, origin=origin)
        for column in ("vc", "user"):
            col = table.column(column).combine_chunks()
            names = pa.array([f"{prefix}/{v}" for v in col.dictionary.to_pylist()], pa.string())
            table = table.set_column(table.schema.get_field_index(column), column,
                                     pa.DictionaryArray.from_arrays(col.indices, names))
        tables.append(table.replace_schema_metadata(None))
    table = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    table = table.take(np.argsort(table.column("submit_time").to_numpy(), kind="stable"))
    table = table.set_column(0, "job_id", pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64)))
    table = with_metadata(conform(table), cluster=f"{name}_synth", origin=origin,
                          source=f"raysim.trace.synth:{name}", preset=name, days=float(days), seed=seed,
                          generator="raysim.trace.synth")
    return table, preset_layout(name)


def load_synth(spec, cache_dir=None):
    """The trace `spec` = {preset, days, seed} describes (config ``trace.synth``) as a
    :class:`raysim.trace.load.Trace`, generated once and then read from a Parquet cache in
    `cache_dir` (default ``~/.cache/raysim/synth``) keyed on preset, days, seed, GENERATOR_VERSION
    and the preset's numbers."""
    if "preset" not in spec:
        raise ValueError("trace.synth needs a preset, e.g. {preset: saturn, days: 183, seed: 0}")
    name, days, seed = str(spec["preset"]), float(spec.get("days", 7)), int(spec.get("seed", 0))
    digest = hashlib.sha256(repr(preset_parts(name)).encode()).hexdigest()[:10]
    key = f"{name}-{days:g}d-seed{seed}-v{GENERATOR_VERSION}-{digest}"
    path = (Path(cache_dir) if cache_dir else Path.home() / ".cache" / "raysim" / "synth") / f"{key}.parquet"
    source = f"synth:{key}"
    table = read_cache(path)
    if table is not None:
        return Trace(table, preset_layout(name), SkipReport(file=source), source, from_cache=True)
    table, vc_nodes = generate_named(name, days=days, seed=seed)
    write_cache(table, path)
    return Trace(table, vc_nodes, SkipReport(file=source), source)


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def write_trace(folder, table: pa.Table, vc_nodes: dict[str, int], layout: Layout | None = None) -> Path:
    """Write `jobs.parquet` (zstd) into `folder`, and the cluster: `layout` (typed node pools) as
    `layout.csv` (for cluster.layout), else `vc_nodes` as `vc_config.csv` (Lucid's `,num` format)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "jobs.parquet", compression="zstd", compression_level=9)
    if layout is not None:
        write_layout_csv(folder / LAYOUT_FILE, layout)
        return folder
    lines = [",num"] + [f"{name},{int(nodes)}" for name, nodes in vc_nodes.items()]
    (folder / "vc_config.csv").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return folder


def main(argv=None, prog: str = "python -m raysim.trace.synth") -> int:
    """Generate a trace from a preset into a folder (jobs.parquet + vc_config.csv)."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Generate a seeded synthetic trace from a preset.")
    parser.add_argument("--preset", choices=sorted(PRESETS) + sorted(COMBINED), default="venus")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--origin", default=None, help="ISO time origin (default: the preset's)")
    parser.add_argument("--out", required=True, help="output folder (jobs.parquet + vc_config.csv)")
    args = parser.parse_args(argv)
    gpus_per_node = preset_parts(args.preset)[0][1].gpus_per_node
    table, vc_nodes = generate_named(args.preset, days=args.days, seed=args.seed, origin=args.origin)
    folder = write_trace(args.out, table, vc_nodes)
    load = offered_load(table, vc_nodes, args.days, gpus_per_node)
    gpus = sum(vc_nodes.values()) * gpus_per_node
    total = sum(load[v] * n for v, n in vc_nodes.items()) * gpus_per_node / gpus
    from raysim.tables import plural

    print(f"wrote {plural(table.num_rows, 'job')}, {plural(len(vc_nodes), 'VC')}, {plural(gpus, 'GPU')}, "
          f"offered load {total:.2f} to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
