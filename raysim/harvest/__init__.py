"""Idle-node harvesting: elastic DNN training tasks soak up the nodes a batch scheduler leaves idle.

BFTrainer-style (Liu et al., arXiv 2106.12091), as a policy on the VC engine
(raysim.policy.bftrainer, `python -m raysim +experiment=harvest_summit`): `replay` turns a node
idle/busy log into events, `tasks` loads task sets and their scalability curves, `inputs` makes
them the run's capacity plan and trace, `problem` states one allocation decision and its objective,
`allocators` solve it (exact optimiser, the reference heuristic, a node-level MILP in `milp`), and
`metrics` computes a run's harvest figures from its result files. See docs/harvest.md.
"""
