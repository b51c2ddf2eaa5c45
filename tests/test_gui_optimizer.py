"""The optimiser view driven as a user would (offscreen, see conftest.py): tiny budgets, a
2-layer JSON network or resnet18 with "random", one short FADiff run, every method in turn,
cancel, a broken network file, exports, and the DRAM co-simulation on the Gantt chart's axis.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_MS = 180_000
TINY = {"name": "tiny2", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["a"]}]}


@pytest.fixture
def view(qtbot, monkeypatch):
    from gui.views.optimizer import OptimizerView

    v = OptimizerView()
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v.show()
    v.errors = []
    monkeypatch.setattr(v, "_show_error", lambda msg, det: v.errors.append((msg, det)))
    yield v
    v.shutdown()
    qtbot.waitUntil(lambda: not v.is_running(), timeout=RUN_TIMEOUT_MS)
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent
    v.close()
    v.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


@pytest.fixture
def tiny_json(tmp_path) -> Path:
    path = tmp_path / "tiny2.json"
    path.write_text(json.dumps(TINY))
    return path


def _open_network(view, monkeypatch, path: Path) -> None:
    """Pick "Open JSON…" in the network combo and answer the file dialog with ``path``."""
    from gui.views.optimizer import OPEN_NETWORK

    monkeypatch.setattr(view, "_ask_open_path", lambda caption, filters: str(path))
    combo = view.network_combo
    i = combo.findText(OPEN_NETWORK)
    combo.setCurrentIndex(i)
    combo.activated.emit(i)
    assert combo.currentText() == path.name


def _setup(view, hardware: str, method: str, budget: int, seed: int = 0) -> None:
    view.hardware_combo.setCurrentText(hardware)
    view.method_combo.setCurrentText(method)
    view.budget_kind.setCurrentText("evaluations")
    view.budget_spin.setValue(budget)
    view.seed_spin.setValue(seed)


def _run(qtbot, view, button=None):
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(button or view.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def _no_thread_left() -> bool:
    from gui.optimizer_worker import active_optimizer_runs
    return not active_optimizer_runs()


def test_window_start_does_not_import_torch() -> None:
    code = ("import sys; from PySide6.QtWidgets import QApplication; app = QApplication([]); "
            "from gui.views.optimizer import OptimizerView; v = OptimizerView(); "
            "sys.exit('torch imported' if 'torch' in sys.modules else 0)")
    env = {"QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_methods_offered_are_the_registry(view) -> None:
    from optimizer.methods import ALL_METHODS

    offered = [view.method_combo.itemText(i) for i in range(view.method_combo.count())]
    assert offered == list(ALL_METHODS)
    nets = [view.network_combo.itemText(i) for i in range(view.network_combo.count())]
    from optimizer.workload import NETWORKS
    assert nets[:-1] == list(NETWORKS) and nets[-1] == "Open JSON…"


def test_random_resnet18_fills_curves_gantt_and_table(qtbot, view) -> None:
    view.network_combo.setCurrentText("resnet18")
    # 420 layer-mapping evaluations: 20 candidates of ResNet18's 21 layers, then the refinement
    _setup(view, "large", "random", 420, seed=3)
    outcomes = _run(qtbot, view)
    assert view.errors == []
    assert len(outcomes) == 1 and outcomes[0].method == "random"
    # every report draws a point; the run's closing point (its total evaluation count, after
    # the refinement) carries only the best EDP
    assert view.points[-1]["evaluations"] == outcomes[0].evaluations
    for key in ("loss", "edp", "violation"):
        assert view.curve_points(key) == sum(np.isfinite(p[key]) for p in view.points) > 0, key
    # best valid EDP: drawn once a valid candidate was seen (20 samples may find none)
    assert view.curve_points("best_edp") == sum(np.isfinite(p["best_edp"]) for p in view.points)
    assert view.curve_points("tau") == 0          # random search has no temperature
    sched = outcomes[0].schedule
    units = sched["timeline"]
    assert view.gantt.bar_count("compute") == len(units) == view.gantt.bar_count("DMA")
    covered = [name for u in units for name in u["layers"]]
    assert covered == [lay["name"] for lay in sched["layers"]]       # every layer, in order
    t = view.results_table
    assert t.rowCount() == 1
    header = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    row = {h: t.item(0, c).text() for c, h in enumerate(header)}
    assert row["method"] == "random" and row["seed"] == "3" and row["network"] == "resnet18"
    assert row["evaluations"] == str(outcomes[0].evaluations)
    from gui.units import fmt
    assert row["EDP"] == fmt(sched["edp"], "pJ·cyc") and row["EDP"].endswith("J·cyc")
    assert row["energy"] == fmt(sched["energy_pj"], "pJ")
    # hover text of the first unit's compute bar: its tiling, energy, cycles and bound
    u = units[0]
    text = view.gantt.tooltip_at((u["compute"]["start"] + u["compute"]["end"]) / 2, 1.0)
    lay = sched["layers"][0]
    assert lay["tiling"]["summary"] in text and u["bound"] in text
    assert f"{lay['energy_pj']:.4g} pJ" in text
    assert view.gantt.tooltip_at(-10.0, 1.0) == ""
    assert view.run_button.isEnabled() and view.cosim_button.isEnabled()
    qtbot.waitUntil(_no_thread_left, timeout=5000)


def test_fadiff_run_shows_temperature_then_exports(qtbot, view, monkeypatch, tiny_json,
                                                   tmp_path) -> None:
    _open_network(view, monkeypatch, tiny_json)
    # evaluations are layer-mapping evaluations: a FADiff step costs 9 x chains x 2 layers
    _setup(view, "small", "fadiff", 1200)
    outcomes = _run(qtbot, view)
    assert view.errors == []
    # the last point (the run's total evaluations, after the polish) has no temperature
    tau = [p["tau"] for p in view.points if np.isfinite(p["tau"])]
    assert view.curve_points("tau") == len(tau) > 1
    assert tau[-1] < tau[0]                       # the Gumbel-Softmax temperature anneals
    assert view.curve_points("best_edp") > 0
    assert view.results_table.rowCount() == 1
    sched = outcomes[0].schedule

    for plot in ("gantt", "edp", "loss"):
        png = view.export(tmp_path / f"{plot}.png", plot)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = view.export(tmp_path / f"{plot}.svg", plot)
        assert "<svg" in svg.read_text()
    rows = list(csv.reader(view.export(tmp_path / "gantt.csv", "gantt").open()))
    assert rows[0][:4] == ["unit", "layers", "group", "row"]
    assert len(rows) - 1 == 2 * len(sched["timeline"])
    assert [r[3] for r in rows[1:3]] == ["compute", "DMA"]
    rows = list(csv.reader(view.export(tmp_path / "edp.csv", "edp").open()))
    assert len(rows) - 1 == len(view.points)
    rows = list(csv.reader(view.export(tmp_path / "results.csv", "results").open()))
    assert rows[1][0] == "fadiff" and float(rows[1][4]) == pytest.approx(sched["edp"])
    with pytest.raises(ValueError):
        view.export(tmp_path / "results.png", "results")

    # the schedule file round-trips through the optimiser's own reader
    from optimizer.mapping import load_schedule
    path = view.save_schedule(tmp_path / "schedule.json")
    saved = json.loads(path.read_text())
    assert saved["edp"] == pytest.approx(sched["edp"]) and saved["timeline"] == sched["timeline"]
    assert set(load_schedule(path).mappings) == {"a", "b"}

    # through the menu, with the save dialog answered
    target = tmp_path / "menu-gantt"
    monkeypatch.setattr(view, "_ask_save_path", lambda *a: str(target))
    view.export_menu.findChild(type(view.export_menu.actions()[0]), "export_gantt_svg").trigger()
    assert "<svg" in (tmp_path / "menu-gantt.svg").read_text()


def test_compare_all_methods_adds_a_row_each(qtbot, view, monkeypatch, tiny_json,
                                             tmp_path) -> None:
    from gui.views.optimizer import METHODS

    _open_network(view, monkeypatch, tiny_json)
    # a wall-clock budget is refused for a comparison (it is not the same for every method)
    view.budget_kind.setCurrentText("seconds")
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    assert not view.is_running()
    assert view.errors and "wall-clock budget" in view.errors[-1][0]
    view.errors.clear()
    _setup(view, "small", "random", 20, seed=1)
    added = []
    view.result_added.connect(lambda o: added.append(o.method))
    outcomes = _run(qtbot, view, view.compare_button)
    assert view.errors == []
    # every method, then the refinement alone (the reference row of `compare`)
    assert [o.method for o in outcomes] == list(METHODS) + ["refine-only"] == added
    t = view.results_table
    assert [t.item(r, 0).text() for r in range(t.rowCount())] == list(METHODS) + ["refine-only"]
    assert all(t.item(r, 7).text() == "yes" for r in range(t.rowCount()))   # valid
    # selecting a row shows that run's schedule
    t.selectRow(1)
    assert view.shown is outcomes[1]
    assert view.gantt.schedule is outcomes[1].schedule
    rows = list(csv.reader(view.export(tmp_path / "r.csv", "results").open()))
    assert [r[0] for r in rows[1:]] == list(METHODS) + ["refine-only"]
    assert all(float(r[4]) > 0 for r in rows[1:])


def test_cancel_mid_run_keeps_the_best_so_far_then_app_stays_usable(qtbot, view, monkeypatch,
                                                                    tiny_json) -> None:
    view.network_combo.setCurrentText("resnet18")
    _setup(view, "large", "random", 1_000_000)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert view.is_running() and not view.run_button.isEnabled()
    qtbot.waitUntil(lambda: len(view.points) >= 2, timeout=RUN_TIMEOUT_MS)
    assert "of the budget" in view.status_label.text()           # progress in the status
    with qtbot.waitSignal(view.run_cancelled, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    # the best schedule found so far is kept: a row, its Gantt chart, a Save button
    assert view.results_table.rowCount() == 1
    assert view.results_table.item(0, 0).text() == "random (cancelled: best so far)"
    kept = view.results[0]
    assert kept.stopped_early and kept.schedule["layers"]
    assert view.gantt.bar_count("compute") > 0 and view.save_button.isEnabled()
    assert not view.is_running() and view.run_button.isEnabled()
    assert view.status_label.text().startswith("Cancelled: kept the best schedule so far")
    assert view.last_cancel_latency_s is not None
    assert view.errors == []
    qtbot.waitUntil(_no_thread_left, timeout=5000)
    # a new run works after the cancel
    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "small", "random", 20)
    _run(qtbot, view)
    assert view.results_table.rowCount() == 2


def test_default_budget_is_cpu_seconds_with_a_time_estimate(qtbot, view) -> None:
    """Issue 16 item 6: a fresh view budgets in CPU seconds, and while the search runs the
    status line says how much of the budget is spent and about how long is left."""
    import re

    assert view.budget_kind.currentText() == "CPU seconds"
    assert view.budget_spin.value() == 6
    view.network_combo.setCurrentText("resnet18")
    view.hardware_combo.setCurrentText("large")
    view.method_combo.setCurrentText("random")
    view.budget_spin.setValue(3)
    shown: list[str] = []
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: (shown.append(view.status_label.text()) or
                                 " left · " in shown[-1]), timeout=RUN_TIMEOUT_MS)
    pattern = re.compile(r"(\d+) % of the budget · about ([\d.]+) (ms|s|ks) left · (\d+) "
                         r"evaluations$")
    with_eta = [m for m in map(pattern.search, shown) if m]
    assert with_eta, shown[-3:]
    m = with_eta[-1]
    assert 2 <= int(m.group(1)) <= 100 and float(m.group(2)) > 0 and int(m.group(4)) > 0
    # finished: the estimate is gone from the status line
    assert " left · " not in view.status_label.text()
    assert view.errors == []
    qtbot.waitUntil(_no_thread_left, timeout=5000)


def test_cancel_fadiff_keeps_its_best_schedule(qtbot, view, monkeypatch, tiny_json) -> None:
    view.network_combo.setCurrentText("resnet18")
    _setup(view, "large", "fadiff", 1_000_000)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(view.points) >= 1, timeout=RUN_TIMEOUT_MS)
    with qtbot.waitSignal(view.run_cancelled, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    assert view.results_table.rowCount() == 1 and view.results[0].stopped_early
    assert view.errors == []


def test_evaluations_axis_ends_at_the_count_the_table_shows(qtbot, view, monkeypatch,
                                                           tiny_json) -> None:
    """FADiff's polish evaluates candidates without progress reports: the curves' x axis
    must still end at the run's evaluation count (it ended near 23 for a 1576-count run)."""
    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "small", "fadiff", 60)
    outcomes = _run(qtbot, view)
    t = view.results_table
    header = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    shown = int(t.item(0, header.index("evaluations")).text())
    assert shown == outcomes[0].evaluations
    x, _y = view.curves["best_edp"].getData()
    assert x[-1] == shown
    assert view.points[-1]["evaluations"] == shown


