"""Gavel's FIFO: jobs in id order keep the GPU type they first got; a new job draws a random type
among those with enough free GPUs (seeded); the queue stops at the first job that fits nowhere.
A job that would get a type it cannot run on (throughput 0) is left waiting and the queue goes on.

``type_choice`` selects what a new job gets:

- ``random``: the drawn type (what Gavel's FIFO is meant to do);
- ``gavel``: what Gavel's simulator does (commit c4fa400): the drawn index only decides which type
  leaves the list of open types when the job fills it; the job itself gets the last open type in
  name order (v100 while any V100 is unassigned), even when fewer GPUs than it needs are free
  there. Jobs then queue for that type in the rounds. Use it to reproduce Gavel's FIFO results.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from raysim.rounds.policies.base import AllocationInput, RoundPolicy, RoundSettings
from raysim.settings import setting

TYPE_CHOICES = ("random", "gavel")


@dataclass(frozen=True)
class FifoSettings(RoundSettings):
    """The round mechanism, and which GPU type a new job gets."""

    type_choice: str = setting("gavel", "random (the drawn type) | gavel (Gavel's simulator: see the policy's "
                               "docstring)", choices=TYPE_CHOICES)


class Fifo(RoundPolicy):
    name = "gavel_fifo"
    Settings = FifoSettings
    shuffle_types = True
    fifo = True

    def __init__(self, seed: int = 0, type_choice: str = "random"):
        super().__init__(seed)
        if type_choice not in TYPE_CHOICES:
            raise ValueError(f"policy gavel_fifo: type_choice must be one of {', '.join(TYPE_CHOICES)}, not {type_choice!r}")
        self.type_choice = type_choice
        self.rng = random.Random(seed)
        self.assigned: dict[int, int] = {}   # job -> type, kept while the job runs

    def allocate(self, state: AllocationInput) -> dict:
        scale = dict(zip(state.jobs.tolist(), state.scale_factors.astype(int).tolist()))
        rate = dict(zip(state.jobs.tolist(), state.throughputs))
        free = state.gpus.astype(int).copy()
        queue = [j for j in scale if j not in self.assigned]
        for job in sorted(self.assigned):
            k = self.assigned[job]
            if job in scale:
                free[k] -= scale[job]
                continue
            # a finished job: the head of the queue takes its type if it fits and can run there
            if queue and scale[queue[0]] <= free[k] and rate[queue[0]][k] > 0:
                head = queue.pop(0)
                self.assigned[head] = k
                free[k] -= scale[head]
            del self.assigned[job]
        open_types = [k for k in range(len(free)) if free[k] > 0]
        while queue and open_types:
            job = queue.pop(0)
            fits = [i for i, k in enumerate(open_types) if free[k] >= scale[job]]
            if not fits:
                break
            drawn = fits[self.rng.randrange(len(fits))]
            k = open_types[drawn] if self.type_choice == "random" else open_types[-1]
            if rate[job][k] <= 0:
                continue
            self.assigned[job] = k
            free[k] -= scale[job]
            if free[k] == 0:
                open_types.pop(drawn)
        return _one_type(state, self.assigned)


def _one_type(state: AllocationInput, assigned: dict[int, int]) -> dict:
    """Allocation 1.0 on the assigned type, 0 elsewhere, for every active job."""
    out = {}
    for j in state.jobs.tolist():
        row = np.zeros(len(state.gpus))
        if j in assigned:
            row[assigned[j]] = 1.0
        out[(j,)] = row
    return out
