"""The studies view: run a study (``engine.studies``) from the GUI, as ``python main.py study``
does from the command line, and render its design-review report.

Controls, top to bottom: the study type (the engine's catalog) with its description; the traces
(a table: label, path and the optional batch, FLOPs and kind a study may need; Add… / Remove);
the memory config (engine presets); the study's parameters where it takes some (timing: a
parameter name and comma-separated values; technology / memory share: comma-separated presets;
architecture / policy / hot spots: variants ``NAME:key=value,...; NAME2:...``; memory share:
the accelerator as ``key=value,...``); the workers and an optional Dask scheduler address; the
name of the study in the project; Run / Cancel / Report… and a progress bar (points done/total).
Below: the results table, one row per point as it finishes, and the findings text.

Results go into the open project (``project=`` of :func:`engine.studies.run_study`) when one
is open, else into a results folder under the user's data directory (``_results_root``), one
folder per study name: running the same study again resumes it there.  The study runs in a
worker thread (:mod:`gui.studies_worker`); its points run in local worker processes or on the
Dask scheduler.  Dialogs go through small methods (``_show_error``, ``_ask_trace_paths``,
``_ask_report_dir``) so tests can monkeypatch them.
"""
from __future__ import annotations

import bisect

import time
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QStandardPaths, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMessageBox,
                               QPlainTextEdit, QProgressBar, QPushButton, QSpinBox, QSplitter,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from gui.project_lists import preset_names
from gui.studies_worker import TaskRun, start_task

TRACE_COLUMNS = ("label", "path", "batch", "FLOPs", "kind")
RESULT_COLUMNS = ("workload", "point", "status", "step time (µs)", "read latency (ns)",
                  "bandwidth (GB/s)", "row hits (%)", "energy (µJ)", "energy/byte (pJ)")
HIDDEN_TAGS = ("order", "base")
#: What the study plot can show: (metric key, label, unit of the metric, axis unit, scale)
PLOT_METRICS = (("step_time_ns", "step time", "ns", "s", 1e-9),
                ("avg_read_latency_ns", "read latency", "ns", "s", 1e-9),
                ("bandwidth_GBps", "bandwidth (GB/s)", "GB/s", "", 1.0),
                ("row_hit_rate", "row hits (%)", "%", "", 100.0),
                ("energy_total_pJ", "energy (core + IO)", "pJ", "J", 1e-12))
TIMING_DEFAULT = "tRCD"
#: Which parameter editor each study shows: "timing", "configs", "variants" or "" (none).
PARAM_KIND = {"timing": "timing", "technology": "configs", "memshare": "configs",
              "architecture": "variants", "policy": "variants", "hotspots": "variants"}


def _studies() -> dict[str, Any]:
    from engine.studies.catalog import STUDIES          # numpy only
    return dict(STUDIES)


def _default_workers() -> int:
    from engine.studies.runner import default_workers
    return default_workers()


def record_order(record: dict[str, Any]) -> tuple:
    """Where a point goes in the table and the plot: by workload, swept parameter, then its
    value (numbers as numbers) or its variant's place in the study's list."""
    tags = record.get("tags", {})
    value = tags.get("value", tags.get("order", 0))
    num = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return (str(record.get("label", "")), str(tags.get("param", "")),
            (0, float(num), "") if num is not None else (1, 0.0, str(value)),
            point_text(tags))


def point_text(tags: dict[str, Any]) -> str:
    """A point's tags as shown in the table (``param=tRCD value=12``, ``variant=fcfs``)."""
    return " ".join(f"{k}={v}" for k, v in tags.items() if k not in HIDDEN_TAGS)


def record_row(record: dict[str, Any]) -> list[str]:
    """The table row of one result record (see :data:`RESULT_COLUMNS`)."""
    label = str(record.get("label", ""))
    tags = point_text(record.get("tags", {}))
    if record.get("status") != "ok":
        return [label, tags, f"error: {record.get('error', '')}"] + [""] * 6
    m = record["metrics"]
    return [label, tags, "ok", f"{m['step_time_ns'] / 1e3:.4g}",
            f"{m['avg_read_latency_ns']:.4g}", f"{m['bandwidth_GBps']:.4g}",
            f"{100 * m['row_hit_rate']:.2f}", f"{m['energy_total_pJ'] / 1e6:.4g}",
            f"{m['energy_per_byte_pJ']:.4g}"]


