"""The pure simulation core: one VC's event-driven simulator, its job table, GPUs and recorders.

Nothing in this package imports Ray; the runtimes in `raysim.runtime` distribute it.
"""

from raysim.sim.engine import VCSimulator
from raysim.sim.params import SimParams

__all__ = ["SimParams", "VCSimulator"]
