"""The studies view driven as a user would (offscreen, see conftest.py): pick a study, add tiny
synthetic traces through the (monkeypatched) file dialog, Run, watch the table fill, find the
study in the open project, write the report, a bad parameter, cancel mid-run."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engine.studies.synthetic import write_training_step

pytestmark = pytest.mark.gui

RUN_TIMEOUT_MS = 120_000
TINY = dict(weight_kb=4, layers=2)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("gui-study-traces")
    out = {}
    for label, kind in (("ddpm", "diffusion"), ("resnet", "cnn")):
        path = d / f"{label}.h5"
        write_training_step(path, label, kind, 2, **TINY)
        out[label] = path
    big = d / "ddpm_big.h5"                  # slower points, for the cancel test
    write_training_step(big, "ddpm_big", "diffusion", 8, weight_kb=256, layers=6)
    out["big"] = big
    return out


@pytest.fixture
def view(qtbot, monkeypatch, tmp_path):
    from gui.views.studies import StudiesView

    holder = {"project": None}
    v = StudiesView(project=lambda: holder["project"])
    v.holder = holder
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.show()
    v.errors = []
    monkeypatch.setattr(v, "_show_error", lambda msg, det: v.errors.append((msg, det)))
    monkeypatch.setattr(v, "_results_root", lambda: tmp_path / "studies")
    v.workers_spin.setValue(0)
    yield v
    v.shutdown()
    qtbot.waitUntil(lambda: not v.is_running(), timeout=RUN_TIMEOUT_MS)
    if holder["project"] is not None:
        holder["project"].close()


def _add(view, monkeypatch, paths: list[Path]) -> None:
    monkeypatch.setattr(view, "_ask_trace_paths", lambda: [str(p) for p in paths])
    view.add_trace_button.click()


def _run(qtbot, view):
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def _table(view) -> list[list[str]]:
    t = view.results_table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def test_timing_study_into_project_and_report(qtbot, view, traces, monkeypatch, tmp_path):
    from engine.studies import load_project_study
    from projects.store import Project

    project = Project.create(tmp_path / "p.dmproj")
    view.holder["project"] = project
    view.set_study("timing")
    assert view.param_name_edit.isVisible() and view.name_edit.text() == "timing"
    _add(view, monkeypatch, [traces["ddpm"], traces["resnet"]])
    assert [view.traces_table.item(r, 0).text() for r in range(2)] == ["ddpm", "resnet"]
    view.param_name_edit.setText("tRCD")
    view.param_values_edit.setText("10, 14")
    stored = []
    view.study_stored.connect(stored.append)

    outcome = _run(qtbot, view)
    assert view.errors == []
    rows = _table(view)
    assert len(rows) == 4 == len(outcome.records)
    assert {(r[0], r[1]) for r in rows} == {(w, f"param=tRCD value={v}")
                                            for w in ("ddpm", "resnet") for v in (10, 14)}
    assert all(r[2] == "ok" and float(r[3]) > 0 and float(r[7]) > 0 for r in rows)
    assert view.progress_bar.value() == view.progress_bar.maximum() == 4
    # the table shows the records' own numbers
    by_label = {(r["label"], r["tags"]["value"]): r["metrics"] for r in outcome.records}
    for r in rows:
        m = by_label[(r[0], int(r[1].rsplit("=", 1)[1]))]
        assert float(r[3]) == pytest.approx(m["step_time_ns"] / 1e3, rel=1e-3)
    # stored in the project
    assert stored == ["timing"] and project.studies() == ["timing"]
    document, records = load_project_study(project, "timing")
    assert document["study"] == "timing" and len(records) == 4
    assert {r["point_id"] for r in records} == {r["point_id"] for r in outcome.records}

    # running again resumes: nothing is simulated twice
    again = _run(qtbot, view)
    assert (again.ran, again.reused) == (0, 4) and len(_table(view)) == 4

    out = tmp_path / "report"
    monkeypatch.setattr(view, "_ask_report_dir", lambda: str(out))
    with qtbot.waitSignal(view.report_written, timeout=RUN_TIMEOUT_MS) as blocker:
        view.report_button.click()
    files = blocker.args[0]
    assert (out / "report.html").is_file() and (out / "report.pdf").is_file()
    assert files.html == out / "report.html"
    html = files.html.read_text()
    assert html.count("<img") == files.figures >= 1
    text = view.findings_text.toPlainText()
    assert view.findings_lines and all(line in text for line in view.findings_lines)
    # two tRCD values give a slope but no interval: the finding says so instead of a ratio
    assert "tRCD" in text and "not tested" in text and "too few points" in text
    assert "diffusion workloads are" not in text


def test_technology_study_without_project_goes_to_a_results_folder(qtbot, view, traces,
                                                                    monkeypatch, tmp_path):
    view.set_study("technology")
    assert not view.param_name_edit.isVisible() and view.param_values_edit.isVisible()
    _add(view, monkeypatch, [traces["ddpm"]])
    view.param_values_edit.setText("DDR4-3200, HBM2")
    outcome = _run(qtbot, view)
    rows = _table(view)
    assert sorted(r[1] for r in rows) == ["variant=DDR4-3200", "variant=HBM2"]
    folder = tmp_path / "studies" / "technology"
    assert (folder / "study.json").is_file() and len(outcome.records) == 2
    assert len((folder / "results.jsonl").read_text().splitlines()) == 2


def test_bad_parameters_show_the_error_dialog(qtbot, view, traces, monkeypatch, tmp_path):
    view.set_study("timing")
    _add(view, monkeypatch, [traces["ddpm"]])
    view.param_name_edit.setText("tRCD")
    view.param_values_edit.setText("10, twelve")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert not view.is_running()
    assert len(view.errors) == 1 and "tRCD" in view.errors[0][0] and "int" in view.errors[0][0]

    # a field that is not a timing parameter: found by the engine, in the worker
    view.param_name_edit.setText("banks_per_group")
    view.param_values_edit.setText("2, 4")
    with qtbot.waitSignal(view.run_failed, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert len(view.errors) == 2
    msg, details = view.errors[1]
    assert "not a timing parameter" in msg and "Traceback" in details
    assert view.run_button.isEnabled() and view.results_table.rowCount() == 0

    # a missing trace file
    view.traces_table.item(0, 1).setText(str(traces["ddpm"].with_name("nope.h5")))
    view.param_name_edit.setText("tRCD")
    view.param_values_edit.setText("10, 12")
    with qtbot.waitSignal(view.run_failed, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert "nope.h5" in view.errors[2][0]

    # a report of a study that was never run
    monkeypatch.setattr(view, "_ask_report_dir", lambda: str(tmp_path / "r"))
    view.name_edit.setText("never-run")
    view.report_button.click()
    assert len(view.errors) == 4 and "no study here" in view.errors[3][0]
    assert not (tmp_path / "r" / "report.html").exists()


def test_batch_study_takes_batch_sizes_from_the_traces_table(qtbot, view, traces,
                                                             monkeypatch, tmp_path):
    d = tmp_path / "b"
    d.mkdir()
    for b in (2, 4):
        write_training_step(d / f"unet-b{b}.h5", f"unet-b{b}", "diffusion", b, **TINY)
    view.set_study("batch")
    assert not view.param_values_edit.isVisible()
    _add(view, monkeypatch, [d / "unet-b2.h5", d / "unet-b4.h5"])
    view.run_button.click()
    qtbot.waitUntil(lambda: not view.is_running(), timeout=RUN_TIMEOUT_MS)
    assert len(view.errors) == 1 and "no batch size" in view.errors[0][0]
    view.set_trace_field(0, "batch", "2")
    view.set_trace_field(1, "batch", "4")
    _run(qtbot, view)
    assert sorted(r[1] for r in _table(view)) == ["batch=2 family=unet", "batch=4 family=unet"]


def test_cancel_mid_run_keeps_finished_points_and_resumes(qtbot, view, traces, monkeypatch,
                                                          tmp_path):
    view.set_study("timing")
    view.workers_spin.setValue(1)            # a local worker process, as the GUI runs them
    _add(view, monkeypatch, [traces["big"]])
    view.param_name_edit.setText("tRCD")
    view.param_values_edit.setText("10, 12, 14, 16, 18, 20")
    with qtbot.waitSignal(view.run_cancelled, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: view.results_table.rowCount() >= 1, timeout=RUN_TIMEOUT_MS)
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    done = view.results_table.rowCount()
    assert 1 <= done < 6
    assert "Cancelled" in view.status_label.text() and view.run_button.isEnabled()
    assert view.errors == []
    from engine.studies import load_results
    _, records = load_results(tmp_path / "studies" / "timing")
    assert len(records) == done
    outcome = _run(qtbot, view)
    assert (outcome.ran, outcome.reused) == (6 - done, done)
    assert len(_table(view)) == 6


def test_main_window_studies_tab_stores_into_the_open_project(qtbot, traces, monkeypatch,
                                                             tmp_path):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    titles = [w.views.tabText(i) for i in range(w.views.count())]
    assert "Studies" in titles
    view = w.studies_view
    assert view.project() is None
    monkeypatch.setattr(w, "_ask_save_path", lambda: str(tmp_path / "w.dmproj"))
    monkeypatch.setattr(w, "_show_error", lambda msg: pytest.fail(msg))
    assert w.new_project()
    assert view.project() is w.project
    view.set_study("timing")
    view.workers_spin.setValue(0)
    _add(view, monkeypatch, [traces["ddpm"]])
    view.param_values_edit.setText("10,12")
    _run(qtbot, view)
    assert w.project.studies() == ["timing"] and len(w.project.study_results("timing")) == 2
    assert w.project_tree.names("study") == ["timing"]
    w.close_project(ask=False)
    assert view.project() is None


def test_points_are_shown_in_the_sweeps_order(view) -> None:
    """The table and the bars listed points as they finished (tRCD 14, 22, 18, 10): the
    sweep's trend could not be read. They are placed by workload, parameter and value."""
    def rec(pid, label, value):
        return {"point_id": pid, "label": label, "status": "failed", "error": "x",
                "tags": {"param": "tRCD", "value": value, "order": 0}}
    for pid, label, value in (("a", "r", 14), ("b", "r", 22), ("c", "d", 30), ("d", "r", 18),
                              ("e", "r", 10)):
        view._add_record(rec(pid, label, value))
    t = view.results_table
    shown = [(t.item(r, 0).text(), t.item(r, 1).text()) for r in range(t.rowCount())]
    assert shown == [("d", "param=tRCD value=30"), ("r", "param=tRCD value=10"),
                     ("r", "param=tRCD value=14"), ("r", "param=tRCD value=18"),
                     ("r", "param=tRCD value=22")]
    assert [r["point_id"] for r in view.records] == ["c", "e", "a", "d", "b"]
