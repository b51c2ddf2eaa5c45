"""Stored runs in the main window: open one from the project tree (no re-simulation), overlay
others for comparison, the per-bank energy flame graph, and PNG/SVG/CSV export of every plot.

The project is made with the engine directly (two short runs of the demo trace), then opened
through File > Open as a user would (offscreen, see conftest.py).
"""
from __future__ import annotations

import csv
import gc
import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "traces" / "demo.trace"
RUNS = (("ddr4", "DDR4-3200"), ("hbm2", "HBM2"))


@pytest.fixture(scope="module")
def stored_project(tmp_path_factory) -> Path:
    """A saved project with a DDR4 and an HBM2 run of the demo trace."""
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace
    from projects.store import Project

    path = tmp_path_factory.mktemp("proj") / "cmp.dmproj"
    with Project.create(path) as p:
        p.add_trace("demo", DEMO, embed=False, allow_external=True)
        for run_id, preset in RUNS:
            cfg = load_config(preset)
            p.add_config(preset, cfg)
            stats = simulate_trace(cfg, DEMO, SimOptions(epoch=4000))
            p.add_run(run_id, preset, "demo", {"epoch": 4000}, stats)
        p.save()
    return path


@pytest.fixture
def window(qtbot, monkeypatch, stored_project):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1300, 850)
    w.show()
    w.errors = []
    monkeypatch.setattr(w, "_show_error", w.errors.append)
    monkeypatch.setattr(w.simulation_view, "_show_error",
                        lambda msg, det: w.errors.append(msg))
    monkeypatch.setattr(w.project_tree, "_show_error", w.errors.append)
    monkeypatch.setattr(w, "_confirm_discard", lambda: True)       # edits are thrown away
    monkeypatch.setattr(w, "_ask_open_path", lambda: str(stored_project))
    next(a for a in w.file_menu.actions() if a.objectName() == "actionOpenProject").trigger()
    assert w.project is not None, w.errors
    yield w
    w.close_project(ask=False)
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def _open_run(qtbot, w, run_id: str) -> None:
    tree = w.project_tree
    item = next(it for it in tree.items("run") if it.text(0) == run_id)
    pos = tree.tree.visualItemRect(item).center()
    # Qt 6's QTest double click only counts after a click at the same place
    qtbot.mouseClick(tree.tree.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseDClick(tree.tree.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_open_stored_run_shows_its_plots(qtbot, window) -> None:
    from gui.workers import active_runs

    w = window
    view = w.simulation_view
    stored = w.project.load_run("ddr4")
    w.show_view(w.energy_view)
    _open_run(qtbot, w, "ddr4")
    assert not w.errors, w.errors
    assert w.views.currentWidget() is view
    assert not view.is_running() and not active_runs()          # nothing was simulated
    ep = stored["epochs"]
    n = len(ep["end"])
    assert n >= 3
    img = view.heatmap.image
    assert img.shape == (stored["per_bank"]["energy_pJ"].size, n)
    np.testing.assert_allclose(img, np.asarray(ep["bank_utilisation"]).reshape(n, -1).T)
    x, y = view.hit_rate_curve.getData()
    tck = stored["summary"]["tCK_ns"]
    np.testing.assert_allclose(x, np.asarray(ep["end"]) * tck * 1e-9)    # time axis, s
    np.testing.assert_allclose(y, 100 * np.asarray(ep["row_hit_rate"]))  # in %
    bx, by = view.bandwidth_curve.getData()
    np.testing.assert_allclose(by, ep["bandwidth_GBps"])
    hx, hy = view.latency_curve.getData()
    assert hy.sum() > 0 and hy.sum() <= stored["read_latency_hist"].sum()
    assert view.energy_values.sum() > 0
    assert "ddr4" in view.summary_label.text()
    assert f"{100 * stored['summary']['row_hit_rate']:.1f} %" in view.summary_label.text()
    # the energy tab follows the shown run
    assert w.energy_view.record is view.record

    # the context menu's Open does the same for the other run
    tree = w.project_tree
    assert tree.select("run", "hbm2")
    menu = tree.context_menu_for(tree.tree.currentItem())
    open_action = next(a for a in menu.actions() if a.objectName() == "actionOpenItem")
    open_action.trigger()
    assert view.record.run_id == "hbm2"
    assert view.heatmap.image.shape[0] == w.project.load_run("hbm2")["per_bank"][
        "energy_pJ"].size

    # Open on a configuration loads it into the configuration editor
    assert tree.select("config", "HBM2")
    menu = tree.context_menu_for(tree.tree.currentItem())
    next(a for a in menu.actions() if a.objectName() == "actionOpenItem").trigger()
    assert w.config_editor.config() == w.project.get_config("HBM2")
    assert not w.errors, w.errors


def test_comparison_overlay_and_table(qtbot, window, tmp_path) -> None:
    from gui.run_data import KEY_FIGURES

    w = window
    view = w.simulation_view
    _open_run(qtbot, w, "ddr4")
    assert sorted(view.compare_list.item(i).text() for i in range(view.compare_list.count())) \
        == ["ddr4", "hbm2"]
    item = view.compare_item("hbm2")
    item.setCheckState(Qt.CheckState.Checked)            # what a click on its box does
    assert not w.errors, w.errors
    assert list(view.overlays) == ["hbm2"]
    hbm = w.project.load_run("hbm2")
    for plot in ("hit_rate", "bandwidth", "latency"):
        curves = [c for c in view.plots[plot].listDataItems() if c.getData()[0] is not None]
        assert len(curves) == 2, plot
        colours = {pg.mkPen(c.opts["pen"]).color().name() for c in curves}
        assert len(colours) == 2, (plot, colours)             # distinct pens
        legend_names = [label.text for _sample, label in view.legends[plot].items]
        assert "hbm2" in legend_names and "this run" in legend_names, legend_names
    ox, oy = view._overlay_items["hbm2"]["bandwidth"].getData()
    np.testing.assert_allclose(oy, hbm["epochs"]["bandwidth_GBps"])

    header, rows = view.comparison()
    assert header[2] == "hbm2" and header[3] == "hbm2 diff %"
    ddr = w.project.load_run("ddr4")["summary"]
    hs = hbm["summary"]
    # the two memories run on different clocks: time, latency in ns, energy core + IO
    expect = {
        "time_ns": (ddr["num_cycles"] * ddr["tCK_ns"], hs["num_cycles"] * hs["tCK_ns"]),
        "read_latency_ns": (ddr["average_read_latency"] * ddr["tCK_ns"],
                            hs["average_read_latency"] * hs["tCK_ns"]),
        "bandwidth_GBps": (ddr["average_bandwidth"], hs["average_bandwidth"]),
        "row_hit_rate": (100 * ddr["row_hit_rate"], 100 * hs["row_hit_rate"]),
        "energy_pJ": (ddr["total_energy"] + ddr["io_energy"],
                      hs["total_energy"] + hs["io_energy"]),
        "io_energy_pJ": (ddr["io_energy"], hs["io_energy"]),
        "cycles": (ddr["num_cycles"], hs["num_cycles"]),
    }
    assert ddr["tCK_ns"] != hs["tCK_ns"]
    for (key, _label, _unit, comparable), row in zip(KEY_FIGURES, rows):
        a, b = expect[key]
        assert row[1] == pytest.approx(a) and row[2] == pytest.approx(b), key
        if key == "row_hit_rate":                   # a rate: percentage points
            assert row[3] == pytest.approx(b - a), key
        elif comparable:
            assert row[3] == pytest.approx(100.0 * (b - a) / abs(a)), key
        else:
            assert math.isnan(row[3]), key          # cycles of two clocks: no difference
    t = view.compare_table
    assert t.columnCount() == 3 and t.rowCount() == len(KEY_FIGURES)
    labels = [t.verticalHeaderItem(r).text() for r in range(t.rowCount())]
    r_time, r_cyc = labels.index("Time"), labels.index("Cycles (own clock)")
    d_time = 100.0 * (expect["time_ns"][1] - expect["time_ns"][0]) / expect["time_ns"][0]
    # what the user reads: the time in µs, its difference, cycles with their clock, no Δ
    assert t.item(r_time, 0).text().endswith("µs")
    assert t.item(r_time, 2).text() == f"{d_time:+.1f} %".replace("-", "−")
    assert t.item(r_cyc, 0).text().endswith(" cyc")            # the clock in its tooltip
    assert t.item(r_cyc, 0).toolTip().endswith(f"@ {1e3 / ddr['tCK_ns']:.0f} MHz")
    assert t.item(r_cyc, 2).text() == "—"
    r_hits = labels.index("Row hits")
    d_hits = expect["row_hit_rate"][1] - expect["row_hit_rate"][0]
    assert t.item(r_hits, 2).text() == f"{d_hits:+.1f} pp".replace("-", "−")
    # the two clocks: the same trace was offered more slowly to HBM2 (1 GHz) than to DDR4
    note = view.compare_note.text()
    assert view.compare_note.isVisible() and note.startswith("hbm2 runs at tCK 1 ns")
    assert f"came {hs['tCK_ns'] / ddr['tCK_ns']:.2f}x more slowly to hbm2" in note
    r_e = labels.index("Energy (core + IO)")
    from gui.units import fmt
    assert t.item(r_e, 0).text() == fmt(expect["energy_pJ"][0], "pJ")
    # the summary line shows the same total as the table
    assert fmt(expect["energy_pJ"][0], "pJ") in view.summary_label.text()

    out = view.export(tmp_path / "cmp.csv", "comparison")
    lines = list(csv.reader(out.open()))
    assert lines[0] == header and len(lines) == 1 + len(KEY_FIGURES)
    bw = list(csv.reader(view.export(tmp_path / "bw.csv", "bandwidth").open()))
    assert bw[0] == ["run", "time_ns", "bandwidth_GBps"]
    assert {r[0] for r in bw[1:]} == {view.record.label, "hbm2"}
    # overlaid curves on one time axis: the HBM2 curve ends at its own simulated time
    last_hbm = max(float(r[1]) for r in bw[1:] if r[0] == "hbm2")
    assert last_hbm == pytest.approx(hbm["epochs"]["end"][-1] * hs["tCK_ns"], rel=1e-9)

    item.setCheckState(Qt.CheckState.Unchecked)
    assert not view.overlays
    assert all(len([c for c in view.plots[p].listDataItems()]) == 1
               for p in ("hit_rate", "bandwidth", "latency"))
    assert view.compare_table.columnCount() == 1


def test_energy_flame_graph_hover_and_exports(qtbot, window, tmp_path) -> None:
    w = window
    _open_run(qtbot, w, "hbm2")
    ev = w.energy_view
    w.show_view(ev)
    rec = w.simulation_view.record
    per_bank = rec.per_bank["energy_pJ"]
    io = float(rec.summary["energy_by_cause"]["io"])

    ev.set_mode("location")
    assert ev.root.value == pytest.approx(per_bank.sum() + io)
    # the title says what each view does with rank-level energy (it said "their own boxes"
    # here too, where it is shared among the banks)
    assert "rank-level energy shared among the banks" in ev.plot.titleLabel.text
    leaves = [b for b in ev.boxes if b.depth == 3]
    assert len(leaves) == int(np.count_nonzero(per_bank))
    channels = [b for b in ev.boxes if b.depth == 1 and b.node.name.startswith("ch")]
    assert len(channels) == per_bank.shape[0]
    for ch, box in enumerate(channels):
        assert box.width == pytest.approx(per_bank[ch].sum())

    # hover a bank box through the mouse: its path, pJ and % appear
    box = max(leaves, key=lambda b: b.width)
    vb = ev.plot.getViewBox()
    qtbot.waitUntil(lambda: vb.width() > 10, timeout=5000)
    scene_pt = vb.mapViewToScene(QPointF(box.x0 + box.width / 2, box.depth + 0.5))
    ev._on_mouse_moved(scene_pt)
    share = 100.0 * box.width / ev.root.value
    assert ev.hover_label.text().startswith("total → " + " → ".join(box.path[1:]))
    assert f"{share:.2f} %" in ev.hover_label.text() and "pJ" in ev.hover_label.text()

    ev.set_mode("cause")
    assert "refresh, background and IO as their own boxes" in ev.plot.titleLabel.text
    causes = {b.node.name: b for b in ev.boxes if b.depth == 1}
    for cause, value in rec.summary["energy_by_cause"].items():
        if value > 0:
            assert causes[cause].width == pytest.approx(value)
    data_banks = [b for b in ev.boxes if b.depth == 2 and b.path[1] == "data"]
    assert sum(b.width for b in data_banks) == pytest.approx(causes["data"].width)
    assert ev.root.value == pytest.approx(sum(rec.summary["energy_by_cause"].values()))

    for fmt in ("png", "svg", "csv"):
        out = ev.export(tmp_path / f"energy.{fmt}")
        assert out.stat().st_size > 0
    assert (tmp_path / "energy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "energy.svg").read_text()
    assert "<svg" in svg and "</svg>" in svg
    rows = list(csv.reader((tmp_path / "energy.csv").open()))
    assert rows[0][:4] == ["level", "path", "name", "energy_pJ"]
    assert len(rows) == 1 + len(ev.boxes)


def test_every_simulation_plot_exports_png_svg_csv(qtbot, window, tmp_path, monkeypatch) -> None:
    w = window
    view = w.simulation_view
    _open_run(qtbot, w, "ddr4")
    from gui.views.simulation import PLOTS

    for plot in (*PLOTS, None):
        for fmt in ("png", "svg", "csv"):
            out = view.export(tmp_path / f"{plot or 'all'}.{fmt}", plot)
            assert out.stat().st_size > 0, out
            if fmt == "svg":
                text = out.read_text()
                assert text.lstrip().startswith("<?xml") and "</svg>" in text
    # through the Export menu, as a user would (the save dialog monkeypatched)
    target = tmp_path / "menu_latency.svg"
    monkeypatch.setattr(view, "_ask_export_path", lambda plot, fmt: str(target))
    action = view.export_menu.findChild(type(view.export_menu.actions()[0]),
                                        "export_latency_svg")
    action.trigger()
    assert target.is_file() and "</svg>" in target.read_text()
    with pytest.raises(ValueError, match="unknown export format"):
        view.export(tmp_path / "x.bmp", "latency")
    assert not math.isnan(view.comparison()[1][0][1])


def _edit_action(w, name: str):
    return next(a for a in w.edit_menu.actions() if a.objectName() == name)


def test_undo_redo_rename_delete_duplicate(qtbot, window, monkeypatch) -> None:
    w = window
    tree = w.project_tree
    undo, redo = _edit_action(w, "actionUndo"), _edit_action(w, "actionRedo")
    assert undo.shortcut().toString() == "Ctrl+Z"
    assert redo.shortcut().toString() == "Ctrl+Shift+Z"
    assert not undo.isEnabled()
    before = w.project.load_run("ddr4")

    # rename a config: runs follow it; undo renames back, redo again
    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: "fast")
    assert tree.select("config", "DDR4-3200")
    qtbot.mouseClick(tree.rename_button, Qt.MouseButton.LeftButton)
    assert "fast" in tree.names("config")
    assert w.project.load_run("ddr4")["config_name"] == "fast"
    assert undo.isEnabled() and "Rename" in undo.text()
    undo.trigger()
    assert "fast" not in tree.names("config") and "DDR4-3200" in tree.names("config")
    assert w.project.load_run("ddr4")["config_name"] == "DDR4-3200"
    redo.trigger()
    assert "fast" in tree.names("config")
    undo.trigger()

    # delete a run: undo puts it back with all its data
    monkeypatch.setattr(tree, "_confirm", lambda title, text: True)
    assert tree.select("run", "ddr4")
    qtbot.mouseClick(tree.delete_button, Qt.MouseButton.LeftButton)
    assert tree.names("run") == ["hbm2"]
    assert "ddr4" not in [w.simulation_view.compare_list.item(i).text()
                          for i in range(w.simulation_view.compare_list.count())]
    undo.trigger()
    assert sorted(tree.names("run")) == ["ddr4", "hbm2"]
    after = w.project.load_run("ddr4")
    assert after["summary"] == before["summary"]
    np.testing.assert_array_equal(after["epochs"]["end"], before["epochs"]["end"])
    np.testing.assert_array_equal(after["per_bank"]["energy_pJ"],
                                  before["per_bank"]["energy_pJ"])
    redo.trigger()
    assert tree.names("run") == ["hbm2"]
    undo.trigger()

    # duplicate a run: undo removes the copy
    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: default)
    assert tree.select("run", "hbm2")
    qtbot.mouseClick(tree.duplicate_button, Qt.MouseButton.LeftButton)
    assert sorted(tree.names("run")) == ["ddr4", "hbm2", "hbm2 copy"]
    undo.trigger()
    assert sorted(tree.names("run")) == ["ddr4", "hbm2"]
    # a new edit after an undo drops what could have been redone (QUndoStack's model)
    assert tree.undo_stack.count() == 1 and tree.undo_stack.index() == 0

    # the keyboard shortcuts, on the window
    w.activateWindow()
    qtbot.keyClick(w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier
                   | Qt.KeyboardModifier.ShiftModifier)
    assert sorted(tree.names("run")) == ["ddr4", "hbm2", "hbm2 copy"]
    qtbot.keyClick(w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert sorted(tree.names("run")) == ["ddr4", "hbm2"]
    assert not w.errors, w.errors


def test_opening_another_project_clears_the_undo_history(qtbot, window, tmp_path,
                                                         monkeypatch) -> None:
    w = window
    tree = w.project_tree
    monkeypatch.setattr(tree, "_ask_text", lambda title, label, default: "x")
    assert tree.select("run", "hbm2")
    assert tree.rename_selected()
    assert tree.undo_stack.count() == 1
    w.close_project(ask=False)
    assert tree.undo_stack.count() == 0
