"""Synthetic-trace presets: the calibrated tables that :mod:`raysim.trace.synth` draws from.

A preset (:class:`SynthPreset`) holds a few numbers per VC (nodes, job share, offered load, users,
job-size mix), a duration quantile table per size class, a 24-hour and a 7-day arrival profile and a
handful of behaviour parameters; every number is a summary statistic, no job rows are kept.

Presets: VENUS (September 2020, measured), and the Helios clusters over April-September 2020
(VENUS_6M, EARTH, SATURN, URANUS, fitted to published statistics); COMBINED presets (``helios``)
are several clusters generated into one trace. The comments above each table say where its numbers
come from. :func:`expected_stats` gives the statistics a long generated trace should show.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

DAY = 86400


@dataclass(frozen=True)
class VCStats:
    """What a preset says about one virtual cluster."""

    name: str
    nodes: int
    job_share: float  # fraction of the cluster's jobs submitted to this VC
    load: float  # offered load: sum(gpu_num * duration) / (GPUs * span)
    median_duration: float  # median job duration (seconds)
    users: int  # distinct users submitting to this VC (each user belongs to one VC)
    size_mix: tuple[float, ...]  # probability of each SynthPreset.size_classes entry


@dataclass(frozen=True)
class Workload:
    """A typical training job's single-GPU profile (keys match profiles/single_data.csv)."""

    model: str
    dataset: str
    batchsize: int
    amp: int
    speed: float
    gpu_util: float
    gmem_util: float
    gmem: float
    weight: float  # relative frequency among jobs


@dataclass(frozen=True)
class SynthPreset:
    """Everything the generator needs to imitate one cluster; all numbers are summary statistics."""

    name: str
    cluster: str  # cluster name written into the trace metadata
    origin: str  # default time origin (ISO, local time of the cluster)
    gpus_per_node: int
    jobs_per_day: float
    vcs: tuple[VCStats, ...]
    load_factor: float  # generated offered load = load_factor * VCStats.load
    size_classes: tuple[int, ...]  # GPUs per job (capped at the VC's GPUs)
    duration_probs: tuple[float, ...]  # quantile levels, 0 ... 1
    duration_quantiles: tuple[tuple[int, ...], ...]  # seconds at duration_probs, per size class
    max_duration: int  # no job runs longer (seconds)
    batch_corr: float  # correlation of the duration normal scores of jobs in one batch
    hourly: tuple[float, ...]  # 24 relative arrival rates by hour of day
    weekday: tuple[float, ...]  # 7 relative arrival rates, Monday first
    daily_sigma: float  # log-sd of the day-to-day arrival-rate factor
    batch_zipf: float  # Zipf exponent of jobs per batch
    batch_max: int  # largest batch
    batch_gap: float  # mean seconds between consecutive jobs of a batch
    user_zipf: float  # Zipf exponent of user activity within a VC
    user_size_repeat: float  # probability a batch uses its user's favourite size class
    user_model_repeat: float  # probability a batch uses its user's favourite workload
    states: tuple[str, ...]
    state_edges: tuple[int, ...]  # duration band upper edges (s), inclusive
    state_probs: tuple[tuple[float, ...], ...]  # per band (len(state_edges) + 1), over `states`
    cpu_ratios: tuple[float, ...]  # CPUs per GPU
    cpu_ratio_probs: tuple[float, ...]
    workloads: tuple[Workload, ...]

    def __post_init__(self):
        k = len(self.size_classes)
        problems = []
        if len(self.hourly) != 24:
            problems.append("hourly needs 24 values")
        if len(self.weekday) != 7:
            problems.append("weekday needs 7 values")
        if len(self.duration_quantiles) != k:
            problems.append("duration_quantiles needs one row per size class")
        if any(len(q) != len(self.duration_probs) for q in self.duration_quantiles):
            problems.append("each duration_quantiles row needs one value per duration_probs")
        if any(np.diff(q).min() < 0 or q[0] < 1 for q in self.duration_quantiles):
            problems.append("duration quantiles must be >= 1 and non-decreasing")
        if self.duration_probs[0] != 0 or self.duration_probs[-1] != 1:
            problems.append("duration_probs must run from 0 to 1")
        if len(self.state_probs) != len(self.state_edges) + 1:
            problems.append("state_probs needs one row per duration band")
        if not self.load_factor > 0 or not 0 <= self.batch_corr < 1:
            problems.append("load_factor must be > 0 and batch_corr in [0, 1)")
        if len(self.cpu_ratios) != len(self.cpu_ratio_probs):
            problems.append("cpu_ratios and cpu_ratio_probs differ in length")
        for vc in self.vcs:
            if len(vc.size_mix) != k or vc.nodes < 1 or vc.users < 1:
                problems.append(f"VC {vc.name}: size_mix length, nodes and users")
        if problems:
            raise ValueError(f"preset {self.name!r}: " + "; ".join(problems))

    @property
    def vc_nodes(self) -> dict[str, int]:
        return {vc.name: vc.nodes for vc in self.vcs}