def test_bad_network_json_shows_error_dialog(qtbot, view, monkeypatch, tmp_path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"layers": [{"name": "x", "dims": {"K": 0}}]}')
    _open_network(view, monkeypatch, bad)
    _setup(view, "small", "random", 20)
    with qtbot.waitSignal(view.run_failed, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    message, details = blocker.args
    assert len(view.errors) == 1
    assert "broken.json" in view.errors[0][0] and "dims.K" in view.errors[0][0]
    assert "Traceback" in view.errors[0][1] and details == view.errors[0][1]
    assert view.results_table.rowCount() == 0
    assert view.run_button.isEnabled() and not view.is_running()
    assert view.status_label.text().startswith("Failed")
    qtbot.waitUntil(_no_thread_left, timeout=5000)


def test_cosimulation_on_the_gantt_time_axis(qtbot, view, monkeypatch, tiny_json,
                                             tmp_path) -> None:
    assert not view.cosim_button.isEnabled()      # nothing to co-simulate yet
    # empty plots say what fills them (their axes alone meant nothing)
    notes = view.empty_notes
    assert all(n.shown for n in notes.values())
    assert notes["cosim"].text == "Co-simulate on DRAM for these three panels"
    assert notes["curves"].text == "No search shown:\npress Run"
    assert notes["gantt"].text == "Select a run in the table below for its schedule"
    _open_network(view, monkeypatch, tiny_json)
    # an unfused schedule (one Gantt unit per layer): DOSA never fuses; random search may
    # now (its fusion bits align the tiles), and fuses these two layers into one unit
    _setup(view, "small", "dosa", 20)
    outcomes = _run(qtbot, view)
    assert not notes["curves"].shown and not notes["gantt"].shown and notes["cosim"].shown
    view.memory_combo.setCurrentText("DDR4-3200")
    view.channels_combo.setCurrentText("2")
    assert view.memory_spec() == "DDR4-3200-2ch"
    with qtbot.waitSignal(view.cosim_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.cosim_button, Qt.MouseButton.LeftButton)
    payload = blocker.args[0]
    assert view.errors == []
    assert not notes["cosim"].shown
    cs = payload["cosim"]
    layers = cs["layers"]
    assert [x["name"] for x in layers] == ["a", "b"]
    # per-layer bars start where the Gantt chart's units start
    starts = [u["start"] for u in outcomes[0].schedule["timeline"]]
    np.testing.assert_allclose(view.dram_bars["engine service"].opts["x0"], starts)
    np.testing.assert_allclose(view.dram_bars["engine service"].opts["width"],
                               [x["engine_service_cycles"] for x in layers])
    # every request lands in the bank heatmap; two channels of DDR4 (2 ranks x 16 banks)
    counts = payload["banks"]["counts"]
    assert counts.sum() == sum(x["requests"] for x in layers) > 0
    assert payload["n_banks"] == 2 * payload["banks_per_channel"] == counts.shape[0]
    # one shared x axis: panning the Gantt chart moves the DRAM plots too
    view.plots["gantt"].setXRange(100.0, 900.0, padding=0)
    for key in ("dram_time", "hit_rate", "banks"):
        lo, hi = view.plots[key].viewRange()[0]
        assert (lo, hi) == pytest.approx((100.0, 900.0)), key
    rows = list(csv.reader(view.export(tmp_path / "dram.csv", "dram_time").open()))
    assert [r[0] for r in rows[1:]] == ["a", "b"]
    rows = list(csv.reader(view.export(tmp_path / "banks.csv", "banks").open()))
    assert sum(int(r[3]) + int(r[4]) for r in rows[1:]) == counts.sum()
    assert view.export(tmp_path / "banks.png", "banks").stat().st_size > 0
    qtbot.waitUntil(_no_thread_left, timeout=5000)


def test_cosimulation_cancel(qtbot, view, monkeypatch, tiny_json) -> None:
    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "small", "random", 20)
    _run(qtbot, view)
    with qtbot.waitSignal(view.cosim_cancelled, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.cosim_button, Qt.MouseButton.LeftButton)
        assert view.is_running() and not view.run_button.isEnabled()
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    assert view.cosim is None and view.errors == []
    assert view.cosim_button.isEnabled() and view.run_button.isEnabled()
    qtbot.waitUntil(_no_thread_left, timeout=5000)


