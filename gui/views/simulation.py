"""The simulation view: pick a memory and a trace, run it, watch the epochs, export the plots.

Plots are updated in place (``setData`` / ``setImage``) by a 10 Hz timer (REFRESH_MS) that
draws the epochs received since the last tick, so a fast simulation never floods the GUI thread; the
epochs are kept in growing numpy buffers (:class:`EpochBuffer`), so a tick costs the same at
the end of a long run as at its start.  The engine runs in a child process driven by a worker
thread (``gui.workers``); nothing here imports the numba kernels.

A finished run, or a run stored in a project (:meth:`SimulationView.show_record`), is shown as
a :class:`gui.run_data.RunRecord`.  The "Compare" panel overlays stored runs of the open
project on the hit-rate, bandwidth and latency plots (one pen each, with a legend) and lists
their key figures beside the shown run's, with the difference in %.

Every plot exports as PNG, SVG and CSV (:meth:`SimulationView.export`, or the Export menu).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QFormLayout,
                               QGroupBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QListWidget, QListWidgetItem, QMenu, QMessageBox, QProgressBar,
                               QPushButton, QSpinBox, QSplitter, QTableWidget,
                               QTableWidgetItem, QToolButton, QVBoxLayout, QWidget)

from gui import plot_export
from gui import units as U
from gui.theme import NOTE_STYLE
from gui.project_lists import preset_names, project_names
from gui.run_data import (KEY_FIGURES, RunRecord, clock_notes, key_figures,
                          percent_difference, tck_ns)

REPO = Path(__file__).resolve().parents[2]
DEMO_TRACE = REPO / "resources" / "traces" / "demo.trace"
REFRESH_MS = 100           # live redraw at 10 Hz: one repaint of the grid costs 40-130 ms
MAX_HIST_BINS = 512        # the latency histogram is drawn with at most this many bins
PLOTS = ("heatmap", "hit_rate", "bandwidth", "latency", "energy")
OVERLAY_PLOTS = ("hit_rate", "bandwidth", "latency")
#: Pens of the compared runs, in order (the shown run keeps its own colour per plot).
OVERLAY_COLOURS = ("#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                   "#bcbd22", "#17becf")
RUN_ID_ROLE = Qt.ItemDataRole.UserRole
CONFIG_ROLE = Qt.ItemDataRole.UserRole      # ("project" | "preset" | "editor", name)
EDITOR_ENTRY = "Edited in the configuration editor"


def peak_bandwidth_GBps(cfg: Any) -> float:
    """The memory's peak data bandwidth in GB/s: every channel moving one request per burst
    (request bytes / (burst cycles x tCK)); NaN when the config lacks a field."""
    try:
        return float(cfg.peak_bandwidth_GBps)
    except Exception:  # noqa: BLE001 - an odd config: no peak line
        return math.nan


def note_label(name: str) -> QLabel:
    """A line for what the view must say beside its figures (amber, wrapped, selectable),
    hidden while it has nothing to say (:func:`show_notes`)."""
    label = QLabel("")
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setStyleSheet(NOTE_STYLE)
    label.hide()
    return label


def show_notes(label: QLabel, notes: Sequence[str]) -> None:
    """Show ``notes`` one a line in ``label``, or hide it when there are none."""
    label.setText("\n".join(notes))
    label.setVisible(bool(notes))


def heatmap_width(ends: np.ndarray) -> float:
    """Width of the bank heatmap's image on the time axis (its columns are equal): the
    epoch length times the epochs when every epoch but the last is that long, so that each
    column lies on its epoch and the last, partial one is cut by the x range at the run's
    end (the image stretched to the run's end put a 12-epoch run's columns up to 4.4 us off
    the hit-rate and bandwidth plots' epochs); the run's end otherwise."""
    x = np.asarray(ends, dtype=np.float64)
    if not x.size:
        return 1.0
    widths = np.diff(np.concatenate([[0.0], x]))
    if x.size >= 2 and widths[0] > 0 and np.allclose(widths[:-1], widths[0], rtol=1e-9):
        return float(widths[0] * x.size)
    return float(x[-1])


def trim_histogram(hist: np.ndarray, quantile: float = 0.999,
                   max_bins: int = MAX_HIST_BINS) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges, counts) of a per-cycle histogram, cut at ``quantile`` of its mass.

    Leading empty bins are dropped too, and bins are merged (equal widths) so that at most
    ``max_bins`` remain: a long tail of single-cycle bins costs a lot to draw.  An empty
    histogram gives empty arrays.
    """
    hist = np.asarray(hist, dtype=np.float64).reshape(-1)
    total = hist.sum()
    if total <= 0:
        return np.zeros(0), np.zeros(0)
    cum = np.cumsum(hist)
    hi = int(np.searchsorted(cum, quantile * total)) + 1
    lo = int(np.argmax(hist > 0))
    counts = hist[lo:hi]
    width = max(1, -(-counts.size // max_bins))           # ceil
    if width > 1:
        pad = (-counts.size) % width
        counts = np.concatenate([counts, np.zeros(pad)]).reshape(-1, width).sum(axis=1)
    edges = lo + width * np.arange(counts.size + 1, dtype=np.float64)
    return edges, counts


class EpochBuffer:
    """The epochs of a live run in growing numpy arrays (amortised O(1) per epoch)."""

    SCALARS = ("end", "row_hit_rate", "bandwidth_GBps", "avg_read_latency")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.n = 0
        self._cap = 0
        self._scalars = {k: np.zeros(0) for k in self.SCALARS}
        self._util = np.zeros((0, 0))

    def __len__(self) -> int:
        return self.n

    def extend(self, records: list[dict]) -> None:
        if not records:
            return
        need = self.n + len(records)
        banks = int(np.asarray(records[0]["bank_utilisation"]).size)
        if need > self._cap or self._util.shape[0] != banks:
            cap = max(64, 2 * need)
            for k, v in self._scalars.items():
                grown = np.full(cap, np.nan)
                grown[:self.n] = v[:self.n]
                self._scalars[k] = grown
            util = np.zeros((banks, cap))
            if self._util.shape[0] == banks:
                util[:, :self.n] = self._util[:, :self.n]
            self._util = util
            self._cap = cap
        for i, r in enumerate(records, start=self.n):
            for k in self.SCALARS:
                self._scalars[k][i] = r[k]
            self._util[:, i] = np.asarray(r["bank_utilisation"], np.float64).reshape(-1)
        self.n = need

    def arrays(self) -> dict[str, np.ndarray]:
        out = {k: v[:self.n] for k, v in self._scalars.items()}
        out["utilisation"] = self._util[:, :self.n]
        return out


class SimulationView(QWidget):
    """Config + trace + epoch length, Start/Cancel, progress, five live plots, comparison."""

    run_finished = Signal(object)        # Stats, after the worker thread was joined
    run_failed = Signal(str, str)        # message, traceback
    run_cancelled = Signal()
    record_shown = Signal(object)        # RunRecord now on the plots (finished or stored run)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._run = None
        self._stats = None
        self._pending: list[dict] = []
        self._epochs = EpochBuffer()
        self.record: RunRecord | None = None
        self._live_label = ""
        self._project: Any = None
        self.overlays: dict[str, RunRecord] = {}
        self._overlay_items: dict[str, dict[str, Any]] = {}
        self._build_controls()
        self._build_plots()
        self._build_compare()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._refresh)
        self._set_running(False)

    # ---------------------------------------------------------------- layout
    def _build_controls(self) -> None:
        self.config_combo = QComboBox()
        self.config_combo.setObjectName("configCombo")
        self.config_combo.setToolTip("The project's configurations, the shipped presets, or "
                                     "what the configuration editor holds now")
        self.editor_config: Any = None      # callable -> MemoryConfig (the window sets it)
        self.refresh_configs()
        self.trace_edit = QLineEdit(str(DEMO_TRACE) if DEMO_TRACE.is_file() else "")
        self.trace_edit.setObjectName("traceEdit")
        self.trace_edit.setPlaceholderText("request trace (.trace text, .dmt binary, .h5)")
        self.browse_button = QToolButton()
        self.browse_button.setText("…")
        self.browse_button.setToolTip("Choose a trace file")
        self.browse_button.clicked.connect(self._browse)
        self.epoch_spin = QSpinBox()
        self.epoch_spin.setObjectName("epochSpin")
        self.epoch_spin.setRange(100, 2_000_000_000)
        self.epoch_spin.setSingleStep(1000)
        self.epoch_spin.setValue(10000)
        self.epoch_spin.setSuffix(" cycles")
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("startButton")
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setTextVisible(False)
        self.status_label = QLabel("Ready")
        self.status_label.setObjectName("statusLabel")
        self.summary_label = QLabel("")
        self.summary_label.setObjectName("summaryLabel")
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary_label.setWordWrap(True)      # a long summary must not widen the window
        self.status_label.setWordWrap(True)
        # what the trace says against the memory (a generated trace placed for another
        # memory): shown from the run's start until the next run
        self.notes_label = note_label("notesLabel")

        trace_row = QHBoxLayout()
        trace_row.addWidget(self.trace_edit, 1)
        trace_row.addWidget(self.browse_button)
        form = QFormLayout()
        form.addRow("Memory", self.config_combo)
        form.addRow("Trace", trace_row)
        form.addRow("Epoch", self.epoch_spin)
        self.export_button = QToolButton()
        self.export_button.setObjectName("exportButton")
        self.export_button.setText("Export")
        self.export_button.setToolTip("Export a plot as PNG, SVG or CSV")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.export_menu = QMenu(self.export_button)
        titles = {"heatmap": "Bank utilisation", "hit_rate": "Row-buffer hit rate",
                  "bandwidth": "Bandwidth", "latency": "Read latency", "energy": "Energy",
                  None: "All plots", "comparison": "Comparison table"}
        for plot, title in titles.items():
            sub = self.export_menu.addMenu(title)
            for fmt in (("csv",) if plot == "comparison" else plot_export.FORMATS):
                action = sub.addAction(fmt.upper() + "…")
                action.setObjectName(f"export_{plot or 'all'}_{fmt}")
                action.triggered.connect(
                    lambda _c=False, p=plot, f=fmt: self._export_interactive(p, f))
        self.export_button.setMenu(self.export_menu)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress_bar, 1)
        buttons.addWidget(self.export_button)
        self._top = QVBoxLayout(self)
        self._top.addLayout(form)
        self._top.addLayout(buttons)
        self._top.addWidget(self.status_label)
        self._top.addWidget(self.notes_label)
        self._top.addWidget(self.summary_label)

    def _build_plots(self) -> None:
        self.plot_widget = pg.GraphicsLayoutWidget()
        self.plot_widget.setObjectName("plotWidget")
        lay = self.plot_widget
        self.plots: dict[str, pg.PlotItem] = {}

        p = lay.addPlot(row=0, col=0, colspan=2, title="Bank utilisation (row open)")
        p.setLabel("bottom", "time", units="s")
        p.setLabel("left", "channel · rank · bank group")
        p.getAxis("left").enableAutoSIPrefix(False)
        self.heatmap = pg.ImageItem(axisOrder="row-major")   # image[bank, epoch]
        self.heatmap.setLevels((0.0, 1.0))
        cmap = pg.colormap.get("viridis")
        self.heatmap.setLookupTable(cmap.getLookupTable(nPts=256))
        p.addItem(self.heatmap)
        self.colour_bar = pg.ColorBarItem(values=(0.0, 100.0), colorMap=cmap, label="row open (%)",
                                          interactive=False, width=14)
        lay.addItem(self.colour_bar, row=0, col=2)
        self.plots["heatmap"] = p

        p = lay.addPlot(row=1, col=0, title="Row-buffer hit rate (%)")
        p.setLabel("bottom", "time", units="s")
        p.setYRange(0.0, 100.0, padding=0)
        p.getAxis("left").enableAutoSIPrefix(False)
        self.legends: dict[str, pg.LegendItem] = {"hit_rate": self._legend(p)}
        self.hit_rate_curve = p.plot([], [], pen=pg.mkPen("c", width=2), name="this run")
        self.plots["hit_rate"] = p

        p = lay.addPlot(row=1, col=1, colspan=2, title="Bandwidth (GB/s)")
        p.setLabel("bottom", "time", units="s")
        p.getAxis("left").enableAutoSIPrefix(False)
        p.setYRange(0.0, 1.0)
        p.enableAutoRange(axis="y", enable=False)
        self.legends["bandwidth"] = self._legend(p)
        self.bandwidth_curve = p.plot([], [], pen=pg.mkPen("y", width=2), name="this run")
        self.peak_line = pg.InfiniteLine(angle=0, movable=False,
                                         pen=pg.mkPen("#e06c75", width=1,
                                                      style=Qt.PenStyle.DashLine),
                                         label="", labelOpts={"position": 0.02,
                                                              "color": "#e06c75",
                                                              "anchors": [(0, 1), (0, 1)]})
        self.peak_line.setVisible(False)
        p.addItem(self.peak_line)
        self.peak_GBps = math.nan
        self.plots["bandwidth"] = p

        p = lay.addPlot(row=2, col=0, title="Read latency (to 99.9th pct)")
        p.setLabel("bottom", "read latency", units="s")
        p.setLabel("left", "reads")
        p.getAxis("left").enableAutoSIPrefix(False)
        self.latency_curve = pg.PlotDataItem([0.0, 1.0], [0.0], stepMode="center",
                                             fillLevel=0, brush=(80, 160, 255, 120),
                                             pen=pg.mkPen("#50a0ff", width=1),
                                             skipFiniteCheck=True)
        self.latency_curve.setData([], [])
        self.legends["latency"] = self._legend(p)
        p.addItem(self.latency_curve)
        self.legends["latency"].addItem(self.latency_curve, "this run")
        self.plots["latency"] = p

        p = lay.addPlot(row=2, col=1, colspan=2, title="Energy (core + IO)")
        p.invertY(True)                     # horizontal bars, first component on top
        p.setLabel("bottom", "energy", units="J")
        p.getAxis("bottom").setScale(1e-12)  # bars in pJ, axis in J with an SI prefix
        self.energy_bars = pg.BarGraphItem(x0=[], y=[], height=[], width=[], brush="m")
        p.addItem(self.energy_bars)
        self.energy_labels: list[str] = []
        self.energy_values = np.zeros(0)
        self.plots["energy"] = p

        # fixed left-axis widths: otherwise every change of the tick labels' width while the
        # curves grow re-lays out the whole grid (a full repaint of all five plots)
        for name, p in self.plots.items():
            p.getAxis("left").setWidth(62 if name == "energy" else
                                       (90 if name == "heatmap" else 48))
        # the hit-rate and bandwidth plots share one time axis (same width, side by side);
        # the heatmap spans both columns, and pyqtgraph lines up overlapping linked views on
        # screen, so it keeps its own
        self.plots["hit_rate"].setXLink(self.plots["bandwidth"])
        # ... but follows their time range by value (a zoom of the epoch plots, e.g. from the
        # command timeline's link, left the heatmap on the whole run)
        self.plots["bandwidth"].getViewBox().sigXRangeChanged.connect(self._heatmap_follows)
        self._tck = math.nan                # ns per cycle of the run on the plots
        from gui.plots.empty_note import EmptyNote
        self.empty_note = EmptyNote(
            self.plots["heatmap"], "No run shown: pick a memory and a trace and press Start,\n"
            "or double-click a stored run in the project tree")
        self._set_empty_ranges()
        self.empty_note.show()

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("simulationSplitter")
        self.splitter.addWidget(self.plot_widget)
        self._top.addWidget(self.splitter, 1)

    @staticmethod
    def _legend(p: pg.PlotItem) -> pg.LegendItem:
        """A legend on a half-transparent box in the plot's top-right corner (readable where
        it sits over a curve)."""
        return p.addLegend(offset=(-5, 5), brush=pg.mkBrush(20, 20, 20, 170),
                           pen=pg.mkPen("#666666"), labelTextSize="8pt")

    def _set_empty_ranges(self) -> None:
        """Plain axes for empty plots (not pyqtgraph's "(x0.001) -400...400")."""
        for name in ("heatmap", "hit_rate", "bandwidth", "latency"):
            self.plots[name].setXRange(0.0, 1e-6, padding=0)
        self.plots["heatmap"].setYRange(0.0, 1.0, padding=0)
        self.plots["bandwidth"].setYRange(0.0, 1.0, padding=0)
        self.plots["latency"].setYRange(0.0, 1.0, padding=0)
        self.plots["energy"].setXRange(0.0, 1.0, padding=0)
        self.plots["energy"].setYRange(-0.5, 0.5, padding=0)
        self.plots["heatmap"].getAxis("left").setTicks([[], []])

    def set_bank_layout(self, channels: int, ranks: int, bankgroups: int, banks: int) -> None:
        """Label the heatmap's rows: channel and rank (major ticks) and bank group (minor)."""
        per_rank = max(1, banks)
        bg = max(1, bankgroups)
        per_group = max(1, per_rank // bg)
        major, minor = [], []
        for c in range(channels):
            for r in range(ranks):
                base = (c * ranks + r) * per_rank
                major.append((base + 0.5 * min(per_group, per_rank),
                              f"ch{c} r{r}" if ranks > 1 or channels > 1 else "rank 0"))
                if bg > 1 and channels * ranks <= 8:
                    for g in range(1, bg):
                        minor.append((base + g * per_group + 0.5, f"bg{g}"))
        self.bank_layout = (channels, ranks, bankgroups, banks)
        self.plots["heatmap"].getAxis("left").setTicks([major, minor])

    def _bank_layout_from(self, record: RunRecord, cfg: Any = None) -> None:
        shape = np.asarray(record.per_bank.get("energy_pJ", np.zeros(0))).shape
        if cfg is not None:
            self.set_bank_layout(int(cfg.channels), int(cfg.ranks), int(cfg.bankgroups),
                                 int(cfg.banks))
        elif len(shape) == 3:
            self.set_bank_layout(shape[0], shape[1], 1, shape[2])

    def set_peak_bandwidth(self, peak_GBps: float) -> None:
        """Draw the memory's peak bandwidth (channels x burst bytes / burst time) as a line."""
        self.peak_GBps = float(peak_GBps)
        ok = math.isfinite(self.peak_GBps) and self.peak_GBps > 0
        self.peak_line.setVisible(ok)
        if ok:
            self.peak_line.setPos(self.peak_GBps)
            self.peak_line.label.setFormat(f"peak {U.fmt(self.peak_GBps, 'GB/s')}")
        self._fit_bandwidth_axis()

    def _fit_bandwidth_axis(self) -> None:
        """y from 0 to the larger of the peak and the highest curve (15 % headroom)."""
        top = self.peak_GBps if math.isfinite(self.peak_GBps) else 0.0
        for item in self.plots["bandwidth"].listDataItems():
            _x, y = item.getData()
            if y is not None and len(y) and np.isfinite(y).any():
                top = max(top, float(np.nanmax(y)))
        self.plots["bandwidth"].setYRange(0.0, max(top, 1e-3) * 1.15, padding=0)   # room for the peak label

    def _build_compare(self) -> None:
        box = QGroupBox("Compare with stored runs")
        box.setObjectName("compareBox")
        self.compare_list = QListWidget()
        self.compare_list.setObjectName("compareList")
        self.compare_list.setToolTip("Tick runs of the open project to overlay them")
        self.compare_list.itemChanged.connect(self._on_compare_item_changed)
        self.compare_table = QTableWidget(len(KEY_FIGURES), 0)
        self.compare_table.setObjectName("compareTable")
        self.compare_table.setVerticalHeaderLabels([label for _k, label, _u, _c in KEY_FIGURES])
        self.compare_table.setMinimumWidth(300)      # figure, this run, one run and its Δ %
        self.compare_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.compare_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        lay = QVBoxLayout(box)
        lay.setContentsMargins(4, 4, 4, 4)
        self.compare_splitter = QSplitter(Qt.Orientation.Vertical)
        self.compare_splitter.setObjectName("compareSplitter")
        self.compare_splitter.addWidget(self.compare_list)
        self.compare_splitter.addWidget(self.compare_table)
        self.compare_splitter.setChildrenCollapsible(False)
        self.compare_splitter.setSizes([150, 300])
        lay.addWidget(self.compare_splitter, 1)
        # what the table cannot say in a cell (runs fed at other paces: run_data.clock_notes)
        self.compare_note = note_label("compareNote")
        lay.addWidget(self.compare_note)
        self.compare_box = box
        self.splitter.addWidget(box)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        self.plot_widget.setMinimumSize(420, 300)
        self.splitter.setSizes([900, 330])
        self.splitter.splitterMoved.connect(self._on_splitter_moved)
        self._update_compare_table()

    # ---------------------------------------------------------------- actions
    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a request trace",
                                              self.trace_edit.text() or str(REPO),
                                              "Traces (*.trace *.txt *.dmt *.h5);;All files (*)")
        if path:
            self.trace_edit.setText(path)

    def is_running(self) -> bool:
        return self._run is not None

    def start(self) -> None:
        """Start a run with the chosen config, trace and epoch length (no-op while running)."""
        if self._run is not None:
            return
        name = self.config_combo.currentText()
        trace = self.trace_edit.text().strip()
        if not trace:
            self._show_error("Choose a trace file first.", "")
            return
        try:
            name, cfg, where = self.chosen_config()
        except Exception as exc:  # noqa: BLE001 - shown to the user
            import traceback
            self._show_error(f"Cannot load memory config '{name}': {exc}",
                             traceback.format_exc())
            return
        self.run_config = (name, cfg, where)       # what the run used (stored with it)
        from gui.workers import start_simulation

        self._clear_plots()
        self._use_config(cfg)
        # (a run of the editor's configuration read exactly like one of the preset it started
        # from, while the project stores it as "... edited #N")
        shown = f"{name} (edited)" if where == "editor" else name
        self._live_label = f"{shown} · {Path(trace).name}"
        # plain options: engine.simulator (numba) is imported by the simulation process only
        options = {"epoch": int(self.epoch_spin.value())}
        self._set_running(True)
        self._on_notes([])
        self.status_label.setText(f"Simulating {Path(trace).name} on {name}…")
        self.progress_bar.setRange(0, 0)            # busy until the first epoch
        run = start_simulation(cfg, [trace], options, parent=self)
        run.epochs.connect(self._on_epochs)
        run.notes.connect(self._on_notes)
        run.progress.connect(self._on_progress)
        run.finished.connect(self._on_finished)
        run.failed.connect(self._on_failed)
        run.cancelled.connect(self._on_cancelled)
        self._run = run
        self._timer.start()

    def refresh_configs(self) -> None:
        """The Memory list: the open project's configurations first, then the presets not
        already there, then the editor's current configuration."""
        combo = self.config_combo
        current = combo.currentData(CONFIG_ROLE) if combo.count() else None
        combo.blockSignals(True)
        combo.clear()
        names = project_names(getattr(self, "_project", None), "configs")   # then the presets
        for n in names:
            combo.addItem(n, ("project", n))
            combo.setItemData(combo.count() - 1, "stored in the project",
                              Qt.ItemDataRole.ToolTipRole)
        for n in preset_names():
            if n not in names:
                combo.addItem(n, ("preset", n))
        combo.addItem(EDITOR_ENTRY, ("editor", None))
        i = combo.findData(current, CONFIG_ROLE) if current is not None else -1
        if i < 0 and current is not None:       # a preset that is now a project config
            i = combo.findText(current[1] or "")
        if i < 0:
            i = combo.findText("DDR4-3200")
        combo.setCurrentIndex(max(0, i))
        combo.blockSignals(False)

    def select_config(self, name: str) -> bool:
        """Choose a configuration of the Memory list by its name."""
        i = self.config_combo.findText(name)
        if i >= 0:
            self.config_combo.setCurrentIndex(i)
        return i >= 0

    def chosen_config(self) -> tuple[str, Any, str]:
        """(name, MemoryConfig, where: "project" | "preset" | "editor") of the Memory list's
        choice (ConfigError / ProjectError when it cannot be read)."""
        kind, name = self.config_combo.currentData(CONFIG_ROLE) or ("preset",
                                                                     self.config_combo.currentText())
        if kind == "project":
            return name, self._project.get_config(name), kind
        if kind == "editor":
            if self.editor_config is None:
                raise ValueError("no configuration editor is attached")
            cfg = self.editor_config()
            return (cfg.name or "edited"), cfg, kind
        from engine.config import load_config      # light: no numba kernels here
        return name, load_config(name), kind

    def _use_config(self, cfg: Any) -> None:
        """The clock, bank layout and peak bandwidth of the memory on the plots."""
        self._tck = float(cfg.tCK)
        self.set_bank_layout(int(cfg.channels), int(cfg.ranks), int(cfg.bankgroups),
                             int(cfg.banks))
        self.set_peak_bandwidth(peak_bandwidth_GBps(cfg))

    def _config_of(self, record: RunRecord) -> Any:
        """The engine config of a shown run (from the project, else the preset), or None."""
        try:
            if record.config_name and self._project is not None:
                return self._project.get_config(record.config_name)
            from engine.config import load_config
            name = record.config_name or record.summary.get("config")
            return load_config(name) if name else None
        except Exception:  # noqa: BLE001 - no labels / peak line for this run
            return None

    def cancel(self) -> None:
        if self._run is not None:
            self._run.cancel()
            self.status_label.setText("Cancelling…")
            self.cancel_button.setEnabled(False)

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel a run and block until its thread has ended (window closing)."""
        run = self._run
        if run is None:
            return
        run.cancel()
        run.thread.wait(timeout_ms)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for w in (self.config_combo, self.trace_edit, self.browse_button, self.epoch_spin):
            w.setEnabled(not running)

    def _end_run(self) -> None:
        self._timer.stop()
        self._refresh()
        run, self._run = self._run, None
        if run is not None:
            run.deleteLater()
        self._set_running(False)
        self.progress_bar.setRange(0, 1000)

    # ---------------------------------------------------------------- worker signals
    def _on_notes(self, notes: list) -> None:
        """Show (or, with none, hide) what the run's traces say against its memory."""
        show_notes(self.notes_label, ["Note: " + n for n in notes])

    def _on_epochs(self, records: list) -> None:
        self._pending.extend(records)      # drawn by the timer

    def _on_progress(self, fraction: float) -> None:
        if fraction < 0:
            return
        if self.progress_bar.maximum() == 0:
            self.progress_bar.setRange(0, 1000)
        self.progress_bar.setValue(int(round(1000 * min(1.0, fraction))))

    def _on_finished(self, stats: Any) -> None:
        self._stats = stats
        self._end_run()
        self.progress_bar.setValue(1000)
        # the plots now show the run's own epochs (as stored in a project; the last, partial
        # epoch is closed only at the end and was never sent live)
        record = RunRecord.from_stats(stats, self._live_label or "this run")
        self.show_record(record)
        self.status_label.setText(f"Done: {record.n_epochs} epochs")
        self.run_finished.emit(stats)

    def show_record(self, record: RunRecord) -> None:
        """Show a finished or stored run on every plot (nothing is simulated); not while a
        run is in progress."""
        if self._run is not None:
            return
        self._pending.clear()
        self._epochs.clear()
        self.record = record
        self._tck = tck_ns(record)
        cfg = self._config_of(record)
        self._bank_layout_from(record, cfg)
        self.set_peak_bandwidth(peak_bandwidth_GBps(cfg) if cfg is not None else math.nan)
        self._draw_epochs(record.end, record.row_hit_rate, record.bandwidth_GBps,
                          record.utilisation)
        self._show_hist_and_energy(record)
        f = key_figures(record)
        self.summary_label.setText(
            f"{record.label}: time {U.fmt(f['time_ns'], 'ns')} "
            f"({U.fmt_cycles(f['cycles'], f['tCK_ns'])}) · avg read latency "
            f"{U.fmt(f['read_latency_ns'], 'ns')} · row-hit rate "
            f"{U.percent(f['row_hit_rate'])} · bandwidth "
            f"{U.fmt(f['bandwidth_GBps'], 'GB/s')} · energy {U.fmt(f['energy_pJ'], 'pJ')} "
            f"(core + IO; IO {U.fmt(f['io_energy_pJ'], 'pJ')})")
        if record.run_id is not None and self._run is None:
            self.status_label.setText(f"Stored run {record.run_id}: {record.n_epochs} epochs")
        self._update_compare_table()
        self.record_shown.emit(record)

    def _on_failed(self, message: str, details: str) -> None:
        self._end_run()
        self.progress_bar.setValue(0)
        self.status_label.setText("Failed: " + message)
        self._show_error(message, details)
        self.run_failed.emit(message, details)

    def _on_cancelled(self) -> None:
        self._end_run()
        self.progress_bar.setValue(0)
        self.status_label.setText("Cancelled")
        self.run_cancelled.emit()

    def _show_error(self, msg: str, details: str) -> None:
        """A modal error box with the traceback under "Show Details" (tests monkeypatch it)."""
        box = QMessageBox(QMessageBox.Icon.Critical, "Simulation failed", msg,
                          QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.exec()

    # ---------------------------------------------------------------- plots
    def _clear_plots(self) -> None:
        self._pending.clear()
        self._epochs.clear()
        self._stats = None
        self.record = None
        self._update_compare_table()
        self.heatmap.clear()
        self.hit_rate_curve.setData([], [])
        self.bandwidth_curve.setData([], [])
        self.latency_curve.setData([], [])
        self.energy_bars.setOpts(x0=[], y=[], height=[], width=[])
        self.energy_labels = []
        self.energy_values = np.zeros(0)
        self.plots["energy"].setTitle("Energy (core + IO)")
        self.summary_label.setText("")
        self._set_empty_ranges()
        self.empty_note.show()

    def epoch_arrays(self) -> dict[str, np.ndarray]:
        """The epochs on the plots: end cycle, hit rate, bandwidth, latency, utilisation."""
        if self.record is not None and self._run is None:
            r = self.record
            return {"end": r.end, "row_hit_rate": r.row_hit_rate,
                    "bandwidth_GBps": r.bandwidth_GBps, "avg_read_latency": r.avg_read_latency,
                    "utilisation": r.utilisation}
        return self._epochs.arrays()

    def _seconds(self, cycles: np.ndarray, tck: float | None = None) -> np.ndarray:
        """Cycles of a run (clock ``tck`` ns, default the shown run's) as seconds."""
        t = self._tck if tck is None else tck
        if not math.isfinite(t):
            t = 1.0
        return np.asarray(cycles, dtype=np.float64) * (t * 1e-9)

    def shows_memory(self, cfg: Any) -> bool:
        """Whether the plots show a run on ``cfg``'s memory (its name and clock), or none."""
        rec = self.record
        if rec is None:
            return True
        if rec.summary.get("config") not in (None, cfg.name):
            return False
        tck = tck_ns(rec)
        return not math.isfinite(tck) or abs(tck - float(cfg.tCK)) <= 1e-12

    def _heatmap_follows(self, vb: Any, _range: Any) -> None:
        """The bank heatmap shows the epoch plots' time range."""
        x0, x1 = vb.viewRange()[0]
        self.plots["heatmap"].setXRange(x0, x1, padding=0)

    def _draw_epochs(self, end: np.ndarray, hit: np.ndarray, bw: np.ndarray,
                     util: np.ndarray) -> None:
        x = self._seconds(end)
        if util.size:
            self.heatmap.setImage(util, autoLevels=False, levels=(0.0, 1.0))
            from PySide6.QtCore import QRectF
            self.heatmap.setRect(QRectF(0.0, 0.0, heatmap_width(x), float(util.shape[0])))
            self.plots["heatmap"].setXRange(0.0, float(x[-1]) if x.size else 1e-6, padding=0)
            self.plots["heatmap"].setYRange(0.0, float(util.shape[0]), padding=0)
        else:
            self.heatmap.clear()
        self.hit_rate_curve.setData(x, 100.0 * np.asarray(hit, dtype=np.float64),
                                    connect="finite")
        self.bandwidth_curve.setData(x, bw, connect="finite")
        if x.size:
            self.empty_note.hide()
            for name in ("hit_rate", "bandwidth"):
                self.plots[name].enableAutoRange(axis="x", enable=True)
            self._fit_bandwidth_axis()

    def _refresh(self) -> None:
        """Timer tick: draw the epochs that arrived since the last tick, in place."""
        if not self._pending:
            return
        self._epochs.extend(self._pending)
        self._pending.clear()
        a = self._epochs.arrays()
        self._draw_epochs(a["end"], a["row_hit_rate"], a["bandwidth_GBps"], a["utilisation"])

    def _show_hist_and_energy(self, record: RunRecord) -> None:
        edges, counts = trim_histogram(record.read_latency_hist)
        self.latency_curve.setData(self._seconds(edges), counts, stepMode="center")
        if counts.size:
            self.plots["latency"].enableAutoRange(axis="xy", enable=True)
        s = record.summary
        try:
            from engine.power import COMPONENTS
        except Exception:  # noqa: BLE001 - the engine's names, if it cannot be imported
            COMPONENTS = ("act", "read", "write", "ref", "refb", "act_stb", "pre_stb", "sref",
                          "io_read", "io_write")
        items = [(k, float(s[f"{k}_energy"])) for k in COMPONENTS if f"{k}_energy" in s]
        if not items:
            items = [(k, float(v)) for k, v in s.get("energy_by_cause", {}).items()]
        self.energy_labels = [k for k, _ in items]
        self.energy_values = np.array([v for _, v in items], dtype=np.float64)
        x = np.arange(len(items), dtype=np.float64)
        # horizontal bars: the component names sit on the left axis, where they do not overlap
        self.energy_bars.setOpts(x0=np.zeros(len(items)), y=x, width=self.energy_values,
                                 height=np.full(len(items), 0.7))
        axis = self.plots["energy"].getAxis("left")
        axis.setTicks([list(zip(x.tolist(), self.energy_labels))])
        total = U.energy_total_pj(s)
        io = float(s.get("io_energy", math.nan))
        self.plots["energy"].setTitle(f"Energy: {U.fmt(total, 'pJ')} (IO {U.fmt(io, 'pJ')})")
        if items:
            self.plots["energy"].enableAutoRange(axis="xy", enable=True)

    # ---------------------------------------------------------------- comparison
    def set_project(self, project: Any | None) -> None:
        """The project whose stored runs the Compare panel offers (None: no project)."""
        self._project = project
        for rid in list(self.overlays):
            self.remove_overlay(rid)
        self.refresh_runs()
        self.refresh_configs()

    def refresh_runs(self) -> None:
        """Re-read the project's runs into the Compare list (ticks kept where still there)."""
        p = self._project
        self.compare_list.blockSignals(True)
        self.compare_list.clear()
        runs = project_names(p, "runs")
        for rid in runs:
            item = QListWidgetItem(rid)
            item.setData(RUN_ID_ROLE, rid)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if rid in self.overlays
                               else Qt.CheckState.Unchecked)
            self.compare_list.addItem(item)
        self.compare_list.blockSignals(False)
        for rid in list(self.overlays):
            if rid not in runs:
                self.remove_overlay(rid)

    def compare_item(self, run_id: str) -> QListWidgetItem | None:
        for i in range(self.compare_list.count()):
            item = self.compare_list.item(i)
            if item.data(RUN_ID_ROLE) == run_id:
                return item
        return None

    def _on_compare_item_changed(self, item: QListWidgetItem) -> None:
        rid = item.data(RUN_ID_ROLE)
        if item.checkState() == Qt.CheckState.Checked:
            if rid not in self.overlays:
                try:
                    self.add_overlay(RunRecord.from_project(self._project, rid))
                except Exception as exc:  # noqa: BLE001 - a corrupt run: say so, untick it
                    import traceback
                    self.compare_list.blockSignals(True)
                    item.setCheckState(Qt.CheckState.Unchecked)
                    self.compare_list.blockSignals(False)
                    self._show_error(f"Cannot read run {rid}: {exc}", traceback.format_exc())
        else:
            self.remove_overlay(rid)

    def add_overlay(self, record: RunRecord) -> None:
        """Overlay a run on the hit-rate, bandwidth and latency plots (its key is run_id or
        its label) and add it to the comparison table."""
        key = record.run_id or record.label
        if key in self.overlays:
            self.remove_overlay(key)
        used = {i["colour"] for i in self._overlay_items.values()}
        colour = next((c for c in OVERLAY_COLOURS if c not in used),
                      OVERLAY_COLOURS[len(self.overlays) % len(OVERLAY_COLOURS)])
        pen = pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine)
        name = key
        items: dict[str, Any] = {"colour": colour}
        # each run on its own clock: the x axes are time, so runs of different memories line up
        tck = tck_ns(record)
        x = self._seconds(record.end, tck)
        items["hit_rate"] = self.plots["hit_rate"].plot(
            x, 100.0 * record.row_hit_rate, pen=pen, name=name, connect="finite")
        items["bandwidth"] = self.plots["bandwidth"].plot(
            x, record.bandwidth_GBps, pen=pen, name=name, connect="finite")
        edges, counts = trim_histogram(record.read_latency_hist)
        lat = pg.PlotDataItem(pen=pg.mkPen(colour, width=2))
        lat.setData(self._seconds(edges, tck), counts, stepMode="center")
        self.plots["latency"].addItem(lat)
        self.legends["latency"].addItem(lat, name)
        items["latency"] = lat
        self.overlays[key] = record
        self._overlay_items[key] = items
        for plot in OVERLAY_PLOTS:
            self.plots[plot].enableAutoRange(axis="x", enable=True)
        self._fit_bandwidth_axis()
        self._update_compare_table()

    def remove_overlay(self, key: str) -> None:
        items = self._overlay_items.pop(key, None)
        self.overlays.pop(key, None)
        if items is not None:
            for plot in OVERLAY_PLOTS:
                self.legends[plot].removeItem(items[plot])
                self.plots[plot].removeItem(items[plot])
        item = self.compare_item(key)
        if item is not None and item.checkState() == Qt.CheckState.Checked:
            self.compare_list.blockSignals(True)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.compare_list.blockSignals(False)
        self._update_compare_table()

    def overlay_pen_colours(self) -> dict[str, str]:
        """The pen colour of each overlaid run."""
        return {k: v["colour"] for k, v in self._overlay_items.items()}

    def comparison(self) -> tuple[list[str], list[list[Any]]]:
        """(header, rows) of the comparison table: one row per key figure; the shown run's
        value, then each overlaid run's value and its difference from the shown run in %."""
        runs = ([("shown", self.record)] if self.record is not None else []) + \
            list(self.overlays.items())
        header = ["figure"]
        for key, rec in runs:
            header.append(rec.label if key == "shown" else key)
            if key != "shown" and self.record is not None:
                header.append(f"{key} diff %")       # (row hits: percentage points)
        figs = [(key, key_figures(rec)) for key, rec in runs]
        base = key_figures(self.record) if self.record is not None else None
        rows = []
        for key, label, unit, comparable in KEY_FIGURES:
            csv_unit = {"ns": "ns", "GB/s": "GB/s", "%": "%", "pJ": "pJ", "cyc": "cycles"}[unit]
            scale = 100.0 if unit == "%" else 1.0        # hit rate in % on screen and in CSV
            row: list[Any] = [f"{label} ({csv_unit})"]
            for rkey, f in figs:
                row.append(f[key] * scale)
                if rkey != "shown" and base is not None:
                    same_clock = f["tCK_ns"] == base["tCK_ns"]
                    # cycles of two clocks are not comparable: no difference in %; a rate's
                    # difference is in percentage points
                    row.append(math.nan if not (comparable or same_clock) else
                               (f[key] - base[key]) * scale if unit == "%" else
                               percent_difference(f[key], base[key]))
            rows.append(row)
        return header, rows

    def _update_compare_table(self) -> None:
        header, rows = self.comparison()
        t = self.compare_table
        t.setColumnCount(len(header) - 1)
        # short column titles on screen (the CSV export has the full ones)
        short = ["this run" if i == 0 and self.record is not None
                 else ("Δ %" if h.endswith(" diff %") else h) for i, h in enumerate(header[1:])]
        t.setHorizontalHeaderLabels(short)
        for c, h in enumerate(header[1:]):
            t.horizontalHeaderItem(c).setToolTip(h)
        runs = ([self.record] if self.record is not None else []) + list(self.overlays.values())
        col_run = []
        for i, h in enumerate(header[1:]):
            col_run.append(None if h.endswith(" diff %") else runs[len(
                [x for x in header[1:i + 1] if not x.endswith(" diff %")])])
        for r, row in enumerate(rows):
            key, _label, unit, _comparable = KEY_FIGURES[r]
            for c, value in enumerate(row[1:]):
                diff = header[c + 1].endswith(" diff %")
                if isinstance(value, float) and math.isnan(value):
                    text = "—" if diff else "n/a"
                elif diff:
                    # (a rate's difference in percentage points: 94.3 -> 92.2 % is -2.1 pp)
                    text = f"{value:+.1f} {'pp' if unit == '%' else '%'}".replace("-", "−")
                elif unit == "%":
                    text = f"{value:.1f} %"
                elif unit == "cyc":
                    # (the clock in the tooltip: "112 277 cyc @ 1587 MHz" set the column's
                    # width, and the Δ column went off the panel at 1400 px)
                    rec = col_run[c]
                    text = U.fmt_cycles(value, None)
                    tip = U.fmt_cycles(value, tck_ns(rec) if rec is not None else None)
                else:
                    text = U.fmt(value, unit)
                cell = QTableWidgetItem(text)
                if unit == "cyc" and not diff:
                    cell.setToolTip(tip)
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                t.setItem(r, c, cell)
        show_notes(self.compare_note, clock_notes(self.record, self.overlays))
        self._fit_compare_width()

    #: the comparison may take at most this share of the tab's width by itself, and only
    #: while the plots keep PLOTS_MIN_PX (beyond, the table scrolls); the user's own splitter
    #: position is never overridden
    COMPARE_MAX_SHARE = 0.42
    PLOTS_MIN_PX = 700

    def compare_table_width(self) -> int:
        """Pixels the comparison table needs to show every column whole."""
        t = self.compare_table
        t.resizeColumnsToContents()
        cols = sum(t.columnWidth(c) for c in range(t.columnCount()))
        return (t.verticalHeader().sizeHint().width() + cols + 2 * t.frameWidth()
                + t.verticalScrollBar().sizeHint().width() + 4)

    def _fit_compare_width(self) -> None:
        """Widen the comparison beside the plots so that no column is cut (up to
        COMPARE_MAX_SHARE of the tab), unless the user has placed the splitter."""
        if getattr(self, "_compare_user_sized", False) or self.splitter.count() < 2:
            return
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if total <= 0:
            return
        box_margins = 2 * 4 + 2 * self.compare_box.style().pixelMetric(
            self.compare_box.style().PixelMetric.PM_DefaultFrameWidth) + 8
        want = min(int(total * self.COMPARE_MAX_SHARE), total - self.PLOTS_MIN_PX,
                   max(self.compare_box.minimumSizeHint().width(),
                       self.compare_table_width() + box_margins))
        if sizes[1] < want:
            self._fitting_compare = True
            try:
                self.splitter.setSizes([total - want, want])
            finally:
                self._fitting_compare = False

    def _on_splitter_moved(self, *_args: Any) -> None:
        if not getattr(self, "_fitting_compare", False):
            self._compare_user_sized = True

    def resizeEvent(self, event: Any) -> None:   # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_compare_width()

    # ---------------------------------------------------------------- export
    def plot_data(self, plot: str) -> tuple[list[str], list[list[Any]]]:
        """(header, rows) of the data one plot shows (with its overlays), as written by
        :meth:`export_csv`; ``"comparison"`` gives the comparison table."""
        if plot == "comparison":
            return self.comparison()
        if plot == "heatmap":
            util = self.epoch_arrays()["utilisation"]
            rows = [[b, e, float(util[b, e])] for b in range(util.shape[0])
                    for e in range(util.shape[1])]
            return ["bank", "epoch", "utilisation"], rows
        if plot in ("hit_rate", "bandwidth", "latency"):
            name = {"hit_rate": "row_hit_rate_pct", "bandwidth": "bandwidth_GBps",
                    "latency": "reads"}[plot]
            xname = "read_latency_ns" if plot == "latency" else "time_ns"
            curves = [("", {"hit_rate": self.hit_rate_curve, "bandwidth": self.bandwidth_curve,
                            "latency": self.latency_curve}[plot])]
            curves += [(k, items[plot]) for k, items in self._overlay_items.items()]
            header = [xname, name] if len(curves) == 1 else ["run", xname, name]
            rows = []
            for key, curve in curves:
                x, y = curve.getData()
                if x is None or y is None:
                    continue
                for a, b in zip(x, y):
                    xv = float(a) * 1e9             # the plots are in s; CSV in ns
                    rows.append([xv, float(b)] if len(curves) == 1 else
                                [key or (self.record.label if self.record else "this run"),
                                 xv, float(b)])
            return header, rows
        if plot == "energy":
            rows = [[k, float(v)] for k, v in zip(self.energy_labels, self.energy_values)]
            if self.record is not None:
                rows.append(["total (core + IO)", U.energy_total_pj(self.record.summary)])
            return ["component", "energy_pJ"], rows
        raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)}")

    def export_csv(self, path: str | Path, plot: str | None = None) -> Path:
        """Write one plot's data (``plot`` in PLOTS), or all of them in long form, as CSV."""
        if plot is not None:
            header, rows = self.plot_data(plot)
            return plot_export.write_csv(path, header, rows)
        out = []
        for name in PLOTS:
            _header, rows = self.plot_data(name)
            for r in rows:
                r = list(r)[-3:] if len(r) > 3 else list(r)
                out.append([name] + r + [""] * (3 - len(r)))
        return plot_export.write_csv(path, ["plot", "x", "y", "value"], out)

    def _source_rect(self, plot: str | None):
        from PySide6.QtCore import QRectF

        if plot is None:
            scene = self.plot_widget.scene()
            return (scene.itemsBoundingRect() if self.plot_widget.width() <= 0 else
                    QRectF(self.plot_widget.viewport().rect()))
        if plot in self.plots:
            return self.plots[plot].sceneBoundingRect()
        raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)}")

    def export_png(self, path: str | Path, plot: str | None = None, scale: float = 2.0) -> Path:
        """Render one plot (``plot`` in PLOTS), or the whole plot grid, to a PNG file.

        The plot's scene region is painted into a QImage (``scale`` x its on-screen size), so a
        plot that was never laid out still exports at a sensible size.
        """
        return plot_export.render_png(self.plot_widget.scene(), self._source_rect(plot),
                                      path, scale)

    def export_svg(self, path: str | Path, plot: str | None = None) -> Path:
        """Render one plot (``plot`` in PLOTS), or the whole plot grid, to an SVG file."""
        return plot_export.render_svg(self.plot_widget.scene(), self._source_rect(plot), path,
                                      title=f"DiffMem Studio: {plot or 'simulation'}")

    def export(self, path: str | Path, plot: str | None = None, fmt: str | None = None) -> Path:
        """Export one plot (or all, or ``"comparison"`` as CSV) in the format of ``fmt`` or
        of the file's suffix: png, svg or csv."""
        kind = plot_export.format_for(path, fmt)
        if kind == "csv":
            return self.export_csv(path, plot)
        if plot == "comparison":
            raise ValueError("the comparison table exports as CSV only")
        return self.export_png(path, plot) if kind == "png" else self.export_svg(path, plot)

    def _ask_export_path(self, plot: str | None, fmt: str) -> str | None:
        """A save dialog for an export (tests monkeypatch this)."""
        name = f"{plot or 'simulation'}.{fmt}"
        path, _ = QFileDialog.getSaveFileName(self, "Export", name,
                                              f"{fmt.upper()} (*.{fmt});;All files (*)")
        return path or None

    def _export_interactive(self, plot: str | None, fmt: str) -> Path | None:
        path = self._ask_export_path(plot, fmt)
        if not path:
            return None
        if not Path(path).suffix:
            path = f"{path}.{fmt}"
        try:
            return self.export(path, plot, fmt)
        except Exception as exc:  # noqa: BLE001 - OSError and friends, shown to the user
            import traceback
            self._show_error(f"Cannot export to {path}: {exc}", traceback.format_exc())
            return None
