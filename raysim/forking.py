"""Independent pieces of work spread over processes forked from this one, where that is safe: what
a sweep or a run would otherwise do one piece after another on one CPU (composing a sweep's job
configs, drawing its plots).

Forking is safe here on Linux, in a process that runs only its main thread, has not started Ray (a
process holding Ray's or any other threads must not fork: a lock one of them holds stays locked in
the child) and is not itself a pool's process. Elsewhere, or with one process asked for, the pieces
run here, one after another. The forked processes inherit the pieces (nothing is pickled on the way
in); their results travel back pickled, so they must be picklable and small. Ctrl-C is the parent's
to handle: the forked processes ignore it, the parent stops them."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import traceback
from typing import Any, Callable, Iterator, Sequence


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform says, else the count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking this process is safe: Linux, only the main thread running, no Ray started,
    and not itself a pool's process (those may not have children)."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    if multiprocessing.current_process().daemon:
        return False
    ray = sys.modules.get("ray")
    return ray is None or not getattr(ray, "is_initialized", lambda: False)()


class ForkedTaskFailed(RuntimeError):
    """A piece of work raised in its forked process (its traceback, as text, is the message)."""


#: The pieces a pool's processes run: set before they are forked, so each inherits them.
_TASKS: list = []


def _run_task(i: int):
    function, args = _TASKS[i]
    try:
        return i, True, function(*args)
    except BaseException:  # noqa: BLE001 - sent to the parent as text (a traceback does not pickle)
        return i, False, traceback.format_exc()


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def forked_map(tasks: Sequence[tuple[Callable, tuple]], processes: int | None = None) -> list[Any]:
    """The result of each `(function, args)` of `tasks`, in order (see `forked_as_done`)."""
    results: list[Any] = [None] * len(tasks)
    for i, result in forked_as_done(tasks, processes):
        results[i] = result
    return results


def forked_as_done(tasks: Sequence[tuple[Callable, tuple]], processes: int | None = None) -> Iterator[tuple[int, Any]]:
    """(index, result) of each `(function, args)` of `tasks` as each is done, computed in up to
    `processes` (None: one per usable CPU) processes forked from this one, or here one after
    another, in order, where forking is unsafe (`can_fork`) or only one process or task is there.
    A piece that raises in a forked process raises ForkedTaskFailed here, with its traceback."""
    processes = min(processes or usable_cpus(), len(tasks))
    if processes <= 1 or not can_fork():
        for i, (function, args) in enumerate(tasks):
            yield i, function(*args)
        return
    _TASKS[:] = tasks
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        with multiprocessing.get_context("fork").Pool(processes, initializer=_ignore_ctrl_c) as pool:
            for i, ok, result in pool.imap_unordered(_run_task, range(len(tasks))):
                if not ok:
                    name = getattr(tasks[i][0], "__name__", tasks[i][0])
                    raise ForkedTaskFailed(f"{name} failed in its process:\n{result}")
                yield i, result
    finally:
        _TASKS.clear()
