"""Gavel's MaxMinFairness_Packing: max-min fairness over jobs and pairs of jobs sharing GPUs (space
sharing), with the table's pair throughputs. Variables are the time fractions of every job alone
and of every same-size pair on every type; job i's normalised rate is

    sum over combinations c containing i, types k:  T_i(c, k) s_i x_ck / (sum_k T_ik * w_i * T^prop_i)

(Gavel normalises by the sum of the job's isolated throughputs and its proportional-share
throughput). Constraints: a type's GPUs (a pair counts its GPUs once), each job's time <= 1."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from raysim.rounds import lp
from raysim.rounds.policies.base import AllocationInput, RoundPolicy, proportional_throughput


class MaxMinFairnessPacked(RoundPolicy):
    name = "max_min_fairness_packed"
    packing = True

    def allocate(self, state: AllocationInput) -> dict:
        jobs = state.jobs.tolist()
        row = {j: i for i, j in enumerate(jobs)}
        n, m = len(state.gpus), len(jobs)
        combos = [(j,) for j in jobs] + list(state.pairs)
        norm = state.throughputs.sum(axis=1) * state.priority_weights * proportional_throughput(
            state.throughputs, state.gpus) / state.scale_factors
        level, member = [], []          # (row, column, value) triples
        capacity = []
        for c, combo in enumerate(combos):
            rates = (state.throughputs[row[combo[0]]][:, None] if len(combo) == 1
                     else state.pair_throughputs[c - m])
            scale = state.scale_factors[row[combo[0]]]
            for k in range(n):
                column = c * n + k
                capacity.append((k, column, scale))
                for slot, j in enumerate(combo):
                    level.append((row[j], column, rates[k, slot] / norm[row[j]]))
                    member.append((row[j], column, 1.0))
        size = len(combos) * n
        level_m = _matrix(level, (m, size))
        a_ub = sparse.vstack([_matrix(capacity, (n, size)), _matrix(member, (m, size))]).tocsr()
        x, _ = lp.max_min_rows(level_m, a_ub, np.concatenate([state.gpus, np.ones(m)]), self.lp_method)
        x = np.clip(x.reshape(len(combos), n), 0.0, 1.0)
        return dict(zip(combos, x))


def _matrix(triples, shape):
    rows, cols, values = zip(*triples) if triples else ((), (), ())
    return sparse.csr_matrix((values, (rows, cols)), shape=shape)
