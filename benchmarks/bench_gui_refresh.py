"""CPU cost of one live redraw of the simulation view (the 10 Hz tick) as a run grows: the UI
thread's own work during a run, measured without a simulation (synthetic epochs), in CPU
seconds of this process, so it means something on a loaded machine too.

    .venv/bin/python benchmarks/bench_gui_refresh.py [--epochs 6000] [--per-tick 60]
        [--banks 32] [--size 1920x1080]

Each tick appends ``--per-tick`` epochs, runs the view's timer handler and repaints the window
(``QWidget.repaint``, synchronous); prints the CPU ms of the tick at several run lengths and
the p50 / p99 / max over all ticks.  The 1M-request benchmark (bench_gui.py) measures the
stalls a user sees, which include the machine's load.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gui  # noqa: E402,F401  (its PySide6 workaround first)
import numpy as np  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


def synthetic_epochs(n: int, banks: int, epoch: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        out.append({"start": i * epoch, "end": (i + 1) * epoch,
                    "row_hit_rate": float(rng.random()),
                    "bandwidth_GBps": float(10 + 10 * rng.random()),
                    "avg_read_latency": float(100 + 50 * rng.random()),
                    "bank_utilisation": rng.random(banks)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=6000)
    ap.add_argument("--per-tick", type=int, default=60)
    ap.add_argument("--banks", type=int, default=32)
    ap.add_argument("--size", default="1920x1080")
    args = ap.parse_args(argv)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    from gui.views.simulation import SimulationView
    w, h = (int(v) for v in args.size.split("x"))
    view = SimulationView()
    view.resize(w - 300, h - 100)
    view.show()
    app.processEvents()
    view._tck = 0.625
    view.set_bank_layout(1, 2, 4, 16)
    epochs = synthetic_epochs(args.epochs, args.banks, 10_000)
    costs, marks = [], {}
    for start in range(0, args.epochs, args.per_tick):
        view._pending.extend(epochs[start:start + args.per_tick])
        t0 = time.process_time()
        view._refresh()
        view.repaint()
        costs.append(1e3 * (time.process_time() - t0))
        n = start + args.per_tick
        for m in (600, 1500, 3000, 6000, 12000, 24000):
            if n - args.per_tick < m <= n:
                marks[m] = costs[-1]
    srt = sorted(costs)
    print(f"{len(costs)} ticks of {args.per_tick} epochs ({args.banks} banks), window "
          f"{args.size}: CPU ms per tick p50 {statistics.median(costs):.1f}, "
          f"p99 {srt[int(0.99 * (len(srt) - 1))]:.1f}, max {srt[-1]:.1f}")
    print("at run length (epochs): " + ", ".join(f"{m}: {c:.1f} ms" for m, c in marks.items()))
    print(f"load: {os.getloadavg()[0]:.2f}")
    view.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
