"""Jobs that ran several times in their trace, replayed (``trace.failed=replay``).

A trace may record that a job failed and was retried (Philly's attempts, the ``attempts_s`` column
of raysim.trace.attempts): runs of given lengths with gaps between them. Replayed, such a job runs
its first run's work, fails (it leaves its GPUs, as if it had finished), waits out the gap outside
any queue, and arrives again for the next run, until its last run completes. The work it did in a
failed run is lost: the next run does its own work, as the trace recorded it.

In the engine a job's remaining work (`JobTable.remain`) is still the whole job's; the current run
fails when the remaining work drops to `JobTable.fail_at` (the work of its later runs), so that
policies ordering by remaining work see all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from raysim.trace.attempts import COLUMN, attempts_of


@dataclass(frozen=True)
class Attempts:
    """Per trace row (`seq`) of a job that ran several times: its runs' work and the gaps between
    them, in seconds."""

    runs: dict = field(default_factory=dict)  # seq -> (run seconds, ...)
    gaps: dict = field(default_factory=dict)  # seq -> (gap seconds, ...), one fewer

    @classmethod
    def of_trace(cls, table: pa.Table) -> "Attempts":
        """The attempts the trace's ``attempts_s`` column records (none without the column)."""
        if COLUMN not in table.column_names:
            return cls()
        column = table.column(COLUMN)
        runs, gaps = {}, {}
        for seq in np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False)).tolist():
            got = attempts_of(column[seq].as_py())
            if got is not None and got[1]:
                runs[seq], gaps[seq] = got
        return cls(runs, gaps)

    def __len__(self) -> int:
        return len(self.runs)

    def plan(self, seq: int) -> list[tuple[int, int]] | None:
        """Job `seq`'s failures in order, as (remaining work at which that run fails, gap after it),
        or None if it ran once."""
        runs = self.runs.get(seq)
        if runs is None:
            return None
        later = [sum(runs[k + 1:]) for k in range(len(runs) - 1)]
        return list(zip(later, self.gaps[seq]))
