"""VCs packed into groups by estimated cost (raysim.run.grouping) with the one LPT packing
(raysim.packing): hand-computed packings, the estimate, results equal to local, resume guarded."""

import numpy as np
import pyarrow as pa
import pytest
from simutil import pools, random_jobs
from test_ray_runtime import Interrupt, StopAfter, spec_for

from raysim.errors import SkipReport
from raysim.packing import lpt
from raysim.run.grouping import vc_costs, vc_groups
from raysim.run.simulate import simulate, simulate_to
from raysim.trace.load import Trace
from raysim.trace.schema import conform, with_metadata

VCS = {"a": 2, "b": 4, "c": 1, "d": 2, "e": 1}


def skewed_trace(seed=3, n=500):
    """Five VCs whose job counts differ (b and d busy, c nearly idle), so that packing by cost and
    by count make different groups."""
    rng = np.random.default_rng(seed)
    rows = random_jobs(rng, n, 40_000, max_gpu=8)
    vc = rng.choice(list(VCS), n, p=[0.1, 0.4, 0.05, 0.35, 0.1])
    table = pa.table({
        "job_id": np.arange(n, dtype=np.int64), "vc": vc, "user": np.full(n, "u"),
        "gpu_num": np.array([r[2] for r in rows], np.int32), "cpu_num": np.ones(n, np.int32),
        "submit_time": np.array([r[0] for r in rows], dtype=np.int64),
        "duration": np.array([r[1] for r in rows], dtype=np.int64), "state": np.full(n, "COMPLETED"),
    })
    return Trace(with_metadata(conform(table), cluster="t", origin="0", source="synthetic"), VCS, SkipReport(),
                 "synthetic")


def test_lpt_packs_the_costliest_first_onto_the_least_loaded_bin():
    # 5 -> bin 0; 4 -> bin 1; 3 (item 0) -> bin 1 (4 < 5); 3 (item 2) -> bin 0 (5 < 7); 3 -> bin 1 (7 < 8)
    assert lpt([3, 5, 3, 4, 3], 2) == [[1, 2], [3, 0, 4]]
    assert lpt([2, 2, 2, 2], 2) == [[0, 2], [1, 3]]  # ties: the earlier item, the earlier bin
    assert lpt([1, 1, 1], 5) == [[0], [1], [2], [], []]
    assert lpt([7, 1], 1) == [[0, 1]]
    assert lpt([], 2) == [[], []]
    with pytest.raises(ValueError, match="at least 1"):
        lpt([1.0], 0)


def test_vc_costs_are_one_plus_the_jobs_times_the_fourth_root_of_the_gpus():
    table = pa.table({"vc": ["a", "b", "a", "x", "a"]})
    layout = {"a": pools(2), "b": pools(32), "c": ()}  # 16, 256 and no GPUs (yet)
    assert vc_costs(table, layout) == {"a": 4 * 2.0, "b": 2 * 4.0, "c": 1.0}  # x is not a VC of the run


def test_vc_groups_by_cost_balance_the_groups_and_keep_layout_order_within():
    vcs = list("abcdef")
    costs = dict(zip(vcs, [1.0, 9.0, 2.0, 8.0, 3.0, 7.0]))
    # b 9 -> g0; d 8 -> g1; f 7 -> g1 (8 < 9); e 3 -> g0 (9 < 15); c 2 -> g0; a 1 -> g0: 15 and 15
    assert vc_groups(vcs, 3, costs=costs) == [["a", "b", "c", "e"], ["d", "f"]]
    assert vc_groups(vcs, 3) == [["a", "b", "c"], ["d", "e", "f"]]  # by count: 12 and 18
    assert vc_groups(vcs, "auto", cpus=2, costs=costs) == [["a", "b", "c", "e"], ["d", "f"]]
    # auto by cost uses every CPU (by count, 6 VCs on 4 CPUs make 3 groups of 2)
    assert vc_groups(vcs, "auto", cpus=4, costs=costs) == [["a", "c", "e"], ["b"], ["d"], ["f"]]
    assert vc_groups(vcs, "auto", cpus=4) == [["a", "b"], ["c", "d"], ["e", "f"]]
    assert vc_groups(vcs, "auto", cpus=64, costs=costs) == [[vc] for vc in vcs]
    assert vc_groups(vcs, 1, costs=costs) == [[vc] for vc in vcs]
    assert vc_groups(["global"], "auto", cpus=2, costs={"global": 1.0}) == [["global"]]


