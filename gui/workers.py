"""The one bridge between the Qt GUI and the engine: simulations run in a worker thread.

    run = start_simulation(cfg, ["demo.trace"], SimOptions(epoch=2000))   # or {"epoch": 2000}
    run.epoch.connect(view.on_epoch)          # dict per epoch (see :func:`epoch_dict`)
    run.epochs.connect(view.on_epochs)        # or the same epochs as lists, in batches
    run.progress.connect(bar.set_fraction)    # 0..1, or -1 when the total is unknown
    run.finished.connect(view.on_finished)    # Stats, after the thread has been joined
    run.failed.connect(view.on_failed)        # (message, traceback), after the join
    run.cancelled.connect(view.on_cancelled)  # after the join
    run.cancel()                              # thread-safe; checked between kernel calls
    thread, worker = run                      # the QThread and the SimulationWorker

The engine itself runs in a child process (:mod:`gui.sim_process` says why: the numba kernel
holds the GIL); the worker thread only starts it, relays its messages as signals and passes a
cancel request on.  The child is started with the "spawn" method (never fork a process running
Qt threads), which imports the parent's ``__main__`` module again: a script that starts
simulations from the GUI must keep its top-level code under ``if __name__ == "__main__":``.
The worker never touches widgets: it only emits signals carrying plain dicts, numbers and the
final ``Stats``. Its outcome is kept on the worker and re-emitted by :class:`SimulationRun`
from ``QThread.finished`` once ``QThread.wait()`` has returned, so a "done" signal never
arrives while the thread is still running (see shared/STYLE.md, napari notes).
"""
from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from gui.sim_process import epoch_dict, simulate_in_child

__all__ = ["SimulationWorker", "SimulationRun", "start_simulation", "epoch_dict",
           "active_runs", "trace_horizon"]

POLL_S = 0.02           # how often the worker thread looks at the cancel flag and the pipe
JOIN_S = 5.0            # how long to wait for a terminated child process
EXIT_GRACE_S = 0.05     # an ended child may exit on its own this long, then it is terminated
CANCEL_GRACE_S = 0.2    # a child that has not confirmed a cancel by then is terminated

# runs whose thread has not yet been joined (kept alive here so Python does not collect them)
_ACTIVE: set["SimulationRun"] = set()


def active_runs() -> list["SimulationRun"]:
    """The simulation runs whose worker thread has not finished and been joined yet."""
    return list(_ACTIVE)


def trace_horizon(paths: Sequence[str | Path]) -> int | None:
    """The last arrival cycle over text traces (read from each file's tail), else None.

    Used for the progress fraction (simulated cycle / last arrival cycle); binary and HDF5
    traces, or a tail that does not parse, give None (the progress is then unknown).
    """
    from engine.trace import suffix_format
    last = 0
    for p in paths:
        path = Path(p)
        if suffix_format(path) in ("binary", "hdf5"):
            return None
        try:
            with open(path, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - 4096))
                tail = fh.read().decode("ascii", "replace").splitlines()
        except OSError:
            return None
        cycle = None
        for line in reversed(tail):
            parts = line.split("#", 1)[0].split()
            if len(parts) >= 3:
                try:
                    cycle = int(parts[2], 0)
                except ValueError:
                    return None
                break
        if cycle is None:
            return None
        last = max(last, cycle)
    return last or None