# ---------------------------------------------------------------------------------------------
# Venus (SenseTime Helios, Sept 2020). Every number was measured once from the 23,859-job Lucid
# "full log" of Venus (2020-09-01..26, CC BY 4.0 Helios data); no job rows are kept.
#  - nodes: Lucid's vc_config.csv (8 GPUs per node, 135 nodes).
#  - jobs_per_day: 23,859 jobs / 26 days.
#  - job_share, users, median_duration: jobs, distinct users and median duration per VC (34 of the
#    118 users submit to several VCs; generated users stay in one, so there are more of them).
#  - load: sum(gpu_num * duration) / (8 * nodes * 26 days), capped at 0.95 (vcgkz measured 1.30,
#    vcvGl 1.09: both driven by a few multi-day jobs submitted late in the month; their loads within
#    the month are 0.81 and 0.97). Cluster-wide: 0.89.
#  - load_factor 0.8: generated arrivals are open-loop, Venus's users are not (they submit when GPUs
#    free up), so at the measured loads a generated week queues ~1.5x more than the real month
#    (FIFO / SJF mean queue, median of 5 seeds: 83k / 11k s vs 54k / 7k s). At 0.8 x the measured
#    loads it matches the real month (51k / 7k s).
#  - size_mix: gpu_num rounded to the nearest power of two, per VC (rounded to 3 decimals).
#  - duration quantiles: per size class at the 0, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100th
#    percentiles (64 and 128 GPUs share one row, from the 704 jobs of >= 48 GPUs).
#    All jobs: median 193 s, mean 11,769 s. max_duration: the longest job (14.9 days).
#  - hourly / weekday: submissions per hour of day / per day of week relative to the mean (peak
#    15:00, trough 06:00, ratio 6.7). daily_sigma: log-sd of daily job counts after the weekday
#    profile.
#  - batches: a user's consecutive jobs with the same VC and gpu_num less than 10 min apart form a
#    batch: 60 % singletons, mean 3.0 jobs, 34 % of jobs in batches of > 16 (Zipf 1.95 truncated
#    at 64 gives 60 %, 3.1, 31 %); gaps: median 84 s (exponential, mean 120 s); the log-duration sd
#    within a batch is 1.53 vs 2.43 overall (correlation 0.78).
#  - user_zipf: fitted to the mean top-user share of a VC's jobs (0.47). user_size_repeat: 60 % of
#    a user's batches use the user's most common gpu_num. user_model_repeat: a modelling choice
#    (Lucid assigned workloads to jobs at random; users in practice rerun their model).
#  - states: by duration band (<= 60 s, <= 1 h, longer); NODE_FAIL/TIMEOUT (0.05 %) folded in.
#  - cpu ratios: cpu_num / gpu_num, the eight most common values (99 % of jobs).
#  - workloads: one (batchsize, amp) profile row per model from profiles/single_data.csv (Lucid's
#    single-job profiles, values rounded), weighted by the model's share of jobs in the log.
# ---------------------------------------------------------------------------------------------

