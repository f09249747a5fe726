"""Runtimes that drive the per-VC simulators: in-process (`local`) and, later, Ray actors."""
