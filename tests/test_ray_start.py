"""When Ray cannot start, or not connect, a run stops with one line that says what Ray said and
that runtime=local gives the same results (issue 36), not Ray's multi-line stack."""

from __future__ import annotations

import pickle

import pytest
import ray

from raysim.errors import UserError, user_error_message
from raysim.runtime.ray_backend import RayStartError, ensure_ray

TIMEOUT = ("The current node timed out during startup. This could happen because some of the Ray processes\n"
           "failed to startup.\n  File ...\n")


@pytest.fixture
def ray_fails(monkeypatch):
    def fail(*args, **kwargs):
        raise Exception(TIMEOUT)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fail)


@pytest.mark.parametrize("address, says", [(None, "Ray could not start on this machine"),
                                           ("10.0.0.1:6379", "connect to the Ray cluster at 10.0.0.1:6379")])
def test_ray_that_cannot_start_is_one_line(ray_fails, address, says):
    with pytest.raises(UserError) as err:
        ensure_ray(address=address)
    line = user_error_message(err.value)
    assert says in line and "timed out during startup" in line and "runtime=local" in line
    assert "\n" not in line and "failed to startup" not in line


def test_the_error_survives_pickling(ray_fails):  # (raised in a Ray task, it travels back)
    with pytest.raises(RayStartError) as err:
        ensure_ray()
    assert str(pickle.loads(pickle.dumps(err.value))) == str(err.value)


def test_a_slow_window_whose_process_is_busy_is_progress_not_a_hang(monkeypatch, caplog):
    """A window slower than the warning threshold whose actor process keeps using CPU is reported
    as still simulating, every interval; one whose process is idle is warned of as maybe hung."""
    import logging

    from raysim.runtime import ray_backend

    looks = iter([0.0, 50.0, 100.0, 100.0])  # CPU seconds at the start and at each look
    readies = iter([[], [], [], ["ref"]])  # not ready at three looks, then ready
    monkeypatch.setattr(ray_backend, "cpu_seconds", lambda pid: next(looks))
    monkeypatch.setattr(ray, "wait", lambda refs, timeout=None: (next(readies), []))
    executor = object.__new__(ray_backend.RayExecutor)
    executor.slow_min_s, executor.slow_factor, executor._slowest, executor.lost_after_s = 60.0, 10.0, 0.0, None
    with caplog.at_level(logging.INFO, logger="raysim"):
        assert executor._wait("ref", "VC group 0 (vcA; process 1)", pid=1) is not None
    lines = [r.getMessage() for r in caplog.records]
    assert sum("still simulating" in line for line in lines) == 2
    assert sum("may be hung" in line and "is idle" in line for line in lines) == 1


@pytest.mark.parametrize("slow_min_s, slow_factor, lost_after_s", [(1e300, 10.0, 1e300), (60.0, 1e300, None)])
def test_waits_longer_than_ray_can_express_are_capped(monkeypatch, slow_min_s, slow_factor, lost_after_s):
    """Ray takes a wait's timeout in milliseconds as a C long: ray.slow_min_s=1e300 with
    ray.lost_after_s=1e300 (or slow_factor 1e300 x a window's time) overflowed it in a traceback."""
    from raysim.runtime import ray_backend

    timeouts = []
    monkeypatch.setattr(ray, "wait", lambda refs, timeout=None: (timeouts.append(timeout) or ["ref"], []))
    executor = object.__new__(ray_backend.RayExecutor)
    executor.slow_min_s, executor.slow_factor, executor._slowest = slow_min_s, slow_factor, 2.0
    executor.lost_after_s = lost_after_s
    assert executor._wait("ref", "VC group 0 (vcA; process 1)") is not None
    assert timeouts == [ray_backend.LONGEST_WAIT_S]


def test_cpu_seconds_of_this_process_grow():
    import os

    from raysim.runtime.ray_backend import cpu_seconds

    before = cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    after = cpu_seconds(os.getpid())
    assert before is not None and after > before
    assert cpu_seconds(2**22 + 12345) is None  # (no such process)


STOP_AND_START_AGAIN = """
import ray
from raysim.runtime.ray_backend import ensure_ray, stop_ray_in_background
assert ensure_ray(num_cpus=1) is True   # started here: the run's to stop
assert ensure_ray(num_cpus=1) is False  # already up (a sweep's later runs)
stop_ray_in_background()
assert ensure_ray(num_cpus=1) is True   # waits for the stop, then starts afresh
assert ray.get(ray.put(7)) == 7
print("ok")
"""


@pytest.mark.slow
def test_a_run_stops_the_ray_it_started_and_the_next_start_waits_for_it():
    """A single run stops the Ray it started while it writes its results; a Ray started while that
    stop is under way (the next run in the same process) waits for it and starts afresh."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", STOP_AND_START_AGAIN], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
