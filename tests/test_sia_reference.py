"""Sia (SOSP'23) and its Gavel baseline on Saturn workload 1 against the per-job results of Sia's own
simulator (../shared/references/sia/results, see its README.md): average JCT and makespan within 10 %,
and Sia ahead of Gavel. Needs ../shared; about 20 s."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (registers the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.run import run

pytestmark = [pytest.mark.shared, pytest.mark.slow]


@pytest.fixture(scope="module")
def sia_dir(shared_dir):
    return shared_dir / "references" / "sia"


@pytest.fixture(scope="module")
def ours(sia_dir, tmp_path_factory):
    """policy -> our jobs.parquet (job_id = the workload's row) on Saturn workload 1."""
    out = {}
    for policy in ("sia", "gavel_elastic"):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose(config_name="config", overrides=[
                "+experiment=sia_saturn", f"policy={policy}", "runtime=local",
                f"trace.path={sia_dir / 'workloads' / 'saturn' / 'workload-1.csv'}", "trace.cache=false",
                f"policy.profiles={sia_dir / 'profiles'}"])  # (no Parquet cache written into ../shared)
        folder = tmp_path_factory.mktemp(policy)
        run(cfg, folder)
        out[policy] = pq.read_table(folder / "jobs.parquet").to_pandas().sort_values("job_id").reset_index(drop=True)
    return out


@pytest.fixture(scope="module")
def theirs(sia_dir):
    """policy -> Sia's simulator's per-job results (row i = the workload's row i, job `<app>-<i>`)."""
    return {policy: pd.read_csv(sia_dir / "results" / f"{name}_workload-1.csv")
            for policy, name in (("sia", "sia"), ("gavel_elastic", "gavel"))}


@pytest.mark.parametrize("policy", ["sia", "gavel_elastic"])
def test_the_same_jobs_all_finish(ours, theirs, policy):
    jobs, ref = ours[policy], theirs[policy]
    assert len(jobs) == len(ref) == 160 and jobs.finished.all()
    assert jobs.job_id.tolist() == [int(name.rsplit("-", 1)[1]) for name in ref.job]
    assert jobs.submit_time.tolist() == ref.submit_time_s.tolist()
    assert jobs.gpu_num.tolist() == ref.workload_num_replicas.tolist()
    assert (jobs.start_time >= jobs.submit_time).all()


def test_sia_average_jct_and_makespan_are_within_10_percent_of_sias(ours, theirs):
    jobs, ref = ours["sia"], theirs["sia"]
    assert ref.jct_s.mean() / 3600 == pytest.approx(0.581, abs=5e-4)  # the README's table
    assert jobs.jct.mean() == pytest.approx(ref.jct_s.mean(), rel=0.10)
    assert jobs.end_time.max() == pytest.approx(ref.completion_time_s.max(), rel=0.10)


def test_gavel_average_jct_is_within_10_percent_of_sias_gavel(ours, theirs):
    ref = theirs["gavel_elastic"]
    assert ref.jct_s.mean() / 3600 == pytest.approx(1.798, abs=5e-4)
    assert ours["gavel_elastic"].jct.mean() == pytest.approx(ref.jct_s.mean(), rel=0.10)


def test_sia_beats_gavel_on_average_jct(ours):
    assert ours["sia"].jct.mean() < ours["gavel_elastic"].jct.mean()
