"""Lone-job traces: identical jobs, all submitted at 0, each on nodes of its own, so that no job ever
waits for another. This is the setting of Daly's formula, Meta's ETTR model and AIReSim's one job,
against which the failure and checkpoint models are checked (tests/test_daly.py,
benchmarks/daly_seeds.py)."""

from __future__ import annotations

from pathlib import Path

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE

HEADER = "job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state"


def write_lone_jobs(folder: Path, jobs: int, work_s: int, nodes_per_job: int = 1) -> Path:
    """Write `folder`/jobs.csv (raysim's CSV schema): `jobs` jobs of `work_s` seconds on
    `nodes_per_job` whole nodes each, submitted at 0 in one VC "vc", with vc_config.csv beside it
    giving that VC a node for each of them (nodes of DEFAULT_GPUS_PER_NODE GPUs, a vc_config.csv's).
    Returns the trace's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"{i + 1},vc,u,{DEFAULT_GPUS_PER_NODE * nodes_per_job},4,0,{work_s},COMPLETED" for i in range(jobs)]
    (folder / "jobs.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    (folder / "vc_config.csv").write_text(f",num\nvc,{jobs * nodes_per_job}\n")
    return folder / "jobs.csv"
