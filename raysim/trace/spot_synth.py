"""Seeded HP/spot workloads in the spot GPU trace's two-file format (``raysim trace spot``).

The public job table of cluster-trace-v2026-spot-gpu is large (and absent from some copies); this
generator writes a folder that :mod:`raysim.trace.spot_gpu` (and GFS's simulator) reads like the
real one: ``node_info_df.csv``, a slice of a real node list, and ``job_info_df.csv``, jobs with the
published mix. The model, all of it drawn from one ``numpy`` generator seeded by ``seed``:

- **Cluster.** ``nodes`` nodes of the node list taken at an even stride in file order (node
  ``floor(i * total / nodes)``), so the slice keeps the list's mix of GPU models and node sizes.
- **Arrivals.** ``jobs`` submit times uniform over ``days`` days (a Poisson process given its
  count), integer seconds, the first at ``start_s`` (default 0: the table's times count from the
  first job; GFS's simulator keeps spot jobs only in August 2024, from 13,219,200 s after its
  trace start of 2024-03-01).
- **Jobs.** Each job draws a node of the slice with probability in proportion to its GPUs: the
  job's GPU model is the node's, and its GPUs per worker at most the node's. Its organization is
  one of ``orgs`` with Zipf weights (1/k); ``spot_jobs`` x ``jobs`` (rounded) of the jobs, drawn at
  random, are spot. An HP job is one worker (GFS places HP jobs on one node) of 1, 2, 4 or 8 GPUs;
  a spot job ``worker_num`` 1, 2 or 4 workers of 1, 2, 4 or 8 GPUs, workers capped by the workers
  of that size the slice's nodes of the model hold at once (each worker on one node, as GFS and
  raysim place them). ``cpu_request``: the node's vCPUs per GPU x the GPUs per worker, rounded down,
  at least 1.
- **Durations.** Log-normal (sigma ``SIGMA``, cut at 3 sigma) per class, each class scaled so that
  HP jobs offer ``load`` x the slice's GPU-time over the span, and spot jobs hold ``spot_gpu_hours``
  of all GPU-hours; then rounded to whole seconds, at least ``MIN_DURATION_S``.

Defaults follow the GFS paper's description of the trace: spot jobs about a quarter of the jobs and
a few percent of the GPU-hours (``spot_jobs`` 0.25, ``spot_gpu_hours`` 0.05).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from raysim.data.registry import DataError
from raysim.data.resolve import resolve
from raysim.trace.spot_gpu import JOB_COLUMNS, JOB_FILE, NODE_COLUMNS, NODE_FILE, read_spot_nodes

SIGMA = 1.5
MIN_DURATION_S = 60
SIZES = np.array([1, 2, 4, 8])
HP_SIZE_WEIGHTS = np.array([0.6, 0.15, 0.1, 0.15])
SPOT_SIZE_WEIGHTS = np.array([0.5, 0.2, 0.15, 0.15])
WORKERS = np.array([1, 2, 4])
SPOT_WORKER_WEIGHTS = np.array([0.8, 0.15, 0.05])


def slice_nodes(nodes: pd.DataFrame, count: int) -> pd.DataFrame:
    """`count` nodes of `nodes` at an even stride in file order (all of them when count >= len)."""
    if count < 1:
        raise ValueError(f"nodes must be at least 1, not {count}")
    if count >= len(nodes):
        return nodes.reset_index(drop=True)
    return nodes.iloc[np.arange(count) * len(nodes) // count].reset_index(drop=True)


def generate_spot(nodes: pd.DataFrame, *, jobs: int, days: float, seed: int = 0, load: float = 0.8,
                  spot_jobs: float = 0.25, spot_gpu_hours: float = 0.05, orgs: int = 4, start_s: int = 0
                  ) -> pd.DataFrame:
    """The job table (JOB_COLUMNS) of a workload on the cluster `nodes` (rules: module doc)."""
    if start_s < 0:
        raise ValueError(f"start_s must not be negative, not {start_s}")
    if jobs < 1 or orgs < 1:
        raise ValueError(f"jobs and orgs must be at least 1, not {jobs} and {orgs}")
    if not (days > 0 and load > 0):
        raise ValueError(f"days and load must be positive, not {days} and {load}")
    if not (0 <= spot_jobs <= 1 and 0 <= spot_gpu_hours < 1):
        raise ValueError(f"spot_jobs must be in [0, 1] and spot_gpu_hours in [0, 1), not {spot_jobs} and "
                         f"{spot_gpu_hours}")
    rng = np.random.default_rng(seed)
    span = days * 86400
    submit = np.sort(rng.uniform(0, span, jobs)).astype(np.int64)
    submit += start_s - submit[0]
    per_model = nodes.groupby("gpu_model", sort=False)["gpu_capacity_num"].sum()
    cpu_per_gpu = (nodes["cpu_num"] / nodes["gpu_capacity_num"]).to_numpy()
    capacity = nodes["gpu_capacity_num"].to_numpy()
    node = rng.choice(len(nodes), size=jobs, p=capacity / capacity.sum())  # a node, by its GPUs
    model = nodes["gpu_model"].to_numpy(dtype=object)[node]
    weights = 1.0 / np.arange(1, orgs + 1)
    org = rng.choice(orgs, size=jobs, p=weights / weights.sum())
    spot = np.zeros(jobs, dtype=bool)
    spot[rng.permutation(jobs)[:round(spot_jobs * jobs)]] = True
    request = np.where(spot, rng.choice(SIZES, jobs, p=SPOT_SIZE_WEIGHTS), rng.choice(SIZES, jobs, p=HP_SIZE_WEIGHTS))
    request = np.minimum(request, capacity[node])
    workers = np.where(spot, rng.choice(WORKERS, jobs, p=SPOT_WORKER_WEIGHTS), 1)
    fits = {(m, size): int((capacity[nodes["gpu_model"].to_numpy() == m] // size).sum())
            for m in per_model.index for size in SIZES}  # workers of that size the model's nodes hold at once
    workers = np.maximum(1, np.minimum(workers, [fits[m, r] for m, r in zip(model, request)]))
    shape = np.minimum(rng.lognormal(0.0, SIGMA, jobs), np.exp(3 * SIGMA))  # no tail beyond 3 sigma
    gpus = request * workers
    hp_gpu_s = load * span * capacity.sum()
    duration = np.empty(jobs)
    for mask, target in ((~spot, hp_gpu_s), (spot, hp_gpu_s * spot_gpu_hours / (1 - spot_gpu_hours))):
        if mask.any():
            duration[mask] = shape[mask] * target / float((shape[mask] * gpus[mask]).sum())
    duration = np.maximum(MIN_DURATION_S, np.rint(duration)).astype(np.int64)
    cpu = np.maximum(1, np.floor(cpu_per_gpu[node] * request)).astype(np.int64)
    return pd.DataFrame({
        "job_name": np.arange(1, jobs + 1), "organization": org + 1, "gpu_model": model,
        "cpu_request": cpu, "gpu_request": request, "worker_num": workers, "submit_time": submit,
        "duration": duration, "job_type": np.where(spot, "Spot", "HP"),
    })[list(JOB_COLUMNS)]


def mix(jobs: pd.DataFrame) -> dict[str, float]:
    """The spot share of the jobs and of the GPU-hours of a job table."""
    spot = jobs["job_type"].str.lower() == "spot"
    gpu_s = jobs["gpu_request"] * jobs["worker_num"] * jobs["duration"]
    return {"spot_jobs": float(spot.mean()), "spot_gpu_hours": float(gpu_s[spot].sum() / gpu_s.sum())}


def write_spot(folder, nodes: pd.DataFrame, jobs: pd.DataFrame) -> Path:
    """Write the two files into `folder` (created); the folder."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    nodes[list(NODE_COLUMNS)].to_csv(out / NODE_FILE, index=False)
    jobs.to_csv(out / JOB_FILE, index=False)
    return out


