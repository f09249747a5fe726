"""One result schema: every experiment of conf/experiment/ runs on a small input and its jobs.parquet
conforms to raysim.report.schema (docs/results.md). Experiments on public data read it through
`data:` names from a cache filled from a mirror of ../shared (those are marked `shared`), or, where
the whole input takes many seconds, a cut of the cached copy (the first jobs, pods or nodes; see
`data_cache`). Generated traces are a fraction of a day."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from simutil import NO_PAGES

from raysim import cli  # noqa: F401  (the raysim_path resolver)
from raysim.paths import CONF_DIR
from raysim.report.schema import COMMON, GROUPS, KINDS, check_jobs, groups_of, read_jobs
from raysim.run import run

#: experiment -> (small-input overrides, the optional groups its jobs.parquet has)
SHIPPED = {
    "venus": ([], []),
    "venus_maintenance": (["policy=tiresias"], ["capacity"]),
    "hetero_demo": ([], ["gpu_types"]),
    "gavel_hetero_demo": (["policy=max_min_fairness", "trace.path=${oc.env:HETERO_300}"], ["gpu_types"]),  # (see hetero_300)
    "helios_synth": (["trace.synth.days=0.2"], []),
    "saturn_synth": (["trace.synth.days=0.5"], []),
    "airesim": (["trace.path=${raysim_path:traces/airesim/jobs_1d.csv}"], ["capacity", "checkpoint"]),
}
ON_DATA = {
    "venus_real": (["policy=srtf"], []),
    "lucid": ([], []),
    "gavel_trace": (["trace.path=${oc.env:GAVEL_TRACE}", "policy=gandiva"], ["gpu_types", "rounds"]),  # 40 jobs
    "gavel_continuous": (["policy=fifo_perf", "rounds.generate.jobs=10"], ["gpu_types", "rounds"]),
    "venus_gavel": (["policy=max_min_fairness_perf", "trace.path=null", "trace.synth={preset:venus,days:0.25,seed:0}"],
                    []),
    "openb": (["+trace.reader_options.vcs=2", "trace.path=${oc.env:OPENB_SMALL}"], ["gpu_types", "requests"]),
    "harvest_summit": (["harvest.max_jobs=3"], ["capacity", "harvest"]),
    "harvest_summit_full": (["harvest.max_jobs=3", "harvest.nodes=16"], ["capacity", "harvest"]),
    "sia_saturn": (["trace.path=${oc.env:SIA_TRACE}"], ["gpu_types", "elastic"]),
    "spot_alibaba": (["trace.path=${oc.env:SPOT_SMALL}"], ["gpu_types", "spot"]),
    "venus_elastic": (["policy=sia", "policy.round_s=900", "trace.path=null",
                       "trace.synth={preset:venus,days:0.1,seed:1}"], ["elastic"]),
}
#: experiments that write no jobs.parquet, and what they write instead
NO_JOBS = {"fgd_openb": "allo.csv"}


#: experiments of modes without a runtime (they refuse runtime=)
NO_RUNTIME = {"fgd_openb"}


#: experiments whose runs here also write their plots and report.html: one of each kind of run
#: (event-driven with capacity events, round-based, elastic, GPU shares, harvesting); the others
#: skip them (simutil.NO_PAGES: most of a small run's time)
WITH_PAGES = {"venus_maintenance", "gavel_hetero_demo", "sia_saturn", "openb", "harvest_summit"}


def run_experiment(name: str, overrides, out):
    local = [] if name in NO_RUNTIME else ["runtime=local"]
    pages = [] if name in WITH_PAGES | NO_JOBS.keys() else list(NO_PAGES)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"+experiment={name}", *local, *pages, *overrides])
    return run(cfg, out)


def test_every_experiment_is_covered():
    names = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    assert names == set(SHIPPED) | set(ON_DATA) | set(NO_JOBS)


@pytest.fixture(scope="module")
def hetero_300(hetero_head):
    """HETERO_300: the first 300 jobs of the shipped heterogeneous demo trace (tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HETERO_300", str(hetero_head))
        yield hetero_head


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_experiments_write_the_schema(name, tmp_path, hetero_300):
    overrides, groups = SHIPPED[name]
    run_experiment(name, overrides, tmp_path / "run")
    table = read_jobs(tmp_path / "run")
    assert groups_of(table.column_names) == groups and table.num_rows > 0


@pytest.fixture(scope="module")
def data_cache(shared_dir, tmp_path_factory):
    """RAYSIM_DATA: a cache of the public datasets, fetched from a mirror of ../shared; and cuts of
    inputs whose whole takes many seconds: SIA_TRACE, the first 8 jobs of Sia's Saturn workload 1
    (the whole workload takes ~15 s); GAVEL_TRACE, the first 40 jobs of Gavel's seed-0 trace;
    OPENB_SMALL, a folder with the first 400 pods of the cached Alibaba 2023 default pod list, its
    GPU node list, and `openb_node_list_small.csv`, the first 200 of those nodes (the FGD experiment's
    cluster); SPOT_SMALL, 300 HP/spot jobs generated on 40 nodes of the spot trace's node list."""
    from test_data import shared_mirror

    from raysim.data import store
    from raysim.data.registry import datasets

    root = tmp_path_factory.mktemp("data")
    names = ["venus", "lucid_profiles", "openb", "gavel_throughputs", "summit_nodes", "sia_profiles", "sia_workloads"]
    mirror = shared_mirror(shared_dir, root / "mirror", names)
    workload = (shared_dir / "references" / "sia" / "workloads" / "saturn" / "workload-1.csv").read_text().splitlines()
    (root / "sia_8.csv").write_text("\n".join(workload[:9]) + "\n")
    gavel = (shared_dir / "references" / "gavel" / "gavel_seed0_lam8000_n300.trace").read_text().splitlines()
    (root / "gavel_40.trace").write_text("\n".join(gavel[:40]) + "\n")
    from raysim.trace.spot_synth import generate_spot, read_spot_nodes, slice_nodes, write_spot

    spot_nodes = slice_nodes(read_spot_nodes(shared_dir / "traces" / "cluster-trace-v2026-spot-gpu" /
                                             "node_info_df.csv"), 40)
    write_spot(root / "spot_small", spot_nodes, generate_spot(spot_nodes, jobs=300, days=2, seed=0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAYSIM_DATA", str(root / "cache"))
        mp.setenv("RAYSIM_DATA_MIRROR", str(mirror))
        mp.setenv("GAVEL_TRACE", str(root / "gavel_40.trace"))
        mp.setenv("SIA_TRACE", str(root / "sia_8.csv"))
        mp.setenv("OPENB_SMALL", str(root / "openb_small"))
        mp.setenv("SPOT_SMALL", str(root / "spot_small"))
        for name in names:
            store.fetch(datasets()[name], say=lambda *_: None)
        openb, small = root / "cache" / "openb", root / "openb_small"
        small.mkdir()
        pods = (openb / "openb_pod_list_default.csv").read_text().splitlines()
        (small / "openb_pod_list_default.csv").write_text("\n".join(pods[:401]) + "\n")
        nodes = (openb / "openb_node_list_gpu_node.csv").read_text().splitlines()
        (small / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
        (small / "openb_node_list_small.csv").write_text("\n".join(nodes[:201]) + "\n")
        yield root / "cache"


#: The longest of them (4-6 s each) run in the slow step; the others keep the schema check in the main suite.
SLOW_ON_DATA = {"venus_elastic", "sia_saturn", "openb"}


@pytest.mark.shared
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_ON_DATA else n
                                  for n in sorted(set(ON_DATA) - {"lucid", "venus_real"})])
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
    run_experiment("fgd_openb", ["fgd.plots=false", "fgd.data_dir=${oc.env:OPENB_SMALL}",
                                 "fgd.node_list=openb_node_list_small"], tmp_path / "run")
    assert (tmp_path / "run" / NO_JOBS["fgd_openb"]).exists() and not (tmp_path / "run" / "jobs.parquet").exists()


def test_the_schema_check_names_what_is_wrong(tmp_path):
    examples = {"integer": pa.array([1]), "number": pa.array([1.5]), "text": pa.array(["a"]),
                "boolean": pa.array([True])}
    columns = {name: examples[KINDS[name]] for name in COMMON}
    assert check_jobs(pa.table(columns)) == []
    assert check_jobs(pa.table({**columns, "jct": pa.array(["1"])})) == ["column 'jct' holds string, not number values"]
    assert check_jobs(pa.table({**columns, "end_time": pa.nulls(1)})) == []  # nulls only: any type
    pq.write_table(pa.table({**columns, "vc": pa.array([None], pa.string())}), tmp_path / "jobs.parquet")
    with pytest.raises(ValueError, match=r"jobs.parquet, column 'vc': 1 null value\(s\) in row group 0; every job has one"):
        read_jobs(tmp_path)
    assert check_jobs(pa.table({**columns, "gpu_type": pa.array(["V100"])})) == ["group 'gpu_types' lacks 'run_s_<type>'"]
    # checkpoints without capacity events have no lost_gpu_s_<cause>; with them, it is part of the group
    checkpoints = {"lost_gpu_s": pa.array([0.0]), "overhead_gpu_s": pa.array([0.0])}
    assert check_jobs(pa.table({**columns, **checkpoints})) == []
    assert check_jobs(pa.table({**columns, **checkpoints, "interruptions": pa.array([1]),
                                "interruptions_failure": pa.array([1])})) == [
        "group 'checkpoint' lacks 'lost_gpu_s_<cause>'"]
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
