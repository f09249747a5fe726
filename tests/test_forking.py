"""raysim.forking: pieces of work in forked processes where that is safe, here otherwise."""

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from raysim import forking

REPO = Path(__file__).resolve().parent.parent

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


def pid_and_square(x):
    return os.getpid(), x * x


def broken(x):
    raise KeyError(f"no {x}")


def in_a_fresh_process(code: str) -> None:
    """Run `code` in a new interpreter, where forking is what it is for a user's command (this
    pytest process may hold Ray's threads, started by another test: it must not fork)."""
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(REPO / "tests")))})
    assert res.returncode == 0, res.stdout + res.stderr


@linux
def test_results_come_back_in_order_from_forked_processes():
    in_a_fresh_process("""
        import os
        from raysim import forking
        from test_forking import pid_and_square

        assert forking.can_fork()
        out = forking.forked_map([(pid_and_square, (x,)) for x in range(6)], processes=2)
        assert [square for _, square in out] == [x * x for x in range(6)]
        assert os.getpid() not in {pid for pid, _ in out}
    """)


@linux
def test_a_piece_that_raises_in_its_process_names_it_with_its_traceback():
    in_a_fresh_process("""
        import pytest
        from raysim import forking
        from test_forking import broken, pid_and_square

        with pytest.raises(forking.ForkedTaskFailed, match=r"(?s)broken failed in its process:.*KeyError: 'no 2'"):
            forking.forked_map([(pid_and_square, (1,)), (broken, (2,))], processes=2)
    """)


def test_where_forking_is_unsafe_the_pieces_run_here_in_order(monkeypatch):
    monkeypatch.setattr(forking, "can_fork", lambda: False)
    out = forking.forked_map([(pid_and_square, (x,)) for x in range(3)], processes=2)
    assert out == [(os.getpid(), x * x) for x in range(3)]
    with pytest.raises(KeyError):  # here, an error is raised as it is
        forking.forked_map([(broken, (1,))], processes=2)
    monkeypatch.undo()
    assert forking.forked_map([(pid_and_square, (4,))], processes=2) == [(os.getpid(), 16)]  # one piece: here


def test_a_process_with_other_threads_or_ray_does_not_fork(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert forking.can_fork()
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not forking.can_fork()
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setitem(sys.modules, "ray", type(sys)("ray"))
    sys.modules["ray"].is_initialized = lambda: True
    assert not forking.can_fork()
    monkeypatch.setattr(sys, "platform", "darwin")
    sys.modules["ray"].is_initialized = lambda: False
    assert not forking.can_fork()


@linux
def test_a_pool_process_does_not_fork_again():
    """A job of a parallel sweep runs in a pool's process, which may not have children: its plots
    are drawn in it, one after another."""
    in_a_fresh_process("""
        import multiprocessing
        from raysim import forking

        with multiprocessing.get_context("fork").Pool(1) as pool:
            assert pool.apply(forking.can_fork) is False
    """)