_VENUS_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)

VENUS = SynthPreset(
    name="venus",
    cluster="venus_synth",
    origin="2020-09-01T00:00:00",
    gpus_per_node=8,
    jobs_per_day=917.7,
    load_factor=0.8,
    vcs=(
        #      name    nodes share   load  median users  size mix: 1, 2, 4, 8, 16, 32, 64, 128 GPUs
        VCStats("vcEwI", 9, 0.3187, 0.894, 123, 13, (0.860, 0.033, 0.040, 0.027, 0.001, 0.039, 0.0, 0.0)),
        VCStats("vcWoR", 5, 0.1184, 0.897, 139, 17, (0.588, 0.126, 0.212, 0.073, 0.0, 0.0, 0.0, 0.0)),
        VCStats("vcHvQ", 8, 0.1112, 0.768, 351, 19, (0.544, 0.011, 0.066, 0.355, 0.015, 0.008, 0.0, 0.0)),
        VCStats("vcvGl", 20, 0.0609, 0.95, 80, 5, (0.045, 0.054, 0.093, 0.236, 0.094, 0.037, 0.042, 0.399)),
        VCStats("vc8Gr", 6, 0.0298, 0.788, 183, 17, (0.099, 0.079, 0.261, 0.449, 0.065, 0.048, 0.0, 0.0)),
        VCStats("vcKeu", 12, 0.0964, 0.800, 277, 29, (0.684, 0.009, 0.006, 0.265, 0.023, 0.013, 0.0, 0.0)),
        VCStats("vcKrE", 4, 0.0179, 0.844, 424, 9, (0.514, 0.467, 0.019, 0.0, 0.0, 0.0, 0.0, 0.0)),
        VCStats("vcYVn", 11, 0.0639, 0.838, 452, 24, (0.730, 0.031, 0.038, 0.186, 0.010, 0.005, 0.0, 0.0)),
        VCStats("vchbv", 4, 0.0082, 0.771, 428, 6, (0.184, 0.0, 0.0, 0.770, 0.0, 0.046, 0.0, 0.0)),
        VCStats("vcLTP", 8, 0.0217, 0.849, 2014, 11, (0.168, 0.019, 0.019, 0.757, 0.037, 0.0, 0.0, 0.0)),
        VCStats("vchA3", 3, 0.0273, 0.622, 235, 13, (0.682, 0.094, 0.071, 0.154, 0.0, 0.0, 0.0, 0.0)),
        VCStats("vcJsw", 32, 0.0777, 0.909, 123, 8, (0.058, 0.070, 0.043, 0.297, 0.087, 0.410, 0.013, 0.021)),
        VCStats("vcefl", 10, 0.0285, 0.916, 203, 6, (0.147, 0.371, 0.130, 0.352, 0.0, 0.0, 0.0, 0.0)),
        VCStats("vcvlY", 2, 0.0174, 0.911, 192, 7, (0.024, 0.0, 0.0, 0.870, 0.106, 0.0, 0.0, 0.0)),
        VCStats("vcgkz", 1, 0.0021, 0.95, 171, 4, (0.265, 0.0, 0.020, 0.714, 0.0, 0.0, 0.0, 0.0)),
    ),
    size_classes=_VENUS_SIZES,
    duration_probs=(0.0, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 0.999, 1.0),
    duration_quantiles=(
        (1, 16, 30, 87, 173, 593, 3680, 19484, 178928, 434792, 1209614),  # 1 GPU (mean 6,502)
        (1, 5, 19, 103, 221, 1190, 78824, 173677, 416272, 660209, 693247),  # 2 (mean 25,825)
        (1, 9, 19, 66, 203, 3172, 27208, 80674, 260715, 677976, 1181491),  # 4 (mean 14,487)
        (1, 13, 29, 86, 265, 1914, 44401, 116096, 464381, 1040746, 1286670),  # 8 (mean 20,506)
        (1, 3, 6, 92, 455, 9390, 60663, 174420, 422275, 558673, 564488),  # 16 (mean 26,182)
        (1, 14, 42, 68, 83, 646, 8989, 65158, 337345, 562693, 1033825),  # 32 (mean 13,280)
        (2, 4, 5, 5, 20, 211, 1140, 4480, 158044, 330293, 373385),  # 64 (>= 48 GPUs, mean 4,242)
        (2, 4, 5, 5, 20, 211, 1140, 4480, 158044, 330293, 373385),  # 128
    ),
    max_duration=1286670,
    batch_corr=0.78,
    hourly=(0.81, 0.77, 0.68, 0.60, 0.31, 0.27, 0.26, 0.28, 0.39, 0.69, 1.09, 1.29,
            1.30, 1.30, 1.67, 1.75, 1.67, 1.67, 1.34, 1.32, 1.30, 1.45, 1.02, 0.78),
    weekday=(1.17, 1.07, 1.66, 1.33, 0.87, 0.44, 0.46),
    daily_sigma=0.2,
    batch_zipf=1.95,
    batch_max=64,
    batch_gap=120.0,
    user_zipf=1.4,
    user_size_repeat=0.5,
    user_model_repeat=0.7,
    states=("COMPLETED", "CANCELLED", "FAILED"),
    state_edges=(60, 3600),
    state_probs=((0.253, 0.307, 0.440), (0.633, 0.219, 0.148), (0.612, 0.337, 0.051)),
    cpu_ratios=(1.0, 5.0, 0.125, 4.0, 0.5, 0.25, 3.0, 8.0),
    cpu_ratio_probs=(0.726, 0.094, 0.046, 0.036, 0.027, 0.024, 0.020, 0.014),
    workloads=(
        Workload("PointNet", "ShapeNet", 64, 0, 138.0, 7.8, 6.6, 6346.0, 0.192),
        Workload("EfficientNet", "CIFAR-10", 32, 1, 681.0, 20.6, 1.3, 2176.0, 0.154),
        Workload("MobileNetV2", "CIFAR-10", 32, 0, 1108.4, 42.8, 17.0, 2508.0, 0.152),
        Workload("ResNet18", "CIFAR-10", 32, 1, 1649.0, 40.7, 20.3, 2330.0, 0.105),
        Workload("VGG", "CIFAR-10", 32, 1, 3556.9, 48.0, 19.0, 2762.0, 0.100),
        Workload("PPO", "LunarLander", 128, 0, 46.5, 15.0, 0.0, 2051.0, 0.069),
        Workload("TD3", "BipedalWalker", 128, 0, 67.4, 14.1, 0.0, 2059.0, 0.068),
        Workload("NeuMF", "MovieLens", 128, 0, 29774.0, 10.5, 2.0, 2050.0, 0.064),
        Workload("MobileNetV3", "ImageNet", 64, 0, 2537.4, 80.5, 44.3, 3266.0, 0.031),
        Workload("BERT", "SQuAD", 32, 1, 119.9, 99.6, 74.2, 16334.0, 0.027),
        Workload("LSTM", "Wikitext2", 64, 0, 4496.1, 97.0, 74.9, 3884.0, 0.010),
        Workload("DCGAN", "LSUN", 64, 0, 3275.8, 72.9, 31.0, 2322.0, 0.010),
        Workload("ResNet50", "ImageNet", 64, 1, 708.8, 97.7, 72.5, 5376.0, 0.009),
        Workload("Transformer", "Multi30k", 64, 0, 857.9, 75.2, 31.8, 11801.0, 0.009),
    ),
)


