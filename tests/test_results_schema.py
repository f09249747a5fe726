"""One result schema: every experiment of conf/experiment/ runs on a small input and its jobs.parquet
conforms to raysim.report.schema (docs/results.md). Experiments on public data read it through
`data:` names from a cache filled from a mirror of ../shared (those are marked `shared`)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from raysim import cli  # noqa: F401  (the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.report.schema import COMMON, GROUPS, check_jobs, groups_of, read_jobs
from raysim.run import run

#: experiment -> (small-input overrides, the optional groups its jobs.parquet has)
SHIPPED = {
    "venus": ([], []),
    "venus_maintenance": (["policy=tiresias"], ["capacity"]),
    "hetero_demo": ([], ["gpu_types"]),
    "gavel_hetero_demo": (["policy=max_min_fairness"], ["gpu_types"]),
    "helios_synth": (["trace.synth.days=1"], []),
    "saturn_synth": (["trace.synth.days=2"], []),
    "venus_maintenance": (["policy=tiresias"], ["capacity"]),
}
ON_DATA = {
    "venus_real": (["policy=srtf"], []),
    "lucid": ([], []),
    "gavel_trace": (["trace.path=${oc.env:GAVEL_TRACE}", "policy=gandiva"], ["gpu_types", "rounds"]),
    "gavel_continuous": (["policy=fifo_perf", "rounds.generate.jobs=40"], ["gpu_types", "rounds"]),
    "venus_gavel": (["policy=max_min_fairness_perf"], []),
    "openb": (["+trace.reader_options.vcs=2"], ["gpu_types", "requests"]),
    "harvest_summit": (["harvest.max_jobs=3"], ["capacity", "harvest"]),
    "harvest_summit_full": (["harvest.max_jobs=3", "harvest.nodes=64"], ["capacity", "harvest"]),
    "sia_saturn": (["trace.path=${oc.env:SIA_TRACE}"], ["gpu_types", "elastic"]),
    "venus_elastic": (["policy=sia", "policy.round_s=900", "trace.path=null", "trace.synth={preset:venus,days:1,seed:0}"],
                      ["elastic"]),
}
#: experiments that write no jobs.parquet, and what they write instead
NO_JOBS = {"fgd_openb": "allo.csv"}


#: experiments of modes without a runtime (they refuse runtime=)
NO_RUNTIME = {"fgd_openb"}


def run_experiment(name: str, overrides, out):
    local = [] if name in NO_RUNTIME else ["runtime=local"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"+experiment={name}", *local, *overrides])
    return run(cfg, out)


def test_every_experiment_is_covered():
    names = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    assert names == set(SHIPPED) | set(ON_DATA) | set(NO_JOBS)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_experiments_write_the_schema(name, tmp_path):
    overrides, groups = SHIPPED[name]
    run_experiment(name, overrides, tmp_path / "run")
    table = read_jobs(tmp_path / "run")
    assert groups_of(table.column_names) == groups and table.num_rows > 0


@pytest.fixture(scope="module")
def data_cache(shared_dir, tmp_path_factory):
    """RAYSIM_DATA: a cache of the public datasets, fetched from a mirror of ../shared; SIA_TRACE: the
    first 16 jobs of Sia's Saturn workload 1 (the whole workload takes ~15 s)."""
    from test_data import shared_mirror

    from raysim.data import store
    from raysim.data.registry import datasets

    root = tmp_path_factory.mktemp("data")
    names = ["venus", "lucid_profiles", "openb", "gavel_throughputs", "summit_nodes", "sia_profiles", "sia_workloads"]
    mirror = shared_mirror(shared_dir, root / "mirror", names)
    workload = (shared_dir / "references" / "sia" / "workloads" / "saturn" / "workload-1.csv").read_text().splitlines()
    (root / "sia_16.csv").write_text("\n".join(workload[:17]) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAYSIM_DATA", str(root / "cache"))
        mp.setenv("RAYSIM_DATA_MIRROR", str(mirror))
        mp.setenv("GAVEL_TRACE", str(shared_dir / "references" / "gavel" / "gavel_seed0_lam8000_n300.trace"))
        mp.setenv("SIA_TRACE", str(root / "sia_16.csv"))
        for name in names:
            store.fetch(datasets()[name], say=lambda *_: None)
        yield root / "cache"


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(set(ON_DATA) - {"lucid", "venus_real"}))
def test_experiments_on_public_data_write_the_schema(name, data_cache, tmp_path):
    overrides, groups = ON_DATA[name]
    run_experiment(name, overrides, tmp_path / "run")
    table = read_jobs(tmp_path / "run")
    assert groups_of(table.column_names) == groups and table.num_rows > 0


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("name", ["venus_real", "lucid"])
def test_the_real_venus_experiments_write_the_schema(name, data_cache, tmp_path):
    overrides, groups = ON_DATA[name]
    run_experiment(name, overrides, tmp_path / "run")
    assert groups_of(read_jobs(tmp_path / "run").column_names) == groups


@pytest.mark.shared
def test_the_fgd_inflation_experiment_writes_its_curves(data_cache, tmp_path):
    run_experiment("fgd_openb", ["fgd.plots=false"], tmp_path / "run")
    assert (tmp_path / "run" / NO_JOBS["fgd_openb"]).exists() and not (tmp_path / "run" / "jobs.parquet").exists()


def test_the_schema_check_names_what_is_wrong(tmp_path):
    columns = {name: pa.array([1]) for name in COMMON}
    assert check_jobs(pa.table(columns)) == []
    assert check_jobs(pa.table({**columns, "gpu_type": pa.array(["V100"])})) == ["group 'gpu_types' lacks 'run_s_<type>'"]
    assert check_jobs(pa.table({**columns, "mystery": pa.array([0])})) == [
        "column 'mystery' is not in the result schema (docs/results.md)"]
    del columns["jct"]
    pq.write_table(pa.table(columns), tmp_path / "jobs.parquet")
    with pytest.raises(ValueError, match="jobs.parquet: missing column 'jct'"):
        read_jobs(tmp_path)


def test_the_documented_schema_is_the_code_schema():
    text = (CONF_DIR.parent / "docs" / "results.md").read_text()
    for column in list(COMMON) + [c for _, cols in GROUPS.values() for c in cols]:
        assert f"`{column}`" in text, column
    for group in GROUPS:
        assert f"| `{group}` |" in text, group