def main(argv=None, prog: str = "python -m raysim.trace.spot_synth") -> int:
    """Generate a workload into a folder (node_info_df.csv + job_info_df.csv)."""
    parser = argparse.ArgumentParser(prog=prog, description="Generate a seeded HP/spot workload in the spot GPU "
                                     "trace's format (docs/spot.md).")
    parser.add_argument("--node-list", required=True, help="a node_info_df.csv, or a dataset's "
                        "(data:alibaba_spot_nodes/node_info_df.csv)")
    parser.add_argument("--nodes", type=int, default=None, help="nodes sliced from it (default: all)")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", type=float, default=0.8, help="HP GPU-time offered / the cluster's")
    parser.add_argument("--spot-jobs", type=float, default=0.25, help="share of the jobs that are spot")
    parser.add_argument("--spot-gpu-hours", type=float, default=0.05, help="spot share of the GPU-hours")
    parser.add_argument("--orgs", type=int, default=4, help="organizations")
    parser.add_argument("--start-s", type=int, default=0, help="the first submit time (13219200: August 2024 in "
                        "GFS's simulator, the only month where it keeps spot jobs)")
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    try:
        nodes = read_spot_nodes(resolve(args.node_list, "--node-list"))
        nodes = slice_nodes(nodes, args.nodes or len(nodes))
        jobs = generate_spot(nodes, jobs=args.jobs, days=args.days, seed=args.seed, load=args.load,
                             spot_jobs=args.spot_jobs, spot_gpu_hours=args.spot_gpu_hours, orgs=args.orgs,
                             start_s=args.start_s)
    except (ValueError, OSError, DataError) as exc:
        print(f"error: {exc}")
        return 2
    folder = write_spot(args.out, nodes, jobs)
    share = mix(jobs)
    print(f"wrote {len(jobs)} jobs on {len(nodes)} nodes ({int(nodes['gpu_capacity_num'].sum())} GPUs) to {folder}: "
          f"spot {share['spot_jobs']:.1%} of the jobs, {share['spot_gpu_hours']:.1%} of the GPU-hours")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
