"""Synthetic profiles of elastic jobs (raysim.elastic.profiles' file layout), for tests without ../shared.

Two writers: :func:`write_toy` (the tiny one-kind application of test_elastic_goodput.py) and
:func:`write_app` (an application whose step times are linear in nodes, GPUs and per-GPU batch size,
so that every interpolation of raysim.elastic.profiles is exact and a test can compute a step time
by hand with :func:`lin_times`)."""

from __future__ import annotations

from pathlib import Path


# -- the toy application of test_elastic_goodput.py -----------------------------------------------
def toy_times(nodes: int, replicas: int, bsz: float) -> tuple[float, float]:
    """Step and sync time of the toy application: linear in all three (so any interpolation is exact)."""
    return 0.02 + 0.01 * bsz + 0.03 * (nodes - 1) + 0.002 * replicas, 0.01 * (nodes - 1) + 0.002 * (replicas - 1)


TOY_PLACEMENTS = ("1", "2", "11")
TOY_SCALABILITY = ((4, 4), (4, 8))
TOY_VALIDATION = {  # batch size -> rows (progress, iteration, metric, grad_sqr, grad_var)
    4: [(10, 10, 0.1, 2.0, 6.0), (20, 20, 0.2, 1.0, 4.0), (30, 30, 0.3, 0.5, 3.0)],
    12: [(9, 5, 0.1, 4.0, 10.0), (21, 9, 0.2, 2.0, 6.0), (33, 13, 0.3, 1.0, 5.0)],
}


def write_toy(folder: Path, *, kind_suffix: str = "-k") -> Path:
    """The toy application's files under `folder`/toy/ (placements and scalability named with
    `kind_suffix`); returns `folder`."""
    app = folder / "toy"
    app.mkdir(parents=True)
    lines = ["placement,local_bsz,step_time,sync_time"]
    for placement in TOY_PLACEMENTS:
        for bsz in (8, 16):
            step, sync = toy_times(len(placement), sum(map(int, placement)), bsz)
            lines.append(f"{placement},{bsz},{step!r},{sync!r}")
    (app / f"placements{kind_suffix}.csv").write_text("\n".join(lines) + "\n")
    lines = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
    for nodes, replicas in TOY_SCALABILITY:
        for bsz in (8, 16):
            step, sync = toy_times(nodes, replicas, bsz)
            lines.append(f"{nodes},{replicas},{bsz},{step!r},{sync!r}")
    (app / f"scalability{kind_suffix}.csv").write_text("\n".join(lines) + "\n")
    for batch, rows in TOY_VALIDATION.items():
        text = "progress,iteration,metric,grad_sqr,grad_var\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
        (app / f"validation-{batch}.csv").write_text(text)
    return folder


# -- linear applications ---------------------------------------------------------------------------
#: Step-time coefficients: (constant, per sample, per extra node, per GPU) and sync (per extra node, per extra GPU).
LIN = {"step": (0.047, 0.002, 0.02, 0.005), "sync": (0.01, 0.004)}
#: Placements (GPUs per node) written to placements-<kind>.csv, each at LIN_BSZ per-GPU batch sizes.
LIN_PLACEMENTS = ("1", "2", "4", "11", "22", "44")
LIN_BSZ = (8, 16, 32, 64)
#: (nodes, GPUs) written to scalability-<kind>.csv, each at LIN_BSZ.
LIN_SCALABILITY = ((1, 8), (2, 8), (2, 16), (4, 16))
#: batch size -> rows (progress, iteration, metric, grad_sqr, grad_var), one per epoch.
LIN_VALIDATION = {
    32: [(10000, 100, 0.1, 1.0, 3.0), (20500, 200, 0.2, 0.5, 2.5), (30000, 300, 0.3, 0.25, 2.0)],
    64: [(10700, 60, 0.1, 2.0, 5.0), (23000, 120, 0.2, 1.0, 3.0), (34000, 180, 0.3, 0.5, 2.5)],
    128: [(11900, 40, 0.1, 4.0, 6.0), (26000, 80, 0.2, 2.0, 5.0), (38000, 120, 0.3, 1.0, 4.0)],
}


def lin_times(nodes: int, replicas: int, bsz: float, *, speed: float = 1.0) -> tuple[float, float]:
    """(step, sync) seconds of a linear application on `nodes` nodes, `replicas` GPUs, `bsz` samples
    per GPU, on a kind `speed` times as fast as the base one (all times divided by it)."""
    a, b, c, d = LIN["step"]
    e, f = LIN["sync"]
    return ((a + b * bsz + c * (nodes - 1) + d * replicas) / speed,
            (e * (nodes - 1) + f * (replicas - 1)) / speed)


def write_app(folder: Path, app: str, kinds: dict[str, float], *, validation: dict | None = None,
              placements=LIN_PLACEMENTS, scalability=LIN_SCALABILITY, bsz=LIN_BSZ) -> Path:
    """A linear application `app` under `folder`/`app`/ with one placements- and scalability- file
    per GPU kind of `kinds` (kind -> speed, see :func:`lin_times`); returns `folder`."""
    root = folder / app
    root.mkdir(parents=True, exist_ok=True)
    for kind, speed in kinds.items():
        lines = ["placement,local_bsz,step_time,sync_time"]
        for placement in placements:
            for b in bsz:
                step, sync = lin_times(len(placement), sum(map(int, placement)), b, speed=speed)
                lines.append(f"{placement},{b},{step!r},{sync!r}")
        (root / f"placements-{kind}.csv").write_text("\n".join(lines) + "\n")
        lines = ["num_nodes,num_replicas,local_bsz,step_time,sync_time"]
        for nodes, replicas in scalability:
            for b in bsz:
                step, sync = lin_times(nodes, replicas, b, speed=speed)
                lines.append(f"{nodes},{replicas},{b},{step!r},{sync!r}")
        (root / f"scalability-{kind}.csv").write_text("\n".join(lines) + "\n")
    for batch, rows in (validation or LIN_VALIDATION).items():
        text = "progress,iteration,metric,grad_sqr,grad_var\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
        (root / f"validation-{batch}.csv").write_text(text)
    return folder
