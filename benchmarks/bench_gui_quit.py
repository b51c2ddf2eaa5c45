"""Quit / cancel latency and the first simulation in a fresh home folder (issue 16).

    .venv/bin/python benchmarks/bench_gui_quit.py [--repeats 3]

With the real MainWindow (offscreen Qt platform), each figure measured ``--repeats`` times:

* **first run**: a new process with an empty HOME / XDG folders (no settings, no per-user
  cache) opens the window, picks DDR4-3200 and the demo trace and clicks Start; wall time
  from the click to ``run_finished`` (kernels as ``install.sh`` left them: warmed);
* **quit latency**: File > Quit while a 1M-request simulation runs (its epochs arriving),
  until the window has closed; then whether any simulation process is left (target <= 1 s,
  none left);
* **cancel latency (simulation)**: Cancel a few seconds into the same run, until
  ``run_cancelled`` (worker thread joined, child process gone);
* **cancel latency (optimiser)**: Cancel a FADiff search of resnet18 after its first progress
  reports, until ``run_cancelled`` with the best schedule so far in the table.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "resources" / "traces" / "demo.trace"
BIG = ROOT / "benchmarks" / ".traces" / "traces1m" / "random.trace"


def _wait(app, cond, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.002)
    return True


def first_run_child() -> None:
    """In a fresh home: window, Start on the demo trace, print the seconds as JSON."""
    import gui  # noqa: F401
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from gui.app import MainWindow
    w = MainWindow()
    w.show()
    v = w.simulation_view
    v.select_config("DDR4-3200")
    v.trace_edit.setText(str(DEMO))
    done = []
    v.run_finished.connect(lambda s: done.append(time.monotonic()))
    cpu0, t0 = time.process_time(), time.monotonic()
    v.start_button.click()
    _wait(app, lambda: bool(done), 600)
    print(json.dumps({"first_run_s": done[0] - t0, "gui_cpu_s": time.process_time() - cpu0}),
          flush=True)
    w.close()
    os._exit(0)           # skip interpreter teardown (PySide6 + pyqtgraph can crash there)


def first_run() -> dict:
    with tempfile.TemporaryDirectory(prefix="diffmem-freshhome-") as home:
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=f"{home}/.config",
                   XDG_CACHE_HOME=f"{home}/.cache", XDG_DATA_HOME=f"{home}/.local/share")
        out = subprocess.run([sys.executable, __file__, "--first-run-child"], env=env,
                             capture_output=True, text=True, timeout=900)
        lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
        if not lines:
            raise RuntimeError(f"first-run child failed ({out.returncode}): "
                               f"{out.stderr[-1500:]}")
        return json.loads(lines[-1])


def _children() -> list:
    return [p for p in multiprocessing.active_children() if p.name.startswith("diffmem")]


def quit_and_cancel(app, repeats: int) -> dict:
    from gui.app import MainWindow
    quits, left, cancels, opt_cancels = [], [], [], []
    for _ in range(repeats):
        w = MainWindow()
        w.show()
        v = w.simulation_view
        v.select_config("DDR4-3200")
        v.trace_edit.setText(str(BIG))
        v.start_button.click()
        _wait(app, lambda: len(v._epochs) > 0 or bool(v._pending), 300)
        t0 = time.monotonic()
        w.quit_action.trigger()
        quits.append(time.monotonic() - t0)
        _wait(app, lambda: not _children(), 5)
        left.append(len(_children()))
        w.deleteLater()
        app.processEvents()
    for _ in range(repeats):
        w = MainWindow()
        w.show()
        v = w.simulation_view
        v.select_config("DDR4-3200")
        v.trace_edit.setText(str(BIG))
        got = []
        v.run_cancelled.connect(lambda: got.append(time.monotonic()))
        v.start_button.click()
        _wait(app, lambda: len(v._epochs) > 0 or bool(v._pending), 300)
        _wait(app, lambda: False, 2.0)
        t0 = time.monotonic()
        v.cancel_button.click()
        _wait(app, lambda: bool(got), 30)
        cancels.append(got[0] - t0)
        ov = w.optimizer_view
        ov.network_combo.setCurrentText("resnet18")
        ov.hardware_combo.setCurrentText("large")
        ov.method_combo.setCurrentText("fadiff")
        ov.budget_kind.setCurrentText("evaluations")
        ov.budget_spin.setValue(1_000_000)
        ogot = []
        ov.run_cancelled.connect(lambda: ogot.append(time.monotonic()))
        ov.run_button.click()
        _wait(app, lambda: len(ov.points) >= 3, 300)
        t0 = time.monotonic()
        ov.cancel_button.click()
        _wait(app, lambda: bool(ogot), 60)
        opt_cancels.append({"s": ogot[0] - t0, "kept": ov.results_table.rowCount()})
        w.close()
        w.deleteLater()
        app.processEvents()
    return {"quit_s": quits, "children_left": left, "sim_cancel_s": cancels,
            "opt_cancel": opt_cancels}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--first-run-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.first_run_child:
        first_run_child()
        return 0
    if not BIG.is_file():
        print(f"{BIG} missing: run benchmarks/bench_gui.py once (it generates the traces)")
        return 1
    print("load before:", os.getloadavg())
    firsts = [first_run() for _ in range(args.repeats)]
    print("first simulation in a fresh home (demo trace, DDR4-3200):",
          ", ".join(f"{f['first_run_s']:.2f} s" for f in firsts),
          f"(median {statistics.median(f['first_run_s'] for f in firsts):.2f} s)")
    import gui  # noqa: F401
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication([])
    r = quit_and_cancel(app, args.repeats)
    print("quit during a 1M-request run:", ", ".join(f"{x:.3f} s" for x in r["quit_s"]),
          "; simulation processes left:", r["children_left"])
    print("simulation cancel:", ", ".join(f"{x:.3f} s" for x in r["sim_cancel_s"]))
    print("optimiser cancel (FADiff, resnet18):",
          ", ".join(f"{x['s']:.3f} s (rows kept {x['kept']})" for x in r["opt_cancel"]))
    print("load after:", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
