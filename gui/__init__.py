"""The PySide6 + pyqtgraph desktop GUI; a client of engine/ (which never imports Qt)."""

import sys as _sys

if _sys.version_info < (3, 12):
    # PySide6 6.12 on CPython 3.11 drops a reference to None on every QGraphicsScene render
    # and every Python paint() override (measured: -1 per scene.render, -3 per item paint), so
    # a pyqtgraph window drives None's refcount to zero and CPython aborts with
    # "Fatal Python error: none_dealloc" (usually at exit). CPython 3.12 makes None immortal;
    # on 3.11 we emulate that by giving None a huge reference count. Remove this when PySide6
    # is fixed or the project moves to Python >= 3.12. True and False get the same treatment:
    # a long GUI session (benchmarks/bench_gui.py) ended in "Fatal Python error: bool_dealloc"
    # at exit, the same leak on the bool singletons.
    import ctypes as _ctypes

    for _obj in (None, True, False):
        _ctypes.c_ssize_t.from_address(id(_obj)).value += 1 << 60
    del _obj
    del _ctypes
del _sys
