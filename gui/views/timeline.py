"""The DRAM command timeline: one lane per bank (grouped by channel, rank and bank group), every
ACT / RD / WR / PRE / REF of a window of a run as a coloured mark, and each row's open
interval (ACT to its PRE) as a bar; hovering a mark tells the command, its bank, row and
column, how long that row had been open and, for a RD / WR, the lifetime of the request it
served (requested, issued, data; drawn as a line in its lane).  The x axis is time (s, SI prefixes), the same
as the simulation view's epoch plots, and can be linked to them (:meth:`link_x`).

Fed by the engine's public command trace (``SimOptions.cmd_trace``, the format DRAMsim3
writes, read back with ``engine.jedec_check.parse_command_trace``).  The engine has no option
to record only a window, so :meth:`TimelineView.record` simulates the trace up to the
window's end (``SimOptions.max_cycles``) in the usual child process and keeps the commands inside
the window: a window early in a long trace costs little, a late one costs the run up to it.
The recorded trace is read and matched in a background thread
(:func:`gui.timeline_requests.load_window`), never on the GUI thread.
Request lifetimes: the command trace does not name requests, so each RD / WR is matched to
the request it served by location (:mod:`gui.timeline_requests`, which decodes the trace's
addresses with the config's address mapping, as the engine does).
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton,
                               QVBoxLayout, QWidget)

#: command kind (the trace's names) -> (legend label, colour)
KINDS = {"activate": ("ACT", "#2ca02c"), "read": ("RD", "#1f77b4"),
         "read_p": ("RD", "#1f77b4"), "write": ("WR", "#ff7f0e"),
         "write_p": ("WR", "#ff7f0e"), "precharge": ("PRE", "#d62728"),
         "refresh": ("REF", "#9467bd"), "refresh_bank": ("REF", "#9467bd")}
MARKS = ("ACT", "RD", "WR", "PRE", "REF")
MARK_COLOURS = {"ACT": "#2ca02c", "RD": "#1f77b4", "WR": "#ff7f0e", "PRE": "#d62728",
                "REF": "#9467bd"}
MAX_LANE_LABELS = 64          # more lanes: only channel / rank / bank-group boundaries


class TimelineView(QWidget):
    """Lanes per bank, command marks and open-row bars of one recorded window."""

    recorded = Signal(int)          # commands in the window, after a recording
    record_failed = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cmds: list[Any] = []           # engine.jedec_check.Cmd inside the window
        self.tck_ns = 1.0
        self.layout_dims = (1, 1, 1, 1)     # channels, ranks, bank groups, banks per group
        self.window = (0, 0)                # cycles
        self.hover_text = ""
        self.source: Any = None             # () -> (cfg, trace path): set by the window
        self._run: Any = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.matching: Any = None           # gui.timeline_requests.Matching of the window
        self._parsing: Any = None           # (box, cfg, window, thread) while reading
        from PySide6.QtCore import QTimer
        self._parse_timer = QTimer(self)
        self._parse_timer.setInterval(30)
        self._parse_timer.timeout.connect(self._poll_parsed)

        self.start_spin = QDoubleSpinBox()
        self.start_spin.setObjectName("timelineStart")
        self.end_spin = QDoubleSpinBox()
        self.end_spin.setObjectName("timelineEnd")
        for spin, value in ((self.start_spin, 0.0), (self.end_spin, 5.0)):
            spin.setRange(0.0, 1e9)
            spin.setDecimals(3)
            spin.setSuffix(" µs")
            spin.setValue(value)
        self.record_button = QPushButton("Record commands")
        self.record_button.setObjectName("recordCommandsButton")
        self.record_button.setToolTip("Simulate the Simulation tab's memory and trace up to "
                                      "the window's end and show every command in the window")
        self.record_button.clicked.connect(lambda: self.record_from_source())
        self.link_check = QCheckBox("Link to epoch plots")
        self.link_check.setObjectName("timelineLink")
        self.link_check.setChecked(True)
        self.link_check.toggled.connect(lambda on: self.link_x(self._link_target if on
                                                               else None))
        self._link_target: Any = None
        self.status_label = QLabel("Choose a window and press Record commands: the run set up "
                                   "in the Simulation tab (its memory and trace) is simulated "
                                   "to the window's end and its commands drawn, one lane per "
                                   "bank")
        self.status_label.setObjectName("timelineStatus")
        self.hover_label = QLabel("")
        self.hover_label.setObjectName("timelineHover")
        self.hover_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hover_label.setWordWrap(True)     # a long lifetime text must not widen the window

        self.plot_widget = pg.PlotWidget()
        self.plot_widget.setObjectName("timelinePlot")
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setTitle("DRAM commands (one lane per bank)")
        self.plot.setLabel("bottom", "time", units="s")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.getAxis("left").setWidth(110)
        self.plot.invertY(True)
        self.plot.setMouseEnabled(x=True, y=True)
        self.plot.showGrid(x=True, y=False, alpha=0.15)
        self.open_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=[],
                                         brush=pg.mkBrush(120, 120, 120, 70), pen=None)
        self.plot.addItem(self.open_bars)
        # the hovered request's lifetime: requested -> issued (thin), issued -> data (thick)
        self.life_wait = pg.PlotDataItem([], [], pen=pg.mkPen("#e6c229", width=2))
        self.life_data = pg.PlotDataItem([], [], pen=pg.mkPen("#e6c229", width=5))
        self.plot.addItem(self.life_wait)
        self.plot.addItem(self.life_data)
        # one compact row in the top-right corner (over the lane area's empty top margin)
        self.legend = self.plot.addLegend(offset=(-5, 1), brush=pg.mkBrush(20, 20, 20, 170),
                                          colCount=len(MARKS))
        self.marks: dict[str, pg.ScatterPlotItem] = {}
        for name in MARKS:
            item = pg.ScatterPlotItem(size=9, symbol="s" if name == "REF" else "o",
                                      pen=None, brush=pg.mkBrush(MARK_COLOURS[name]),
                                      name=name)
            self.plot.addItem(item)            # named: the legend lists it once
            self.marks[name] = item
        self.plot.setXRange(0.0, 1e-6, padding=0)
        self.plot.setYRange(-0.5, 0.5, padding=0)
        self.plot.getAxis("left").setTicks([[]])    # no lanes before a recording
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)

        row = QHBoxLayout()
        row.addWidget(QLabel("Window from"))
        row.addWidget(self.start_spin)
        row.addWidget(QLabel("to"))
        row.addWidget(self.end_spin)
        row.addWidget(self.record_button)
        row.addWidget(self.link_check)
        row.addStretch(1)
        self.status_label.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.status_label)
        lay.addWidget(self.plot_widget, 1)
        lay.addWidget(self.hover_label)

    # ---------------------------------------------------------------- lanes
    def lane(self, ch: int, rank: int, bg: int, bank: int) -> int:
        _c, ranks, bgs, per = self.layout_dims
        return ((ch * ranks + rank) * bgs + bg) * per + bank

    def lanes(self) -> int:
        c, r, g, b = self.layout_dims
        return c * r * g * b

    def lane_name(self, lane: int) -> str:
        _c, ranks, bgs, per = self.layout_dims
        b = lane % per
        g = (lane // per) % bgs
        r = (lane // (per * bgs)) % ranks
        c = lane // (per * bgs * ranks)
        return f"ch{c} r{r} bg{g} b{b}"

    def _lane_ticks(self) -> None:
        n = self.lanes()
        _c, _r, bgs, per = self.layout_dims
        if n <= MAX_LANE_LABELS:
            major = [(i, self.lane_name(i)) for i in range(n)]
        else:
            major = [(i, self.lane_name(i).rsplit(" b", 1)[0]) for i in range(0, n, per)]
        self.plot.getAxis("left").setTicks([major, []])

    # ---------------------------------------------------------------- data
    def seconds(self, cycles: Any) -> np.ndarray:
        return np.asarray(cycles, dtype=np.float64) * (self.tck_ns * 1e-9)

    def set_commands(self, cmds: Sequence[Any], cfg: Any, window: tuple[int, int]) -> int:
        """Show the commands of ``cmds`` (``parse_command_trace`` records, sorted by cycle)
        inside ``window`` (cycles, [start, end)); returns how many are drawn."""
        self.tck_ns = float(cfg.tCK)
        per = max(1, int(cfg.banks_per_group_eff))
        self.layout_dims = (int(cfg.channels), int(cfg.ranks),
                            max(1, int(cfg.banks) // per), per)
        c0, c1 = window
        self.window = (int(c0), int(c1))
        keep = [c for c in cmds if c0 <= c.cycle < c1 and c.kind in KINDS]
        self.cmds = keep
        per_rank = self.layout_dims[2] * self.layout_dims[3]
        pts: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in MARKS}
        open_since: dict[int, tuple[int, int]] = {}
        bars_x0, bars_w, bars_y = [], [], []
        self._row_open: dict[int, list[tuple[int, int, int]]] = {}
        # rows opened before the window and still open in it count too: the recording
        # starts at cycle 0, so every ACT before the window is known
        for c in cmds:
            if c.cycle >= c1:
                break
            if c.kind not in KINDS:
                continue
            inside = c.cycle >= c0
            label = KINDS[c.kind][0]
            if c.bank < 0 or c.bankgroup < 0:     # rank-level (refresh): every bank of it
                if inside:
                    base = self.lane(max(c.channel, 0), c.rank, 0, 0)
                    for k in range(per_rank):
                        pts[label][0].append(c.cycle)
                        pts[label][1].append(base + k)
                continue
            ln = self.lane(c.channel, c.rank, c.bankgroup, c.bank)
            if inside:
                pts[label][0].append(c.cycle)
                pts[label][1].append(ln)
            if c.kind == "activate":
                open_since[ln] = (c.cycle, c.row)
            elif c.kind in ("precharge", "read_p", "write_p") and ln in open_since:
                t0, row = open_since.pop(ln)
                if c.cycle >= c0:
                    bars_x0.append(max(t0, c0))
                    bars_w.append(c.cycle - max(t0, c0))
                    bars_y.append(ln)
                    self._row_open.setdefault(ln, []).append((t0, c.cycle, row))
        for ln, (t0, row) in open_since.items():          # still open at the window's end
            bars_x0.append(max(t0, c0))
            bars_w.append(c1 - max(t0, c0))
            bars_y.append(ln)
            self._row_open.setdefault(ln, []).append((t0, c1, row))
        self._open_now = open_since
        for name, (xs, ys) in pts.items():
            self.marks[name].setData(x=self.seconds(xs), y=np.asarray(ys, dtype=np.float64))
        self.open_bars.setOpts(x0=self.seconds(bars_x0), width=self.seconds(bars_w),
                               y=np.asarray(bars_y, dtype=np.float64),
                               height=np.full(len(bars_y), 0.6))
        self._lane_ticks()
        self.plot.setXRange(float(self.seconds(c0)), float(self.seconds(c1)), padding=0.01)
        self.plot.setYRange(-1.6, self.lanes() - 0.4, padding=0)   # a row for the legend
        counts = {m: len(pts[m][0]) for m in MARKS}
        from gui.units import fmt
        self.status_label.setText(
            f"{len(keep)} commands from {fmt(float(self.seconds(c0)), 's')} to "
            f"{fmt(float(self.seconds(c1)), 's')} on {cfg.name}: "
            + ", ".join(f"{counts[m]} {m}" for m in MARKS))
        return len(keep)

    def set_requests(self, trace: str | Path, cfg: Any, cmds: Sequence[Any],
                     window: tuple[int, int]) -> None:
        """Match the RD / WR of ``cmds`` (all commands from cycle 0, sorted) to the requests
        of ``trace`` for the hover's lifetimes (on this thread: for small recordings)."""
        from gui.timeline_requests import match, read_requests
        note = ""
        try:
            self.matching = match(cmds, cfg, *read_requests(trace, int(window[1])))
        except Exception as exc:  # noqa: BLE001 - the timeline still shows the commands
            self.matching, note = None, str(exc)
        self._describe_matching(note)

    def _describe_matching(self, note: str) -> None:
        m = self.matching
        if m is None:
            if note:
                self.status_label.setText(self.status_label.text()
                                          + f" (request lifetimes unavailable: {note})")
            return
        # (matched by arrival order and location: an estimate for the hover's lifetimes; the
        # engine's own counts are the run's statistics, e.g. num_write_buf_hits)
        unmatched = (f" ({m.unmatched_commands} matched no request by arrival)"
                     if m.unmatched_commands else "")
        self.status_label.setText(
            self.status_label.text() + f"; requests by arrival and location: {m.matched} "
            f"matched to {m.column_commands} RD/WR{unmatched}, {m.forwarded} reads found a "
            f"write to their location still queued, {m.pending} not served by a command in "
            "the window (writes still buffered when the run ended count here); hover a RD/WR "
            "for its request")

    def mark_count(self, name: str) -> int:
        x, _y = self.marks[name].getData()
        return 0 if x is None else int(len(x))

    # ---------------------------------------------------------------- hover
    def describe_at(self, t_s: float, y: float, tol_s: float | None = None) -> str:
        """The command nearest to time ``t_s`` in the lane at ``y`` (within ``tol_s``, default
        1 % of the shown range), with the open interval of its row; "" if none."""
        ln = int(round(y))
        if not 0 <= ln < self.lanes() or not self.cmds:
            return ""
        if tol_s is None:
            (x0, x1), _ = self.plot.getViewBox().viewRange()
            tol_s = 0.01 * (x1 - x0)
        best, dist = None, math.inf
        for c in self.cmds:
            if c.bank < 0 or c.bankgroup < 0:
                base = self.lane(max(c.channel, 0), c.rank, 0, 0)
                hit = base <= ln < base + self.layout_dims[2] * self.layout_dims[3]
            else:
                hit = self.lane(c.channel, c.rank, c.bankgroup, c.bank) == ln
            if hit:
                d = abs(float(self.seconds(c.cycle)) - t_s)
                if d < dist:
                    best, dist = c, d
        if best is None or dist > tol_s:
            self._show_lifetime(None, 0)
            return ""
        from gui.units import fmt, fmt_cycles
        c = best
        label = KINDS[c.kind][0]
        text = (f"{label} ({c.kind}) at {fmt(float(self.seconds(c.cycle)), 's')} "
                f"({fmt_cycles(c.cycle, self.tck_ns)}) · {self.lane_name(ln)}")
        if c.row >= 0:
            text += f" · row {c.row:#x}"
        if c.column >= 0:
            text += f" col {c.column:#x}"
        self._show_lifetime(None, ln)
        served = (self.matching.by_line.get((c.channel, c.line))
                  if self.matching is not None else None)
        if served:
            life = served[0]
            t = self.tck_ns
            text += (f" · request {life.address:#x} ({'write' if life.is_write else 'read'}): "
                     f"requested at {fmt(life.arrival * t, 'ns')}, queued "
                     f"{fmt(life.queued * t, 'ns')}, data {'written' if life.is_write else 'back'}"
                     f" at {fmt(life.done * t, 'ns')}: lifetime {fmt(life.latency * t, 'ns')}")
            if len(served) > 1:
                text += f" (+{len(served) - 1} merged request(s) to this location)"
            self._show_lifetime(life, ln)
        elif c.kind.startswith(("read", "write")) and self.matching is not None:
            text += " · its request is not in the recorded trace"
        for t0, t1, row in self._row_open.get(ln, []):
            if t0 <= c.cycle <= t1:
                text += (f" · row {row:#x} open {fmt((t1 - t0) * self.tck_ns, 'ns')} "
                         f"(ACT at {fmt(t0 * self.tck_ns, 'ns')})")
                break
        return text

    def _show_lifetime(self, life: Any, lane: int) -> None:
        if life is None:
            self.life_wait.setData([], [])
            self.life_data.setData([], [])
            return
        y = [lane + 0.32, lane + 0.32]
        self.life_wait.setData(self.seconds([life.arrival, life.issued]), y)
        self.life_data.setData(self.seconds([life.issued, life.done]), y)

    def hover(self, t_s: float, y: float) -> str:
        self.hover_text = self.describe_at(t_s, y)
        self.hover_label.setText(self.hover_text)
        return self.hover_text

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        from gui.plots.hover_tip import show_hover
        show_hover(self.plot_widget, self.plot, scene_pos, self.hover)

    def link_x(self, plot: pg.PlotItem | None) -> None:
        """Share the x axis (time) with another plot, e.g. the epoch plots: the same range
        in both, whichever is zoomed (not pyqtgraph's setXLink, which lines views up by their
        position on screen, and these sit in different tabs)."""
        old = getattr(self, "_linked", None)
        if old is not None:
            old.getViewBox().sigXRangeChanged.disconnect(self._follow_other)
            self.plot.getViewBox().sigXRangeChanged.disconnect(self._lead_other)
        self._linked = plot
        if plot is not None:
            plot.getViewBox().sigXRangeChanged.connect(self._follow_other)
            self.plot.getViewBox().sigXRangeChanged.connect(self._lead_other)
            self._lead_other(self.plot.getViewBox(), None)

    def linked_plot(self) -> pg.PlotItem | None:
        return getattr(self, "_linked", None)

    def _follow_other(self, vb: Any, _range: Any) -> None:
        if getattr(self, "_syncing", False):
            return
        self._syncing = True
        try:
            self.plot.setXRange(*vb.viewRange()[0], padding=0)
        finally:
            self._syncing = False

    def _lead_other(self, vb: Any, _range: Any) -> None:
        other = getattr(self, "_linked", None)
        if other is None or getattr(self, "_syncing", False):
            return
        self._syncing = True
        try:
            other.setXRange(*vb.viewRange()[0], padding=0)
        finally:
            self._syncing = False

    def set_link_target(self, plot: pg.PlotItem,
                        shows: Callable[[Any], bool] | None = None) -> None:
        """The epoch plot to follow while "Link time axis" is ticked (linked after each
        recording, so the window's range is what both show); ``shows(cfg)``: whether that
        plot shows a run on the recording's memory (a recording on HBM2 zoomed a DDR4 run's
        plots to its window)."""
        self._link_target = plot
        self._link_shows = shows

    # ---------------------------------------------------------------- recording
    def window_cycles(self, tck_ns: float) -> tuple[int, int]:
        start = int(self.start_spin.value() * 1e3 / tck_ns)
        end = int(self.end_spin.value() * 1e3 / tck_ns)
        return start, max(end, start + 1)

    def is_running(self) -> bool:
        """Recording, or reading the recording."""
        return self._run is not None or self._parsing is not None

    def record_from_source(self) -> bool:
        if self.source is None or self.is_running():
            return False
        try:
            cfg, trace = self.source()
        except Exception as exc:  # noqa: BLE001 - shown to the user
            self._show_error(f"Cannot record commands: {exc}", "")
            return False
        return self.record(cfg, trace)

    def record(self, cfg: Any, trace: str | Path, window: tuple[int, int] | None = None
               ) -> bool:
        """Simulate ``trace`` on ``cfg`` up to the window's end with the command trace on
        (child process) and show the window's commands when it finishes."""
        if self.is_running():
            return False
        if window is None and self.end_spin.value() <= self.start_spin.value():
            # (8 us to 3 us recorded "0 commands from 8 us to 8 us" without a word)
            self._show_error("The window's end must be after its start "
                             f"({self.start_spin.value():g} to {self.end_spin.value():g} µs).",
                             "")
            return False
        from gui.workers import start_simulation
        window = window or self.window_cycles(float(cfg.tCK))
        self.hover_text = ""                   # (the last recording's hover, another run's)
        self.hover_label.setText("")
        self._tmp = tempfile.TemporaryDirectory(prefix="diffmem-cmds-")
        path = Path(self._tmp.name) / "commands.txt"
        options = {"max_cycles": int(window[1]), "cmd_trace": str(path),
                   "epoch": max(100, int(window[1]))}
        self._pending = (cfg, path, window, str(trace))
        run = start_simulation(cfg, [str(trace)], options, parent=self)
        run.finished.connect(self._on_recorded)
        run.failed.connect(self._on_failed)
        run.cancelled.connect(self._on_cancelled)
        self._run = run
        self.record_button.setEnabled(False)
        self.status_label.setText(f"Recording commands of {Path(trace).name} on {cfg.name}…")
        return True

    def _done(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            run.deleteLater()
        self.record_button.setEnabled(True)

    def _on_recorded(self, _stats: Any) -> None:
        """The recording finished: read its command trace and match the requests in a
        background thread (a late window's trace has millions of lines: never on the GUI
        thread), then draw (:meth:`_poll_parsed`)."""
        import threading
        import traceback

        from gui.timeline_requests import load_window
        cfg, path, window, trace = self._pending
        # (a window past the run's end showed nothing, and no word of why)
        self._run_end = int(getattr(_stats, "summary", {}).get("num_cycles", window[1]))
        self._done()
        self.record_button.setEnabled(False)
        self.status_label.setText("Reading the recorded commands…")
        box: dict[str, Any] = {}
        tmp, self._tmp = self._tmp, None

        def work() -> None:
            try:
                box["data"] = load_window(path, cfg, window, trace)
            except Exception as exc:  # noqa: BLE001 - shown to the user
                box["error"] = (f"Cannot read the command trace: {exc}",
                                traceback.format_exc())
            finally:
                if tmp is not None:
                    tmp.cleanup()

        self._parsing = (box, cfg, window, threading.Thread(
            target=work, name="diffmem-timeline-read", daemon=True))
        self._parsing[3].start()
        self._parse_timer.start()

    def _poll_parsed(self) -> None:
        if self._parsing is None:
            self._parse_timer.stop()
            return
        box, cfg, window, thread = self._parsing
        if thread.is_alive():
            return
        self._parse_timer.stop()
        self._parsing = None
        self.record_button.setEnabled(True)
        if "error" in box:
            self.status_label.setText(box["error"][0])
            self._show_error(*box["error"])
            return
        data = box["data"]
        self.matching = None
        n = self.set_commands(data.cmds, cfg, window)
        self.matching = data.matching
        self._describe_matching(data.note)
        end = getattr(self, "_run_end", window[1])
        if end < window[1]:
            from gui.units import fmt
            ends = fmt(float(self.seconds(end)), "s")
            self.status_label.setText(self.status_label.text() + f". The run ends at {ends} "
                                      "(every request done): nothing happens after it")
        if self.link_check.isChecked() and self._link_target is not None:
            shows = getattr(self, "_link_shows", None)
            if shows is None or shows(cfg):
                self.link_x(self._link_target)      # the epoch plots zoom to the window
            else:
                self.link_x(None)
                self.status_label.setText(self.status_label.text() + ". Not linked to the "
                                          "epoch plots: they show a run on another memory")
        self.recorded.emit(n)

    def _on_failed(self, message: str, details: str) -> None:
        self._done()
        self.status_label.setText("Recording failed: " + message)
        self._show_error(message, details)
        self.record_failed.emit(message, details)

    def _on_cancelled(self) -> None:
        self._done()
        self.status_label.setText("Recording cancelled")

    def shutdown(self, timeout_ms: int = 30000) -> None:
        run = self._run
        if run is not None:
            run.cancel()
            run.thread.wait(timeout_ms)
        self._parse_timer.stop()
        self._parsing = None            # a reading thread (daemon) is left to end unseen

    def _show_error(self, msg: str, details: str) -> None:
        from PySide6.QtWidgets import QMessageBox
        box = QMessageBox(QMessageBox.Icon.Critical, "Command timeline", msg,
                          QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.exec()
