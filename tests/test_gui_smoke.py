"""Smoke test of the GUI's main window (offscreen, see conftest.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]


def test_main_window(qtbot) -> None:
    from gui.app import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    assert window.windowTitle() == "DiffMem Studio"
    assert "DDR4-3200" in window.statusBar().currentMessage()

    file_menu = next(a.menu() for a in window.menuBar().actions()
                     if a.text().replace("&", "") == "File")
    quit_action = next(a for a in file_menu.actions() if a.text().replace("&", "") == "Quit")
    quit_action.trigger()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=2000)


def test_gui_start_does_not_import_torch() -> None:
    code = ("import os, sys; os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen');"
            "from PySide6.QtWidgets import QApplication; app = QApplication([]);"
            "import gui.app; w = gui.app.MainWindow();"
            "sys.exit('torch imported at start' if 'torch' in sys.modules else 0)")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_main_window_has_project_and_config_docks(qtbot):
    from PySide6.QtWidgets import QDockWidget

    from gui.app import MainWindow
    w = MainWindow()
    qtbot.addWidget(w)
    docks = {d.objectName() for d in w.findChildren(QDockWidget)}
    assert {"projectDock", "configDock"} <= docks
    w.config_editor.load_preset("HBM2")
    assert w.config_editor.config().protocol == "HBM"


def test_window_layout_is_remembered(qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings

    from gui.app import MainWindow
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path))
    monkeypatch.setattr("gui.app.SETTINGS_ORG", "DiffMemTest")
    w = MainWindow()
    qtbot.addWidget(w)
    assert not w.restore_layout()            # nothing stored yet
    w.resize(701, 503)          # inside the offscreen screen (800 x 600)
    w.config_dock.raise_()
    w.save_layout()
    w2 = MainWindow()
    qtbot.addWidget(w2)
    assert w2.restore_layout()
    assert (w2.width(), w2.height()) == (701, 503)
