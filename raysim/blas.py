"""BLAS on one thread for small dense work (tiny LP and fit matrices), where OpenBLAS's threads
cost many times the work itself."""

from __future__ import annotations

import contextlib

_CONTROLLER = {}


@contextlib.contextmanager
def one_blas_thread():
    """BLAS and LAPACK on one thread inside the block (threadpoolctl's controller, made once)."""
    if "controller" not in _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER["controller"] = ThreadpoolController()
    with _CONTROLLER["controller"].limit(limits=1, user_api="blas"):
        yield
