"""Bit operations the compiled kernels use, as plain Python functions.

Each is correct in Python (tests, a kernel's ``py_func``); when numba is imported
(:func:`engine.lazy_jit.materialize`), :func:`install` gives it a numba implementation that
compiles to one machine instruction. This module itself never imports numba: the kernel
modules import it at start-up, and a process that runs the ahead-of-time compiled library
never imports numba (engine/lazy_jit.py).
"""
from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_installed = False


def trailing_zeros(x: int) -> int:
    """The index of the lowest set bit of ``x`` (``x`` nonzero; an int64's sign bit is bit
    63). In compiled code, LLVM's count-trailing-zeros (x86: ``tzcnt``)."""
    x = int(x)
    return (x & -x).bit_length() - 1


def install() -> None:
    """Register the numba implementations (once per process; called with numba imported)."""
    global _installed
    with _lock:
        if _installed:
            return
        from numba.cpython.unsafe.numbers import trailing_zeros as cttz
        from numba.extending import overload

        @overload(trailing_zeros, inline="always", jit_options={"_nrt": False})
        def _trailing_zeros(x):  # type: ignore[no-untyped-def]
            def impl(x):  # type: ignore[no-untyped-def]
                return cttz(x)
            return impl

        _installed = True
        log.debug("numba: engine.bits' compiled forms registered")
