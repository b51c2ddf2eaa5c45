"""Screenshots of every tab of the main window, in the dark and the light theme, at one screen
size, on a real (virtual) X screen: what the README shows (docs/screenshots/).

    xvfb-run -s "-screen 0 1920x1080x24" .venv/bin/python docs/screenshot_tabs.py 1920x1080
    xvfb-run -s "-screen 0 1280x800x24"  .venv/bin/python docs/screenshot_tabs.py 1280x800

Writes ``<out>/<theme>-<W>x<H>-<tab>.png`` (default out: docs/screenshots).  What each shows:
the demo project with the demo trace simulated live on DDR4-3200 and the stored HBM2 run
overlaid (Simulation, Energy), the commands of its first 4 µs with the longest-waiting read's lifetime hovered (Command timeline), a short
FADiff search of a 2-layer network with its Gantt chart and its co-simulation on
DDR4-3200 (Optimiser), and a 2-point tRCD
study of a tiny synthetic training step (Studies).  tests/test_gui_screenshot.py runs it.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gui  # noqa: E402,F401  (its PySide6 workaround must be in place before Qt runs)
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

TABS = {"Simulation": "simulation", "Energy by bank": "energy",
        "Command timeline": "timeline", "Optimiser": "optimiser", "Studies": "studies"}
TINY = {"name": "tiny2", "layers": [
    {"name": "conv1", "type": "conv", "dims": {"N": 1, "K": 32, "C": 16, "P": 16, "Q": 16,
                                               "R": 3, "S": 3}},
    {"name": "conv2", "type": "conv", "dims": {"N": 1, "K": 32, "C": 32, "P": 16, "Q": 16,
                                               "R": 3, "S": 3}, "producer": ["conv1"]}]}


def _spin(app, cond, timeout_s: float = 300.0) -> bool:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.02)
    return True


def _settle(app, n: int = 25) -> None:
    for _ in range(n):
        app.processEvents()
        time.sleep(0.02)


def main() -> int:
    size = sys.argv[1] if len(sys.argv) > 1 else "1920x1080"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "screenshots"
    w_px, h_px = (int(v) for v in size.lower().split("x"))
    out.mkdir(parents=True, exist_ok=True)
    data = tempfile.mkdtemp(prefix="diffmem-screenshots-")
    os.environ["XDG_DATA_HOME"] = data
    os.environ["XDG_CONFIG_HOME"] = data
    app = QApplication([sys.argv[0]])
    app.setApplicationName("DiffMem Studio")
    from gui.app import MainWindow
    from gui.demo import open_demo

    window = MainWindow()
    window.move(0, 0)
    window.resize(w_px, h_px)
    window.show()
    window.resizeDocks([window.project_dock], [min(300, w_px // 5)], Qt.Orientation.Horizontal)
    if not open_demo(window):
        print("screenshot_tabs: could not open the demo project", file=sys.stderr)
        return 1
    sv = window.simulation_view
    sv.select_config("DDR4-3200")
    sv.trace_edit.setText(str(ROOT / "resources" / "traces" / "demo.trace"))
    sv.epoch_spin.setValue(2000)
    sv.start()
    if not _spin(app, lambda: not sv.is_running()):
        return 1
    item = sv.compare_item("hbm2")
    if item is not None:
        item.setCheckState(Qt.CheckState.Checked)
    tv = window.timeline_view
    tv.start_spin.setValue(0.0)
    tv.end_spin.setValue(4.0)
    tv.record_from_source()
    if not _spin(app, lambda: not tv.is_running()):
        return 1
    tv.link_check.setChecked(False)        # the Simulation tab shows the whole run
    # hover a RD that waited in the queue: its request's lifetime is drawn and described
    if tv.matching is not None:
        served = [(life, c) for c in tv.cmds if c.kind.startswith("read")
                  for life in tv.matching.by_line.get((c.channel, c.line), [])[:1]]
        if served:
            life, c = max(served, key=lambda lc: lc[0].queued)
            tv.hover(float(tv.seconds(c.cycle)), tv.lane(c.channel, c.rank, c.bankgroup,
                                                          c.bank))
    sv.plots["bandwidth"].enableAutoRange(axis="x", enable=True)
    ov = window.optimizer_view
    net = Path(data) / "tiny2.json"
    net.write_text(json.dumps(TINY))
    ov.add_source("network", net)
    ov.hardware_combo.setCurrentText("small")
    ov.method_combo.setCurrentText("fadiff")
    ov.budget_kind.setCurrentText("evaluations")
    ov.budget_spin.setValue(60)
    ov.start()
    if not _spin(app, lambda: not ov.is_running(), 600):
        return 1
    ov.memory_combo.setCurrentText("DDR4-3200")
    ov.start_cosim()                              # the DRAM panels under the Gantt chart
    if not _spin(app, lambda: not ov.is_running(), 600):
        return 1
    st = window.studies_view
    from engine.studies.synthetic import write_training_step
    trace = Path(data) / "ddpm.h5"
    write_training_step(trace, "ddpm", "diffusion", 2, weight_kb=16, layers=3)
    st.set_study("timing")
    st.workers_spin.setValue(0)
    st.add_traces([str(trace)])
    st.param_values_edit.setText("10,14,18,22")
    st.start()
    if not _spin(app, lambda: not st.is_running(), 600):
        return 1
    window.resize(w_px, h_px)
    written = []
    for theme in ("dark", "light"):
        window.set_theme(theme, remember=False)
        for i in range(window.views.count()):
            name = TABS.get(window.views.tabText(i))
            if name is None:
                continue
            window.views.setCurrentIndex(i)
            window.repaint()
            _settle(app, 40)
            shot = app.primaryScreen().grabWindow(0, 0, 0, w_px, h_px)
            path = out / f"{theme}-{w_px}x{h_px}-{name}.png"
            if shot.isNull() or not shot.save(str(path)):
                print(f"screenshot_tabs: could not save {path}", file=sys.stderr)
                return 1
            written.append(path)
    for p in written:
        print(p)
    window.close_project(ask=False)
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
