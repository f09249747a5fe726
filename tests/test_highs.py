"""HiGHS's own lines (its banner, its MIP solver's debug lines) stay out of a run's output, where
stdout is a terminal and where it is a pipe, as on Ray's workers."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: prints as HiGHS's C++ code does (C's stdio, buffered when stdout is a pipe) inside `quiet`
SCRIPT = """
import ctypes
from raysim.highs import quiet
print("before", flush=True)
with quiet():
    ctypes.CDLL(None).printf(b"HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\\n")
print("after", flush=True)
"""


def test_quiet_drops_what_native_code_prints_on_a_piped_stdout():
    res = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["before", "after"]


def test_every_mip_of_raysim_is_solved_quietly():
    import raysim.highs
    from raysim.elastic import pollux, sia
    from raysim.harvest import milp

    assert sia.milp is pollux.milp is milp.milp is raysim.highs.milp