class StudiesView(QWidget):
    """Study controls, live results table, findings; see the module docstring."""

    run_finished = Signal(object)        # engine.studies.StudyOutcome, after the join
    run_failed = Signal(str, str)
    run_cancelled = Signal()
    report_written = Signal(object)      # engine.studies.report.ReportFiles
    study_stored = Signal(str)           # name of the study updated in the open project

    def __init__(self, parent: QWidget | None = None, *,
                 project: Callable[[], Any] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("studiesView")
        self._project_fn = project
        self._run: TaskRun | None = None
        self._report: TaskRun | None = None
        self._shown: set[str] = set()          # point ids in the results table
        self.records: list[dict[str, Any]] = []
        self.outcome: Any = None
        self.findings_lines: list[str] = []
        self.last_cancel_latency_s: float | None = None
        self._cancel_at: float | None = None
        self._target: tuple[str, Any, str] = ("folder", None, "")   # where the run goes
        self._build()
        self._on_study_changed()
        self._set_busy(False)

    # ---------------------------------------------------------------- layout
    def _build(self) -> None:
        self.study_combo = QComboBox()
        self.study_combo.setObjectName("studyCombo")
        for name, study in _studies().items():
            self.study_combo.addItem(f"{study.title} ({name})", name)
        self.study_combo.currentIndexChanged.connect(lambda _i: self._on_study_changed())
        self.description_label = QLabel()
        self.description_label.setWordWrap(True)

        t = QTableWidget(0, len(TRACE_COLUMNS))
        t.setObjectName("tracesTable")
        t.setHorizontalHeaderLabels(list(TRACE_COLUMNS))
        t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        t.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        t.setMaximumHeight(140)
        self.traces_table = t
        self.add_trace_button = QPushButton("Add…")
        self.add_trace_button.setObjectName("addTraceButton")
        self.add_trace_button.clicked.connect(lambda: self.add_traces_interactive())
        self.remove_trace_button = QPushButton("Remove")
        self.remove_trace_button.setObjectName("removeTraceButton")
        self.remove_trace_button.clicked.connect(self.remove_selected_traces)

        self.config_combo = QComboBox()
        self.config_combo.setObjectName("studyConfigCombo")
        self.config_combo.addItems(preset_names())
        self.config_combo.setCurrentText("DDR4-3200")
        self.param_name_edit = QLineEdit(TIMING_DEFAULT)
        self.param_name_edit.setObjectName("paramNameEdit")
        self.param_values_edit = QLineEdit()
        self.param_values_edit.setObjectName("paramValuesEdit")
        self.params_help_label = QLabel()
        self.params_help_label.setWordWrap(True)
        self.compute_edit = QLineEdit()
        self.compute_edit.setObjectName("computeEdit")
        self.compute_edit.setPlaceholderText("default A100; e.g. utilisation=0.4,power_W=300")
        self.workers_spin = QSpinBox()
        self.workers_spin.setObjectName("workersSpin")
        self.workers_spin.setRange(0, 256)
        self.workers_spin.setValue(_default_workers())
        self.workers_spin.setToolTip("Local worker processes (0 = in this process: the window "
                                     "stutters while a point simulates)")
        self.cluster_edit = QLineEdit()
        self.cluster_edit.setObjectName("clusterEdit")
        self.cluster_edit.setPlaceholderText("optional: tcp://HOST:PORT (Dask scheduler)")
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("studyNameEdit")
        self.name_edit.setToolTip("Name of the study in the project (or of its results "
                                  "folder); running the same name again resumes it")

        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("runStudyButton")
        self.run_button.clicked.connect(lambda: self.start())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelStudyButton")
        self.cancel_button.clicked.connect(self.cancel)
        self.report_button = QPushButton("Report…")
        self.report_button.setObjectName("reportButton")
        self.report_button.clicked.connect(lambda: self.report_interactive())
        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("studyProgress")
        self.progress_bar.setFormat("%v / %m points")
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.status_label = QLabel("Ready")
        self.status_label.setObjectName("studyStatusLabel")

        form = QFormLayout()
        form.addRow("Study", self.study_combo)
        form.addRow("", self.description_label)
        traces_box = QVBoxLayout()
        traces_box.addWidget(self.traces_table)
        row = QHBoxLayout()
        row.addWidget(self.add_trace_button)
        row.addWidget(self.remove_trace_button)
        row.addStretch(1)
        traces_box.addLayout(row)
        form.addRow("Traces", traces_box)
        form.addRow("Memory config", self.config_combo)
        prow = QHBoxLayout()
        prow.addWidget(self.param_name_edit)
        prow.addWidget(self.param_values_edit, 1)
        self.param_label = QLabel("Parameter")
        form.addRow(self.param_label, prow)
        form.addRow("", self.params_help_label)
        self.compute_label = QLabel("Accelerator")
        form.addRow(self.compute_label, self.compute_edit)
        wrow = QHBoxLayout()
        wrow.addWidget(self.workers_spin)
        wrow.addWidget(QLabel("Cluster"))
        wrow.addWidget(self.cluster_edit, 1)
        form.addRow("Workers", wrow)
        form.addRow("Name", self.name_edit)
        buttons = QHBoxLayout()
        for w in (self.run_button, self.cancel_button, self.report_button):
            buttons.addWidget(w)
        buttons.addWidget(self.progress_bar, 1)

        self.results_table = QTableWidget(0, len(RESULT_COLUMNS))
        self.results_table.setObjectName("studyResultsTable")
        self.results_table.setHorizontalHeaderLabels(list(RESULT_COLUMNS))
        self.results_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.results_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        self.findings_text = QPlainTextEdit()
        self.findings_text.setObjectName("findingsText")
        self.findings_text.setReadOnly(True)
        self.findings_text.setPlaceholderText("Findings appear here after Report…")
        import pyqtgraph as pg
        self.metric_combo = QComboBox()
        self.metric_combo.setObjectName("studyMetricCombo")
        for key, label, *_rest in PLOT_METRICS:
            self.metric_combo.addItem(label, key)
        self.metric_combo.currentIndexChanged.connect(lambda _i: self._draw_plot())
        self.plot_widget = pg.PlotWidget()
        self.plot_widget.setObjectName("studyPlot")
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setTitle("Finished points (the metric chosen above)")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush="#4c9be8")
        self.plot.addItem(self.bars)
        self.plot.setXRange(-0.5, 0.5)
        self.plot.setYRange(0.0, 1.0)
        self.plot.getAxis("bottom").setTicks([[]])      # no point before a run
        plot_box = QWidget()
        plot_lay = QVBoxLayout(plot_box)
        plot_lay.setContentsMargins(0, 0, 0, 0)
        prow2 = QHBoxLayout()
        prow2.addWidget(QLabel("Plot"))
        prow2.addWidget(self.metric_combo, 1)
        plot_lay.addLayout(prow2)
        plot_lay.addWidget(self.plot_widget, 1)
        table_and_plot = QSplitter(Qt.Orientation.Horizontal)
        table_and_plot.addWidget(self.results_table)
        table_and_plot.addWidget(plot_box)
        table_and_plot.setChildrenCollapsible(False)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(table_and_plot)
        splitter.addWidget(self.findings_text)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(form)
        top_layout.addLayout(buttons)
        top_layout.addWidget(self.status_label)
        outer = QSplitter(Qt.Orientation.Vertical)
        outer.addWidget(top)
        outer.addWidget(splitter)
        layout = QVBoxLayout(self)
        layout.addWidget(outer)

    # ---------------------------------------------------------------- dialogs (monkeypatched)
    def _show_error(self, msg: str, details: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Critical, "Studies", msg,
                          QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.exec()

    def _ask_trace_paths(self) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Add traces", "", "Traces (*.h5 *.hdf5 *.dmt *.trace *.txt);;All files (*)")
        return list(paths)

    def _ask_report_dir(self) -> str | None:
        path = QFileDialog.getExistingDirectory(self, "Write the report into")
        return path or None

    def _results_root(self) -> Path:
        """Where studies go when no project is open (one folder per study name)."""
        base = QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.AppLocalDataLocation) or str(Path.home() /
                                                                          ".diffmem")
        return Path(base) / "studies"

    # ---------------------------------------------------------------- inputs
    def project(self) -> Any:
        """The open, writable project (None when none is open)."""
        p = self._project_fn() if self._project_fn is not None else None
        if p is None or getattr(p, "closed", False):
            return None
        return p

    def study_key(self) -> str:
        return str(self.study_combo.currentData())

    def set_study(self, key: str) -> None:
        i = self.study_combo.findData(key)
        if i < 0:
            raise ValueError(f"no study {key!r}")
        self.study_combo.setCurrentIndex(i)

    def _on_study_changed(self) -> None:
        key = self.study_key()
        study = _studies().get(key)
        self.description_label.setText(study.description if study else "")
        self.params_help_label.setText(f"parameters: {study.params_help}" if study else "")
        kind = PARAM_KIND.get(key, "")
        self.param_name_edit.setVisible(kind == "timing")
        self.param_values_edit.setVisible(bool(kind))
        self.param_label.setVisible(bool(kind))
        self.param_label.setText({"timing": "Parameter", "configs": "Configs",
                                  "variants": "Variants"}.get(kind, "Parameter"))
        self.param_values_edit.setPlaceholderText({
            "timing": "values, e.g. 10,12,14 (empty: the study's defaults)",
            "configs": "presets, e.g. DDR4-3200,GDDR6 (empty: the study's defaults)",
            "variants": "NAME:key=value,...; NAME2:key=value (empty: the defaults)"}.get(kind,
                                                                                      ""))
        self.compute_edit.setVisible(key == "memshare")
        self.compute_label.setVisible(key == "memshare")
        self.name_edit.setText(key)

    def add_traces(self, paths: list[str]) -> None:
        """Add trace files to the table; each label is the file's stem, made unique."""
        labels = {self.traces_table.item(r, 0).text() for r in
                  range(self.traces_table.rowCount()) if self.traces_table.item(r, 0)}
        for path in paths:
            stem = Path(path).stem or "trace"
            label, i = stem, 2
            while label in labels:
                label, i = f"{stem}-{i}", i + 1
            labels.add(label)
            r = self.traces_table.rowCount()
            self.traces_table.insertRow(r)
            for c, text in enumerate((label, str(path), "", "", "")):
                self.traces_table.setItem(r, c, QTableWidgetItem(text))

    def add_traces_interactive(self) -> None:
        paths = self._ask_trace_paths()
        if paths:
            self.add_traces(paths)

    def remove_selected_traces(self) -> None:
        rows = sorted({i.row() for i in self.traces_table.selectedIndexes()}, reverse=True)
        for r in rows:
            self.traces_table.removeRow(r)

    def set_trace_field(self, row: int, column: str, text: str) -> None:
        """Set one cell of the traces table (``batch``, ``FLOPs``, ``kind``, ...)."""
        c = TRACE_COLUMNS.index(column)
        self.traces_table.setItem(row, c, QTableWidgetItem(text))

    def _cell(self, r: int, c: int) -> str:
        item = self.traces_table.item(r, c)
        return item.text().strip() if item is not None else ""

    def trace_inputs(self) -> list[Any]:
        """The table as ``TraceInput`` objects (StudyError on a bad cell)."""
        from engine.studies.spec import StudyError, TraceInput
        out = []
        for r in range(self.traces_table.rowCount()):
            label, path, batch, flops, kind = (self._cell(r, c) for c in range(5))
            if not label or not path:
                raise StudyError(f"trace row {r + 1}: give a label and a path")
            try:
                b = int(batch) if batch else None
                f = float(flops) if flops else None
            except ValueError:
                raise StudyError(f"trace '{label}': batch = {batch!r} / FLOPs = {flops!r}: "
                                 "expected numbers") from None
            if b is not None and b <= 0:
                raise StudyError(f"trace '{label}': batch must be positive")
            out.append(TraceInput(label=label, path=path, kind=kind, batch=b, flops=f))
        return out

    def study_params(self) -> dict[str, Any]:
        """The study's parameters from the parameter fields (StudyError on bad text)."""
        from engine.studies.param_text import (parse_param_values, parse_variant_items,
                                               split_items)
        from engine.studies.spec import StudyError
        kind = PARAM_KIND.get(self.study_key(), "")
        text = self.param_values_edit.text().strip()
        if not kind or not text:
            return {}
        if kind == "configs":
            return {"configs": parse_param_values("configs", split_items(text, ","))}
        if kind == "timing":
            name = self.param_name_edit.text().strip()
            if not name:
                raise StudyError("timing study: give the parameter to sweep (e.g. tRCD)")
            return {name: parse_param_values(name, split_items(text, ","))}
        return {"variants": parse_variant_items(split_items(text, ";"), "variant")}

    def compute_model(self) -> dict[str, Any]:
        from engine.studies.param_text import parse_key_values, split_items
        if self.study_key() != "memshare":
            return {}
        return parse_key_values(split_items(self.compute_edit.text(), ","), "accelerator",
                                typed=False)

    def setup(self) -> Any:
        """The ``StudySetup`` the controls describe (StudyError on bad input)."""
        from engine.studies.spec import StudySetup
        return StudySetup(traces=self.trace_inputs(), config=self.config_combo.currentText(),
                          params=self.study_params(), compute=self.compute_model())

    def study_name(self) -> str:
        return self.name_edit.text().strip() or self.study_key()

    def results_folder(self) -> Path:
        return self._results_root() / self.study_name()

    # ---------------------------------------------------------------- running
    def is_running(self) -> bool:
        return self._run is not None or self._report is not None

    def start(self) -> bool:
        """Run the study the controls describe; errors in the inputs are shown, not raised."""
        if self.is_running():
            return False
        if self.traces_table.rowCount() == 0:
            self._show_error("Add a trace first: a study runs its configurations on one or "
                             "more request traces (the Add… button under the traces table).", "")
            self.status_label.setText("No trace: add one with Add…")
            return False
        from engine.errors import DiffMemError
        try:
            setup = self.setup()
        except DiffMemError as exc:
            self._show_error(str(exc), "")
            return False
        name, key = self.study_name(), self.study_key()
        workers = int(self.workers_spin.value())
        cluster = self.cluster_edit.text().strip() or None
        project = self.project()
        folder = None if project is not None else self.results_folder()

        def task(progress: Any, cancel: Any) -> Any:
            from engine.studies.run import run_study
            return run_study(key, setup, folder=folder, project=project, study_name=name,
                             workers=workers, cluster=cluster, progress=progress,
                             cancel=cancel)

        # a project closed while the study runs stops it at the next point
        stop = (lambda: bool(getattr(project, "closed", False))) if project is not None \
            else None
        self.results_table.setRowCount(0)
        self._shown.clear()
        self.records = []
        self.outcome = None
        self._cancel_at = None
        self._target = ("project", project, name) if project is not None else \
            ("folder", folder, name)
        run = start_task(task, self, extra_cancel=stop)
        run.progress.connect(self._on_progress)
        run.finished.connect(self._on_finished)
        run.failed.connect(self._on_failed)
        run.cancelled.connect(self._on_cancelled)
        self._run = run
        self._set_busy(True)
        self.progress_bar.setRange(0, 0)            # busy until the first point's total
        where = f"cluster {cluster}" if cluster else (
            f"{workers} worker process(es)" if workers else "this process")
        self.status_label.setText(f"Running {key} as '{name}' on {where}…")
        return True

    def cancel(self) -> None:
        if self._run is None:
            return
        self._cancel_at = time.monotonic()
        self._run.cancel()
        self.status_label.setText("Cancelling (points in flight finish first)…")
        self.cancel_button.setEnabled(False)

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """Cancel what runs and wait for its thread (window closing)."""
        for run in (self._run, self._report):
            if run is not None:
                run.cancel()
                run.wait(timeout_ms)

    def _set_busy(self, busy: bool) -> None:
        for w in (self.run_button, self.study_combo, self.traces_table, self.add_trace_button,
                  self.remove_trace_button, self.config_combo, self.param_name_edit,
                  self.param_values_edit, self.compute_edit, self.workers_spin,
                  self.cluster_edit, self.name_edit, self.report_button):
            w.setEnabled(not busy)
        self.cancel_button.setEnabled(self._run is not None)

    def _end(self) -> None:
        for attr in ("_run", "_report"):
            r = getattr(self, attr)
            if r is not None and not r.running:
                setattr(self, attr, None)
                r.deleteLater()
        if self._cancel_at is not None:
            self.last_cancel_latency_s = time.monotonic() - self._cancel_at
            self._cancel_at = None
        if self.progress_bar.maximum() == 0:
            self.progress_bar.setRange(0, 1)
        self._set_busy(False)

    def _add_record(self, record: dict[str, Any]) -> None:
        pid = record.get("point_id", "")
        if pid in self._shown:
            return
        self._shown.add(pid)
        # in the sweep's order, not the finishing order (14, 22, 18, 10 hid the trend)
        r = bisect.bisect_right([record_order(x) for x in self.records], record_order(record))
        self.records.insert(r, record)
        t = self.results_table
        t.insertRow(r)
        for c, text in enumerate(record_row(record)):
            t.setItem(r, c, QTableWidgetItem(text))
        self._draw_plot()

    def plot_values(self) -> tuple[list[str], list[float]]:
        """(point labels, values in the metric's unit) of the finished points on the plot."""
        key = self.metric_combo.currentData()
        labels, values = [], []
        for rec in self.records:
            if rec.get("status") != "ok" or key not in rec.get("metrics", {}):
                continue
            tags = rec.get("tags", {})
            short = (f"{tags['param']}={tags['value']}" if "param" in tags and "value" in tags
                     else point_text(tags))
            labels.append((str(rec.get("label", "")), short))
            values.append(float(rec["metrics"][key]))
        if len({w for w, _p in labels}) > 1:        # workload names only when they differ
            return [f"{w} {p}" for w, p in labels], values
        return [p for _w, p in labels], values

    def _draw_plot(self) -> None:
        """The chosen metric of every finished point as bars (one per point, in order)."""
        import numpy as np
        i = max(0, self.metric_combo.currentIndex())
        _key, label, _unit, axis_unit, scale = PLOT_METRICS[i]
        labels, values = self.plot_values()
        x = np.arange(len(values), dtype=np.float64)
        shown = np.asarray(values, dtype=np.float64)
        if axis_unit:                          # bars in the metric's unit, axis in SI
            self.plot.getAxis("left").setScale(scale)
            self.plot.setLabel("left", label, units=axis_unit)
        else:
            shown = shown * scale
            self.plot.getAxis("left").setScale(1.0)
            self.plot.setLabel("left", label)
        self.bars.setOpts(x=x, height=shown, width=0.7)
        self.plot.getAxis("bottom").setTicks([list(zip(x.tolist(), labels))])
        if len(values):
            self.plot.setXRange(-0.6, len(values) - 0.4, padding=0)
            self.plot.setYRange(0.0, float(np.nanmax(shown)) * 1.08 or 1.0, padding=0)

    def _on_progress(self, done: int, total: int, record: dict) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(done)
        self._add_record(record)

    def _on_finished(self, outcome: Any) -> None:
        self.outcome = outcome
        for rec in outcome.records:                 # points reused from an earlier run
            self._add_record(rec)
        self._end()
        total = len(outcome.records)
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(total)
        failed = sum(1 for r in outcome.records if r.get("status") != "ok")
        where = self._where()
        self.status_label.setText(
            f"Done: {outcome.ran} point(s) simulated, {outcome.reused} reused"
            + (f", {failed} FAILED" if failed else "") + f"; stored in {where}")
        if self._target[0] == "project":
            self.study_stored.emit(self._target[2])
        self.run_finished.emit(outcome)

    def _where(self) -> str:
        kind, place, name = self._target
        if kind == "project":
            return f"{Path(place.path).name} as '{name}'"
        return str(place)

    def _on_failed(self, message: str, details: str) -> None:
        self._end()
        self.status_label.setText("Failed: " + message)
        self._show_error(message, details)
        self.run_failed.emit(message, details)

    def _on_cancelled(self) -> None:
        self._end()
        self.status_label.setText(f"Cancelled ({len(self.records)} point(s) finished and "
                                  "stored; Run again resumes)")
        if self._target[0] == "project" and self.project() is not None:
            self.study_stored.emit(self._target[2])
        self.run_cancelled.emit()

    # ---------------------------------------------------------------- stored studies
    def show_stored(self, name: str) -> int:
        """Show a study stored in the open project: its type, name, results table and
        findings (nothing is simulated); Report… then writes its report.  Returns the
        number of points shown."""
        from engine.studies import get_study, load_project_study
        project = self.project()
        if project is None:
            raise ValueError("no project is open")
        document, records = load_project_study(project, name)
        key = str(document.get("study", ""))
        if self.study_combo.findData(key) >= 0:
            self.set_study(key)
        self.name_edit.setText(name)
        self.results_table.setRowCount(0)
        self._shown.clear()
        self.records = []
        for rec in records:
            self._add_record(rec)
        self._draw_plot()
        self._target = ("project", project, name)
        lines: list[str] = []
        try:
            analysis = get_study(key).analyse(document, records)
            lines = [f.text for f in analysis.findings]
        except Exception as exc:  # noqa: BLE001 - the table still shows
            lines = [f"(no findings: {exc})"]
        self.findings_lines = list(lines)
        self.findings_text.setPlainText("\n".join(["Findings"] + [f"- {t}" for t in lines]))
        ok = sum(1 for r in records if r.get("status") == "ok")
        self.status_label.setText(f"Stored study '{name}' ({key}): {len(records)} point(s), "
                                  f"{ok} ok — Report… writes its report")
        self.progress_bar.setRange(0, max(1, len(records)))
        self.progress_bar.setValue(len(records))
        return len(records)

    # ---------------------------------------------------------------- report
    def stored_study(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(document, records) of the study named in the name field: from the open project,
        else from its results folder."""
        from engine.studies import load_project_study, load_results
        from engine.studies.spec import StudyError
        name = self.study_name()
        project = self.project()
        if project is not None:
            if name not in project.studies():
                raise StudyError(f"the project holds no study '{name}' (stored: "
                                 f"{', '.join(project.studies()) or 'none'}); run it first")
            return load_project_study(project, name)
        return load_results(self.results_folder())

    def report(self, out_dir: str | Path) -> bool:
        """Render the HTML and PDF report of the named study into *out_dir* (in a thread);
        the findings show in the view when it is written."""
        if self.is_running():
            return False
        from engine.errors import DiffMemError
        try:
            document, records = self.stored_study()     # read here: the project is ours
        except (DiffMemError, OSError) as exc:
            self._show_error(str(exc), "")
            return False

        def task(_progress: Any, _cancel: Any) -> Any:
            from engine.studies import get_study, render_report
            files = render_report(document, records, out_dir)
            analysis = get_study(document["study"]).analyse(document, records)
            lines = [f.text for f in analysis.findings]
            notes = list(analysis.notes)
            return files, lines, notes

        run = start_task(task, self, name="StudyReportThread")
        run.finished.connect(self._on_report_written)
        run.failed.connect(self._on_report_failed)
        run.cancelled.connect(self._end)
        self._report = run
        self._set_busy(True)
        self.status_label.setText(f"Writing the report into {out_dir}…")
        return True

    def report_interactive(self) -> bool:
        out = self._ask_report_dir()
        return self.report(out) if out else False

    def _on_report_written(self, value: Any) -> None:
        files, lines, notes = value
        self._end()
        self.findings_lines = list(lines)
        text = ["Findings"] + [f"- {t}" for t in lines]
        if notes:
            text += ["", "Notes"] + [f"- {n}" for n in notes]
        text += ["", f"Report: {files.html}", f"        {files.pdf} ({files.pdf_pages} pages, "
                                                 f"{files.figures} plot(s))"]
        self.findings_text.setPlainText("\n".join(text))
        self.status_label.setText(f"Report written: {files.html}")
        self.report_written.emit(files)

    def _on_report_failed(self, message: str, details: str) -> None:
        self._end()
        self.status_label.setText("Report failed: " + message)
        self._show_error(message, details)