class SimulationWorker(QObject):
    """Runs ``engine.simulator.simulate_trace`` in the thread it was moved to.

    Signals are emitted from the worker thread; the GUI should connect to the
    :class:`SimulationRun` signals instead of ``finished`` / ``failed`` / ``cancelled`` here,
    which may arrive before the thread has ended.
    """

    epochs = Signal(list)     # epoch dicts, in the batches the simulation process sent
    notes = Signal(list)      # what the traces say against the memory (before the epochs)
    progress = Signal(float)
    finished = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    ended = Signal()          # run() returned (any outcome); quits the thread

    def __init__(self, cfg: Any, traces: Sequence[str | Path], options: Any = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.traces = [Path(t) for t in traces]
        self.options = options
        self._cancel = threading.Event()
        # ("finished", stats) | ("failed", (message, traceback)) | ("cancelled", None)
        self.outcome: tuple[str, Any] | None = None
        # a plain dict shared with the SimulationRun, which reads the outcome after the join
        self.result_box: dict[str, Any] = {}

    def cancel(self) -> None:
        """Ask the run to stop at the next check (thread-safe)."""
        self._cancel.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    @Slot()
    def run(self) -> None:
        try:
            self.outcome = self._simulate()
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI, never lost
            self.outcome = ("failed", (str(exc) or type(exc).__name__, traceback.format_exc()))
        self.result_box["outcome"] = self.outcome
        _emit_outcome(self, self.outcome)
        self.ended.emit()

    def _simulate(self) -> tuple[str, Any]:
        import multiprocessing as mp

        if self._cancel.is_set():
            return ("cancelled", None)
        options = self.options
        cycles = (options.get("cycles") if isinstance(options, dict)
                  else getattr(options, "cycles", None))
        horizon = trace_horizon(self.traces)
        if cycles:
            horizon = min(horizon, cycles) if horizon else cycles
        ctx = mp.get_context("spawn")         # never fork a process that runs Qt threads
        receive, send = ctx.Pipe(duplex=False)
        cancel = ctx.Event()
        proc = ctx.Process(target=simulate_in_child, name="diffmem-simulation", daemon=True,
                           args=(self.cfg, [str(t) for t in self.traces], options, send,
                                 cancel))
        proc.start()
        send.close()                          # the child holds the only sending end now
        cancel_at: float | None = None
        try:
            while True:
                if self._cancel.is_set():
                    if cancel_at is None:
                        cancel.set()
                        cancel_at = time.monotonic()
                    elif time.monotonic() - cancel_at > CANCEL_GRACE_S:
                        # still starting up (imports), or in one long kernel call: the child
                        # has no side effects worth waiting for
                        return ("cancelled", None)
                if not receive.poll(POLL_S):
                    continue
                try:
                    msg = receive.recv()
                except EOFError:
                    proc.join(JOIN_S)
                    return ("failed", ("the simulation process ended without a result "
                                       f"(exit code {proc.exitcode})", ""))
                kind = msg[0]
                if kind == "notes":
                    self.notes.emit(msg[1])
                elif kind == "epochs":
                    self.epochs.emit(msg[1])
                    end = msg[1][-1]["end"]
                    self.progress.emit(min(1.0, end / horizon) if horizon else -1.0)
                elif kind == "finished":
                    self.progress.emit(1.0)
                    return ("finished", msg[1])
                elif kind == "failed":
                    return ("failed", (msg[1], msg[2]))
                else:
                    return ("cancelled", None)
        finally:
            receive.close()
            # the outcome is known: do not wait for the child's interpreter to shut down
            proc.join(EXIT_GRACE_S)
            if proc.is_alive():
                proc.terminate()
                proc.join(JOIN_S)


class SimulationRun(QObject):
    """Owns one worker and its QThread; re-emits the outcome after the thread is joined."""

    epoch = Signal(dict)
    epochs = Signal(list)
    notes = Signal(list)
    progress = Signal(float)
    finished = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    done = Signal()            # after any of the three above

    def __init__(self, cfg: Any, traces: Sequence[str | Path], options: Any = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thread = QThread()
        self.thread.setObjectName("SimulationThread")
        self.worker = SimulationWorker(cfg, traces, options)
        self.worker.moveToThread(self.thread)
        self._box = self.worker.result_box
        self.running = False
        # queued to this (GUI-thread) object: plotting happens in the GUI thread
        self.worker.epochs.connect(self._on_epochs)
        self.worker.progress.connect(self.progress)
        self.worker.notes.connect(self.notes)
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

    def __iter__(self):
        return iter((self.thread, self.worker))

    @Slot(list)
    def _on_epochs(self, records: list) -> None:
        """A batch from the worker (queued: runs in the GUI thread): re-emitted as a batch and
        one by one."""
        self.epochs.emit(records)
        for rec in records:
            self.epoch.emit(rec)

    def start(self) -> None:
        _ACTIVE.add(self)
        self.running = True
        self.thread.start()

    def cancel(self) -> None:
        self.worker.cancel()

    @Slot()
    def _on_thread_finished(self) -> None:
        self.thread.wait()                    # joined: nothing of the run executes any more
        outcome = self._box.get("outcome")
        self.running = False
        _ACTIVE.discard(self)
        self.thread.deleteLater()
        _emit_outcome(self, outcome if outcome is not None
                      else ("failed", ("worker ended without a result", "")))
        self.done.emit()


def _emit_outcome(obj: Any, outcome: tuple[str, Any]) -> None:
    """Emit obj's finished(stats), failed(message, details) or cancelled() signal."""
    kind, value = outcome
    if kind == "finished":
        obj.finished.emit(value)
    elif kind == "failed":
        obj.failed.emit(*value)
    else:
        obj.cancelled.emit()


def start_simulation(cfg: Any, traces: Sequence[str | Path], options: Any = None,
                     parent: QObject | None = None) -> SimulationRun:
    """Start simulating ``traces`` on ``cfg`` in a new QThread; returns the started run.

    ``thread, worker = start_simulation(...)`` also works (the run unpacks to both).
    Connect to the run's signals for the outcome; they are emitted after the join.
    """
    run = SimulationRun(cfg, traces, options, parent)
    run.start()
    return run
