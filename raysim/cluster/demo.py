"""The heterogeneous demo shipped in ``traces/hetero_demo``: a layout, a throughput table, a trace.

Two VCs over three GPU types (V100 8-GPU nodes, P100 and K80 4-GPU nodes, 80 GPUs), eight job types
with illustrative (made-up, not measured) throughputs, and three days of seeded jobs in raysim's
CSV schema plus the columns ``job_type``, ``gpu_type`` (the type the recorded duration refers to)
and ``gpu_constraint`` (empty: any type; else one type or ``A|B``). Each VC's offered load
``sum(gpu_num * duration) / (VC GPUs * 3 days)`` is :data:`TARGET_LOAD` in durations on each
job's recorded type; on slower types jobs take longer, so queues form.

Regenerate the shipped files with::

    python -m raysim.cluster.demo traces/hetero_demo

The same seed always writes the same bytes (only uniform draws of numpy's PCG64 are used).
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist

import numpy as np

DAY = 86_400
DAYS = 3
JOBS = 1500
#: Offered load of each VC: sum(gpu_num * duration) / (VC GPUs * span).
TARGET_LOAD = 0.6

GPU_TYPES = ("V100", "P100", "K80")
#: (vc, gpu_type, gpus_per_node, nodes): 40 GPUs per VC, 80 in all.
LAYOUT = (
    ("vcA", "V100", 8, 3),
    ("vcA", "P100", 4, 2),
    ("vcA", "K80", 4, 2),
    ("vcB", "V100", 8, 1),
    ("vcB", "P100", 4, 4),
    ("vcB", "K80", 4, 4),
)
#: Job type -> (share of jobs, illustrative throughput in iterations/s on V100, P100, K80).
JOB_TYPES = {
    "resnet50-bs64": (0.18, (6.0, 3.2, 1.0)),
    "resnet18-bs128": (0.12, (9.5, 6.0, 1.6)),
    "bert-base-bs32": (0.16, (4.2, 1.9, 0.55)),
    "bert-large-bs16": (0.08, (1.6, 0.7, 0.2)),
    "gpt2-small-bs8": (0.10, (3.0, 1.3, 0.35)),
    "transformer-bs128": (0.14, (5.0, 2.6, 1.2)),
    "lstm-lm-bs40": (0.12, (12.0, 8.5, 4.0)),
    "a3c-pong": (0.10, (2.0, 1.9, 1.6)),
}
THROUGHPUT_NOTE = "Illustrative, made-up throughputs (iterations/s), not measurements: see README.md"
GPU_NUM = {1: 0.65, 2: 0.15, 4: 0.12, 8: 0.08}
USERS_PER_VC = 8
CPUS_PER_GPU = {2: 0.3, 4: 0.5, 6: 0.2}
STATES = {"COMPLETED": 0.72, "FAILED": 0.14, "CANCELLED": 0.14}
#: Duration before load calibration: log-normal, median 30 min, clipped to [1 min, 12 h].
MEDIAN_S, SIGMA, MIN_S, MAX_S = 1800.0, 1.3, 60.0, 12 * 3600.0
#: Share of jobs with a GPU-type constraint, and the constraints drawn for them.
CONSTRAINED = 0.15
CONSTRAINTS = {"V100": 0.30, "P100": 0.10, "K80": 0.10, "V100|P100": 0.35, "P100|K80": 0.10,
               "V100|K80": 0.05}
#: Hourly arrival rate relative to the mean: 1 + DIURNAL * cos(2 pi (hour - PEAK_HOUR) / 24).
DIURNAL, PEAK_HOUR = 0.6, 14

COLUMNS = ("job_id", "vc", "user", "gpu_num", "cpu_num", "submit_time", "duration", "state",
           "job_type", "gpu_type", "gpu_constraint")
#: Streams of uniform draws, one per random aspect.
STREAMS = ("vc", "submit", "user", "gpu_num", "job_type", "duration", "constrained", "constraint",
           "gpu_type", "cpu", "state")


def write_hetero_demo(folder: str | Path, seed: int = 0) -> list[Path]:
    """Write ``layout.csv``, ``throughputs.csv`` and ``jobs.csv`` into `folder`; return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "layout.csv": (("vc", "gpu_type", "gpus_per_node", "nodes"), LAYOUT, None),
        "throughputs.csv": (("job_type", "gpu_type", "throughput"), throughput_rows(), THROUGHPUT_NOTE),
        "jobs.csv": (COLUMNS, demo_jobs(seed), None),
    }
    for name, (header, rows, note) in files.items():
        _write_csv(folder / name, header, rows, note)
    return [folder / name for name in files]


def throughput_rows() -> list[tuple[str, str, str]]:
    """(job_type, gpu_type, throughput) rows of the illustrative table."""
    return [(job, gpu, f"{rate:g}") for job, (_, rates) in JOB_TYPES.items()
            for gpu, rate in zip(GPU_TYPES, rates)]


