"""The DRAM command timeline: a user records the first microseconds of the demo trace on
DDR4-3200 and reads the lanes, the ACT/RD/WR/PRE/REF marks and a mark's hover text; the
counts match the engine's own command trace of the same window."""
from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "resources" / "traces" / "demo.trace"


@pytest.fixture
def window(qtbot, monkeypatch):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    w.errors = []
    monkeypatch.setattr(w.timeline_view, "_show_error", lambda m, d: w.errors.append(m))
    yield w
    w.timeline_view.shutdown()
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def test_record_a_window_and_read_its_commands(qtbot, window, tmp_path) -> None:
    from engine.config import load_config
    from engine.jedec_check import parse_command_trace
    from engine.simulator import SimOptions, simulate_trace

    sv, tv = window.simulation_view, window.timeline_view
    assert sv.select_config("DDR4-3200")
    sv.trace_edit.setText(str(DEMO))
    window.show_view(tv)
    tv.start_spin.setValue(2.0)
    tv.end_spin.setValue(12.0)
    with qtbot.waitSignal(tv.recorded, timeout=240_000) as blocker:
        qtbot.mouseClick(tv.record_button, Qt.MouseButton.LeftButton)
    assert not window.errors, window.errors
    cfg = load_config("DDR4-3200")
    c0, c1 = int(2.0e3 / cfg.tCK), int(12.0e3 / cfg.tCK)
    # the engine's own command trace of the same run, filtered to the window
    ref = tmp_path / "ref.txt"
    simulate_trace(cfg, DEMO, SimOptions(cycles=c1, cmd_trace=ref))
    want = [c for c in parse_command_trace(ref) if c0 <= c.cycle < c1]
    assert blocker.args[0] == len(want) > 0
    kinds = {"ACT": ("activate",), "RD": ("read", "read_p"), "WR": ("write", "write_p"),
             "PRE": ("precharge",)}
    for mark, names in kinds.items():
        assert tv.mark_count(mark) == sum(c.kind in names for c in want), mark
    assert tv.mark_count("ACT") > 0 and tv.mark_count("RD") > 0
    # one lane per bank, grouped by rank and bank group, labelled
    assert tv.lanes() == cfg.channels * cfg.ranks * cfg.banks
    ticks = tv.plot.getAxis("left")._tickLevels[0]
    assert ticks[0][1] == "ch0 r0 bg0 b0" and len(ticks) == tv.lanes()
    # the x axis is time: the window as the user typed it
    x0, x1 = tv.plot.getViewBox().viewRange()[0]
    assert x0 <= 2.0e-6 + 1e-7 and x1 >= 12.0e-6 - 1e-7
    # hover the first RD: command, bank, row, column and the row's open interval
    rd = next(c for c in want if c.kind in ("read", "read_p"))
    lane = tv.lane(rd.channel, rd.rank, rd.bankgroup, rd.bank)
    text = tv.hover(rd.cycle * cfg.tCK * 1e-9, lane)
    assert text.startswith("RD (read") and tv.lane_name(lane) in text
    assert f"row {rd.row:#x}" in text and "open" in text
    assert tv.hover_label.text() == text
    # ... and the lifetime of the request it served, drawn in its lane
    from gui.units import fmt
    life = tv.matching.by_line[(rd.channel, rd.line)][0]
    assert life.issued == rd.cycle and not life.is_write and life.arrival <= rd.cycle
    assert f"request {life.address:#x} (read): requested at {fmt(life.arrival * cfg.tCK, 'ns')}" \
        in text and f"lifetime {fmt(life.latency * cfg.tCK, 'ns')}" in text
    xs, _ys = tv.life_data.getData()
    assert xs[-1] == pytest.approx(life.done * cfg.tCK * 1e-9)
    m = tv.matching
    assert (f"requests by arrival and location: {m.matched} matched to {m.column_commands} "
            "RD/WR") in tv.status_label.text()
    # the long texts wrap: the tab still fits the 1280 px window
    assert tv.minimumSizeHint().width() <= window.views.width()
    assert window.minimumSizeHint().width() <= 1280
    # status line: what was drawn
    assert tv.status_label.text().startswith(f"{len(want)} commands from 2.000 µs")
    # linked to the epoch plots' time axis
    assert tv.linked_plot() is sv.plots["bandwidth"]
    bx0, bx1 = sv.plots["bandwidth"].getViewBox().viewRange()[0]
    assert (bx0, bx1) == pytest.approx((x0, x1))                 # the same time range
    sv.plots["bandwidth"].setXRange(3e-6, 5e-6, padding=0)       # zoom the epoch plot
    assert tv.plot.getViewBox().viewRange()[0] == pytest.approx([3e-6, 5e-6])
    tv.link_check.setChecked(False)
    sv.plots["bandwidth"].setXRange(0, 50e-6, padding=0)
    assert tv.plot.getViewBox().viewRange()[0] == pytest.approx([3e-6, 5e-6])


