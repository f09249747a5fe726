"""HiGHS, the solver behind scipy.optimize.milp and highspy, without the lines its C++ code prints
on standard output whatever its options say: a banner when an instance is made, and debug lines of
its MIP solver (`HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();`), which
Ray shows from every worker. raysim's own output (logging, on the console's stderr or stdout) is
never written during a solve, so nothing of it is lost."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

_LIBC = ctypes.CDLL(None)


@contextlib.contextmanager
def quiet():
    """File descriptor 1 pointed at /dev/null for the duration (C and C++ code write there directly);
    C's stdio buffers are flushed before it is pointed back, so that nothing written in the block
    reaches the real stdout after it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        _LIBC.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)


def milp(*args, **kwargs):
    """scipy.optimize.milp (same arguments and result), with HiGHS's output left out (`quiet`)."""
    from scipy import optimize  # (slow to import, and only the policies that solve MILPs need it)

    with quiet():
        return optimize.milp(*args, **kwargs)
