"""Optimiser view: GUI responsiveness during a search, and cancel latency per method.

    .venv/bin/python benchmarks/bench_gui_optimizer.py [--network resnet18] [--hardware large]
                                                       [--cancel-after 3] [--methods ...]

With the real OptimizerView (offscreen Qt platform), for each method: start a run with a
budget it cannot finish, let it run ``--cancel-after`` seconds, click Cancel and measure

* **cancel latency**: Cancel clicked -> the view's ``run_cancelled`` (worker thread joined);
  the methods check the cancel flag once per step, so this is about one step of the method;
* **max UI stall**: the longest gap between ticks of a 10 ms QTimer in the GUI thread while
  the search runs (minus the interval), i.e. how long the search kept the GUI from drawing;
  the "(idle)" row is the same measurement with nothing running (the machine's own noise).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gui import TICK_MS, TickRecorder, _wait  # noqa: E402  (imports gui first)
from PySide6.QtWidgets import QApplication  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", default="resnet18")
    ap.add_argument("--hardware", default="large")
    ap.add_argument("--methods", nargs="+", default=["fadiff", "ga", "bo", "random", "dosa"])
    ap.add_argument("--cancel-after", type=float, default=3.0, metavar="S")
    args = ap.parse_args()

    app = QApplication.instance() or QApplication([])
    from gui.views.optimizer import OptimizerView

    view = OptimizerView()
    view.resize(1400, 900)
    view.show()
    view._show_error = lambda msg, det: print("error:", msg, file=sys.stderr)
    view.network_combo.setCurrentText(args.network)
    view.hardware_combo.setCurrentText(args.hardware)
    view.budget_spin.setValue(10_000_000)
    rec = TickRecorder()
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"{'method':<8} {'points':>6} {'max UI stall ms':>15} {'cancel latency s':>17}")
    rec.start()
    _wait(app, lambda: False, args.cancel_after)
    rec.stop()
    print(f"{'(idle)':<8} {0:>6} {max(rec.gaps_ms, default=0.0) - TICK_MS:>15.0f} {'':>17}")
    for m in args.methods:
        view.method_combo.setCurrentText(m)
        cancelled = []
        conn = view.run_cancelled.connect(lambda: cancelled.append(True))
        view.start()
        _wait(app, lambda: len(view.points) > 0, 300)      # torch import and space build
        rec.start()
        _wait(app, lambda: False, args.cancel_after)
        rec.stop()
        stall = max(rec.gaps_ms, default=0.0) - TICK_MS
        view.cancel()
        _wait(app, lambda: bool(cancelled) or not view.is_running(), 300)
        view.run_cancelled.disconnect(conn)
        print(f"{m:<8} {len(view.points):>6} {stall:>15.0f} "
              f"{view.last_cancel_latency_s or float('nan'):>17.3f}")
    view.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
