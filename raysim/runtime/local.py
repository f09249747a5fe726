"""The in-process runtime: every VC simulated here, one after another."""

from __future__ import annotations

import numpy as np

from raysim.runtime.spec import RunSpec


def run_local(spec: RunSpec, batches: dict[str, dict[str, np.ndarray]], progress=None):
    """Simulate every VC to completion; return ({vc: job results}, {vc: time-series samples})."""
    jobs, series = {}, {}
    for vc in spec.vc_nodes:
        sim = spec.make_simulator(vc)
        if vc in batches:
            sim.add_jobs(batches[vc])
        sim.run()
        jobs[vc] = sim.jobs.results()
        series[vc] = sim.recorder.emit(sim.now)
        if progress is not None:
            progress(vc, sim)
    return jobs, series
