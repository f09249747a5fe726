"""`+experiment=airesim` (conf/experiment/airesim.yaml, docs/airesim.md): AIReSim's Table I scenario in
raysim. Its shipped traces (traces/airesim) are what raysim.trace.lone writes; it sets what
benchmarks/airesim.py's raysim side sets for `defaults`; a two-hour version of its job runs in
seconds, with the spare and standby counts in its summary."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from raysim.paths import TRACES_DIR
from raysim.trace.lone import AIRESIM_NODES, AIRESIM_TRACES, AIRESIM_VC_NODES, write_airesim_traces, write_lone_jobs

SHIPPED = TRACES_DIR / "airesim"


def compose(*overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
    from raysim.paths import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=["+experiment=airesim", *overrides])


def test_shipped_traces_are_what_raysim_writes(tmp_path):
    write_airesim_traces(tmp_path)
    for name in (*AIRESIM_TRACES, "vc_config.csv"):
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name


def test_the_experiment_sets_what_the_benchmark_sets_for_table_i():
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    try:
        import airesim
    finally:
        sys.path.pop(0)
    cfg = compose()
    ignored = ("trace.path", "trace.cache", "runtime", "policy", "seed")  # (the trace is the same job; see below)
    for override in airesim.raysim_overrides("defaults", Path("jobs.csv"), 0):
        key, _, wanted = override.partition("=")
        if key in ignored:
            continue
        node = cfg
        for part in key.split("."):
            node = node[part]
        node = node.name if key in ("failures", "repair", "host_selection") else node
        assert float(node) == float(wanted) if _number(wanted) else str(node) == wanted, override
    assert cfg.runtime.name == "local" and cfg.policy.name == "fifo" and not cfg.trace.cache
    assert Path(cfg.trace.path) == SHIPPED / "jobs.csv"
    job = pd.read_csv(SHIPPED / "jobs.csv").iloc[0]
    assert job.gpu_num == AIRESIM_NODES * 8 and job.duration == 256 * 86_400 == airesim.TABLE_I["job_length"] * 60
    assert AIRESIM_VC_NODES == airesim.TABLE_I["working_pool_size"] + airesim.TABLE_I["spare_pool_size"]
    assert AIRESIM_NODES == airesim.TABLE_I["job_size"]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("host_selection", ["returns_last", "fewest_failures"])
def test_a_short_version_runs_with_spare_and_standby_counts(tmp_path, host_selection):
    from raysim.run import run

    trace = write_lone_jobs(tmp_path / "trace", 1, 2 * 3600, AIRESIM_NODES, vc_nodes=AIRESIM_VC_NODES)
    cfg = compose(f"trace.path={trace}", "report.plots=none", f"host_selection={host_selection}")
    run(cfg, tmp_path / "run")
    jobs = pd.read_parquet(tmp_path / "run" / "jobs.parquet")
    s = pd.read_csv(tmp_path / "run" / "summary.csv").set_index("vc").loc["all"]
    assert jobs["finished"].all() and jobs["interruptions"].iloc[0] > 0
    for column in ("spares_pulled", "standby_swaps", "host_selections", "stalls", "auto_repairs", "manual_repairs"):
        assert column in s.index, column
    assert s["standby_swaps"] > 0 and s["host_selections"] >= 1
