"""Models raysim uses inside simulations; ``raysim models`` trains and evaluates them.

Duration estimates (`estimates`: read from a file, or the true durations; `online`: retrained
during the run; `duration`: the estimator), throughput forecasts and Lucid's packing switch
(`throughput`, `forecast`), packing share scores (`packing`), and colocation interference
(`colocation`: measured pairs, `pairspeed`: learned, `interference` with `resources` profiles:
measured, learned or analytic). `features` and `plots` hold the pieces they share (the EBM/LightGBM
wrapper, metrics, EBM plots). See docs/models.md and docs/interference.md.
"""
