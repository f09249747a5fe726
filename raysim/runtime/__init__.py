"""Runtimes that drive the per-VC simulators: the coordinator advances simulated time in windows,
passing each window's arrivals through the profiler stage to groups of VC simulators (`vcgroup`)
that run in-process (`local`) or as Ray actors (`ray_backend`). Jobs and results travel as Arrow
tables (`codec`); results stream to Parquet files on disk (`sink`)."""
