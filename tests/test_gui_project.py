"""Projects in the main window: File > New / Open / Save / Close, runs stored in the tree.

Driven as a user would (offscreen, see conftest.py).  The first run in a process compiles
the numba kernel (30-60 s), hence the long timeouts.
"""
from __future__ import annotations

import gc
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "traces" / "demo.trace"
RUN_TIMEOUT_MS = 240_000


def _file_action(window, text: str):
    menu = next(a.menu() for a in window.menuBar().actions()
                if a.text().replace("&", "") == "File")
    return next(a for a in menu.actions()
                if a.text().replace("&", "").rstrip("…") == text)


def _dispose(qtbot, window) -> None:
    window.simulation_view.shutdown()
    qtbot.waitUntil(lambda: not window.simulation_view.is_running(), timeout=RUN_TIMEOUT_MS)
    window.close()
    if window.project is not None:          # a test that left a project open: release it
        window.close_project(ask=False)
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


@pytest.fixture
def make_window(qtbot, monkeypatch):
    from gui.app import MainWindow

    made = []

    def make():
        w = MainWindow()
        qtbot.addWidget(w)
        w.resize(1200, 800)
        w.show()
        errors: list[str] = []
        monkeypatch.setattr(w, "_show_error", errors.append)
        monkeypatch.setattr(w.simulation_view, "_show_error",
                            lambda msg, det: errors.append(msg))
        w.errors = errors
        made.append(w)
        return w

    yield make
    for w in made:
        try:
            _dispose(qtbot, w)
        except RuntimeError:               # already deleted by Qt
            pass


def test_new_run_save_reopen(qtbot, make_window, tmp_path, monkeypatch) -> None:
    from gui.views.project_tree import run_summary_text

    path = tmp_path / "study.dmproj"
    w = make_window()
    assert w.findChild(type(w.project_dock), "projectDock") is w.project_dock
    assert not _file_action(w, "Save Project").isEnabled()
    monkeypatch.setattr(w, "_ask_save_path", lambda: str(path))
    _file_action(w, "New Project").trigger()
    assert w.project is not None and path.is_file()
    assert "study" in w.windowTitle() and "*" not in w.windowTitle()
    assert w.project_tree.names("run") == []

    view = w.simulation_view
    view.config_combo.setCurrentIndex(view.config_combo.findText("DDR4-3200"))
    view.trace_edit.clear()
    qtbot.keyClicks(view.trace_edit, str(DEMO))
    view.epoch_spin.setValue(5000)
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    stats = blocker.args[0]
    qtbot.waitUntil(lambda: len(w.project_tree.names("run")) == 1, timeout=10_000)
    assert not w.errors, w.errors
    assert w.project_tree.names("config") == ["DDR4-3200"]
    assert w.project_tree.names("trace") == ["demo"]
    run_id = w.project_tree.names("run")[0]
    item = w.project_tree.items("run")[0]
    summary = item.text(1)
    assert summary == run_summary_text(stats.summary)
    assert "row-hit rate" in summary and "avg read latency" in summary
    assert w.windowTitle().startswith("study*")
    run = w.project.load_run(run_id)
    assert run["options"] == {"epoch": 5000}
    assert run["config_name"] == "DDR4-3200" and run["trace_name"] == "demo"
    assert w.project.trace_info("demo")["storage"] == "external"

    _file_action(w, "Save Project").trigger()
    assert "*" not in w.windowTitle()
    confirm = []
    monkeypatch.setattr(w, "_confirm_discard", lambda: confirm.append(1) or True)
    w.close()
    assert not confirm                      # saved: nothing to discard
    assert w.project is None
    assert not path.with_name(path.name + ".lock").exists()

    w2 = make_window()
    monkeypatch.setattr(w2, "_ask_open_path", lambda: str(path))
    _file_action(w2, "Open Project").trigger()
    assert not w2.errors, w2.errors
    assert w2.project is not None
    assert w2.project_tree.names("run") == [run_id]
    assert w2.project_tree.items("run")[0].text(1) == summary
    loaded = w2.project.load_run(run_id)
    assert loaded["summary"]["row_hit_rate"] == stats.summary["row_hit_rate"]
    assert loaded["summary"]["average_read_latency"] == stats.summary["average_read_latency"]
    assert w2.windowTitle() == "study — DiffMem Studio"


def test_tree_rename_duplicate_delete(qtbot, make_window, tmp_path, monkeypatch) -> None:
    from engine.config import load_config

    path = tmp_path / "edit.dmproj"
    w = make_window()
    monkeypatch.setattr(w, "_ask_save_path", lambda: str(path))
    assert w.new_project()
    w.project.add_config("ddr4", load_config("DDR4-3200"))
    w.project.add_trace("demo", DEMO, embed=False, allow_external=True)
    w.project_tree.refresh()
    tree = w.project_tree
    assert tree.names("config") == ["ddr4"] and tree.names("trace") == ["demo"]

    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: "fast")
    assert tree.select("config", "ddr4")
    qtbot.mouseClick(tree.rename_button, Qt.MouseButton.LeftButton)
    assert tree.names("config") == ["fast"] and w.project.configs() == ["fast"]
    assert w.windowTitle().startswith("edit*")

    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: default)
    qtbot.mouseClick(tree.duplicate_button, Qt.MouseButton.LeftButton)
    assert sorted(tree.names("config")) == ["fast", "fast copy"]

    monkeypatch.setattr(tree, "_confirm", lambda title, text: True)
    assert tree.select("trace", "demo")
    qtbot.mouseClick(tree.delete_button, Qt.MouseButton.LeftButton)
    assert tree.names("trace") == [] and w.project.traces() == []

    # a clash is shown, not raised
    shown = []
    monkeypatch.setattr(tree, "_show_error", shown.append)
    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: "fast")
    assert tree.select("config", "fast copy")
    assert not tree.rename_selected()
    assert shown and "already exists" in shown[0]

    # unsaved changes: closing asks; refusing keeps the project, accepting releases the lock
    answers = [False, True]
    monkeypatch.setattr(w, "_confirm_discard", lambda: answers.pop(0))
    w.close()
    assert w.project is not None and w.isVisible()
    w.close()
    assert w.project is None and not answers
    assert not path.with_name(path.name + ".lock").exists()


def test_open_corrupt_file_shows_error(make_window, tmp_path, monkeypatch) -> None:
    bad = tmp_path / "broken.dmproj"
    bad.write_bytes(b"not hdf5")
    w = make_window()
    monkeypatch.setattr(w, "_ask_open_path", lambda: str(bad))
    _file_action(w, "Open Project").trigger()
    assert w.project is None
    assert len(w.errors) == 1 and "broken.dmproj" in w.errors[0], w.errors
    assert w.windowTitle() == "DiffMem Studio"


def test_open_project_in_use_shows_error(make_window, tmp_path, monkeypatch) -> None:
    from projects.store import Project

    path = tmp_path / "busy.dmproj"
    other = Project.create(path)
    try:
        w = make_window()
        monkeypatch.setattr(w, "_ask_open_path", lambda: str(path))
        _file_action(w, "Open Project").trigger()
        assert w.project is None
        assert len(w.errors) == 1 and "in use" in w.errors[0], w.errors
        assert not other.closed
    finally:
        other.close()
