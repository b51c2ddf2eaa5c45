"""Worker thread of the studies view: runs a task (a study, a report) off the GUI thread.

    run = start_task(lambda progress, cancel: run_study(..., progress=progress, cancel=cancel))
    run.progress.connect(view.on_point)      # (done, total, record), one per finished point
    run.finished.connect(view.on_done)       # the task's return value, after the join
    run.failed.connect(view.on_failed)       # (message, traceback), after the join
    run.cancelled.connect(view.on_cancelled) # after the join
    run.cancel()                             # thread-safe; the task polls ``cancel()``

A study's points run in local worker processes (``engine.studies.runner``: spawn pool) or on a
Dask cluster, so this thread mostly waits; with ``workers=0`` the simulations run in this
thread and the numba kernel holds the GIL for each call (the GUI then stutters). One progress
signal is sent per finished point: a point is a whole simulation, so that is already a low rate.

As in :mod:`gui.optimizer_worker`, the outcome is kept on the worker and re-emitted from
``QThread.finished`` after ``QThread.wait()``: no outcome signal arrives while the thread runs.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

ProgressFn = Callable[[int, int, dict[str, Any]], None]
CancelFn = Callable[[], bool]
TaskFn = Callable[[ProgressFn, CancelFn], Any]

_ACTIVE: set[QObject] = set()   # runs whose thread has not been joined yet (kept alive here)


def active_study_runs() -> list[QObject]:
    """The study tasks whose thread has not finished and been joined."""
    return list(_ACTIVE)


class TaskWorker(QObject):
    """Calls ``fn(progress, cancel)`` in the thread it was moved to."""

    progress = Signal(int, int, dict)
    ended = Signal()

    def __init__(self, fn: TaskFn, extra_cancel: CancelFn | None = None) -> None:
        super().__init__()
        self.fn = fn
        self.extra_cancel = extra_cancel
        self._cancel = threading.Event()
        self.box: dict[str, Any] = {}   # ("finished", value) | ("failed", (msg, tb)) | ...

    def cancel(self) -> None:
        self._cancel.set()

    def is_cancelled(self) -> bool:
        if self._cancel.is_set():
            return True
        if self.extra_cancel is not None and self.extra_cancel():
            self._cancel.set()
            return True
        return False

    def _progress(self, done: int, total: int, record: dict[str, Any]) -> None:
        self.progress.emit(int(done), int(total), dict(record))

    @Slot()
    def run(self) -> None:
        from engine.errors import SimulationCancelled
        try:
            outcome: tuple[str, Any] = ("finished", self.fn(self._progress, self.is_cancelled))
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI, never lost
            if isinstance(exc, SimulationCancelled) or self._cancel.is_set():
                outcome = ("cancelled", None)
            else:
                outcome = ("failed", (str(exc) or type(exc).__name__, traceback.format_exc()))
        self.box["outcome"] = outcome
        self.ended.emit()


class TaskRun(QObject):
    """Owns one task worker and its QThread; outcome signals come after the join."""

    progress = Signal(int, int, dict)
    finished = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    done = Signal()

    def __init__(self, fn: TaskFn, parent: QObject | None = None, *,
                 extra_cancel: CancelFn | None = None, name: str = "StudyThread") -> None:
        super().__init__(parent)
        self.thread = QThread()
        self.thread.setObjectName(name)
        self.worker = TaskWorker(fn, extra_cancel)
        self.worker.moveToThread(self.thread)
        self._box = self.worker.box
        self.running = False
        self.cancel_requested_at: float | None = None
        self.worker.progress.connect(self.progress)
        self.thread.started.connect(self.worker.run)
        self.worker.ended.connect(self.thread.quit)
        self.thread.finished.connect(self._on_thread_finished)
        self.thread.finished.connect(self.worker.deleteLater)

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
        else:
            self.cancelled.emit()
        self.done.emit()


def start_task(fn: TaskFn, parent: QObject | None = None, **kw: Any) -> TaskRun:
    """Start ``fn(progress, cancel)`` in a new QThread; returns the started run."""
    run = TaskRun(fn, parent, **kw)
    run.start()
    return run
