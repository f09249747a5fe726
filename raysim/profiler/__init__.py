"""The profiling stage between the trace and the VCs (a pass-through until Lucid's profiler)."""