# ---------------------------------------------------------------------------------------------
# Derived quantities (the Helios presets below are fitted with them)
# ---------------------------------------------------------------------------------------------


def normalise(p) -> np.ndarray:
    """Weights scaled to probabilities: a vector to sum 1, a matrix row by row."""
    p = np.asarray(p, dtype=float)
    if p.ndim == 1:
        return p / p.sum()
    return p / p.sum(axis=1, keepdims=True)


def _duration_cdf(preset: SynthPreset, log_grid: np.ndarray) -> np.ndarray:
    """CDF of each size class's unscaled duration distribution on `log_grid` (classes x grid)."""
    probs = np.asarray(preset.duration_probs, dtype=float)
    lq = np.log(np.asarray(preset.duration_quantiles, dtype=float))
    return np.stack([np.interp(log_grid, q, probs) for q in lq])


def _log_grid(preset: SynthPreset) -> np.ndarray:
    return np.linspace(0.0, math.log(preset.max_duration) + 4.0, 8001)


def vc_duration_scale(preset: SynthPreset) -> np.ndarray:
    """Per-VC duration factor that puts the median of each VC's durations at its `median_duration`
    (the tail is then calibrated to the VC's load at generation time)."""
    grid = _log_grid(preset)
    cdf = normalise([vc.size_mix for vc in preset.vcs]) @ _duration_cdf(preset, grid)
    medians = np.exp([np.interp(0.5, row, grid) for row in cdf])
    return np.array([vc.median_duration for vc in preset.vcs]) / medians


