"""The in-process runtime: every VC simulated here, one after another."""

from __future__ import annotations

import numpy as np

from raysim.runtime.spec import RunSpec


def run_local(spec: RunSpec, batches: dict[str, dict[str, np.ndarray]], progress=None):
    """Simulate every VC to completion; return ({vc: job results}, {vc: time-series samples}).

    Every VC's time series runs to the cluster's last event, so cluster-wide rows add up.
    """
    sims = []
    for vc in spec.vc_nodes:
        sim = spec.make_simulator(vc)
        if vc in batches:
            sim.add_jobs(batches[vc])
        sim.run()
        sims.append(sim)
        if progress is not None:
            progress(sim)
    end = max(sim.now for sim in sims)
    jobs = {sim.name: sim.jobs.results() for sim in sims}
    series = {sim.name: sim.recorder.emit(end) for sim in sims}
    return jobs, series
