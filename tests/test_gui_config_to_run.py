"""Configurations edited in the editor reach a simulation (issue 16, item 5: the Memory list
offered only the 5 presets and the editor's change signal was connected to nothing).

A user loads HBM2 in the editor, changes tRCD, saves it to the project as "hbm2-slow", picks
it in the Memory list, runs the demo trace; the stored run used tRCD as edited.  An .ini
import lands in the project too.
"""
from __future__ import annotations

import gc
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "traces" / "demo.trace"


@pytest.fixture
def window(qtbot, monkeypatch, tmp_path):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    w.errors = []
    monkeypatch.setattr(w, "_show_error", w.errors.append)
    monkeypatch.setattr(w.simulation_view, "_show_error", lambda m, d: w.errors.append(m))
    monkeypatch.setattr(w, "_confirm_discard", lambda: True)
    monkeypatch.setattr(w, "_ask_save_path", lambda: str(tmp_path / "cfg.dmproj"))
    assert w.new_project()
    yield w
    w.simulation_view.shutdown()
    w.close_project(ask=False)
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def test_edited_config_saved_by_name_is_used_by_a_run(qtbot, window, monkeypatch) -> None:
    from engine.config import load_config
    ed = window.config_editor
    ed.preset_combo.setCurrentText("HBM2")
    base = load_config("HBM2").tRCD
    ed.set_value("tRCD", base + 5)
    monkeypatch.setattr(ed, "_ask_name", lambda default: "hbm2-slow")
    qtbot.mouseClick(ed.save_to_project_button, Qt.MouseButton.LeftButton)
    assert not window.errors, window.errors
    assert window.project.get_config("hbm2-slow").tRCD == base + 5
    view = window.simulation_view
    offered = [view.config_combo.itemText(i) for i in range(view.config_combo.count())]
    assert offered[0] == "hbm2-slow" and "DDR4-3200" in offered
    assert view.config_combo.currentText() == "hbm2-slow"          # selected for the next run
    assert "hbm2-slow" in window.project_tree.names("config")
    # the optimiser's co-simulation can use it too (written as a TOML preset, channels set)
    ov = window.optimizer_view
    assert ov.memory_combo.itemText(0) == "hbm2-slow"
    ov.memory_combo.setCurrentText("hbm2-slow")
    ov.channels_combo.setCurrentText("2")
    spec = ov.memory_spec()
    assert spec.endswith(".toml")
    cosim_cfg = load_config(spec)
    assert cosim_cfg.tRCD == base + 5 and cosim_cfg.channels == 2
    view.trace_edit.setText(str(DEMO))
    view.epoch_spin.setValue(5000)
    with qtbot.waitSignal(view.run_finished, timeout=240_000):
        view.start_button.click()
    runs = window.project.runs()
    assert runs == ["hbm2-slow on demo #1"]                         # a readable name
    data = window.project.load_run(runs[0])
    assert data["config_name"] == "hbm2-slow"
    assert window.project.run_config(runs[0]).tRCD == base + 5
    assert view.record.summary["config"] == load_config("HBM2").name


def test_unsaved_editor_config_runs_and_is_stored_under_its_own_name(qtbot, window) -> None:
    ed = window.config_editor
    ed.preset_combo.setCurrentText("DDR4-3200")
    ed.set_value("tRCD", ed.value("tRCD") + 3)
    view = window.simulation_view
    assert view.select_config("Edited in the configuration editor")
    view.trace_edit.setText(str(DEMO))
    view.epoch_spin.setValue(5000)
    with qtbot.waitSignal(view.run_finished, timeout=240_000):
        view.start_button.click()
    (run,) = window.project.runs()
    name = window.project.load_run(run)["config_name"]
    assert name.endswith("edited #1")
    assert window.project.run_config(run).tRCD == ed.value("tRCD")
    # what the user reads says it was the edited configuration, not the preset
    assert view.summary_label.text().startswith("DDR4-3200 (edited) · demo.trace")


def test_ini_import_lands_in_the_project(qtbot, window, tmp_path, monkeypatch) -> None:
    from engine.config import dump_ini, load_config
    ini = tmp_path / "my_ddr4.ini"
    dump_ini(load_config("DDR4-3200"), ini)
    ed = window.config_editor
    monkeypatch.setattr(ed, "_ask_open_path", lambda f: str(ini))
    qtbot.mouseClick(ed.import_button, Qt.MouseButton.LeftButton)
    assert "my_ddr4" in window.project.configs()
    assert window.simulation_view.config_combo.findText("my_ddr4") >= 0
