"""Round-based scheduling (Gavel's family of heterogeneity-aware and fairness policies).

Every round (``round_s``, Gavel: 360 s) a policy's target allocation -- the fraction of time each
job should run on each GPU type -- is turned into concrete assignments for the round by Gavel's
priority mechanism. Modules:

- :mod:`raysim.rounds.cluster`: the GPU types, their counts and the jobs' throughputs on them.
- :mod:`raysim.rounds.engine`: the round mechanism (arrivals, micro-tasks, priorities, deficits).
- :mod:`raysim.rounds.policies`: one file per policy, LPs solved with SciPy's HiGHS.
- :mod:`raysim.rounds.generate`: Gavel's continuous job generator (Poisson arrivals, its job mix).
- :mod:`raysim.rounds.run`: the Hydra entry point (``+experiment=gavel_trace|gavel_continuous``).

Pure Python + numpy + SciPy; no Ray. docs/gavel.md says what is implemented and how it differs
from Gavel's simulator.
"""
