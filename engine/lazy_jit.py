"""numba's ``@njit``, with numba imported at a kernel's first use instead of at module import.

Importing numba costs about 0.26 CPU-s and its first dispatch of a cached kernel another
0.2 (issue 17). A process that runs the engine's ahead-of-time compiled kernel
(:mod:`engine.kernel_aot`) needs neither, yet the kernel modules (``engine.kernel``,
``engine.trace``) are where the simulator's constants and readers live. So those modules
decorate their kernels with :func:`njit` from here: it records the Python function and
numba's options and returns a :class:`LazyKernel`. The first call of any lazy kernel, or the
first look at a numba attribute of one (``signatures``, ``py_func`` is the exception: it is
the plain function), imports numba and compiles every recorded kernel with ``numba.njit``
and the recorded options (``cache=True`` as before: the on-disk cache is the same), then
rebinds the module's names to the real dispatchers, so later calls go to numba directly.

A kernel may call a lazy kernel of another module (numba then finds a :class:`LazyKernel`
among its globals): numba types it as the real dispatcher (a ``typeof`` registration made when
numba is imported here).
"""
from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)

_pending: list["LazyKernel"] = []
_lock = threading.RLock()
_typeof_registered = False


class LazyKernel:
    """A kernel not compiled yet: calls and numba attributes compile every pending kernel."""

    __slots__ = ("py_func", "options", "_real")

    def __init__(self, py_func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = py_func
        self.options = options
        self._real: Any = None

    def dispatcher(self) -> Any:
        """The numba dispatcher (imports numba and compiles the pending kernels first)."""
        if self._real is None:
            materialize()
        return self._real

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        state = "compiled" if self._real is not None else "not compiled yet"
        return f"<lazy numba kernel {self.py_func.__module__}.{self.py_func.__name__}, {state}>"


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` with the same options, deferred until a kernel is first used."""
    def wrap(fn: Callable[..., Any]) -> LazyKernel:
        lazy = LazyKernel(fn, dict(options))
        with _lock:
            _pending.append(lazy)
        return lazy
    if args and callable(args[0]) and len(args) == 1:
        return wrap(args[0])
    if args:
        raise TypeError("engine.lazy_jit.njit takes keyword options only (no signatures)")
    return wrap


def materialize() -> None:
    """Import numba and turn every pending kernel into its ``numba.njit`` dispatcher."""
    global _typeof_registered
    with _lock:
        if not _pending:
            return
        import numba

        from engine import numba_nowrap
        numba_nowrap.install()      # before any kernel compiles (engine/numba_nowrap.py)
        from engine import bits
        bits.install()              # engine.bits' functions compiled as single instructions
        if not _typeof_registered:
            from numba.extending import typeof_impl

            @typeof_impl.register(LazyKernel)
            def _typeof_lazy(val: LazyKernel, c: Any) -> Any:
                return typeof_impl(val.dispatcher(), c)
            _typeof_registered = True
        todo = list(_pending)
        _pending.clear()
        for lazy in todo:
            lazy._real = numba.njit(**lazy.options)(lazy.py_func)
        for lazy in todo:
            module = sys.modules.get(lazy.py_func.__module__)
            name = lazy.py_func.__name__
            if module is not None and getattr(module, name, None) is lazy:
                setattr(module, name, lazy._real)
        log.debug("numba kernels set up: %d", len(todo))
