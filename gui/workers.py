"""The one bridge between the Qt GUI and the engine: simulations run in a worker thread.

    run = start_simulation(cfg, ["demo.trace"], SimOptions(epoch=2000))
    run.epoch.connect(view.on_epoch)          # dict per epoch (see :func:`epoch_dict`)
    run.progress.connect(bar.set_fraction)    # 0..1, or -1 when the total is unknown
    run.finished.connect(view.on_finished)    # Stats, after the thread has been joined
    run.failed.connect(view.on_failed)        # (message, traceback), after the join
    run.cancelled.connect(view.on_cancelled)  # after the join
    run.cancel()                              # thread-safe; checked between kernel calls
    thread, worker = run                      # the QThread and the SimulationWorker

The worker never touches widgets: it only emits signals carrying plain dicts, numbers and the
final ``Stats``. Its outcome is kept on the worker and re-emitted by :class:`SimulationRun`
from ``QThread.finished`` once ``QThread.wait()`` has returned, so a "done" signal never
arrives while the thread is still running (see shared/STYLE.md, napari notes).
"""
from __future__ import annotations

import threading
import traceback
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot

__all__ = ["SimulationWorker", "SimulationRun", "start_simulation", "epoch_dict",
           "active_runs", "trace_horizon"]

# runs whose thread has not yet been joined (kept alive here so Python does not collect them)
_ACTIVE: set["SimulationRun"] = set()


def active_runs() -> list["SimulationRun"]:
    """The simulation runs whose worker thread has not finished and been joined yet."""
    return list(_ACTIVE)


def epoch_dict(cfg: Any, rec: Any) -> dict[str, Any]:
    """A plain dict of one epoch's headline numbers from an ``engine.simulator.EpochRecord``.

    Keys: ``start``, ``end`` (cycles), ``bandwidth_GBps`` (data moved / epoch time),
    ``row_hit_rate`` (row hits / column commands, NaN when none), ``avg_read_latency``
    (cycles, NaN when no read completed), ``reads``, ``writes`` and ``bank_utilisation``
    (fraction of the epoch each bank had a row open, flattened over channels and banks).
    """
    length = max(1, int(rec.end) - int(rec.start))
    nbytes = (int(rec.reads_done) + int(rec.writes_done)) * float(cfg.request_size_bytes)
    seconds_ns = length * float(cfg.tCK)
    cols = int(rec.column_cmds)
    reads = int(rec.reads_done)
    util = np.asarray(rec.bank_open_cycles, dtype=np.float64).reshape(-1) / length
    return {
        "start": int(rec.start),
        "end": int(rec.end),
        "bandwidth_GBps": nbytes / seconds_ns if seconds_ns > 0 else 0.0,   # bytes/ns == GB/s
        "row_hit_rate": int(rec.row_hits) / cols if cols else float("nan"),
        "avg_read_latency": int(rec.read_latency_sum) / reads if reads else float("nan"),
        "reads": reads,
        "writes": int(rec.writes_done),
        "bank_utilisation": np.clip(util, 0.0, 1.0),
    }


def trace_horizon(paths: Sequence[str | Path]) -> int | None:
    """The last arrival cycle over text traces (read from each file's tail), else None.

    Used for the progress fraction (simulated cycle / last arrival cycle); binary and HDF5
    traces, or a tail that does not parse, give None (the progress is then unknown).
    """
    last = 0
    for p in paths:
        path = Path(p)
        if path.suffix.lower() in (".dmt", ".h5", ".hdf5"):
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

    epoch = Signal(dict)
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
        # a plain dict shared with the SimulationRun: still readable after the worker's C++
        # object was deleted (deleteLater on QThread.finished)
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
        from engine.errors import SimulationCancelled
        from engine.simulator import SimOptions, simulate_trace

        if self._cancel.is_set():
            return ("cancelled", None)
        options = self.options if self.options is not None else SimOptions()
        horizon = trace_horizon(self.traces)
        if options.cycles:
            horizon = min(horizon, options.cycles) if horizon else options.cycles
        cfg = self.cfg

        def on_epoch(sim: Any, rec: Any) -> None:
            if rec is not None:
                self.epoch.emit(epoch_dict(cfg, rec))
                self.progress.emit(min(1.0, rec.end / horizon) if horizon else -1.0)

        try:
            stats = simulate_trace(cfg, self.traces, options, progress=on_epoch,
                                   cancel=self._cancel.is_set)
        except SimulationCancelled:
            return ("cancelled", None)
        self.progress.emit(1.0)
        return ("finished", stats)


class SimulationRun(QObject):
    """Owns one worker and its QThread; re-emits the outcome after the thread is joined."""

    epoch = Signal(dict)
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
        self.worker.epoch.connect(self.epoch)
        self.worker.progress.connect(self.progress)
        self.thread.started.connect(self.worker.run)
        self.worker.ended.connect(self.thread.quit)
        self.thread.finished.connect(self._on_thread_finished)
        self.thread.finished.connect(self.worker.deleteLater)

    def __iter__(self):
        return iter((self.thread, self.worker))

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