def demo_jobs(seed: int) -> list[tuple]:
    """The demo trace as rows in COLUMNS order, sorted by submit time, job ids 1..JOBS."""
    draw = {name: np.random.default_rng([seed, i]).random(JOBS) for i, name in enumerate(STREAMS)}
    vcs = list(dict.fromkeys(vc for vc, *_ in LAYOUT))
    capacity = {(vc, gpu): per_node * nodes for vc, gpu, per_node, nodes in LAYOUT}
    vc_gpus = np.array([sum(g for (v, _), g in capacity.items() if v == vc) for vc in vcs])
    vc = _pick(draw["vc"], vc_gpus)
    gpu_num = np.array(list(GPU_NUM))[_pick(draw["gpu_num"], list(GPU_NUM.values()))]
    job_type = _pick(draw["job_type"], [share for share, _ in JOB_TYPES.values()])
    duration = _durations(draw["duration"], vc, gpu_num, vc_gpus)
    constraint = np.where(draw["constrained"] < CONSTRAINED,
                          _pick(draw["constraint"], list(CONSTRAINTS.values())), -1)
    gpu_type = [_recorded_type(vcs[v], c, u, capacity) for v, c, u in zip(vc, constraint, draw["gpu_type"])]
    cpu_num = gpu_num * np.array(list(CPUS_PER_GPU))[_pick(draw["cpu"], list(CPUS_PER_GPU.values()))]
    user = _pick(draw["user"], 1 / np.arange(1, USERS_PER_VC + 1)) + vc * USERS_PER_VC
    state = _pick(draw["state"], list(STATES.values()))
    submit = _submit_times(draw["submit"])
    order = np.argsort(submit, kind="stable")
    constraints, states, types = list(CONSTRAINTS), list(STATES), list(JOB_TYPES)
    return [(job_id, vcs[vc[i]], f"u{user[i] + 1:02d}", int(gpu_num[i]), int(cpu_num[i]), int(submit[i]),
             int(duration[i]), states[state[i]], types[job_type[i]], gpu_type[i],
             constraints[constraint[i]] if constraint[i] >= 0 else "")
            for job_id, i in enumerate(order, start=1)]


def _pick(u: np.ndarray, weights) -> np.ndarray:
    """Indices drawn with probability proportional to `weights`, from uniforms `u` in [0, 1)."""
    cdf = np.cumsum(np.asarray(weights, dtype=float))
    return np.minimum(np.searchsorted(cdf / cdf[-1], u, side="right"), len(cdf) - 1)


def _submit_times(u: np.ndarray) -> np.ndarray:
    """Integer submit seconds over DAYS days with a diurnal rate (inverse of a per-minute CDF)."""
    minutes = np.arange(DAYS * 24 * 60)
    rate = 1 + DIURNAL * np.cos(2 * np.pi * ((minutes / 60) % 24 - PEAK_HOUR) / 24)
    cdf = np.concatenate([[0.0], np.cumsum(rate)])
    return np.floor(np.interp(u * cdf[-1], cdf, np.arange(len(cdf)) * 60.0)).astype(np.int64)


def _durations(u: np.ndarray, vc: np.ndarray, gpu_num: np.ndarray, vc_gpus: np.ndarray) -> np.ndarray:
    """Log-normal durations, scaled per VC to offered load TARGET_LOAD, in whole seconds >= MIN_S."""
    normal = NormalDist()
    z = np.array([normal.inv_cdf(p) for p in np.clip(u, 1e-12, 1 - 1e-12)])
    raw = np.clip(MEDIAN_S * np.exp(SIGMA * z), MIN_S, MAX_S)
    work = np.bincount(vc, weights=gpu_num * raw, minlength=len(vc_gpus))
    scale = TARGET_LOAD * vc_gpus * DAYS * DAY / work
    return np.maximum(np.round(raw * scale[vc]), MIN_S).astype(np.int64)


def _recorded_type(vc: str, constraint: int, u: float, capacity: dict[tuple[str, str], int]) -> str:
    """The GPU type a job's recorded duration refers to: one it may use, drawn by the VC's GPUs."""
    allowed = list(CONSTRAINTS)[constraint].split("|") if constraint >= 0 else GPU_TYPES
    weights = [capacity.get((vc, gpu), 0) for gpu in allowed]
    return allowed[int(_pick(np.array([u]), weights)[0])]


def _write_csv(path: Path, header: Sequence[str], rows, note: str | None) -> None:
    """Write a CSV with Unix line endings, after a ``# note`` comment line if `note` is given."""
    with path.open("w", newline="") as f:
        if note:
            f.write(f"# {note}\n")
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m raysim.cluster.demo FOLDER [--seed N]``."""
    parser = argparse.ArgumentParser(prog="python -m raysim.cluster.demo",
                                     description="Write the heterogeneous demo files into a folder.")
    parser.add_argument("folder", help="where to write layout.csv, throughputs.csv and jobs.csv")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for path in write_hetero_demo(args.folder, args.seed):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