def test_hover_over_a_bar_shows_its_tooltip(qtbot, view, monkeypatch, tiny_json) -> None:
    from gui.plots import gantt as gantt_mod

    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "small", "random", 20)
    sched = _run(qtbot, view)[0].schedule
    shown = []
    monkeypatch.setattr(gantt_mod.QToolTip, "showText", lambda pos, text: shown.append(text))
    u = sched["timeline"][-1]
    vb = view.plots["gantt"].vb
    pos = vb.mapViewToScene(pg_point((u["compute"]["start"] + u["compute"]["end"]) / 2, 1.0))
    view.plots["gantt"].scene().sigMouseMoved.emit(pos)
    assert shown and u["name"] in shown[-1]
    assert sched["layers"][-1]["tiling"]["summary"] in shown[-1]


def pg_point(x: float, y: float):
    from PySide6.QtCore import QPointF
    return QPointF(x, y)


def test_gantt_colours_fused_groups_and_hover_text(qtbot) -> None:
    import pyqtgraph as pg

    from gui.plots.gantt import PLAIN_COLOURS, GanttChart

    def lay(name, group):
        return {"name": name, "kind": "conv", "macs": 10, "fusion_group": group,
                "tiling": {"summary": f"tiles of {name}"}, "energy_pj": 5.0,
                "latency_cycles": 10.0, "compute_cycles": 8.0, "dma_cycles": 4.0,
                "utilization": 0.5, "dram_bytes": 64}

    def unit(name, layers, group, start, end):
        return {"name": name, "layers": layers, "group": group, "start": start, "end": end,
                "bound": "compute", "compute": {"start": start, "end": end},
                "dma": {"start": start, "end": start + 1}}

    sched = {"layers": [lay("x", 0), lay("y", 0), lay("z", 1), lay("w", 2)],
             "timeline": [unit("x..y", ["x", "y"], 0, 0, 20), unit("z", ["z"], 1, 20, 30),
                          unit("w", ["w"], 2, 30, 40)]}
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    chart = GanttChart(widget.addPlot())
    chart.set_schedule(sched)
    assert chart.bar_count("compute") == chart.bar_count("DMA") == 3
    assert chart.colours[0] not in PLAIN_COLOURS            # the fused group has its colour
    assert chart.colours[1] in PLAIN_COLOURS and chart.colours[2] in PLAIN_COLOURS
    assert chart.colours[1] != chart.colours[2]             # neighbours stay distinguishable
    text = chart.tooltip_at(5.0, 1.0)
    assert "tiles of x" in text and "tiles of y" in text and "2 layers" in text
    assert "tiles of z" in chart.tooltip_at(25.0, 1.0)
    assert chart.tooltip_at(25.0, 0.0) == ""                # DMA of z ends at 21
    chart.clear()
    assert chart.bar_count("compute") == 0


