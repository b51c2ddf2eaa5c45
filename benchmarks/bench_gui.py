"""GUI responsiveness while a 1M-request simulation runs in the worker thread.

    .venv/bin/python benchmarks/bench_gui.py [--trace T] [--config DDR4-3200] [--epoch N]

Measures, with the real SimulationView (offscreen Qt platform):

* **max UI stall**: the longest gap between ticks of a 10 ms QTimer in the GUI thread while
  the run is in progress, minus the 10 ms interval (target < 100 ms);
* **cancel latency**: time from clicking Cancel (a few seconds into a run) to the view's
  ``run_cancelled`` signal, i.e. until the worker thread has been joined (target < 0.5 s).

The trace is generated with ``shared/tools/gen_traces.py`` into ``benchmarks/.traces/`` when
missing (as benchmarks/accuracy_dramsim3.py does).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import gui  # noqa: E402,F401  (its PySide6 workaround first)
from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

TICK_MS = 10


class StallSampler:
    """A watchdog thread that, whenever the GUI thread's timer is late by more than
    ``late_ms``, samples the GUI thread's Python stack every few ms: what the UI thread was
    doing during each stall (``--find-stalls``)."""

    def __init__(self, recorder: "TickRecorder", late_ms: float = 40.0) -> None:
        import threading
        self.recorder = recorder
        self.late_ms = late_ms
        self.samples: dict[str, int] = {}
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)

    def _loop(self) -> None:
        import traceback
        while not self._stop.wait(0.005):
            age = (time.perf_counter() - self.recorder.last_tick) * 1e3
            if age < self.late_ms:
                continue
            frame = sys._current_frames().get(self._main)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)[-6:]
            key = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                              for f in reversed(stack))
            self.samples[key] = self.samples.get(key, 0) + 1

    def report(self, top: int = 8) -> str:
        total = sum(self.samples.values())
        lines = [f"stall samples (GUI thread late > {self.late_ms:.0f} ms, every 5 ms): {total}"]
        for key, n in sorted(self.samples.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"  {n:5d}  {key}")
        return "\n".join(lines)


class TickRecorder:
    """Records the gaps between ticks of a QTimer running in the GUI thread."""

    def __init__(self, interval_ms: int = TICK_MS) -> None:
        self.gaps_ms: list[float] = []
        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.gaps_ms.clear()
        self._clock.start()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    last_tick = 0.0

    def _tick(self) -> None:
        self.gaps_ms.append(self._clock.nsecsElapsed() / 1e6)
        self._clock.restart()
        self.last_tick = time.perf_counter()


def _wait(app: QApplication, cond, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.001)
    return True


def main() -> int:
    from bench_engine import ensure_traces

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=None,
                    help="request trace (default: benchmarks/.traces/traces1m/random.trace)")
    ap.add_argument("--config", default="DDR4-3200")
    ap.add_argument("--epoch", type=int, default=None,
                    help="epoch length in cycles (default: the view's default)")
    ap.add_argument("--cancel-after", type=float, default=3.0, metavar="S")
    ap.add_argument("--find-stalls", action="store_true",
                    help="sample the GUI thread's stack whenever its timer is late (what the "
                         "UI thread did during each stall)")
    ap.add_argument("--no-cancel", action="store_true", help="skip the cancel-latency runs")
    args = ap.parse_args()
    if args.trace is None:
        ensure_traces(ROOT / "benchmarks" / ".traces")
        args.trace = ROOT / "benchmarks" / ".traces" / "traces1m" / "random.trace"

    app = QApplication([sys.argv[0]])
    from gui.views.simulation import SimulationView

    view = SimulationView()
    view.resize(1200, 800)
    view.show()
    view._show_error = lambda msg, det: print("error:", msg, det, file=sys.stderr)
    view.config_combo.setCurrentIndex(view.config_combo.findText(args.config))
    view.trace_edit.setText(str(args.trace))
    if args.epoch:
        view.epoch_spin.setValue(args.epoch)
    epoch = view.epoch_spin.value()
    outcome: list[str] = []
    view.run_finished.connect(lambda s: outcome.append("finished"))
    view.run_cancelled.connect(lambda: outcome.append("cancelled"))
    view.run_failed.connect(lambda m, d: outcome.append("failed"))

    # warm-up: numba loads (or compiles) the kernel on a short trace
    view.trace_edit.setText(str(ROOT / "resources" / "traces" / "demo.trace"))
    view.start()
    _wait(app, lambda: outcome, 600)
    view.trace_edit.setText(str(args.trace))

    # 1. a full run: max gap between 10 ms ticks
    outcome.clear()
    rec = TickRecorder()
    rec.start()
    rec.last_tick = time.perf_counter()
    sampler = StallSampler(rec) if args.find_stalls else None
    if sampler is not None:
        sampler.start()
    t0 = time.perf_counter()
    view.start()
    ok = _wait(app, lambda: outcome, 1800)
    wall = time.perf_counter() - t0
    rec.stop()
    if sampler is not None:
        sampler.stop()
    gaps = rec.gaps_ms
    at = sum(gaps[:gaps.index(max(gaps)) + 1]) / 1000.0 if gaps else 0.0
    if not ok or outcome[0] != "finished":
        print(f"run did not finish: {outcome}", file=sys.stderr)
        return 1
    n_epochs = view.record.n_epochs
    max_gap = max(gaps)
    stall = max_gap - TICK_MS
    p99 = sorted(gaps)[int(0.99 * (len(gaps) - 1))]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"trace: {args.trace} on {args.config}, epoch {epoch} cycles: {n_epochs} epochs, "
          f"run {wall:.2f} s wall (with the GUI drawing)")
    print(f"UI ticks ({TICK_MS} ms timer): {len(gaps)}; gap median "
          f"{statistics.median(gaps):.1f} ms, p99 {p99:.1f} ms, max {max_gap:.1f} ms "
          f"(ending {at:.2f} s into the run)")
    print(f"max UI stall: {stall:.1f} ms (target < 100 ms): "
          f"{'met' if stall < 100 else 'MISSED'}", flush=True)
    print(f"load: {os.getloadavg()[0]:.2f}", flush=True)
    if sampler is not None:
        print(sampler.report(), flush=True)
    if args.no_cancel:
        view.shutdown()
        view.close()
        return 0

    # 2. cancel latency: cancel part-way into a run (at 20 %, 40 %, 60 % of its length)
    lat = []
    for frac in (0.2, 0.4, 0.6):
        outcome.clear()
        view.start()
        t_start = time.monotonic()
        _wait(app, lambda: time.monotonic() - t_start > frac * wall or bool(outcome), 600)
        if outcome:
            print(f"run ended before it could be cancelled: {outcome}", file=sys.stderr)
            return 1
        t1 = time.perf_counter()
        view.cancel()
        _wait(app, lambda: bool(outcome), 60)
        lat.append(time.perf_counter() - t1)
        if outcome == ["finished"]:           # the run ended as the cancel went out
            lat.pop()
            continue
        if outcome != ["cancelled"]:
            print(f"cancel did not cancel: {outcome}", file=sys.stderr)
            return 1
    if not lat:
        print("cancel latency: every run finished before its cancel", file=sys.stderr)
        return 1
    print("cancel latency: " + ", ".join(f"{x * 1000:.0f} ms" for x in lat)
          + f" (max {max(lat) * 1000:.0f} ms; target < 500 ms): "
          + ("met" if max(lat) < 0.5 else "MISSED"))
    view.shutdown()
    view.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
