"""The life cycle every background job of the window shares: a worker QObject moved to its own
QThread, cancel, and outcome signals emitted only after the thread has been joined.

A worker has ``progress`` and ``ended`` signals, ``run()`` and ``cancel()``, and leaves its
outcome in ``worker.box["outcome"]``: ``("finished", value)``, ``("failed", (message,
details))`` or ``("cancelled", value)``.  Subclasses declare the signals with their own
payload types (``progress``, ``finished``, ``cancelled``); ``failed(str, str)`` and ``done()``
are common.
"""
from __future__ import annotations

import time
from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

_ACTIVE: set[QObject] = set()   # runs whose thread has not been joined yet (kept alive here)


def active_runs(kind: type | None = None) -> list[QObject]:
    """The runs (of one subclass, if given) whose thread has not been joined yet."""
    return [r for r in _ACTIVE if kind is None or isinstance(r, kind)]


class ThreadedRun(QObject):
    """Owns one worker and its QThread (see the module docstring)."""

    failed = Signal(str, str)
    done = Signal()
    #: whether ``cancelled`` carries the partial result (a Signal with one argument)
    CANCEL_CARRIES_VALUE = False

    def __init__(self, worker: QObject, thread_name: str, parent: QObject | None = None
                 ) -> None:
        super().__init__(parent)
        self.thread = QThread()
        self.thread.setObjectName(thread_name)
        self.worker = worker
        self.worker.moveToThread(self.thread)
        self._box = self.worker.box
        self.running = False
        self.cancel_requested_at: float | None = None
        self.worker.progress.connect(self.progress)
        self.thread.started.connect(self.worker.run)
        # direct: QThread.quit is thread-safe, and a queued quit would wait for the GUI event
        # loop, which is blocked in thread.wait() while the window closes (a 30 s freeze)
        self.worker.ended.connect(self.thread.quit, Qt.ConnectionType.DirectConnection)
        self.thread.finished.connect(self._on_thread_finished)
        # the worker is NOT deleteLater()'d on thread.finished: that deletes it in the worker
        # thread, whose ~QObject waits for the GIL while holding a Qt connection mutex that the
        # GUI thread (holding the GIL) may be waiting for in a disconnect: a deadlock seen in
        # the Studies tab. The worker (no Qt parent, owned by Python) goes with this run, in
        # the GUI thread.

    def start(self) -> None:
        _ACTIVE.add(self)
        self.running = True
        self.thread.start()

    def cancel(self) -> None:
        if self.cancel_requested_at is None:
            self.cancel_requested_at = time.monotonic()
        self.worker.cancel()

    def wait(self, timeout_ms: int = 30000) -> bool:
        return bool(self.thread.wait(timeout_ms))

    @Slot()
    def _on_thread_finished(self) -> None:
        self.thread.wait()
        kind, value = self._box.get("outcome", ("failed", ("worker ended without a result",
                                                           "")))
        self.running = False
        _ACTIVE.discard(self)
        self.thread.deleteLater()
        if kind == "finished":
            self.finished.emit(value)
        elif kind == "failed":
            self.failed.emit(*value)
        elif self.CANCEL_CARRIES_VALUE:
            self.cancelled.emit(value)
        else:
            self.cancelled.emit()
        self.done.emit()


__all__ = ["ThreadedRun", "active_runs"]