def expected_stats(preset: SynthPreset) -> dict:
    """The statistics a long generated trace should show (targets for tests and reports)."""
    share = normalise([vc.job_share for vc in preset.vcs])
    mix = normalise([vc.size_mix for vc in preset.vcs])
    hourly = np.asarray(preset.hourly, dtype=float)
    grid = _log_grid(preset)
    scale = np.log(vc_duration_scale(preset))
    cdf = sum(share[v] * (mix[v] @ _duration_cdf(preset, grid - scale[v])) for v in range(len(share)))
    names = [vc.name for vc in preset.vcs]
    return {
        "vc_share": dict(zip(names, share.tolist())),
        "vc_load": {vc.name: vc.load * preset.load_factor for vc in preset.vcs},
        "vc_median_duration": {vc.name: vc.median_duration for vc in preset.vcs},
        "size_mix": dict(zip(preset.size_classes, (share @ mix).tolist())),
        "duration_median": float(np.exp(np.interp(0.5, cdf, grid))),
        "diurnal_ratio": float(hourly.max() / hourly.min()),
        "jobs_per_day": preset.jobs_per_day,
    }


# ---------------------------------------------------------------------------------------------
# Helios: Venus, Earth, Saturn and Uranus (SenseTime, SC'21), 2020-04-01 .. 09-30 (183 days).
# Published per cluster, GPU jobs only: HELIOS_PUBLISHED (HeliosData README; HeliosArtifact
# helios_cluster_summary.csv): 1,580,464 GPU jobs on 6,218 GPUs (six-month averages of the daily GPU
# counts in cluster_gpu_number.csv).
# Per-VC data is public only for Venus (the VENUS preset, measured on September). EARTH, SATURN and
# URANUS keep what VENUS measured that is not per VC (arrival profiles, batching, users' repetition,
# CPU ratios, workloads, the duration quantiles per size class) and are fitted, by hand on 60-day
# traces, to the published numbers:
#  - jobs_per_day = GPU jobs / 183 days; nodes = published GPUs / 8 rounded up.
#  - VCs: our choice (no per-VC data is public): a few VCs of 20-50 nodes, many of 4-16, some of 1-2
#    (the shape of Venus's layout and of HeliosArtifact's Earth per-VC GPU file). Each VC is one of
#    the _VC_KINDS; the big VCs get the multi-GPU kinds and few jobs, small ones the 1-GPU kind and
#    many jobs, so that the mean GPUs per job and the mean duration come out as published (1-GPU
#    shares ~0.8 Earth, ~0.7 Saturn, ~0.63 Uranus follow; the published median job is 1 GPU).
#  - per-VC loads (our choice: 0.5 for 1-GPU VCs up to 0.95) are scaled so the GPU-weighted load is
#    the published GPU time / (GPUs x 183 days); `load_factor` stays VENUS's 0.8 (open-loop arrivals).
#  - VCStats.median_duration (relative, our choice) is scaled to the published median duration;
#    the tail: jobs below one node get shorter tails (_size_tail, exponent 1.5), as the published
#    means require (Helios' GPU time goes to multi-GPU jobs; VENUS's September table understates it).
#  - users per VC: our choice. States: VENUS's table per duration band, columns reweighted (once, on
#    a 90-day trace) to the published shares.
# VENUS_6M is VENUS re-rated to Venus's six-month numbers (jobs, GPU time, states) for `helios`.
# ---------------------------------------------------------------------------------------------

