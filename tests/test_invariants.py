"""Conservation and sanity invariants for every policy, placer and semantic mode."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from simutil import random_jobs, vc_subset

from raysim.cluster.layout import layout_from_vc_nodes

from raysim.run.simulate import simulate
from raysim.runtime.spec import RunSpec
from raysim.sim import SimParams
from raysim.trace.load import Trace, load_trace
from raysim.errors import SkipReport
from raysim.trace.schema import conform, with_metadata

POLICIES = ["fifo", "sjf", "srtf", "qssf", "tiresias"]


def synthetic_trace(seed=0, n=600):
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    vcs = {"a": 2, "b": 4, "c": 1}
    rows = random_jobs(rng, n, 40_000, max_gpu=8, long_tail=True)
    vc = rng.choice(list(vcs), n)
    gpu = np.array([r[2] for r in rows])
    gpu = np.where(vc == "b", gpu * rng.choice([1, 2, 3], n), gpu)  # multi-node jobs in VC b
    table = pa.table({
        "job_id": np.arange(n, dtype=np.int64), "vc": vc, "user": np.full(n, "u"),
        "gpu_num": gpu.astype(np.int32), "cpu_num": np.ones(n, np.int32),
        "submit_time": np.array([r[0] for r in rows], dtype=np.int64),
        "duration": np.array([r[1] for r in rows], dtype=np.int64), "state": np.full(n, "COMPLETED"),
    })
    table = with_metadata(conform(table), cluster="t", origin="0", source="synthetic")
    est = np.array([r[3] for r in rows])
    return Trace(table, vcs, SkipReport(), "synthetic"), est


def check_invariants(trace, jobs, series, spec):
    n = trace.table.num_rows
    assert jobs.num_rows == n
    assert jobs.column("job_id").to_pylist() == trace.table.column("job_id").to_pylist()
    assert pc.all(jobs.column("finished")).as_py()
    submit = jobs.column("submit_time").to_numpy()
    start = jobs.column("start_time").to_numpy()
    end = jobs.column("end_time").to_numpy()
    queue = jobs.column("queue").to_numpy()
    assert (start >= submit).all()
    assert (queue >= 0).all()
    assert (end > start).all()
    assert np.array_equal(jobs.column("jct").to_numpy(), end - submit)
    lag = spec.params.countdown_lag
    # jct = queue + work; preempted jobs also pay their checkpoint overheads
    work = jobs.column("duration").to_numpy()
    pre = jobs.column("preemptions").to_numpy()
    if spec.policy in ("srtf", "tiresias"):
        g = jobs.column("gpu_num").to_numpy()
        overhead = np.where(g <= 8, 40, 60) * pre
        assert np.array_equal(end - submit, queue + work + overhead + lag)
    else:
        assert (pre == 0).all()
        assert np.array_equal(end - submit, queue + work)
    vc = series.column("vc").combine_chunks()  # the VC of each row, as codes into its names
    if not pa.types.is_dictionary(vc.type):
        vc = pc.dictionary_encode(vc)
    codes, names = vc.indices.to_numpy(zero_copy_only=False), vc.dictionary.to_pylist()
    idle = series.column("idle_gpu_num").to_numpy()
    total = series.column("total_gpu_num").to_numpy()
    assert (idle >= 0).all() and (idle <= total).all()
    for name, nodes in trace.vc_nodes.items():
        rows = codes == names.index(name) if name in names else np.zeros(len(codes), dtype=bool)
        assert (total[rows] == nodes * 8).all()


@pytest.mark.parametrize("compat", ["clean", "lucid"])
@pytest.mark.parametrize("placer", ["consolidate", "first_fit", "random"])
@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_synthetic(policy, placer, compat):
    trace, est = synthetic_trace(seed=POLICIES.index(policy))
    spec = RunSpec(policy, placer, SimParams.for_mode(compat, seed=1), layout_from_vc_nodes(trace.vc_nodes, 8))
    jobs, series = simulate(trace, spec, est)
    check_invariants(trace, jobs, series, spec)


def test_deterministic_and_random_placer_seeded():
    trace, est = synthetic_trace(seed=7)
    spec = RunSpec("srtf", "random", SimParams.for_mode("clean", seed=3), layout_from_vc_nodes(trace.vc_nodes, 8))
    a, _ = simulate(trace, spec, est)
    b, _ = simulate(trace, spec, est)
    assert a.equals(b)


@pytest.fixture(scope="module")
def venus(venus_dir, tmp_path_factory):
    """The real Venus trace, read once for the module."""
    return load_trace(venus_dir, cache_dir=tmp_path_factory.mktemp("c"))


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("compat", ["clean", "lucid"])
@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_venus(policy, compat, venus):
    """The whole trace (a few seconds a run): slow; test_invariants_venus_vcs is the main suite's."""
    check_venus(venus, policy, compat)


@pytest.mark.shared
@pytest.mark.parametrize("compat", ["clean", "lucid"])
@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_venus_vcs(policy, compat, venus):
    """The same on four of its VCs (simutil.VENUS_VCS: queues, preemptions, multi-node jobs)."""
    check_venus(vc_subset(venus), policy, compat)


def check_venus(trace, policy, compat):
    est = trace.table.column("duration").to_numpy().astype(float)
    spec = RunSpec(policy, "consolidate", SimParams.for_mode(compat), layout_from_vc_nodes(trace.vc_nodes, 8))
    jobs, series = simulate(trace, spec, est)
    check_invariants(trace, jobs, series, spec)
