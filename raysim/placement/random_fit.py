"""A genuinely random placer: nodes tried in a seeded random order."""

from __future__ import annotations

import numpy as np

from raysim.placement.first_fit import fill_in_order


class RandomFit:
    """Small jobs go to a random node that can hold them whole; otherwise GPUs are taken from nodes
    in a random order. The generator is seeded with (seed, VC index), so results are reproducible
    and independent of how VCs are spread over processes."""

    def __init__(self, *, params, vc_index: int = 0):
        self.rng = np.random.default_rng([params.seed, vc_index])

    def select(self, vc, gpu_num: int):
        if gpu_num <= vc.gpus_per_node:
            fits = [n for n in vc.order if vc.free[n] >= gpu_num]
            if fits:
                return [(fits[int(self.rng.integers(len(fits)))], gpu_num)]
        nodes = [vc.order[i] for i in self.rng.permutation(vc.num_nodes)]
        return fill_in_order(vc, nodes, gpu_num)
