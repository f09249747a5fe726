"""Idle-node harvesting: elastic DNN training tasks soak up the nodes a batch scheduler leaves idle.

A BFTrainer-style replay (Liu et al., arXiv 2106.12091): `replay` turns a node idle/busy log into
events, `tasks` loads task sets and their scalability curves, `problem` states one allocation
decision and its objective, `allocators` solve it at each event (exact optimiser, the reference
heuristic, a node-level MILP in `milp`), `engine` runs the event loop, `metrics` and `plots`
summarise it, and `run` is the harvest mode's entry point
(`python -m raysim +experiment=harvest_summit`). See docs/harvest.md.
"""
