"""numba without negative-index wrap-around for the engine's kernel module.

numba lowers every array index held in a signed integer as ``i < 0 ? i + shape : i`` (Python's
negative indexing) before it computes the address: a compare, an add and a select per index,
and the dimension's size kept live for it. The event loop in :mod:`engine.kernel` indexes
~50 arrays with signed variables (channel, queue, bank, slot) and never with a negative value,
so in its code that work is pure cost: with it gone the 1M-request DRAMsim3 runs took 9-27 %
less kernel CPU, with identical statistics (benchmarks/RESULTS.md, issue 17, 2026-12-06).

:func:`install` makes numba's integer-index fix-up skip the wrap-around while it lowers a
function defined in one of :data:`MODULES`, and only then: every other module's kernels and
numba's library code compiled as functions of their own keep Python's semantics (numba code
inlined into a kernel at the IR level, an ``inline='always'`` overload, is lowered under the
kernel's name and so without the wrap-around too; the bounds-checked test covers it as it
covers the kernel's own lines). A negative index in those modules would then
address memory before the array, so the rule they follow is "never index negatively", and
``tests/test_kernel_no_negative_index.py`` enforces it: it runs the kernels, compiled this way,
under ``NUMBA_BOUNDSCHECK=1`` (numba then checks every index against ``0 <= i < size`` after the
fix-up), over the configurations and front ends the engine has.

numba's on-disk cache does not key on this hook (nor on ``NUMBA_BOUNDSCHECK``): kernels are
compiled anew when ``engine/kernel.py`` changes, so a change here alone needs that file
touched or the cache cleared (the test compiles into a cache folder of its own).

The fix-up is numba's ``numba.np.arrayobj.fix_integer_index`` (numba is pinned in
requirements.txt); if a numba release renames it, :func:`install` logs that and leaves numba as
it is: the kernels are then compiled with the wrap-around, slower and equally correct.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

#: the modules whose numba functions are compiled without wrap-around (each must never index
#: an array with a negative value)
MODULES = ("engine.kernel",)

_lock = threading.Lock()
_installed = False


def mangled_prefix(module: str) -> str:
    """The start of numba's (Itanium-style) mangled name of any function of ``module``:
    ``_ZN`` then each dotted part as its length and its text."""
    return "_ZN" + "".join(f"{len(p)}{p}" for p in module.split("."))


_PREFIXES = tuple(mangled_prefix(m) for m in MODULES)


def _no_wrap(function_name: str) -> bool:
    """Is the LLVM function being built one of MODULES' (its name the prefix and then the
    function name's length, a digit)?"""
    for p in _PREFIXES:
        if function_name.startswith(p) and function_name[len(p):len(p) + 1].isdigit():
            return True
    return False


def install() -> bool:
    """Make numba compile MODULES' functions without negative-index wrap-around (once per
    process; numba must be importable). True when it is in effect."""
    global _installed
    with _lock:
        if _installed:
            return True
        try:
            import numba
            from numba.core import types
            from numba.np import arrayobj
        except ImportError:     # pragma: no cover - numba is a requirement
            return False
        original = getattr(arrayobj, "fix_integer_index", None)
        if original is None or getattr(original, "__code__", None) is None \
                or original.__code__.co_varnames[:5] != ("context", "builder", "idxty", "idx",
                                                         "size"):
            log.warning("numba %s has no fix_integer_index(context, builder, idxty, idx, size):"
                        " the engine's kernels keep negative-index wrap-around (slower)",
                        numba.__version__)
            return False

        def fix_integer_index(context: Any, builder: Any, idxty: Any, idx: Any,
                              size: Any) -> Any:
            if idxty.signed and _no_wrap(builder.function.name):
                return context.cast(builder, idx, idxty, types.intp)
            return original(context, builder, idxty, idx, size)

        arrayobj.fix_integer_index = fix_integer_index
        _installed = True
        log.debug("numba: no negative-index wrap-around in %s", ", ".join(MODULES))
        return True


def installed() -> bool:
    """Whether :func:`install` is in effect in this process."""
    return _installed
