"""Open the main window on a real (virtual) X screen, run the demo trace, save a screenshot.

    xvfb-run -s "-screen 0 1400x900x24" .venv/bin/python docs/screenshot_demo.py [OUT.png]

Default output: build/screenshots/main_window.png (what tests/test_gui_screenshot.py writes).
The screen is grabbed through the window system (QScreen.grabWindow), not rendered offscreen.

What it shows: the demo project (a private copy in a temporary data folder), the demo trace
simulated live on DDR4-3200 and stored in the project, with the stored HBM2 run overlaid for
comparison (plots, legend and the key-figure table).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gui  # noqa: E402,F401  (its PySide6 workaround must be in place before Qt runs)
from PySide6.QtWidgets import QApplication  # noqa: E402

from gui.app import MainWindow  # noqa: E402

DEFAULT_OUT = ROOT / "build" / "screenshots" / "main_window.png"


def main() -> int:
    import os
    import tempfile

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    data = tempfile.mkdtemp(prefix="diffmem-screenshot-")
    os.environ["XDG_DATA_HOME"] = data          # the demo copy goes here, not to the user's
    os.environ["XDG_CONFIG_HOME"] = data        # nor the window layout
    app = QApplication([sys.argv[0]])
    app.setApplicationName("DiffMem Studio")
    window = MainWindow()
    window.resize(1380, 880)
    window.move(0, 0)
    window.show()
    from PySide6.QtCore import Qt
    window.resizeDocks([window.project_dock], [300], Qt.Orientation.Horizontal)
    from gui.demo import open_demo

    if not open_demo(window):
        print("screenshot_demo: could not open the demo project", file=sys.stderr)
        return 1
    view = window.simulation_view
    view.config_combo.setCurrentIndex(view.config_combo.findText("DDR4-3200"))
    view.trace_edit.setText(str(ROOT / "resources" / "traces" / "demo.trace"))
    view.epoch_spin.setValue(2000)
    view.start()
    deadline = time.monotonic() + 300
    while view.is_running() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    if view.is_running():
        print("screenshot_demo: the demo run did not finish in 300 s", file=sys.stderr)
        view.shutdown()
        return 1
    item = view.compare_item("hbm2")  # the stored HBM2 run, for comparison
    if item is not None:
        item.setCheckState(Qt.CheckState.Checked)
    for _ in range(30):              # let the last plot refreshes reach the screen
        app.processEvents()
        time.sleep(0.02)
    shot = app.primaryScreen().grabWindow(0)
    if shot.isNull() or not shot.save(str(out)):
        print(f"screenshot_demo: could not save {out}", file=sys.stderr)
        return 1
    print(out)
    window.close_project(ask=False)
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