HELIOS_DAYS = 183
HELIOS_ORIGIN = "2020-04-01T00:00:00"

#: Published statistics of the GPU jobs of each Helios cluster over the 183 days (durations in s,
#: state shares of GPU jobs, GPU time = sum of gpu_num * duration in GPU-seconds).
HELIOS_PUBLISHED = {
    "venus": dict(gpus=1022, gpu_jobs=125_303, mean_gpus=6.736, median_duration=204, mean_duration=13_041,
                  completed=0.526, cancelled=0.272, failed=0.202, gpu_time=1.2346e10),
    "earth": dict(gpus=997, gpu_jobs=427_148, mean_gpus=2.101, median_duration=234, mean_duration=5_131,
                  completed=0.735, cancelled=0.136, failed=0.129, gpu_time=1.1439e10),
    "saturn": dict(gpus=2080, gpu_jobs=698_896, mean_gpus=4.010, median_duration=124, mean_duration=5_253,
                   completed=0.582, cancelled=0.272, failed=0.145, gpu_time=2.7652e10),
    "uranus": dict(gpus=2119, gpu_jobs=329_117, mean_gpus=4.038, median_duration=280, mean_duration=9_164,
                   completed=0.607, cancelled=0.201, failed=0.192, gpu_time=2.6561e10),
}

#: Size mixes over _VENUS_SIZES (1 ... 128 GPUs) of four kinds of VC; classes larger than a VC are
#: dropped from its mix. Venus has all four (vcEwI single, vcKeu mixed, vcHvQ multi, vcJsw large).
_VC_KINDS = {
    "single": (0.97, 0.02, 0.01, 0.0, 0.0, 0.0, 0.0, 0.0),
    "mixed": (0.70, 0.10, 0.08, 0.11, 0.01, 0.0, 0.0, 0.0),
    "multi": (0.25, 0.08, 0.12, 0.45, 0.06, 0.03, 0.005, 0.005),
    "large": (0.15, 0.06, 0.10, 0.35, 0.14, 0.15, 0.03, 0.02),
}


def _gpu_weighted_load(vcs) -> float:
    return sum(vc.load * vc.nodes for vc in vcs) / sum(vc.nodes for vc in vcs)


def _size_tail(quantiles, exponent: float):
    """VENUS's duration quantiles with the upper half of jobs smaller than a node shrunk by
    (size / 8) ** exponent (fully at the maximum, not at the median): in Helios, jobs of a few GPUs
    are mostly short and the GPU time goes to multi-GPU jobs."""
    probs = np.asarray(VENUS.duration_probs)
    shrink = np.clip(2 * probs - 1, 0, 1)
    rows = [np.rint(np.asarray(row) * min(size / 8, 1) ** (exponent * shrink))
            for row, size in zip(quantiles, _VENUS_SIZES)]
    rows = [np.maximum.accumulate(np.maximum(1, row)) for row in rows]
    return tuple(tuple(int(q) for q in row) for row in rows)


