"""Gavel's continuous job generator (``scheduler/utils.py`` ``generate_job``), seeded as Gavel seeds it.

Jobs arrive as a Poisson process of mean inter-arrival ``lam_s`` seconds (job 0 at time 0; the
gaps come from ``Random(seed + 3)``). Each job draws, from ``Random(seed + 2)`` and in this order:

- a scale factor (multi-GPU mix): U < 0.7 -> 1, U <= 0.8 -> 2, U <= 0.95 -> 4, else 8;
- a duration on one reference GPU: 60 * 10^U(3, 4) s with probability 0.2, else 60 * 10^U(1.5, 3) s;
- a model, drawn uniformly from the job templates, redrawn until the scale factor is 1 or the
  model is distributed;
- total steps = duration x the table's throughput of (model, scale factor) on the reference type.

With Gavel's template list (``conf/experiment/gavel_continuous.yaml``, in Gavel's JobTable order)
and seed, this yields Gavel's jobs exactly (tests/test_gavel_generate.py checks the shipped trace).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pyarrow as pa

from raysim.cluster.throughput import ThroughputTable
from raysim.trace.gavel import SCHEMA


def generate_jobs(table: ThroughputTable, templates: Sequence[tuple[str, bool]], *, jobs: int, lam_s: float,
                  seed: int, reference_type: str, multi_gpu: bool = True) -> pa.Table:
    """`jobs` jobs of Gavel's continuous shape as a table in :data:`raysim.trace.gavel.SCHEMA`.

    `templates` are (model, distributed) in Gavel's JobTable order; `reference_type` names the
    table's GPU type on which durations are defined (Gavel: v100).
    """
    if jobs < 1 or lam_s < 0:
        raise ValueError(f"need jobs >= 1 and lam_s >= 0, not jobs={jobs}, lam_s={lam_s}")
    if not templates:
        raise ValueError("no job templates to draw models from")
    names = {t.lower(): t for t in table.gpu_types()}
    if reference_type.lower() not in names:
        raise ValueError(f"reference type {reference_type!r} is not in the throughput table ({', '.join(names.values())})")
    reference = names[reference_type.lower()]
    job_rng, gap_rng = random.Random(seed + 2), random.Random(seed + 3)
    rows = {name: [] for name in SCHEMA.names}
    arrival = 0.0
    for job_id in range(jobs):
        scale = _scale_factor(job_rng) if multi_gpu else 1
        duration = _duration(job_rng)
        while True:
            model, distributed = templates[job_rng.randrange(len(templates))]
            if scale == 1 or distributed:
                break
        rate = table.get(model, reference, scale)
        if not rate:
            raise ValueError(f"the throughput table has no positive throughput for ({model!r}, {scale}) on {reference}")
        for name, value in zip(SCHEMA.names, (job_id, model, scale, duration * rate, 1.0, -1.0, arrival)):
            rows[name].append(value)
        arrival += 0.0 if lam_s == 0 else -math.log(1.0 - gap_rng.random()) / (1.0 / lam_s)
    return pa.table(rows, schema=SCHEMA)


def _scale_factor(rng: random.Random) -> int:
    u = rng.uniform(0, 1)
    if 0.7 <= u <= 0.8:
        return 2
    if 0.8 <= u <= 0.95:
        return 4
    if 0.95 <= u:
        return 8
    return 1


def _duration(rng: random.Random) -> float:
    if rng.random() >= 0.8:
        return 60 * 10 ** rng.uniform(3, 4)
    return 60 * 10 ** rng.uniform(1.5, 3)
