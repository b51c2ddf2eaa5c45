"""The simulation view driven as a user would (offscreen, see conftest.py).

The first run in a process compiles the numba kernel (30-60 s), hence the long timeouts.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "traces" / "demo.trace"
RUN_TIMEOUT_MS = 240_000


@pytest.fixture
def view(qtbot):
    from gui.views.simulation import SimulationView

    v = SimulationView()
    qtbot.addWidget(v)
    v.resize(1000, 800)
    v.show()
    yield v
    v.shutdown()
    qtbot.waitUntil(lambda: not v.is_running(), timeout=RUN_TIMEOUT_MS)
    # delete the view and its pyqtgraph items now rather than at interpreter exit
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent
    v.close()
    v.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    del v
    gc.collect()


def _setup(qtbot, view, trace: Path, epoch: int = 2000) -> None:
    idx = view.config_combo.findText("DDR4-3200")
    assert idx >= 0
    view.config_combo.setCurrentIndex(idx)
    view.trace_edit.clear()
    qtbot.keyClicks(view.trace_edit, str(trace))
    view.epoch_spin.setValue(epoch)


def _no_thread_left() -> bool:
    from gui.workers import active_runs
    return not active_runs()


def test_run_demo_trace_and_export(qtbot, view, tmp_path, monkeypatch) -> None:
    errors = []
    monkeypatch.setattr(view, "_show_error", lambda msg, det: errors.append((msg, det)))
    # before any run the heatmap says how to get one (the empty axes alone meant nothing)
    assert view.empty_note.shown and view.empty_note.text == (
        "No run shown: pick a memory and a trace and press Start,\n"
        "or double-click a stored run in the project tree")
    _setup(qtbot, view, DEMO)
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
        assert not view.start_button.isEnabled()
        assert view.cancel_button.isEnabled()
    assert not errors
    stats = blocker.args[0]
    assert not view.empty_note.shown
    assert _no_thread_left()
    assert view.start_button.isEnabled() and not view.cancel_button.isEnabled()

    n_epochs = len(stats.epochs) if hasattr(stats, "epochs") else None
    img = view.heatmap.image
    cfg_banks = stats.per_bank["energy_pJ"].size      # channels x ranks x banks
    assert img.shape[0] == cfg_banks
    assert img.shape[1] >= 5
    assert np.all((img >= 0) & (img <= 1))
    x, y = view.hit_rate_curve.getData()
    assert len(x) == len(y) == img.shape[1]
    if n_epochs is not None:
        assert img.shape[1] <= n_epochs
    bx, by = view.bandwidth_curve.getData()
    assert len(bx) == img.shape[1] and np.nanmax(by) > 0

    hx, hy = view.latency_curve.getData()
    assert len(hy) > 0 and hy.sum() > 0
    assert len(view.energy_labels) > 0 and view.energy_values.sum() > 0
    assert len(view.energy_bars.opts["height"]) == len(view.energy_labels)

    rate = 100.0 * stats.summary["row_hit_rate"]
    assert "row-hit rate" in view.summary_label.text()
    assert f"{rate:.1f} %" in view.summary_label.text()
    assert view.progress_bar.value() == view.progress_bar.maximum()

    png, csv_all = tmp_path / "plots.png", tmp_path / "plots.csv"
    view.export_png(png)
    view.export_csv(csv_all)
    for name in ("heatmap", "hit_rate", "bandwidth", "latency", "energy"):
        view.export_png(tmp_path / f"{name}.png", plot=name)
        view.export_csv(tmp_path / f"{name}.csv", plot=name)
    for p in tmp_path.iterdir():
        assert p.stat().st_size > 0, p
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    hit_rows = (tmp_path / "hit_rate.csv").read_text().splitlines()
    assert hit_rows[0] == "time_ns,row_hit_rate_pct" and len(hit_rows) == 1 + img.shape[1]


def test_cancel(qtbot, view) -> None:
    _setup(qtbot, view, DEMO, epoch=500)
    with qtbot.waitSignal(view.run_cancelled, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    assert view.start_button.isEnabled()
    assert not view.cancel_button.isEnabled()
    assert not view.is_running()
    assert _no_thread_left()
    assert view.status_label.text() == "Cancelled"


def test_malformed_trace_shows_error(qtbot, view, tmp_path, monkeypatch) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("0x1000 READ 0\n0x1040 READ 4\n0x1080 FOO bar baz\n0x10c0 READ 12\n")
    shown = []
    monkeypatch.setattr(view, "_show_error", lambda msg, det: shown.append((msg, det)))
    _setup(qtbot, view, bad)
    with qtbot.waitSignal(view.run_failed, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    assert len(shown) == 1
    msg, details = shown[0]
    assert "bad.trace" in msg and ":3" in msg, msg
    assert "Traceback" in details
    assert _no_thread_left()
    # the view stays usable: a good trace runs afterwards
    assert view.start_button.isEnabled()
    assert view.trace_edit.isEnabled()


def test_a_trace_placed_for_another_memory_is_noted_beside_the_run(qtbot, view, tmp_path,
                                                                   monkeypatch) -> None:
    """`simulate` warned of a generated trace placed for another memory, the window did not:
    the user saw DDR4 figures of an HBM2 placement with no word.  The note now shows under the
    status line for that run, and goes with the next run on the trace's own memory."""
    from engine.workloads.generate import TraceSpec, generate_trace

    errors = []
    monkeypatch.setattr(view, "_show_error", lambda msg, det: errors.append((msg, det)))
    trace = tmp_path / "resnet_hbm2.h5"
    generate_trace(TraceSpec("resnet50", batch=1, size="tiny", cache_bytes=0,
                             memory="HBM2"), trace)
    _setup(qtbot, view, trace)
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    assert not errors
    note = view.notes_label.text()
    assert view.notes_label.isVisible()
    assert "resnet_hbm2.h5: placed for HBM2" in note and "replayed on DDR4-3200" in note

    view.config_combo.setCurrentIndex(view.config_combo.findText("HBM2"))
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    assert not errors
    assert not view.notes_label.isVisible() and view.notes_label.text() == ""


def test_heatmap_columns_lie_on_their_epochs() -> None:
    """A run of 11 whole 10,000-cycle epochs and a partial one was drawn as 12 equal columns
    stretched to the run's end: each column too narrow, the last ones up to 4.4 us off the
    epochs of the plots below. The columns are now one epoch wide (the last cut by the x
    range at the run's end)."""
    from gui.views.simulation import heatmap_width
    ends = np.array([10_000.0 * k for k in range(1, 12)] + [112_277.0])
    assert heatmap_width(ends) == 120_000.0
    assert heatmap_width(np.array([5.0])) == 5.0
    assert heatmap_width(np.array([3.0, 10.0, 12.0])) == 12.0     # uneven: the run's end
    assert heatmap_width(np.array([])) == 1.0


def test_the_heatmap_follows_the_epoch_plots_time_range(qtbot, view, monkeypatch) -> None:
    """Zooming the hit-rate / bandwidth plots (the command timeline's link does) left the
    bank heatmap on the whole run: it now shows the same time range."""
    monkeypatch.setattr(view, "_show_error", lambda msg, det: None)
    _setup(qtbot, view, DEMO)
    with qtbot.waitSignal(view.run_finished, timeout=RUN_TIMEOUT_MS):
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    view.plots["bandwidth"].setXRange(2e-6, 12e-6, padding=0)
    x0, x1 = view.plots["heatmap"].getViewBox().viewRange()[0]
    assert (x0, x1) == pytest.approx((2e-6, 12e-6))
