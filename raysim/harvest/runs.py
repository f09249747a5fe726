"""Harvested tasks' runs under checkpoint-restart (`checkpoint.*`, raysim.sim.checkpoint): the one
checkpoint model applied to policy=bftrainer (docs/failures.md).

A task's *run* is one stretch on one set of nodes: it begins when the policy books the task on
nodes and ends at the next change of them, which is one of three:

- a rescale: the allocator changes the task's node count. That stays BFTrainer's own cost (Tcup or
  Tcdw x its old rate, charged by the policy), all progress kept, as an elastic job's
  reconfiguration is its policy's: the next run starts from the progress the task has;
- a stop: the node log takes one of its nodes (a task spanning several nodes stops whole, as any
  job). It keeps the training of the run's last completed checkpoint (the run's start if none
  completed) and loses the rest; its next run begins with a restore of `restart_s`, which replaces
  the rescale cost of the decision that books it again;
- its completion.

A run's timeline, in seconds of it, is what Checkpointing counts (`at`, `span`, the end not in
sight): the restore after a stop, then `interval_s` of training, a write of `write_s`, and so on,
the task holding its nodes throughout. Restores and writes are its overhead, in node-seconds,
priced at a stop and at the completion for the runs since the last pricing (`unpriced`).
"""

from __future__ import annotations

import numpy as np

from raysim.sim.checkpoint import Checkpointing


class TaskRuns:
    """The current run of each task (by task row) and what its runs cost; lengths in seconds."""

    def __init__(self, cp: Checkpointing, tasks: int):
        self.cp = cp
        self.since = np.full(tasks, -1.0)     # second its run began; -1: it holds no nodes
        self.nodes = np.zeros(tasks, np.int64)  # nodes its run holds
        self.restore = np.zeros(tasks, bool)  # its run begins with a restore
        self.stopped = np.zeros(tasks, bool)  # the node log stopped it: its next run restores
        self.unpriced = np.zeros(tasks)       # node-seconds of restores and writes not yet priced

    def where(self, task: int, at: float) -> tuple:
        """(training kept at the run's last completed checkpoint, training lost since then, restores
        and writes), in seconds, of task `task`'s run at second `at`."""
        return self.cp.at(0, None, bool(self.restore[task]), at - self.since[task])

    def trained(self, task: int, at: float) -> float:
        """Seconds task `task`'s run has trained by second `at`."""
        kept, lost, _ = self.where(task, at)
        return kept + lost

    def training(self, tasks, since: float, at: float) -> np.ndarray:
        """Seconds each of `tasks` trained between seconds `since` and `at` (0 without a run); their
        runs began at or before `since`."""
        return np.array([self.trained(k, at) - self.trained(k, since) if self.since[k] >= 0 else 0.0
                         for k in tasks], dtype=float)

    def due(self, task: int, at: float, training: float) -> float:
        """Seconds from `at` until task `task`'s run has trained `training` seconds more (the writes
        between included)."""
        elapsed = at - self.since[task]
        return self.cp.span(0, self.trained(task, at) + training, bool(self.restore[task])) - elapsed

    def begin(self, task: int, at: float, nodes: int) -> None:
        """Task `task` starts a run on `nodes` nodes at second `at` (with a restore after a stop)."""
        self.since[task], self.nodes[task] = at, nodes
        self.restore[task], self.stopped[task] = self.stopped[task], False

    def end(self, task: int, at: float) -> None:
        """Task `task`'s run ends at second `at` by a rescale: its restores and writes wait for pricing."""
        self.unpriced[task] += self.where(task, at)[2] * self.nodes[task]
        self.since[task] = -1.0

    def priced(self, task: int, at: float) -> tuple:
        """What a stop of task `task`'s run at second `at` costs: (seconds of training lost per node,
        node-seconds of restores and writes not yet priced, this run's included)."""
        _, lost, overhead = self.where(task, at)
        return lost, self.unpriced[task] + overhead * self.nodes[task]

    def stop(self, tasks, at: float) -> np.ndarray:
        """The node log stops the runs of `tasks` at second `at` (their costs priced: `priced`): the
        seconds of training each loses; their next runs restore."""
        lost = np.array([self.where(k, at)[1] for k in tasks], dtype=float)
        self.since[tasks], self.unpriced[tasks], self.stopped[tasks] = -1.0, 0.0, True
        return lost

    def finish(self, task: int, at: float) -> float:
        """Task `task` completes at second `at`: node-seconds of restores and writes not yet priced."""
        unpriced = self.unpriced[task] + (self.where(task, at)[2] * self.nodes[task] if self.since[task] >= 0 else 0.0)
        self.since[task], self.unpriced[task] = -1.0, 0.0
        return unpriced