def _helios_preset(name: str, *, state_probs, rows, tail_exponent: float) -> SynthPreset:
    """A Helios cluster preset from VENUS, HELIOS_PUBLISHED[name] and a compact VC table.

    `rows`: (VC, nodes, job share, relative load, relative median duration, users, kind). Loads are
    scaled to the published GPU time (GPU-weighted) and medians to the published median duration;
    `tail_exponent` ties durations to job size (see _size_tail).
    """
    published = HELIOS_PUBLISHED[name]
    raw = []
    for vc, nodes, share, load, med, users, kind in rows:
        mix = [p if size <= nodes * VENUS.gpus_per_node else 0.0
               for p, size in zip(_VC_KINDS[kind], _VENUS_SIZES)]
        raw.append(VCStats(vc, nodes, share, load, med, users, tuple(normalise(mix).tolist())))
    gpus = sum(vc.nodes for vc in raw) * VENUS.gpus_per_node
    scale = published["gpu_time"] / (gpus * HELIOS_DAYS * DAY) / _gpu_weighted_load(raw)
    vcs = tuple(dataclasses.replace(vc, load=round(vc.load * scale, 4)) for vc in raw)
    preset = dataclasses.replace(VENUS, name=name, cluster=f"{name}_synth", origin=HELIOS_ORIGIN,
                                 jobs_per_day=round(published["gpu_jobs"] / HELIOS_DAYS, 1), vcs=vcs,
                                 state_probs=state_probs,
                                 duration_quantiles=_size_tail(VENUS.duration_quantiles, tail_exponent))
    factor = published["median_duration"] / expected_stats(preset)["duration_median"]
    vcs = tuple(dataclasses.replace(vc, median_duration=round(vc.median_duration * factor, 1)) for vc in vcs)
    return dataclasses.replace(preset, vcs=vcs)


EARTH = _helios_preset(
    "earth", tail_exponent=1.5,
    state_probs=((0.429, 0.213, 0.358), (0.797, 0.113, 0.09), (0.79, 0.178, 0.032)),
    rows=(
        ("vc01", 27, 0.05, 0.95, 1.5, 40, "multi"),
        ("vc02", 22, 0.035, 0.95, 1.5, 35, "multi"),
        ("vc03", 12, 0.06, 0.90, 1.2, 25, "mixed"),
        ("vc04", 12, 0.035, 0.90, 1.5, 25, "multi"),
        ("vc05", 8, 0.11, 0.50, 0.8, 35, "single"),
        ("vc06", 8, 0.06, 0.80, 1.2, 18, "mixed"),
        ("vc07", 8, 0.12, 0.50, 0.7, 30, "single"),
        ("vc08", 8, 0.10, 0.50, 1.0, 25, "single"),
        ("vc09", 7, 0.10, 0.50, 1.0, 25, "single"),
        ("vc10", 4, 0.10, 0.70, 0.7, 22, "mixed"),
        ("vc11", 4, 0.06, 0.70, 2.0, 12, "mixed"),
        ("vc12", 2, 0.07, 0.50, 1.0, 15, "single"),
        ("vc13", 2, 0.06, 0.50, 0.5, 12, "single"),
        ("vc14", 1, 0.04, 0.50, 1.0, 10, "single"),
    ),
)

SATURN = _helios_preset(
    "saturn", tail_exponent=1.5,
    state_probs=((0.316, 0.365, 0.319), (0.682, 0.225, 0.093), (0.635, 0.334, 0.031)),
    rows=(
        ("vc01", 50, 0.085, 0.95, 1.5, 45, "large"),
        ("vc02", 38, 0.06, 0.95, 1.2, 40, "multi"),
        ("vc03", 24, 0.05, 0.90, 1.2, 35, "multi"),
        ("vc04", 20, 0.07, 0.90, 1.0, 30, "mixed"),
        ("vc05", 16, 0.07, 0.85, 1.0, 30, "mixed"),
        ("vc06", 16, 0.04, 0.90, 1.5, 25, "multi"),
        ("vc07", 16, 0.05, 0.80, 0.8, 30, "mixed"),
        ("vc08", 12, 0.06, 0.80, 1.0, 25, "mixed"),
        ("vc09", 8, 0.07, 0.50, 0.7, 35, "single"),
        ("vc10", 12, 0.03, 0.90, 2.0, 20, "multi"),
        ("vc11", 6, 0.07, 0.50, 1.0, 30, "single"),
        ("vc12", 8, 0.07, 0.50, 0.8, 30, "single"),
        ("vc13", 8, 0.05, 0.70, 1.5, 15, "mixed"),
        ("vc14", 8, 0.07, 0.50, 1.0, 25, "single"),
        ("vc15", 6, 0.06, 0.50, 1.0, 20, "single"),
        ("vc16", 4, 0.035, 0.50, 0.8, 15, "single"),
        ("vc17", 4, 0.03, 0.70, 1.0, 10, "mixed"),
        ("vc18", 4, 0.03, 0.50, 1.0, 8, "single"),
    ),
)

