"""Checkpoints carry a fingerprint of the run's inputs: a resume with other inputs is refused naming
them, a finished run is re-emitted, runtime-only settings may change."""

import dataclasses

import pyarrow as pa
import pytest
from test_invariants import synthetic_trace
from test_ray_runtime import Interrupt, StopAfter, spec_for

from raysim.run.simulate import simulate, vc_groups
from raysim.runtime.coordinator import CheckpointMismatch
from raysim.runtime.fingerprint import run_fingerprint


@pytest.fixture
def interrupted(tmp_path):
    """A Tiresias run stopped after 4 windows, with its checkpoint in tmp_path/ckpt."""
    trace, est = synthetic_trace(seed=4)
    spec = spec_for(trace, "tiresias")
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Interrupt):
        simulate(trace, spec, est, executor=StopAfter(spec, vc_groups(trace.vc_nodes, 1), windows=4),
                 checkpoint_dir=ckpt, window_s=86_400)
    return trace, est, spec, ckpt


@pytest.mark.parametrize("change, named", [
    (lambda trace, spec: (trace, spec_for(trace, "fifo")), "policy"),
    (lambda trace, spec: (trace, dataclasses.replace(spec, params=dataclasses.replace(spec.params, seed=9))), "seed"),
    (lambda trace, spec: (trace, spec_for(trace, "tiresias", compat="lucid")), "semantics"),
    (lambda trace, spec: (trace, spec_for(trace, "tiresias", placer="first_fit")), "placer"),
])
def test_resume_with_other_inputs_is_refused_naming_them(interrupted, change, named):
    trace, est, spec, ckpt = interrupted
    trace2, spec2 = change(trace, spec)
    with pytest.raises(CheckpointMismatch, match=rf"{named}[ ,].*differ") as info:
        simulate(trace2, spec2, est, runtime="local", checkpoint_dir=ckpt, resume=True, window_s=86_400)
    assert "\n" not in str(info.value)


def test_resume_with_another_trace_is_refused(interrupted):
    _, est, spec, ckpt = interrupted
    other, other_est = synthetic_trace(seed=5)
    with pytest.raises(CheckpointMismatch, match="trace"):
        simulate(other, spec_for(other, "tiresias"), other_est, runtime="local", checkpoint_dir=ckpt, resume=True,
                 window_s=86_400)


def test_runtime_settings_may_change_on_resume(interrupted):
    trace, est, spec, ckpt = interrupted
    full, full_ts = simulate(trace, spec, est, runtime="local")
    resumed, resumed_ts = simulate(trace, spec, est, runtime="local", checkpoint_dir=ckpt, resume=True,
                                   window_s=3 * 86_400, checkpoint_every=2)
    assert resumed.equals(full) and resumed_ts.equals(full_ts)


class NeverRun:
    """An executor that fails if anything is simulated."""

    def __getattr__(self, name):
        raise AssertionError(f"a finished run was simulated again ({name})")


def test_resuming_a_finished_run_re_emits_its_files(tmp_path):
    trace, est = synthetic_trace(seed=4)
    spec = spec_for(trace, "sjf")
    ckpt = tmp_path / "ckpt"
    first, first_ts = simulate(trace, spec, est, runtime="local", checkpoint_dir=ckpt, window_s=86_400)
    again, again_ts = simulate(trace, spec, est, executor=NeverRun(), checkpoint_dir=ckpt, resume=True,
                               window_s=86_400)
    assert again.equals(first) and again_ts.equals(first_ts)
    with pytest.raises(CheckpointMismatch, match="policy"):
        simulate(trace, spec_for(trace, "fifo"), est, executor=NeverRun(), checkpoint_dir=ckpt, resume=True)


def test_fingerprint_ignores_chunking_and_sees_values():
    trace, est = synthetic_trace(seed=4)
    spec = spec_for(trace, "fifo")
    table = trace.table
    rechunked = pa.concat_tables([table.slice(0, 10), table.slice(10)])
    assert run_fingerprint(rechunked, spec, est) == run_fingerprint(table, spec, est)
    est2 = est.copy()
    est2[0] += 1
    changed = run_fingerprint(table, spec, est2)
    assert [k for k in changed if changed[k] != run_fingerprint(table, spec, est)[k]] == ["estimates"]
