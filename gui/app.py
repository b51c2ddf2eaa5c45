"""Application start-up and the main window (for now: the simulation view).

    python main.py            # opens this window

Keep start-up light: nothing here imports torch or the numba kernels; views that need them
import them when first used.
"""
from __future__ import annotations

import sys
from typing import Sequence

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow

APP_NAME = "DiffMem Studio"


def _preset_names() -> list[str]:
    """The engine's shipped DRAM presets (engine.config is light: no numba kernels)."""
    try:
        from engine.config import list_presets
        return list_presets()
    except Exception:  # noqa: BLE001 - the window must open even if the engine is broken
        return []


class MainWindow(QMainWindow):
    """The top-level window: the simulation view, File > Quit and the presets in the status bar."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle(APP_NAME)
        self.resize(900, 600)

        from gui.views.simulation import SimulationView   # pyqtgraph; no numba until a run

        self.simulation_view = SimulationView(self)
        self.simulation_view.setObjectName("simulationView")
        self.setCentralWidget(self.simulation_view)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.setObjectName("fileMenu")
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setObjectName("actionQuit")
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        file_menu.addAction(self.quit_action)

        presets = _preset_names()
        self.statusBar().showMessage(
            "DRAM presets: " + ", ".join(presets) if presets
            else "No DRAM presets found (resources/presets/dram)")


    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.simulation_view.shutdown()
        super().closeEvent(event)


def main(argv: Sequence[str] | None = None) -> int:
    """Create the QApplication (or reuse one), show the main window, run the event loop."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(sys.argv if argv is None else argv) or [APP_NAME])
    app.setApplicationName(APP_NAME)
    window = MainWindow()
    window.show()
    return int(app.exec())


if __name__ == "__main__":
    sys.exit(main())
