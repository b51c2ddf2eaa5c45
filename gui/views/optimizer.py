"""The optimiser view: pick a network, a Gemmini hardware, a method, a seed, a budget and the
cost model's fused-halo rule; run it (or every method in turn), watch the search converge,
see the schedule as a Gantt chart, compare methods in a table, and co-simulate a schedule's
DRAM traffic on an engine memory.

The fused-halo rule is the CLI's ``--fused-halo``: "refetch" (the default: each DRAM tile of
a fused group's first layer fetches its input window with its halo, as Stream counts it) or
"slide" (Timeloop's sliding window).  The run applies it while it searches
(:func:`gui.optimizer_worker.fused_halo_rule`), the schedule file records it
(``fused_halo``, as ``optimize --out`` does), the table shows it, and a co-simulation scores
the schedule under it.

Layout, top to bottom: the controls; the live curves (loss, EDP and best EDP on a log axis,
FADiff's Gumbel-Softmax temperature, the summed constraint violation; x = evaluations); the
timeline (the schedule's Gantt chart, and below it, after "Co-simulate on DRAM", the engine's
per-layer DRAM time against the model's, the row-buffer hit rate and the requests per bank
over time — all on one x axis in accelerator cycles, linked); the results table (one row per
finished run; selecting a row shows its schedule).

The search runs in a worker thread and the co-simulation in a child process
(:mod:`gui.optimizer_worker`); nothing here imports torch (start-up stays light).  Dialogs go
through small methods (``_show_error``, ``_ask_open_path``, ``_ask_save_path``) so tests can
monkeypatch them.  Every plot exports PNG, SVG and CSV (:meth:`OptimizerView.export`), the
table exports CSV and the selected schedule saves as JSON (:meth:`save_schedule`).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QGridLayout,
                               QHBoxLayout, QHeaderView, QLabel, QMenu, QMessageBox,
                               QProgressBar, QPushButton, QSpinBox, QSplitter, QTableWidget,
                               QTableWidgetItem, QToolButton, QVBoxLayout, QWidget)

from gui import plot_export
from gui.optimizer_worker import (DEFAULT_FUSED_HALO, FUSED_HALO_RULES, CosimRun,
                                  OptimizerJob, OptimizerOutcome, OptimizerRun,
                                  start_cosimulation, start_optimization)
from gui.plots.gantt import GanttChart
from gui.plots.log_axis import use_log_y
from gui.plots.validation_scatter import ValidationScatter
from gui.project_lists import preset_names, project_names
from optimizer.method_names import ALL_METHODS as METHODS  # the methods offered (torch-free)
from optimizer.method_names import REFERENCE_METHODS

OPEN_NETWORK = "Open JSON…"
OPEN_HARDWARE = "Open TOML…"
CURVE_PLOTS = ("loss", "edp", "tau", "violation")
TIMELINE_PLOTS = ("gantt", "dram_time", "hit_rate", "banks")
PLOTS = CURVE_PLOTS + TIMELINE_PLOTS
TABLE_COLUMNS = ("method", "network", "hardware", "seed", "EDP", "energy", "latency",
                 "valid", "wall", "evaluations", "fused halo")
#: how each table column is written (gui.units): EDP in J·accelerator cycles, energy in J,
#: latency in accelerator cycles, wall time in s; the CSV keeps the raw numbers
COLUMN_UNITS = {"EDP": "pJ·cyc", "energy": "pJ", "latency": "cyc", "wall": "s"}
CSV_COLUMNS = ("method", "network", "hardware", "seed", "edp_pj_cycles", "energy_pj",
               "latency_cycles", "valid", "wall_s", "evaluations", "fused_halo")
#: the table's text for a stored run from before the fused-halo rule was recorded
HALO_UNKNOWN = "not recorded"
CHANNEL_CHOICES = ("preset", "1", "2", "4", "8", "16")
DRAM_ROWS = {"model DMA": 2.0, "engine service": 1.0, "engine paced": 0.0}
SPEC_ROLE = Qt.ItemDataRole.UserRole
LEFT_AXIS_PX = 100            # left axis width of every timeline plot
STOP_GRACE_MS = 1500          # Cancel keeps the best so far; a method that has not ended by
                              # then is cancelled outright (its result is lost)
BUDGET_KINDS = ("CPU seconds", "evaluations", "seconds")
# the amount a budget kind starts at when chosen: 6 CPU-s searches ResNet18 on Gemmini-large
# with the refinement (RESULTS, issue 13); 50 000 layer-mapping evaluations is optimize()'s default
BUDGET_DEFAULTS = {"CPU seconds": 6, "evaluations": 50_000, "seconds": 30}


def _networks() -> list[str]:
    from optimizer.workload import NETWORKS     # no torch
    return list(NETWORKS)


def _hardware() -> list[str]:
    try:
        from optimizer.hardware import list_hardware     # no torch
        return list_hardware()
    except Exception:  # noqa: BLE001 - the view must open even if resources are missing
        return []


def _finite(values: list[float]) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(a), a, np.nan)


def _set_progress_curve(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """Draw ``y`` over ``x`` with gaps at non-finite values. A line needs two points, so a
    curve with one finite point (a FADiff run with one gradient step reports one loss) shows
    it as a dot, which goes as soon as a second point joins it."""
    lone = int(np.isfinite(y).sum()) == 1
    item.setData(x, y, connect="finite", symbol="o" if lone else None)


class OptimizerView(QWidget):
    """Controls, live curves, the Gantt chart with the DRAM co-simulation, the results."""

    run_finished = Signal(list)          # OptimizerOutcome per method, after the join
    run_failed = Signal(str, str)
    run_cancelled = Signal()
    result_added = Signal(object)        # OptimizerOutcome, as each method finishes
    cosim_finished = Signal(dict)
    cosim_failed = Signal(str, str)
    cosim_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._run: OptimizerRun | None = None
        self._cosim: CosimRun | None = None
        self.results: list[OptimizerOutcome] = []
        self.points: list[dict[str, Any]] = []       # progress of the run on the curves
        self.shown: OptimizerOutcome | None = None   # the schedule on the Gantt chart
        self.cosim: dict[str, Any] | None = None     # the co-simulation on the timeline
        self.last_cancel_latency_s: float | None = None
        self._cancel_at: float | None = None
        self._build_controls()
        self._build_plots()
        self._build_table()
        self._set_busy(False)

    # ---------------------------------------------------------------- layout
    def _combo(self, name: str, items: list[str], sentinel: str | None = None) -> QComboBox:
        combo = QComboBox()
        combo.setObjectName(name)
        for text in items:
            combo.addItem(text, text)
        if sentinel is not None:
            combo.addItem(sentinel, None)
        return combo

    def _build_controls(self) -> None:
        self.network_combo = self._combo("networkCombo", _networks(), OPEN_NETWORK)
        self.network_combo.setCurrentText("resnet18")
        self.hardware_combo = self._combo("hardwareCombo", _hardware(), OPEN_HARDWARE)
        self.hardware_combo.setCurrentText("large")
        for combo, kind in ((self.network_combo, "network"), (self.hardware_combo, "hardware")):
            combo.setProperty("last", combo.currentIndex())
            combo.activated.connect(lambda i, c=combo, k=kind: self._on_source_chosen(c, k, i))
        self.method_combo = self._combo("methodCombo", list(METHODS))
        self.halo_combo = QComboBox()
        self.halo_combo.setObjectName("haloCombo")
        for rule in FUSED_HALO_RULES:
            self.halo_combo.addItem(rule, rule)
        self.halo_combo.setCurrentIndex(self.halo_combo.findData(DEFAULT_FUSED_HALO))
        self.halo_combo.setToolTip(
            "Input traffic of a fused group's first layer (the CLI's --fused-halo): refetch, "
            "the default, each DRAM tile fetches its input window with its halo, as Stream and "
            "Gemmini's tiled convolutions do; slide, the window slides across the tiles "
            "(Timeloop's rule, which unfused layers always use)")
        self.seed_spin = QSpinBox()
        self.seed_spin.setObjectName("seedSpin")
        self.seed_spin.setRange(0, 2**31 - 1)
        self.budget_spin = QSpinBox()
        self.budget_spin.setObjectName("budgetSpin")
        self.budget_spin.setRange(1, 10_000_000)
        self.budget_spin.setValue(BUDGET_DEFAULTS[BUDGET_KINDS[0]])
        self.budget_kind = self._combo("budgetKind", list(BUDGET_KINDS))
        self.budget_kind.setToolTip("CPU seconds: this process's CPU time (steady under load, "
                                    "what comparisons use); evaluations: layer-mapping "
                                    "evaluations (one layer under one mapping); seconds: wall "
                                    "time")
        self.budget_kind.currentTextChanged.connect(
            lambda kind: self.budget_spin.setValue(BUDGET_DEFAULTS.get(kind, 1)))
        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("runButton")
        self.run_button.clicked.connect(lambda: self.start())
        self.compare_button = QPushButton("Compare all methods")
        self.compare_button.setObjectName("compareButton")
        self.compare_button.setToolTip("Run every method in turn with the same budget (CPU "
                                       "seconds or evaluations) and seed, and the refinement "
                                       "alone from the trivial schedule (refine-only: what "
                                       "the refined EDP owes to the refinement)")
        self.compare_button.clicked.connect(
            lambda: self.start(list(METHODS) + list(REFERENCE_METHODS)))
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.clicked.connect(self.cancel)

        self.memory_combo = self._combo("memoryCombo", preset_names())
        self.memory_combo.setCurrentText("DDR4-3200")
        self.channels_combo = self._combo("channelsCombo", list(CHANNEL_CHOICES))
        self.channels_combo.setToolTip("Memory channels (\"preset\": as the preset has them)")
        self.cosim_button = QPushButton("Co-simulate on DRAM")
        self.cosim_button.setObjectName("cosimButton")
        self.cosim_button.setToolTip("Run the selected schedule's DRAM traffic through the "
                                     "engine, layer by layer")
        self.cosim_button.clicked.connect(lambda: self.start_cosim())
        self.save_button = QPushButton("Save schedule…")
        self.save_button.setObjectName("saveScheduleButton")
        self.save_button.clicked.connect(self._save_interactive)
        self.export_button = QToolButton()
        self.export_button.setObjectName("exportButton")
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        titles = {"loss": "Loss", "edp": "EDP", "tau": "Temperature", "violation": "Violation",
                  "gantt": "Gantt chart", "dram_time": "DRAM time per layer",
                  "hit_rate": "Row-buffer hit rate", "banks": "Requests per bank",
                  "results": "Results table"}
        for plot, title in titles.items():
            sub = menu.addMenu(title)
            for fmt in (("csv",) if plot == "results" else plot_export.FORMATS):
                action = sub.addAction(fmt.upper() + "…")
                action.setObjectName(f"export_{plot}_{fmt}")
                action.triggered.connect(
                    lambda _c=False, p=plot, f=fmt: self._export_interactive(p, f))
        self.export_menu = menu
        self.export_button.setMenu(menu)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setTextVisible(False)
        self.status_label = QLabel("Ready")
        self.status_label.setObjectName("statusLabel")

        grid = QGridLayout()
        grid.addWidget(QLabel("Network"), 0, 0)
        grid.addWidget(self.network_combo, 0, 1)
        grid.addWidget(QLabel("Hardware"), 0, 2)
        grid.addWidget(self.hardware_combo, 0, 3)
        grid.addWidget(QLabel("Method"), 0, 4)
        grid.addWidget(self.method_combo, 0, 5)
        grid.addWidget(QLabel("Seed"), 1, 0)
        seed = QHBoxLayout()                 # the seed and the cost model's fused-halo rule
        seed.addWidget(self.seed_spin, 1)
        seed.addWidget(QLabel("Fused halo"))
        seed.addWidget(self.halo_combo)
        grid.addLayout(seed, 1, 1)
        grid.addWidget(QLabel("Budget"), 1, 2)
        budget = QHBoxLayout()
        budget.addWidget(self.budget_spin, 1)
        budget.addWidget(self.budget_kind)
        grid.addLayout(budget, 1, 3)
        grid.addWidget(QLabel("Memory"), 1, 4)
        mem = QHBoxLayout()
        mem.addWidget(self.memory_combo, 1)
        mem.addWidget(QLabel("Channels"))
        mem.addWidget(self.channels_combo)
        grid.addLayout(mem, 1, 5)
        for c in (1, 3, 5):
            grid.setColumnStretch(c, 1)
        # two rows of controls and buttons: the view fits a 1280 px wide window
        row = QHBoxLayout()
        for w in (self.run_button, self.compare_button, self.cancel_button):
            row.addWidget(w)
        row.addWidget(self.progress_bar, 1)
        self.validation_button = QPushButton("Load validation…")    # cosim --validate K
        self.validation_button.clicked.connect(self._load_validation)
        for w in (self.cosim_button, self.validation_button, self.save_button, self.export_button):
            row.addWidget(w)
        self._top = QVBoxLayout(self)
        self._top.addLayout(grid)
        self._top.addLayout(row)
        self.status_label.setWordWrap(True)
        self._top.addWidget(self.status_label)

    def _build_plots(self) -> None:
        self.curve_widget = pg.GraphicsLayoutWidget()
        self.curve_widget.setObjectName("curveWidget")
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        # short titles: a title's width is the plot's minimum width (the grid must fit half
        # of a 1280 px window)
        specs = (("loss", 0, 0, "Loss"), ("edp", 0, 1, "EDP (pJ·cycles)"),
                 ("tau", 1, 0, "Temperature τ (FADiff)"), ("violation", 1, 1, "Violation"))
        for key, r, c, title in specs:
            p = self.curve_widget.addPlot(row=r, col=c, title=title)
            p.setLabel("bottom", "evaluations")
            p.showGrid(x=True, y=True, alpha=0.2)
            self.plots[key] = p
        use_log_y(self.plots["edp"])         # labels 1-2-5 only: none crowd
        use_log_y(self.plots["loss"])
        legend = self.plots["edp"].addLegend(offset=(-5, 5))
        for key, plot, colour, width, name in (
                ("loss", "loss", "c", 2, None), ("edp", "edp", "#999999", 1, "current"),
                ("best_edp", "edp", "y", 2, "best valid"), ("tau", "tau", "m", 2, None),
                ("violation", "violation", "r", 2, None)):
            # symbol None until _set_progress_curve shows a lone point's dot
            self.curves[key] = self.plots[plot].plot(
                pen=pg.mkPen(colour, width=width), name=name,
                symbol=None, symbolSize=7, symbolBrush=colour, symbolPen=None)
        self.edp_legend = legend

        self.timeline_widget = pg.GraphicsLayoutWidget()
        self.timeline_widget.setObjectName("timelineWidget")
        tw = self.timeline_widget
        g = tw.addPlot(row=0, col=0, title="Schedule (Gantt)")
        self.plots["gantt"] = g
        self.gantt = GanttChart(g)
        self.gantt.connect_hover()
        d = tw.addPlot(row=1, col=0, title="DRAM time per layer (co-simulation; red: stall)")
        d.getAxis("left").setTicks([[(y, name) for name, y in DRAM_ROWS.items()]])
        d.setYRange(-0.6, 2.6, padding=0)
        d.setMouseEnabled(x=True, y=False)
        self.dram_bars = {name: pg.BarGraphItem(x0=[], y=[], width=[], height=[],
                                                brush=colour, pen=pg.mkPen("k", width=0.5))
                          for name, colour in (("model DMA", "#1f77b4"),
                                               ("engine service", "#2ca02c"),
                                               ("engine paced", "#17becf"))}
        self.stall_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=[], brush="#d62728")
        for item in (*self.dram_bars.values(), self.stall_bars):
            d.addItem(item)
        self.plots["dram_time"] = d
        h = tw.addPlot(row=2, col=0, title="Row-buffer hit rate per layer (engine, %)")
        h.setYRange(0.0, 100.0)
        h.setMouseEnabled(x=True, y=False)
        self.curves["hit_rate"] = pg.PlotDataItem(pen=pg.mkPen("c", width=2))
        h.addItem(self.curves["hit_rate"])
        self.plots["hit_rate"] = h
        b = tw.addPlot(row=3, col=0, title="DRAM requests per bank (schedule issue time)")
        b.setLabel("left", "bank")
        b.setLabel("bottom", "accelerator time", units="cycles")
        b.getAxis("left").enableAutoSIPrefix(False)
        b.setYRange(0.0, 1.0, padding=0)
        self.bank_image = pg.ImageItem(axisOrder="row-major")      # image[bank, time bin]
        cmap = pg.colormap.get("viridis")
        self.bank_image.setLookupTable(cmap.getLookupTable(nPts=256))
        b.addItem(self.bank_image)
        self.bank_colour_bar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=cmap,
                                               label="requests", interactive=False, width=12)
        tw.addItem(self.bank_colour_bar, row=3, col=1)
        self.plots["banks"] = b
        for key in ("dram_time", "hit_rate", "banks"):
            self.plots[key].setXLink(g)
        from gui.plots.empty_note import EmptyNote
        self.empty_notes = {
            "curves": EmptyNote(self.plots["loss"], "No search shown:\npress Run"),
            "gantt": EmptyNote(g, "Select a run in the table below for its schedule"),
            "cosim": EmptyNote(d, "Co-simulate on DRAM for these three panels")}
        for note in self.empty_notes.values():
            note.show()
        for key in TIMELINE_PLOTS:          # equal axis widths: the same cycle lines up
            self.plots[key].getAxis("left").setWidth(LEFT_AXIS_PX)
        for r, factor in enumerate((3, 2, 2, 3)):
            tw.ci.layout.setRowStretchFactor(r, factor)

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("optimizerSplitter")
        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(self.curve_widget)
        upper.addWidget(self.timeline_widget)
        self.validation_plot = ValidationScatter()      # cosim --validate K: model vs engine
        upper.addWidget(self.validation_plot)
        upper.setStretchFactor(0, 2)
        upper.setStretchFactor(1, 3)
        upper.setStretchFactor(2, 2)
        upper.setChildrenCollapsible(False)
        self.splitter.addWidget(upper)
        self._top.addWidget(self.splitter, 1)

    def _build_table(self) -> None:
        t = QTableWidget(0, len(TABLE_COLUMNS))
        t.setObjectName("resultsTable")
        t.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        t.itemSelectionChanged.connect(self._on_selection)
        t.setMinimumHeight(90)
        self.results_table = t
        self.splitter.addWidget(t)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([600, 220])        # about six rows; drag the handle for more
        for w in (self.curve_widget, self.timeline_widget):
            w.setMinimumSize(320, 240)

    # ---------------------------------------------------------------- dialogs (monkeypatched)
    def _show_error(self, msg: str, details: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Critical, "Optimiser", msg,
                          QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.exec()

    def _ask_open_path(self, caption: str, filters: str) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, caption, "", filters)
        return path or None

    def _ask_save_path(self, caption: str, name: str, filters: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, caption, name, filters)
        return path or None

    # ---------------------------------------------------------------- inputs
    def _on_source_chosen(self, combo: QComboBox, kind: str, index: int) -> None:
        if combo.itemData(index, SPEC_ROLE) is not None:
            combo.setProperty("last", index)
            return
        filters = ("Networks (*.json);;All files (*)" if kind == "network"
                   else "Gemmini hardware (*.toml);;All files (*)")
        path = self._ask_open_path(f"Open a {kind} file", filters)
        if path:
            self.add_source(kind, path)
        else:
            combo.setCurrentIndex(int(combo.property("last") or 0))

    def add_source(self, kind: str, path: str | Path) -> None:
        """Offer a network (.json) or hardware (.toml) file in its combo and select it."""
        combo = self.network_combo if kind == "network" else self.hardware_combo
        spec = str(Path(path))
        i = combo.findData(spec, SPEC_ROLE)
        if i < 0:
            i = combo.count() - 1                 # before the "Open…" entry
            combo.insertItem(i, Path(path).name, spec)
            combo.setItemData(i, spec, Qt.ItemDataRole.ToolTipRole)
        combo.setCurrentIndex(i)
        combo.setProperty("last", i)

    def job(self, methods: list[str] | None = None) -> OptimizerJob:
        """The run the controls describe (``methods``: default the chosen one)."""
        amount = int(self.budget_spin.value())
        kind = self.budget_kind.currentText()
        return OptimizerJob(
            network=str(self.network_combo.currentData(SPEC_ROLE)),
            hardware=str(self.hardware_combo.currentData(SPEC_ROLE)),
            methods=tuple(methods or [self.method_combo.currentText()]),
            evaluations=amount if kind == "evaluations" else None,
            seconds=float(amount) if kind == "seconds" else None,
            cpu_seconds=float(amount) if kind == "CPU seconds" else None,
            seed=int(self.seed_spin.value()),
            fused_halo=str(self.halo_combo.currentData() or DEFAULT_FUSED_HALO))

    def refresh_memories(self, project: Any | None) -> None:
        """The co-simulation's Memory list: the open project's configurations (the editor's
        saved ones, .ini imports), then the presets."""
        self._project = project
        combo = self.memory_combo
        current = combo.currentText()
        combo.blockSignals(True)
        combo.clear()
        names = project_names(project, "configs")      # then the presets
        for n in names:
            combo.addItem(n, ("project", n))
        for n in preset_names():
            if n not in names:
                combo.addItem(n, ("preset", n))
        i = combo.findText(current)
        combo.setCurrentIndex(i if i >= 0 else max(0, combo.findText("DDR4-3200")))
        combo.blockSignals(False)

    def memory_spec(self) -> str:
        """The memory for a co-simulation: a preset, with ``-<n>ch`` when channels are set, or
        a project configuration written to a temporary TOML preset (channels applied)."""
        ch = self.channels_combo.currentText()
        name = self.memory_combo.currentText()
        kind = (self.memory_combo.currentData() or ("preset", name))[0]
        if kind != "project" or getattr(self, "_project", None) is None:
            return name if ch == "preset" else f"{name}-{ch}ch"
        import re
        import tempfile

        from engine.config import save_preset
        cfg = self._project.get_config(name)
        if ch != "preset":
            cfg = cfg.replace(channels=int(ch))
        if getattr(self, "_tmp_presets", None) is None:
            self._tmp_presets = tempfile.TemporaryDirectory(prefix="diffmem-cosim-")
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "config"
        path = Path(self._tmp_presets.name) / f"{safe}-{ch}.toml"
        save_preset(cfg, path, header=f"project configuration '{name}'")
        return str(path)

    # ---------------------------------------------------------------- runs
    def is_running(self) -> bool:
        return self._run is not None or self._cosim is not None

    def start(self, methods: list[str] | None = None) -> bool:
        """Run the chosen method (or ``methods`` in turn); no-op while something runs."""
        if self.is_running():
            return False
        job = self.job(methods)
        if job.network in ("None", "") or job.hardware in ("None", ""):
            self._show_error("Choose a network and a hardware first.", "")
            return False
        if len(job.methods) > 1 and job.seconds is not None:
            # (as `compare`: a wall-clock budget moves with the machine's load, so the
            # methods would not get the same budget)
            self._show_error("Compare all methods: a wall-clock budget (seconds) is not the "
                             "same budget for every method on a shared machine; choose CPU "
                             "seconds or evaluations.", "")
            return False
        self._clear_curves()
        self._job = job
        self._budget_total = (job.evaluations or 0) * len(job.methods)
        self._evals_before = 0
        self._methods_done = 0
        self._cancel_at = None
        self._started_wall = time.monotonic()
        self._started_cpu = time.process_time()
        self._what = (f"Optimising {Path(job.network).name} on {Path(job.hardware).name} "
                      f"with {', '.join(job.methods)}")
        run = start_optimization(job, parent=self)
        run.progress.connect(self._on_progress)
        run.result.connect(self._on_result)
        run.finished.connect(self._on_finished)
        run.failed.connect(self._on_failed)
        run.cancelled.connect(self._on_cancelled)
        self._run = run
        self._set_busy(True)
        what = ", ".join(job.methods)
        self.status_label.setText(f"Optimising {Path(job.network).name} on "
                                  f"{Path(job.hardware).name} with {what}…")
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setValue(0)
        return True

    def budget_fraction(self) -> float | None:
        """The share of the whole job's budget spent (all methods), from the progress
        reports and this process's clocks; None before the first report."""
        job = getattr(self, "_job", None)
        if job is None or not self.points:
            return None
        n = max(1, len(job.methods))
        last, k = self.points[-1], self._methods_done
        parts = []
        if job.evaluations:
            parts.append((k + min(1.0, last["evaluations"] / job.evaluations)) / n)
        if job.seconds:
            parts.append((k + min(1.0, last["elapsed_s"] / job.seconds)) / n)
        if job.cpu_seconds:
            # the search's Tracker uses the same clock: this process's CPU time
            parts.append((time.process_time() - self._started_cpu) / (job.cpu_seconds * n))
        return min(1.0, max(parts)) if parts else None

    def eta_seconds(self) -> float | None:
        """Wall seconds left at the pace so far (None until 2 % of the budget is spent)."""
        f = self.budget_fraction()
        if f is None or f < 0.02:
            return None
        elapsed = time.monotonic() - self._started_wall
        return elapsed * (1.0 - f) / f

    def cancel(self) -> None:
        """Cancel the search (keeping the best schedule found so far) or the co-simulation.

        The search's budget is spent at once, so the running method ends as when its budget
        runs out: its best candidate is repaired, scored and shown in the table.  A method
        still running after STOP_GRACE_MS is cancelled outright."""
        if self._run is None and self._cosim is None:
            return
        self._cancel_at = time.monotonic()
        if self._run is not None:
            run = self._run
            run.stop()
            from PySide6.QtCore import QTimer
            QTimer.singleShot(STOP_GRACE_MS,
                              lambda: run.cancel() if self._run is run else None)
            self.status_label.setText("Stopping: keeping the best schedule so far…")
        if self._cosim is not None:
            self._cosim.cancel()
            self.status_label.setText("Cancelling…")
        self.cancel_button.setEnabled(False)

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel what runs and wait for its thread (window closing)."""
        for run in (self._run, self._cosim):
            if run is not None:
                run.cancel()
                run.wait(timeout_ms)

    def _set_busy(self, busy: bool) -> None:
        for w in (self.run_button, self.compare_button, self.network_combo,
                  self.hardware_combo, self.method_combo, self.seed_spin, self.budget_spin,
                  self.budget_kind, self.halo_combo, self.memory_combo, self.channels_combo):
            w.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        has = self.shown is not None
        self.cosim_button.setEnabled(not busy and has and (
            self.shown.mapping is not None or bool(self.shown.schedule.get("layers"))))
        self.save_button.setEnabled(has)

    def _end(self) -> None:
        run, self._run = self._run, None
        cs, self._cosim = self._cosim, None
        for r in (run, cs):
            if r is not None:
                r.deleteLater()
        if self._cancel_at is not None:
            self.last_cancel_latency_s = time.monotonic() - self._cancel_at
            self._cancel_at = None
        self.progress_bar.setRange(0, 1000)
        self._set_busy(False)

    def _on_progress(self, batch: list) -> None:
        if batch and self.points and batch[0]["method"] != self.points[-1]["method"]:
            self._evals_before += self.points[-1]["evaluations"]
            self._methods_done += 1
            self.points = []                      # the curves follow the method now running
        self.points.extend(batch)
        self._draw_curves()
        f = self.budget_fraction()
        if f is not None:
            self.progress_bar.setValue(int(1000 * f))
            eta = self.eta_seconds()
            if self._cancel_at is None:
                from gui.units import fmt
                self.status_label.setText(
                    f"{self._what}… {100 * f:.0f} % of the budget"
                    + (f" · about {fmt(eta, 's', 2)} left" if eta is not None else "")
                    + f" · {self.points[-1]['evaluations']} evaluations")

    def _on_result(self, outcome: OptimizerOutcome) -> None:
        self.add_result(outcome)

    def _on_finished(self, outcomes: list) -> None:
        self._end()
        self.progress_bar.setValue(1000)
        best = min(outcomes, key=lambda o: o.edp) if outcomes else None
        from gui.units import fmt
        self.status_label.setText(
            "Done" + (f": best EDP {fmt(best.edp, 'pJ·cyc')} ({best.method})" if best else ""))
        self.run_finished.emit(outcomes)

    def _on_failed(self, message: str, details: str) -> None:
        self._end()
        self.progress_bar.setValue(0)
        self.status_label.setText("Failed: " + message)
        self._show_error(message, details)
        self.run_failed.emit(message, details)

    def _on_cancelled(self, outcomes: list) -> None:
        self._end()
        self.progress_bar.setValue(0)
        kept = [o for o in outcomes if o.stopped_early]
        if kept:
            from gui.units import fmt
            o = kept[-1]
            self.status_label.setText(
                f"Cancelled: kept the best schedule so far ({o.method}, EDP "
                f"{fmt(o.edp, 'pJ·cyc')}, {o.evaluations} evaluations)")
        else:
            self.status_label.setText(f"Cancelled ({len(outcomes)} run(s) finished before)")
        self.run_cancelled.emit()

    # ---------------------------------------------------------------- results
    def add_result(self, outcome: OptimizerOutcome, store: bool = True) -> int:
        """Add a finished run to the table and show it; returns its row.  ``store``: announce
        it (``result_added``: the window stores it in the open project); False for a run read
        back from the project."""
        self.results.append(outcome)
        t = self.results_table
        r = t.rowCount()
        t.insertRow(r)
        from gui.units import fmt
        for c, value in enumerate(self._row(outcome)):
            unit = COLUMN_UNITS.get(TABLE_COLUMNS[c])
            if unit is not None:
                text = fmt(value, unit)
            elif isinstance(value, bool):
                text = "yes" if value else "NO"
            else:
                text = str(value)
            if c == 0 and outcome.stopped_early:
                text += " (cancelled: best so far)"
            cell = QTableWidgetItem(text)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            t.setItem(r, c, cell)
        t.selectRow(r)                      # shows it (itemSelectionChanged)
        if self.shown is not outcome:
            self.show_result(outcome)
        if store:
            self.result_added.emit(outcome)
        return r

    # ---------------------------------------------------------------- stored runs
    @staticmethod
    def outcome_from_stored(data: dict[str, Any]) -> OptimizerOutcome:
        """An :class:`OptimizerOutcome` from ``Project.load_optimizer_run`` (curves, schedule,
        Gantt; the network, hardware and mapping for a co-simulation are rebuilt on demand)."""
        st = data.get("settings", {})
        sched = data.get("schedule", {})
        hist = data.get("history", {})
        n = len(next(iter(hist.values()))) if hist else 0
        method = str(st.get("method", sched.get("method", "")))
        history = []
        for i in range(n):
            rec = {"method": method}
            for k, v in hist.items():
                x = float(v[i])
                rec[k] = int(x) if k in ("step", "evaluations") and np.isfinite(x) else x
            history.append(rec)
        out = OptimizerOutcome(method, int(st.get("seed", sched.get("seed", 0)) or 0),
                               str(st.get("network", sched.get("network", ""))),
                               str(st.get("hardware", sched.get("hardware", ""))), sched,
                               history, float(st.get("wall_s", 0.0) or 0.0),
                               int(st.get("evaluations", sched.get("evaluations", 0)) or 0))
        out.run_id = data.get("run_id")
        halo = sched.get("fused_halo", st.get("fused_halo"))     # the schedule file records it
        out.fused_halo = str(halo) if halo in FUSED_HALO_RULES else None
        if isinstance(st.get("cosim"), dict):
            from gui.cosim_process import payload_from_stored
            out.cosim_payload = payload_from_stored(st["cosim"])
        return out

    def show_stored(self, data: dict[str, Any], select: bool = True) -> OptimizerOutcome:
        """Show a stored optimiser run: its row in the table (once), curves and Gantt."""
        rid = data.get("run_id")
        for i, o in enumerate(self.results):
            if rid is not None and getattr(o, "run_id", None) == rid:
                if select:
                    self.results_table.selectRow(i)
                    self.show_result(o)
                return o
        out = self.outcome_from_stored(data)
        row = self.add_result(out, store=False)
        if not select and row > 0:
            self.results_table.selectRow(0)
        return out

    def clear_results(self) -> None:
        """Empty the table (another project was opened)."""
        self.results.clear()
        self.results_table.setRowCount(0)
        self.shown = None
        self._clear_curves()
        self.gantt.clear()
        self.empty_notes["gantt"].show()
        self._clear_cosim()
        self._set_busy(self.is_running())

    @staticmethod
    def _row(o: OptimizerOutcome) -> list[Any]:
        return [o.method, o.network, o.hardware, o.seed, o.edp, o.energy_pj, o.latency_cycles,
                o.valid, round(float(o.wall_s), 3), int(o.evaluations),
                o.fused_halo or HALO_UNKNOWN]

    def _on_selection(self) -> None:
        rows = self.results_table.selectionModel().selectedRows()
        if rows and 0 <= rows[0].row() < len(self.results):
            outcome = self.results[rows[0].row()]
            if outcome is not self.shown:
                self.show_result(outcome)

    def selected(self) -> OptimizerOutcome | None:
        return self.shown

    def _ensure_mapping(self, outcome: OptimizerOutcome) -> None:
        """A stored run's network, hardware and schedule objects, for a co-simulation (torch
        is imported here, on demand)."""
        if outcome.mapping is not None:
            return
        from optimizer.hardware import load_hardware
        from optimizer.mapping import Schedule
        from optimizer.workload import load_network
        outcome.net = load_network(outcome.network)
        outcome.hw = load_hardware(outcome.hardware)
        outcome.mapping = Schedule.from_json(outcome.schedule)

    def show_result(self, outcome: OptimizerOutcome) -> None:
        """Show a finished run: its Gantt chart and, when idle, its convergence curves."""
        self.shown = outcome
        self.gantt.set_schedule(outcome.schedule)
        self.empty_notes["gantt"].hide()
        self._clear_cosim()
        if outcome.cosim_payload is not None:        # its last co-simulation, kept with it
            self.show_cosim(outcome.cosim_payload)
        if self._run is None:
            self.points = list(outcome.history)
            self._draw_curves()
        self._set_busy(self.is_running())

    def results_csv(self) -> tuple[list[str], list[list[Any]]]:
        return list(CSV_COLUMNS), [self._row(o) for o in self.results]

    # ---------------------------------------------------------------- curves
    def _clear_curves(self) -> None:
        self.points = []
        self.empty_notes["curves"].show()
        for key in ("loss", "edp", "best_edp", "tau", "violation"):
            _set_progress_curve(self.curves[key], np.empty(0), np.empty(0))

    def _draw_curves(self) -> None:
        pts = self.points
        x = np.array([p["evaluations"] for p in pts], dtype=np.float64)
        if x.size:
            self.empty_notes["curves"].hide()
        for key in ("loss", "edp", "best_edp"):
            y = _finite([p[key] for p in pts])
            y[y <= 0] = np.nan                    # log axes
            if key == "best_edp" and x.size > 1:
                # best so far is a staircase: it holds until the next improvement
                ok = np.isfinite(y)
                xs, ys = x[ok], y[ok]
                if xs.size > 1:
                    _set_progress_curve(self.curves[key], np.repeat(xs, 2)[1:],
                                        np.repeat(ys, 2)[:-1])
                    continue
            _set_progress_curve(self.curves[key], x, y)
        for key in ("tau", "violation"):
            _set_progress_curve(self.curves[key], x, _finite([p[key] for p in pts]))

    def curve_points(self, key: str) -> int:
        """Finite points (progress reports) drawn on curve ``key`` (loss, edp, best_edp, tau,
        violation); the best-EDP staircase counts its reports, not its corners."""
        _x, y = self.curves[key].getData()
        if y is None:
            return 0
        n = int(np.isfinite(y).sum())
        return (n + 1) // 2 if key == "best_edp" and n > 1 else n

    # ---------------------------------------------------------------- co-simulation
    def start_cosim(self, memory: str | None = None) -> bool:
        """Co-simulate the shown schedule on ``memory`` (default: the chooser's)."""
        if self.is_running():
            return False
        if self.shown is None:
            self._show_error("Run the optimiser first: there is no schedule to co-simulate.",
                             "")
            return False
        try:
            self._ensure_mapping(self.shown)
        except Exception as exc:  # noqa: BLE001 - a stored run whose network is gone
            import traceback
            self._show_error(f"Cannot rebuild the stored schedule for a co-simulation: {exc}",
                             traceback.format_exc())
            return False
        spec = memory or self.memory_spec()
        self._clear_cosim()
        self._cancel_at = None
        run = start_cosimulation(self.shown, spec, parent=self)
        run.progress.connect(lambda name: self.status_label.setText(
            f"Co-simulating on {spec}: layer {name}"))
        run.finished.connect(self._on_cosim_finished)
        run.failed.connect(self._on_cosim_failed)
        run.cancelled.connect(self._on_cosim_cancelled)
        self._cosim = run
        self._set_busy(True)
        self.progress_bar.setRange(0, 0)
        self.status_label.setText(f"Co-simulating {self.shown.method}'s schedule on {spec}…")
        return True

    def _on_cosim_finished(self, payload: dict) -> None:
        shown = self.shown
        self._end()
        if shown is not None:
            shown.cosim_payload = payload
        self.show_cosim(payload)
        cs = payload["cosim"]
        from gui.units import fmt
        self.status_label.setText(
            f"Co-simulated on {payload['memory']}: engine EDP {fmt(cs['engine_edp'], 'pJ·cyc')}"
            f" vs model {fmt(cs['model_edp'], 'pJ·cyc')}")
        self.cosim_finished.emit(payload)

    def _on_cosim_failed(self, message: str, details: str) -> None:
        self._end()
        self.status_label.setText("Co-simulation failed: " + message)
        self._show_error(message, details)
        self.cosim_failed.emit(message, details)

    def _on_cosim_cancelled(self) -> None:
        self._end()
        self.status_label.setText("Co-simulation cancelled")
        self.cosim_cancelled.emit()

    def _clear_cosim(self) -> None:
        self.cosim = None
        for item in (*self.dram_bars.values(), self.stall_bars):
            item.setOpts(x0=[], y=[], width=[], height=[])
        self.curves["hit_rate"].setData([], [])
        self.bank_image.clear()
        self.empty_notes["cosim"].show()

    def cosim_layers(self) -> list[dict[str, Any]]:
        """Per-layer co-simulation records with their start on the schedule's axis."""
        if self.cosim is None:
            return []
        out, t = [], 0.0
        for lay in self.cosim["cosim"]["layers"]:
            rec = dict(lay)
            rec["start"] = rec["start_cycles"] = t
            t += float(lay["model_cycles"])
            out.append(rec)
        return out

    def _load_validation(self, path: str | None = None) -> None:
        try:
            self.validation_plot.load(path or self._ask_open_path("Cosim result", "JSON (*.json)"))
        except ValueError as exc:
            self._show_error(str(exc), "")

    def show_cosim(self, payload: dict[str, Any]) -> None:
        """Draw a co-simulation (``gui.cosim_process.cosim_payload``) under the Gantt chart."""
        self.cosim = payload
        self.validation_plot.set_validation(payload.get("validation"))
        self.empty_notes["cosim"].hide()
        layers = self.cosim_layers()
        start = np.array([x["start"] for x in layers], dtype=np.float64)
        n = len(layers)
        for name, key in (("model DMA", "model_dram_cycles"),
                          ("engine service", "engine_service_cycles"),
                          ("engine paced", "engine_paced_end")):
            w = np.array([x[key] for x in layers], dtype=np.float64)
            self.dram_bars[name].setOpts(x0=start, width=w, y=np.full(n, DRAM_ROWS[name]),
                                         height=np.full(n, 0.7))
        stall = np.array([x["stall_cycles"] for x in layers], dtype=np.float64)
        model = np.array([x["model_cycles"] for x in layers], dtype=np.float64)
        keep = stall > 0
        self.stall_bars.setOpts(x0=(start + model)[keep], width=stall[keep],
                                y=np.full(int(keep.sum()), DRAM_ROWS["engine paced"]),
                                height=np.full(int(keep.sum()), 0.35))
        if n:
            edges = np.append(start, start[-1] + model[-1])
            hit = np.array([x["row_hit_rate"] for x in layers], dtype=np.float64)
            self.curves["hit_rate"].setData(edges, 100.0 * hit, stepMode="center")
        counts = np.asarray(payload["banks"]["counts"], dtype=np.float64)
        if counts.size:
            top = max(1.0, float(counts.max()))
            self.bank_image.setImage(counts, autoLevels=False, levels=(0.0, top))
            self.bank_colour_bar.setLevels((0.0, top))
            self.plots["banks"].setYRange(0.0, float(counts.shape[0]), padding=0)
            from PySide6.QtCore import QRectF
            self.bank_image.setRect(QRectF(0.0, 0.0, float(payload["total_cycles"]),
                                           float(counts.shape[0])))

    # ---------------------------------------------------------------- export
    def plot_data(self, plot: str) -> tuple[list[str], list[list[Any]]]:
        """(header, rows) of one plot's data (``plot`` in PLOTS) or of ``"results"``."""
        if plot == "results":
            return self.results_csv()
        if plot in CURVE_PLOTS:
            keys = ["best_edp", "edp"] if plot == "edp" else [plot]
            header = ["method", "step", "evaluations", "elapsed_s"] + keys
            return header, [[p["method"], p["step"], p["evaluations"], p["elapsed_s"]]
                            + [p[k] for k in keys] for p in self.points]
        if plot == "gantt":
            return self.gantt.csv()
        if plot in ("dram_time", "hit_rate"):
            header = ["layer", "start_cycles", "model_cycles", "model_dram_cycles",
                      "engine_service_cycles", "engine_paced_end", "stall_cycles",
                      "row_hit_rate", "row_conflicts", "requests", "model_dram_pj",
                      "engine_dram_pj"]
            return header, [[x[k] if k != "layer" else x["name"] for k in header]
                            for x in self.cosim_layers()]
        if plot == "banks":
            if self.cosim is None:
                return ["bank", "bin_start_cycles", "bin_end_cycles", "reads", "writes"], []
            b = self.cosim["banks"]
            edges, reads, writes = b["edges"], b["reads"], b["writes"]
            rows = [[k, float(edges[j]), float(edges[j + 1]), int(reads[k, j]),
                     int(writes[k, j])]
                    for k in range(reads.shape[0]) for j in range(reads.shape[1])
                    if reads[k, j] or writes[k, j]]
            return ["bank", "bin_start_cycles", "bin_end_cycles", "reads", "writes"], rows
        raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)} or "
                         "results")

    def _scene_of(self, plot: str):
        if plot not in self.plots:
            raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)}")
        widget = self.curve_widget if plot in CURVE_PLOTS else self.timeline_widget
        return widget.scene(), self.plots[plot].sceneBoundingRect()

    def export(self, path: str | Path, plot: str, fmt: str | None = None) -> Path:
        """Export ``plot`` (PLOTS, or ``"results"`` as CSV) as png, svg or csv (``fmt`` or
        the file's suffix); written atomically."""
        kind = plot_export.format_for(path, fmt)
        if kind == "csv":
            header, rows = self.plot_data(plot)
            return plot_export.write_csv(path, header, rows)
        if plot == "results":
            raise ValueError("the results table exports as CSV only")
        scene, rect = self._scene_of(plot)
        if kind == "png":
            return plot_export.render_png(scene, rect, path)
        return plot_export.render_svg(scene, rect, path, title=f"DiffMem Studio: {plot}")

    def save_schedule(self, path: str | Path) -> Path:
        """Write the shown run's schedule file (``optimize --out`` format), atomically."""
        if self.shown is None:
            raise ValueError("no schedule to save: run the optimiser first")
        from engine.fileio import atomic_write_text, json_default
        atomic_write_text(path, json.dumps(self.shown.schedule, indent=1,
                                           default=json_default, allow_nan=True))
        return Path(path)

    def _export_interactive(self, plot: str, fmt: str) -> Path | None:
        path = self._ask_save_path("Export", f"{plot}.{fmt}",
                                   f"{fmt.upper()} (*.{fmt});;All files (*)")
        if not path:
            return None
        if not Path(path).suffix:
            path = f"{path}.{fmt}"
        try:
            return self.export(path, plot, fmt)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            import traceback
            self._show_error(f"Cannot export to {path}: {exc}", traceback.format_exc())
            return None

    def _save_interactive(self) -> Path | None:
        if self.shown is None:
            return None
        name = f"{self.shown.network}-{self.shown.method}-schedule.json"
        path = self._ask_save_path("Save schedule", name, "Schedules (*.json);;All files (*)")
        if not path:
            return None
        try:
            return self.save_schedule(path)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            import traceback
            self._show_error(f"Cannot save {path}: {exc}", traceback.format_exc())
            return None
