"""A job's runs as its trace recorded them: the optional ``attempts_s`` column.

A job that failed and was retried (Philly's ``attempts``) ran several times. ``attempts_s`` holds
its runs and the gaps between them, in seconds, alternating: ``run gap run ... run`` (an odd count
of whole numbers separated by spaces; a job that ran once has none, the column is null). The runs
add up to the job's `duration`; every run but the last ended in a failure. With
``trace.failed=replay`` the simulator replays them (raysim.sim.attempts); otherwise the column is
carried and ignored.
"""

from __future__ import annotations

#: The trace column.
COLUMN = "attempts_s"
#: Job states that mean the job's last run failed (``trace.failed=replay`` counts them): it ended
#: without success and was not cancelled, as AcmeTrace's authors count failures (their completed,
#: cancelled and failed shares add up to 1), so that the counts compare with their aggregates.
FAILED_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT")


def parse_attempts(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(runs, gaps) of an ``attempts_s`` value; ValueError saying what is wrong with it."""
    parts = str(text).split()
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise ValueError("not whole seconds separated by spaces (run gap run ... run)") from None
    if len(numbers) % 2 == 0:
        raise ValueError("runs and gaps must alternate and end with a run (an odd count of numbers)")
    runs, gaps = tuple(numbers[0::2]), tuple(numbers[1::2])
    if min(runs) <= 0:
        raise ValueError("every run must last at least 1 s")
    if gaps and min(gaps) < 0:
        raise ValueError("a gap between runs must not be negative")
    return runs, gaps


def attempts_of(text) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """`parse_attempts` of a column value; None for a job that ran once (null, NaN or blank)."""
    if text is None or text != text or not str(text).strip():
        return None
    return parse_attempts(text)


def format_attempts(runs, gaps) -> str:
    """The ``attempts_s`` text of `runs` with `gaps` between them (len(gaps) == len(runs) - 1)."""
    out = [str(int(runs[0]))]
    for gap, run in zip(gaps, runs[1:]):
        out += [str(int(gap)), str(int(run))]
    return " ".join(out)


def check_attempts(values, durations, max_gap_s: float = float("inf")) -> tuple[list[int], list[str]]:
    """The entries of `values` (``attempts_s`` texts or None) that are malformed, whose runs do not
    add up to their job's duration, or with a gap longer than `max_gap_s`: (indices, reasons)."""
    bad, reasons = [], []
    for i, (text, duration) in enumerate(zip(values, durations)):
        try:
            got = attempts_of(text)
        except ValueError as exc:
            bad.append(i)
            reasons.append(str(exc))
            continue
        if got is not None and sum(got[0]) != duration:
            bad.append(i)
            reasons.append("the runs do not add up to the job's duration")
        elif got is not None and got[1] and max(got[1]) > max_gap_s:
            bad.append(i)
            reasons.append(f"a gap between runs longer than trace.max_duration_s ({max_gap_s:,.0f} s)")
    return bad, reasons
