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
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal, Slot

from gui.threaded_run import ThreadedRun, active_runs

ProgressFn = Callable[[int, int, dict[str, Any]], None]
CancelFn = Callable[[], bool]
TaskFn = Callable[[ProgressFn, CancelFn], Any]



def active_study_runs() -> list[QObject]:
    """The study tasks whose thread has not finished and been joined."""
    return active_runs(TaskRun)


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


class TaskRun(ThreadedRun):
    """Owns one task worker and its QThread; outcome signals come after the join."""

    progress = Signal(int, int, dict)
    finished = Signal(object)
    cancelled = Signal()

    def __init__(self, fn: TaskFn, parent: QObject | None = None, *,
                 extra_cancel: CancelFn | None = None, name: str = "StudyThread") -> None:
        super().__init__(TaskWorker(fn, extra_cancel), name, parent)


def start_task(fn: TaskFn, parent: QObject | None = None, **kw: Any) -> TaskRun:
    """Start ``fn(progress, cancel)`` in a new QThread; returns the started run."""
    run = TaskRun(fn, parent, **kw)
    run.start()
    return run
