"""Stored optimiser runs and studies reopen with their plots (issue 16, item 4: after a restart
the Optimiser tab was empty and double-clicking an optimiser run or a study did nothing).

The project is written by the libraries (a short random search on a 2-layer network, a
2-point timing study), then opened through File > Open as after a restart.
"""
from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

pytestmark = pytest.mark.gui

TINY = {"name": "tiny2", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["a"]}]}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict:
    from engine.studies.run import run_study
    from engine.studies.spec import StudySetup, TraceInput
    from engine.studies.synthetic import write_training_step
    from gui.optimizer_worker import progress_dict
    from optimizer.methods import optimize, schedule_json
    from optimizer.search import Budget
    from projects.store import Project

    d = tmp_path_factory.mktemp("reopen")
    net = d / "tiny2.json"
    net.write_text(json.dumps(TINY))
    res, space = optimize(net, "large", "random", Budget(evaluations=40), 0)
    sched = schedule_json(res, space)
    trace = d / "ddpm.h5"
    write_training_step(trace, "ddpm", "diffusion", 2, weight_kb=4, layers=2)
    path = d / "stored.dmproj"
    with Project.create(path) as p:
        p.add_optimizer_run("random tiny2 on large #1",
                            {"network": str(net), "hardware": "large", "method": "random",
                             "seed": 0, "wall_s": res.wall_s, "evaluations": res.evaluations},
                            sched, [progress_dict(h) for h in res.history])
        setup = StudySetup(traces=[TraceInput(label="ddpm", path=str(trace), kind="diffusion")],
                           config="DDR4-3200", params={"tRCD": [10, 12]}, compute={})
        run_study("timing", setup, project=p, study_name="trcd", workers=0)
        p.save()
    return {"path": path, "schedule": sched, "evaluations": res.evaluations}


@pytest.fixture
def window(qtbot, monkeypatch, stored):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    w.errors = []
    monkeypatch.setattr(w, "_show_error", w.errors.append)
    monkeypatch.setattr(w.optimizer_view, "_show_error", lambda m, d: w.errors.append(m))
    monkeypatch.setattr(w.studies_view, "_show_error", lambda m, d: w.errors.append(m))
    monkeypatch.setattr(w, "_ask_open_path", lambda: str(stored["path"]))
    w.open_project_action.trigger()
    assert w.project is not None, w.errors
    yield w
    w.close_project(ask=False)
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def _double_click(qtbot, w, kind: str, name: str) -> None:
    tree = w.project_tree
    item = next(it for it in tree.items(kind) if it.text(0) == name)
    pos = tree.tree.visualItemRect(item).center()
    qtbot.mouseClick(tree.tree.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseDClick(tree.tree.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_optimiser_tab_lists_stored_runs_after_a_restart(window, stored) -> None:
    ov = window.optimizer_view
    t = ov.results_table
    assert t.rowCount() == 1                                  # not empty after the restart
    cols = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert t.item(0, cols.index("method")).text() == "random"
    assert t.item(0, cols.index("evaluations")).text() == str(stored["evaluations"])
    assert ov.shown is not None and ov.shown.edp == pytest.approx(stored["schedule"]["edp"])
    assert ov.gantt.bar_count("compute") > 0                  # its Gantt chart
    assert ov.curve_points("best_edp") > 0                    # and its curves
    assert not window.errors


def test_cosimulation_is_kept_with_its_run_and_reopens(qtbot, window, stored, monkeypatch,
                                                       tmp_path) -> None:
    """Co-simulate a reopened run: the panels fill, the project keeps it, and after closing
    and opening the project again the panels come back without simulating."""
    ov = window.optimizer_view
    ov.memory_combo.setCurrentText("DDR4-3200")
    with qtbot.waitSignal(ov.cosim_finished, timeout=240_000):
        assert ov.start_cosim()
    assert not window.errors, window.errors
    layers = len(ov.cosim_layers())
    assert layers == 2 and ov.bank_image.image is not None
    settings = window.project.load_optimizer_run("random tiny2 on large #1")["settings"]
    assert settings["cosim"]["memory"] == ov.cosim["memory"]
    assert window.save_project()
    path = window.project.path
    window.close_project(ask=False)
    assert window.optimizer_view.results_table.rowCount() == 0
    monkeypatch.setattr(window, "_ask_open_path", lambda: str(path))
    window.open_project_action.trigger()
    ov = window.optimizer_view
    assert ov.results_table.rowCount() == 1 and ov.cosim is not None   # nothing re-simulated
    assert len(ov.cosim_layers()) == layers
    n = len(ov.cosim_layers())
    assert len(ov.dram_bars["engine service"].opts["x0"]) == n
    assert ov.bank_image.image is not None and ov.bank_image.image.sum() > 0
    rows = ov.plot_data("banks")[1]
    assert rows and all(r[3] + r[4] > 0 for r in rows)


def test_double_click_reopens_an_optimiser_run_and_a_study(qtbot, window, stored) -> None:
    window.show_view(window.simulation_view)
    _double_click(qtbot, window, "optimizer_run", "random tiny2 on large #1")
    assert window.views.currentWidget() is window.optimizer_view
    assert window.optimizer_view.results_table.rowCount() == 1      # not added twice
    _double_click(qtbot, window, "study", "trcd")
    sv = window.studies_view
    assert window.views.currentWidget() is sv
    assert sv.results_table.rowCount() == 2
    cells = [sv.results_table.item(r, 1).text() for r in range(2)]
    assert any("10" in c for c in cells) and any("12" in c for c in cells)
    assert sv.status_label.text().startswith("Stored study 'trcd'")
    assert sv.name_edit.text() == "trcd" and sv.study_key() == "timing"
    # and its plot: one bar per point, the step time the table shows
    labels, values = sv.plot_values()
    assert len(labels) == 2 and len(sv.bars.opts["height"]) == 2
    stored_pts = window.project.study_results("trcd")
    want = sorted(r["metrics"]["step_time_ns"] for r in stored_pts.values())
    assert sorted(values) == pytest.approx(want)
    assert not window.errors, window.errors
