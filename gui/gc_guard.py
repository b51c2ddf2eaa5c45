"""Python's cyclic garbage collector runs only in the GUI thread while the window is up.

Why: the collector runs in whichever thread happens to allocate when a generation's count
passes its threshold.  If that is a background thread (the timeline's trace reader, a worker
QThread running Python) and the garbage holds Qt wrappers, their C++ objects are destroyed in
that thread: ``~QObject`` takes a Qt mutex and then waits for the GIL (shiboken looks for a
Python override), while the GUI thread, holding the GIL, waits for the same mutex in its own
deletion.  Seen as a hang of the whole test run (CI, 2026-12-02): the reader thread in
``gc_collect_main`` under ``timeline_requests.match``, the GUI thread in ``QObject::~QObject``
under ``TimelineView._poll_parsed``.

So, as pyqtgraph's ``GarbageCollector`` does, automatic collection is switched off and a GUI
thread timer collects instead, generation by generation when the counts pass the thresholds
the interpreter would have used.  :func:`uninstall` restores automatic collection (tests).
"""
from __future__ import annotations

import gc
import logging

from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer

__all__ = ["install", "uninstall", "installed", "collect_now"]

log = logging.getLogger(__name__)
INTERVAL_MS = 250


class _Collector(QObject):
    def __init__(self, parent: QObject, interval_ms: int) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self.was_enabled = gc.isenabled()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)

    def check(self) -> None:
        counts = gc.get_count()
        # as the interpreter does: the oldest generation whose count passed its threshold
        # (count 1 and 2 count the collections of the generation below)
        for gen in (2, 1, 0):
            if counts[gen] > self.thresholds[gen]:
                gc.collect(gen)
                return


_collector: _Collector | None = None


def install(interval_ms: int = INTERVAL_MS) -> bool:
    """Switch automatic collection off and collect from a GUI-thread timer (idempotent).
    Needs the QApplication; call it from the GUI thread.  Returns whether it is installed."""
    global _collector
    if _collector is not None:
        return True
    app = QCoreApplication.instance()
    if app is None or QThread.currentThread() is not app.thread():
        log.warning("gc_guard.install: no QApplication, or not its thread; not installed")
        return False
    _collector = _Collector(app, interval_ms)
    gc.disable()
    _collector.timer.start()
    return True


def collect_now() -> int:
    """A full collection in the calling (GUI) thread."""
    return gc.collect()


def uninstall() -> None:
    """Stop the timer and give collection back to the interpreter (as it was before)."""
    global _collector
    if _collector is None:
        return
    c, _collector = _collector, None
    c.timer.stop()
    gc.collect()
    if c.was_enabled:
        gc.enable()
    c.setParent(None)
    c.deleteLater()


def installed() -> bool:
    return _collector is not None
