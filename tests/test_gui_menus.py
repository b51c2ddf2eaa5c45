"""The menus a desktop user expects (issue 16, items 11 and 12): a failed File > Open keeps
the open project, Save keeps the file's mode, Save As continues in the new file, Open Recent,
View (docks back, theme), Help (About with versions, documentation, shortcuts).

Driven through the menu actions, as a user would (offscreen, see conftest.py); each test reads
what the user reads (window title, the About text, the tree).
"""
from __future__ import annotations

import gc
import os
import stat
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent

pytestmark = pytest.mark.gui


def _menu(window, title: str):
    return next(a.menu() for a in window.menuBar().actions()
                if a.text().replace("&", "") == title)


def _action(window, menu: str, text: str):
    return next(a for a in _menu(window, menu).actions()
                if a.text().replace("&", "").rstrip("…") == text)


@pytest.fixture
def window(qtbot, monkeypatch):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    w.errors = []
    w.infos = []
    monkeypatch.setattr(w, "_show_error", w.errors.append)
    monkeypatch.setattr(w, "_show_info", lambda title, text: w.infos.append((title, text)))
    monkeypatch.setattr(w, "_confirm_discard", lambda: True)
    yield w
    if w.project is not None:
        w.close_project(ask=False)
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def _new(window, monkeypatch, path: Path) -> None:
    monkeypatch.setattr(window, "_ask_save_path", lambda: str(path))
    _action(window, "File", "New Project").trigger()
    assert window.project is not None, window.errors


def test_failed_open_keeps_the_open_project(window, tmp_path, monkeypatch) -> None:
    good = tmp_path / "good.dmproj"
    _new(window, monkeypatch, good)
    bad = tmp_path / "broken.dmproj"
    bad.write_bytes(b"not hdf5")
    monkeypatch.setattr(window, "_ask_open_path", lambda: str(bad))
    _action(window, "File", "Open Project").trigger()
    assert len(window.errors) == 1 and "broken.dmproj" in window.errors[0]
    assert window.project is not None and Path(window.project.path) == good
    assert window.windowTitle().startswith("good")           # what the user reads
    assert window.project_tree.project() is window.project


def test_save_keeps_the_file_mode_and_save_as_continues_in_the_copy(window, tmp_path,
                                                                   monkeypatch) -> None:
    from engine.config import load_config
    path = tmp_path / "mode.dmproj"
    _new(window, monkeypatch, path)
    os.chmod(path, 0o644)
    window.project.add_config("DDR4-3200", load_config("DDR4-3200"))
    _action(window, "File", "Save Project").trigger()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    window.project.add_config("HBM2", load_config("HBM2"))       # unsaved in mode.dmproj
    copy = tmp_path / "copy.dmproj"
    monkeypatch.setattr(window, "_ask_save_as_path", lambda: str(copy))
    _action(window, "File", "Save Project As").trigger()
    assert not window.errors, window.errors
    assert Path(window.project.path) == copy
    assert window.windowTitle().startswith("copy")
    assert set(window.project.configs()) == {"DDR4-3200", "HBM2"}
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o644 & ~umask     # as File > New makes
    from projects.store import Project
    with Project.open(path, readonly=True) as old:                # the old file as saved
        assert old.configs() == ["DDR4-3200"]


def test_save_as_into_another_folder_keeps_a_referenced_trace_readable(window, tmp_path,
                                                                       monkeypatch) -> None:
    """A trace referred to relative to the project's folder still names the same file after
    File > Save As into another folder, and the status bar says it is now outside."""
    import numpy as np

    from engine.trace import TraceChunk, write_text
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "traces").mkdir(parents=True)
    b.mkdir()
    trace = a / "traces" / "t.trace"
    write_text(trace, TraceChunk.from_arrays(np.arange(8, dtype=np.uint64) * 64,
                                             np.zeros(8, bool), np.arange(8)))
    _new(window, monkeypatch, a / "p.dmproj")
    window.project.add_trace("t", trace, embed=False)
    monkeypatch.setattr(window, "_ask_save_as_path", lambda: str(b / "q.dmproj"))
    _action(window, "File", "Save Project As").trigger()
    assert not window.errors, window.errors
    assert Path(window.project.path) == b / "q.dmproj"
    assert window.project.trace_source("t").path == trace
    msg = window.statusBar().currentMessage()
    assert "Trace(s) t stay where they are" in msg and "absolute path" in msg


def test_open_recent_lists_and_reopens(window, tmp_path, monkeypatch) -> None:
    a, b = tmp_path / "a.dmproj", tmp_path / "b.dmproj"
    _new(window, monkeypatch, a)
    _new(window, monkeypatch, b)
    window._fill_recent_menu()
    names = [x.text() for x in window.recent_menu.actions() if x.data()]
    assert names[:2] == ["&1 b.dmproj", "&2 a.dmproj"]
    next(x for x in window.recent_menu.actions() if x.data() == str(a)).trigger()
    assert Path(window.project.path) == a and window.windowTitle().startswith("a")


def test_view_menu_brings_a_closed_dock_back_and_switches_theme(window, qtbot) -> None:
    import pyqtgraph as pg
    window.project_dock.close()
    assert not window.project_dock.isVisible()
    _action(window, "View", "Project").trigger()
    assert window.project_dock.isVisible()
    _menu(window, "View")
    window.theme_actions["light"].trigger()
    view = window.simulation_view.plot_widget
    assert view.backgroundBrush().color().name() == "#ffffff"
    axis = window.simulation_view.plots["bandwidth"].getAxis("left")
    assert axis.textPen().color().name() == "#202020"           # dark ink on white
    window.theme_actions["dark"].trigger()
    assert view.backgroundBrush().color().name() == "#000000"
    assert isinstance(view, pg.GraphicsView)


def test_exports_are_light_unless_chosen_otherwise(window, tmp_path) -> None:
    from PySide6.QtGui import QImage
    window.theme_actions["dark"].trigger()
    out = window.simulation_view.export(tmp_path / "grid.png")
    img = QImage(str(out))
    assert img.pixelColor(2, 2).name() == "#ffffff"               # light export
    assert window.simulation_view.plot_widget.backgroundBrush().color().name() == "#000000"
    window.export_theme_actions["shown"].trigger()
    out = window.simulation_view.export(tmp_path / "grid-dark.png")
    assert QImage(str(out)).pixelColor(2, 2).name() == "#000000"
    window.export_theme_actions["light"].trigger()


def test_help_about_versions_docs_and_shortcuts(window, monkeypatch) -> None:
    import numpy
    opened = []
    monkeypatch.setattr(window, "_open_url", opened.append)
    _action(window, "Help", "About DiffMem Studio").trigger()
    title, text = window.infos[-1]
    from engine.version import APP_VERSION
    assert APP_VERSION in text and numpy.__version__ in text and "Qt" in text
    _action(window, "Help", "Keyboard Shortcuts").trigger()
    assert "Ctrl+Shift+S" in window.infos[-1][1]
    _action(window, "Help", "Documentation").trigger()
    assert opened and opened[0].endswith("README.md")
