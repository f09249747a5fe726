"""A VC actor that stops answering (SIGSTOP) is warned about, then treated as lost and rebuilt:
the results do not change."""

import logging
import os
import signal

import pytest
import ray
from test_invariants import synthetic_trace
from test_ray_runtime import spec_for

from raysim.run.simulate import simulate, vc_groups
from raysim.runtime.ray_backend import RayExecutor, ensure_ray


@pytest.fixture(scope="module")
def ray_local():
    ensure_ray(num_cpus=2)
    yield
    ray.shutdown()


class FreezeOnce(RayExecutor):
    """Stops the process of group `group`'s actor right after dispatching its `window`-th window."""

    def __init__(self, *args, group: int, window: int, **kw):
        super().__init__(*args, **kw)
        self.group, self.window, self.calls, self.frozen = group, window, 0, None

    def run_window(self, g, batch_ref, t_end, snapshot=True, orders=None):
        handle = super().run_window(g, batch_ref, t_end, snapshot, orders)
        if g == self.group:
            self.calls += 1
            if self.calls == self.window and self.frozen is None:
                self.frozen = ray.get(self.actors[g].pid.remote())[0]
                os.kill(self.frozen, signal.SIGSTOP)
        return handle


@pytest.mark.slow
def test_hung_vc_actor_is_warned_about_then_rebuilt(ray_local, caplog):
    trace, est = synthetic_trace(seed=4)
    spec = spec_for(trace, "tiresias")
    expected, expected_ts = simulate(trace, spec, est, runtime="local")
    executor = FreezeOnce(spec, vc_groups(trace.vc_nodes, 1), group=1, window=3,
                          slow_factor=10.0, slow_min_s=1.0, lost_after_s=4.0)
    with caplog.at_level(logging.WARNING, logger="raysim"):
        jobs, series = simulate(trace, spec, est, executor=executor, window_s=86_400)
    assert executor.frozen is not None
    assert jobs.equals(expected) and series.equals(expected_ts)
    text = caplog.text
    assert "VC group 1" in text and "may be hung" in text and "lost in the window" in text