def test_main_window_can_host_the_view(qtbot) -> None:
    from gui.app import MainWindow
    from gui.views.optimizer import OptimizerView

    window = MainWindow()
    qtbot.addWidget(window)
    view = OptimizerView(window)
    index = window.add_view(view, "Optimiser")
    assert window.views.tabText(index) == "Optimiser"
    window.show_view(view)
    assert window.views.currentWidget() is view
    window.close_project(ask=False)


def test_finished_optimiser_run_is_stored_in_the_open_project(qtbot, tmp_path, monkeypatch):
    """With a project open, each finished search lands in the project (and its tree)."""
    from gui.app import MainWindow
    from gui.optimizer_worker import OptimizerOutcome
    from projects.store import Project

    win = MainWindow()
    qtbot.addWidget(win)
    win.project = Project.create(tmp_path / "p.dmproj")
    win.project_tree.set_project(win.project)
    try:
        outcome = OptimizerOutcome(method="random", seed=1, network="resnet18",
                                   hardware="gemmini-large",
                                   schedule={"edp": 2.0e16, "valid": True, "layers": []},
                                   history=[{"step": 1, "evaluations": 4, "edp": 3.0e16,
                                             "best_edp": 3.0e16, "loss": 1.0}])
        win.optimizer_view.result_added.emit(outcome)
        runs = win.project.optimizer_runs()
        assert len(runs) == 1
        stored = win.project.load_optimizer_run(runs[0])
        assert stored["settings"]["method"] == "random" and stored["schedule"]["edp"] == 2.0e16
        assert list(stored["history"]["evaluations"]) == [4]
        labels = [win.project_tree.tree.topLevelItem(i).text(0)
                  for i in range(win.project_tree.tree.topLevelItemCount())]
        assert any(label.startswith("Optimiser runs") for label in labels)
    finally:
        win.project.close()
        win.project = None
