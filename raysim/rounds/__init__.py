"""Round-based scheduling: Gavel's family of heterogeneity-aware and fairness policies.

Every round (``policy.round_s``, Gavel: 360 s) a policy's target allocation -- the fraction of time
each job should run on each GPU type -- is turned into the jobs that run this round by Gavel's
priority and deficit mechanism. The policies are VC-engine policies (raysim.policy.rounds.RoundBased
drives the mechanism from the engine's events); this package holds what they compute:

- :mod:`raysim.rounds.mechanism`: the round mechanism's state (combinations, priorities, deficits,
  micro-tasks) of one VC.
- :mod:`raysim.rounds.policies`: one file per policy's allocation, LPs solved with HiGHS (:mod:`lp`).
- :mod:`raysim.rounds.inputs`: each job's throughput per GPU type, steps, weights, exact arrivals;
  Gavel's traces as raysim traces.
- :mod:`raysim.rounds.settings`: the `rounds:` settings and `cluster.throughput` of a configured run.
- :mod:`raysim.rounds.generate`: Gavel's continuous job generator (Poisson arrivals, its job mix).
- :mod:`raysim.run.rounds`: round-based runs without a config (tests, benchmarks, scripts).

Pure Python + numpy + HiGHS; no Ray. docs/gavel.md says what is implemented and how it differs
from Gavel's simulator.
"""
