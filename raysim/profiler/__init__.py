"""The profiling stage between the trace and the VCs: pass-through, or Lucid's profiling pool."""

from __future__ import annotations


def make_profiler(settings: dict | None, group_of_vc: dict[str, int], n_groups: int, t0: int = 0):
    """The stage for a run: Lucid's profiler when `settings` are given, else a pass-through."""
    if settings:
        from raysim.profiler.lgf import LucidProfiler

        return LucidProfiler(settings, group_of_vc, n_groups, t0)
    from raysim.profiler.passthrough import PassThroughProfiler

    return PassThroughProfiler(group_of_vc, n_groups)
