"""Lone-job traces: identical jobs, all submitted at 0, each on nodes of its own, so that no job ever
waits for another. This is the setting of Daly's formula, Meta's ETTR model and AIReSim's one job,
against which the failure and checkpoint models are checked (tests/test_daly.py,
benchmarks/daly_seeds.py)."""

from __future__ import annotations

from pathlib import Path

from raysim.cluster.layout import DEFAULT_GPUS_PER_NODE

HEADER = "job_id,vc,user,gpu_num,cpu_num,submit_time,duration,state"


def write_lone_jobs(folder: Path, jobs: int, work_s: int, nodes_per_job: int = 1, *, vc_nodes: int | None = None,
                    name: str = "jobs.csv") -> Path:
    """Write `folder`/`name` (raysim's CSV schema): `jobs` jobs of `work_s` seconds on
    `nodes_per_job` whole nodes each, submitted at 0 in one VC "vc", with vc_config.csv beside it
    giving that VC `vc_nodes` nodes (default: a node for each of them; nodes of
    DEFAULT_GPUS_PER_NODE GPUs, a vc_config.csv's). Returns the trace's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"{i + 1},vc,u,{DEFAULT_GPUS_PER_NODE * nodes_per_job},4,0,{work_s},COMPLETED" for i in range(jobs)]
    (folder / name).write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    (folder / "vc_config.csv").write_text(f",num\nvc,{jobs * nodes_per_job if vc_nodes is None else vc_nodes}\n")
    return folder / name


#: AIReSim's Table I job (docs/airesim.md): 4,096 nodes on a VC of a working pool of 4,160 and 200 spares.
AIRESIM_NODES, AIRESIM_VC_NODES = 4096, 4160 + 200
#: traces/airesim/ (+experiment=airesim): file -> days of work of its one job.
AIRESIM_TRACES = {"jobs.csv": 256, "jobs_1d.csv": 1}


def write_airesim_traces(folder: Path) -> None:
    """Write traces/airesim/ (the shipped files: tests/test_airesim_experiment.py checks they are these):
    AIReSim's Table I job of 256 days of work, and the same job of one day (a quick look), with the VC
    they share."""
    for name, days in AIRESIM_TRACES.items():
        write_lone_jobs(folder, 1, days * 86_400, AIRESIM_NODES, vc_nodes=AIRESIM_VC_NODES, name=name)