def test_empty_timeline_has_plain_axes(window) -> None:
    tv = window.timeline_view
    assert tv.mark_count("ACT") == 0
    assert tv.hover(0.0, 0.0) == ""
    assert tv.plot.getAxis("bottom").labelUnits == "s"


def test_reading_a_recording_never_blocks_the_window(qtbot, window, monkeypatch) -> None:
    """The command trace of a late window has millions of lines: it is read and matched in a
    background thread while the window keeps answering.  Here the reading waits until the
    window's event loop has run a timer callback: were it read on the GUI thread, that could
    never happen (the wait would time out and say so)."""
    import threading

    from PySide6.QtCore import QTimer

    import gui.timeline_requests as tr
    real = tr.load_window
    went_on = threading.Event()
    waited: list[bool] = []

    def reading(*a, **kw):
        waited.append(went_on.wait(120))
        return real(*a, **kw)

    monkeypatch.setattr(tr, "load_window", reading)
    sv, tv = window.simulation_view, window.timeline_view
    assert sv.select_config("DDR4-3200")
    sv.trace_edit.setText(str(DEMO))
    tv.start_spin.setValue(0.0)
    tv.end_spin.setValue(1.0)
    with qtbot.waitSignal(tv.recorded, timeout=240_000):
        assert tv.record_from_source()
        qtbot.waitUntil(lambda: tv._parsing is not None, timeout=240_000)
        assert tv.is_running() and not tv.record_button.isEnabled()
        assert tv.status_label.text() == "Reading the recorded commands…"
        QTimer.singleShot(0, went_on.set)           # runs only if the event loop does
    assert waited == [True]
    assert not tv.is_running() and tv.record_button.isEnabled() and tv.mark_count("RD") > 0


def test_a_reversed_window_is_refused_and_a_late_one_says_the_run_ended(qtbot, window,
                                                                       monkeypatch) -> None:
    """A window from 8 us to 3 us recorded "0 commands from 8 us to 8 us"; one past the run's
    end showed nothing with no word of why."""
    from engine.config import load_config
    tv = window.timeline_view
    errors = []
    monkeypatch.setattr(tv, "_show_error", lambda msg, det: errors.append(msg))
    cfg = load_config("DDR4-3200")
    tv.start_spin.setValue(8.0)
    tv.end_spin.setValue(3.0)
    assert tv.record(cfg, DEMO) is False
    assert errors == ["The window's end must be after its start (8 to 3 µs)."]
    tv.start_spin.setValue(200.0)
    tv.end_spin.setValue(210.0)
    with qtbot.waitSignal(tv.recorded, timeout=240_000):
        assert tv.record(cfg, DEMO)
    assert "The run ends at 70.73 µs (every request done): nothing happens after it" in \
        tv.status_label.text()


def test_a_recording_on_another_memory_does_not_zoom_the_shown_run(qtbot, window) -> None:
    """A recording made on HBM2 zoomed the epoch plots of the DDR4 run shown to its window:
    the link now follows only a recording on the shown run's memory, and says so."""
    from engine.config import load_config
    from gui.run_data import RunRecord
    sv, tv = window.simulation_view, window.timeline_view
    ddr4 = load_config("DDR4-3200")
    sv.record = RunRecord.from_epochs("a DDR4 run", {"config": "DDR4-3200",
                                                     "tCK_ns": ddr4.tCK}, [], [])
    assert sv.shows_memory(ddr4) and not sv.shows_memory(load_config("HBM2"))
    tv.link_check.setChecked(True)
    tv.start_spin.setValue(0.0)
    tv.end_spin.setValue(2.0)
    with qtbot.waitSignal(tv.recorded, timeout=240_000):
        assert tv.record(load_config("HBM2"), DEMO)
    assert tv.linked_plot() is None
    assert tv.status_label.text().endswith("Not linked to the epoch plots: they show a run on "
                                           "another memory")
    with qtbot.waitSignal(tv.recorded, timeout=240_000):
        assert tv.record(ddr4, DEMO)
    assert tv.linked_plot() is sv.plots["bandwidth"]
