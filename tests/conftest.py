"""Shared fixtures: where ../shared is (tests that need it skip with a clear reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(__import__("os").environ.get("RAYSIM_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "README.md").exists():
        pytest.skip(f"../shared not found at {SHARED} (set RAYSIM_SHARED to run this test)")
    return SHARED


@pytest.fixture(scope="session")
def venus_dir(shared_dir) -> Path:
    return shared_dir / "traces" / "venus_sept"


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 2 CPUs, started once for the whole session (each start costs seconds) and
    shut down at its end; tests that run on Ray without this fixture reuse it when it is up."""
    import ray

    from raysim.runtime.ray_backend import ensure_ray

    ensure_ray(num_cpus=2)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def venus_first_day(tmp_path_factory) -> Path:
    """A folder holding the first day of the shipped Venus-like week (traces/venus_synth: its jobs
    submitted in the first 86,400 s, 1,096 of 6,412, and its vc_config.csv): for end-to-end runs whose
    checks do not need the whole week."""
    import shutil

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    week = REPO / "traces" / "venus_synth"
    folder = tmp_path_factory.mktemp("venus_first_day")
    jobs = pq.read_table(week / "jobs.parquet")
    pq.write_table(jobs.filter(pc.less(jobs.column("submit_time"), 86_400)), folder / "jobs.parquet")
    shutil.copy(week / "vc_config.csv", folder / "vc_config.csv")
    return folder


@pytest.fixture(scope="session")
def hetero_head(tmp_path_factory) -> Path:
    """The first 300 jobs (about 14 hours) of the shipped heterogeneous demo trace
    (traces/hetero_demo/jobs.csv, 1,500 jobs over three days): round-based policies take seconds per
    thousand jobs."""
    path = tmp_path_factory.mktemp("hetero_head") / "jobs.csv"
    lines = (REPO / "traces" / "hetero_demo" / "jobs.csv").read_text().splitlines()
    path.write_text("\n".join(lines[:301]) + "\n")
    return path