def test_the_run_and_its_speedup_bound_use_the_cost_groups(tmp_path, monkeypatch):
    """The run's groups (trace_report.json's timing) and the packings its bound assumes for k CPUs
    are those the runtime makes by cost."""
    import raysim.run.simulate as simulate_module

    assumed = {}

    class Seen(simulate_module.Coordinator):
        def __init__(self, *args, packings=None, **kwargs):
            assumed.update(packings)
            super().__init__(*args, packings=packings, **kwargs)

    monkeypatch.setattr(simulate_module, "Coordinator", Seen)
    trace = skewed_trace()
    spec = spec_for(trace, "fifo")
    costs = vc_costs(trace.table, spec.layout)
    by_cost = vc_groups(spec.vcs, 2, costs=costs)
    assert by_cost == [["a", "c", "e"], ["b"], ["d"]] != vc_groups(spec.vcs, 2)
    counts = simulate_to(tmp_path, trace, spec, None, vcs_per_actor=2, packing="cost")
    assert counts["timing"]["groups"]["vcs"] == by_cost
    assert assumed == {k: vc_groups(spec.vcs, "auto", cpus=k, costs=costs) for k in (2, 16, 64)}
    assert assumed[2] == [["a", "d", "e"], ["b", "c"]]


@pytest.mark.parametrize("kept", [True, False])
def test_resume_with_other_groups_is_refused(tmp_path, kept):
    """Same number of groups, other VCs in them: refused, whether the checkpoint kept its groups or,
    written before it did (`kept` False), they are read from the groups' states."""
    import pickle

    trace = skewed_trace()
    spec = spec_for(trace, "tiresias")
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Interrupt):
        simulate(trace, spec, None, executor=StopAfter(spec, vc_groups(spec.vcs, 3), windows=3), vcs_per_actor=3,
                 checkpoint_dir=ckpt, window_s=3_600)
    if not kept:
        state = pickle.loads((ckpt / "checkpoint.pkl").read_bytes())
        del state.groups
        (ckpt / "checkpoint.pkl").write_bytes(pickle.dumps(state))
    with pytest.raises(ValueError) as err:
        simulate(trace, spec, None, vcs_per_actor=3, packing="cost", checkpoint_dir=ckpt, resume=True, window_s=3_600)
    assert str(err.value) == (f"{ckpt / 'checkpoint.pkl'} holds other VC groups than this run's: resume with the "
                              "same ray.vcs_per_actor and ray.packing")
    with pytest.raises(ValueError, match="holds 2 VC groups, this run has 5: resume with the same"):
        simulate(trace, spec, None, vcs_per_actor=1, checkpoint_dir=ckpt, resume=True, window_s=3_600)
    whole, _ = simulate(trace, spec, None, runtime="local")
    resumed, _ = simulate(trace, spec, None, vcs_per_actor=3, checkpoint_dir=ckpt, resume=True, window_s=3_600)
    assert resumed.equals(whole)


def test_bad_packing_is_refused(tmp_path):
    trace = skewed_trace()
    with pytest.raises(ValueError, match="packing must be 'cost' or 'count', not 'size'"):
        simulate_to(tmp_path, trace, spec_for(trace, "fifo"), None, packing="size")


def test_cost_packing_on_ray_writes_the_same_files_as_local(ray_session, tmp_path):
    from simutil import assert_same_on_ray

    trace = skewed_trace()
    spec = spec_for(trace, "tiresias")
    assert vc_groups(spec.vcs, "auto", cpus=2, costs=vc_costs(trace.table, spec.layout)) != vc_groups(spec.vcs, 3)
    assert_same_on_ray(tmp_path, trace, spec, runs=[{"vcs_per_actor": "auto", "packing": "cost", "window_s": 86_400},
                                                    {"vcs_per_actor": 2, "packing": "cost", "window_s": 3_600}])