URANUS = _helios_preset(
    "uranus", tail_exponent=1.5,
    state_probs=((0.268, 0.252, 0.481), (0.662, 0.178, 0.16), (0.661, 0.282, 0.057)),
    rows=(
        ("vc01", 52, 0.05, 0.95, 1.5, 45, "large"),
        ("vc02", 32, 0.08, 0.95, 1.2, 35, "multi"),
        ("vc03", 28, 0.07, 0.90, 1.0, 35, "multi"),
        ("vc04", 24, 0.10, 0.90, 1.0, 22, "mixed"),
        ("vc05", 20, 0.05, 0.90, 1.5, 25, "multi"),
        ("vc06", 16, 0.09, 0.85, 1.0, 20, "mixed"),
        ("vc07", 16, 0.09, 0.80, 0.8, 22, "mixed"),
        ("vc08", 16, 0.07, 0.80, 1.0, 18, "mixed"),
        ("vc09", 12, 0.08, 0.80, 1.0, 20, "mixed"),
        ("vc10", 12, 0.025, 0.90, 2.0, 20, "large"),
        ("vc11", 10, 0.06, 0.80, 0.7, 18, "mixed"),
        ("vc12", 8, 0.06, 0.75, 1.0, 15, "mixed"),
        ("vc13", 8, 0.065, 0.70, 1.2, 12, "mixed"),
        ("vc14", 7, 0.06, 0.50, 1.0, 14, "single"),
        ("vc15", 4, 0.05, 0.50, 1.0, 10, "single"),
    ),
)

VENUS_6M = dataclasses.replace(
    VENUS, name="venus_6m", cluster="venus_6m_synth", origin=HELIOS_ORIGIN,
    jobs_per_day=round(HELIOS_PUBLISHED["venus"]["gpu_jobs"] / HELIOS_DAYS, 1),
    load_factor=round(VENUS.load_factor * HELIOS_PUBLISHED["venus"]["gpu_time"]
                      / (1080 * HELIOS_DAYS * DAY) / _gpu_weighted_load(VENUS.vcs), 4),
    state_probs=((0.244, 0.322, 0.434), (0.62, 0.233, 0.148), (0.594, 0.355, 0.051)),
)

# ---------------------------------------------------------------------------------------------
# Presets by name
# ---------------------------------------------------------------------------------------------

PRESETS: dict[str, SynthPreset] = {p.name: p for p in (VENUS, VENUS_6M, EARTH, SATURN, URANUS)}
#: Multi-cluster presets: the clusters generated together, VC and user names prefixed with the
#: cluster ("saturn/vc01"); `helios` is the whole datacenter over its six months.
COMBINED: dict[str, tuple[tuple[str, SynthPreset], ...]] = {
    "helios": (("venus", VENUS_6M), ("earth", EARTH), ("saturn", SATURN), ("uranus", URANUS)),
}


def preset_parts(name: str) -> tuple[tuple[str, SynthPreset], ...]:
    """The (VC-name prefix, preset) pairs that make up preset `name`: ``(("", preset),)`` for a
    PRESETS entry, the prefixed clusters of a COMBINED one."""
    if name in PRESETS:
        return (("", PRESETS[name]),)
    if name in COMBINED:
        return COMBINED[name]
    raise ValueError(f"unknown synth preset {name!r}: expected one of {sorted(PRESETS) + sorted(COMBINED)}")


def preset_layout(name: str) -> dict[str, int]:
    """VC -> nodes of preset `name` (prefixed VC names for a COMBINED preset)."""
    return {f"{prefix}/{vc}" if prefix else vc: n
            for prefix, preset in preset_parts(name) for vc, n in preset.vc_nodes.items()}
