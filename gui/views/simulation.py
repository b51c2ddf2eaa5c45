"""The simulation view: pick a memory and a trace, run it, watch the epochs, export the plots.

Plots are updated in place (``setData`` / ``setImage``) by a ~30 Hz timer that draws the
epochs received since the last tick, so a fast simulation never floods the GUI thread.
The engine runs in a worker thread (``gui.workers``); nothing here imports the numba kernels
until a run starts.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QMessageBox, QProgressBar, QPushButton, QSpinBox,
                               QToolButton, QVBoxLayout, QWidget)

REPO = Path(__file__).resolve().parents[2]
DEMO_TRACE = REPO / "resources" / "traces" / "demo.trace"
REFRESH_MS = 33            # ~30 Hz plot refresh
PLOTS = ("heatmap", "hit_rate", "bandwidth", "latency", "energy")


def _preset_names() -> list[str]:
    try:
        from engine.config import list_presets
        return list_presets()
    except Exception:  # noqa: BLE001 - the view must open even if the engine is broken
        return []


def trim_histogram(hist: np.ndarray, quantile: float = 0.999) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges, counts) of a per-cycle histogram, cut at ``quantile`` of its mass.

    Leading empty bins are dropped too. An empty histogram gives empty arrays.
    """
    hist = np.asarray(hist, dtype=np.float64).reshape(-1)
    total = hist.sum()
    if total <= 0:
        return np.zeros(0), np.zeros(0)
    cum = np.cumsum(hist)
    hi = int(np.searchsorted(cum, quantile * total)) + 1
    lo = int(np.argmax(hist > 0))
    counts = hist[lo:hi]
    edges = np.arange(lo, hi + 1, dtype=np.float64)
    return edges, counts


class SimulationView(QWidget):
    """Config + trace + epoch length, Start/Cancel, progress, and five live plots."""

    run_finished = Signal(object)        # Stats, after the worker thread was joined
    run_failed = Signal(str, str)        # message, traceback
    run_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._run = None
        self._stats = None
        self._pending: list[dict] = []
        self._epochs: list[dict] = []
        self._build_controls()
        self._build_plots()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._refresh)
        self._set_running(False)

    # ---------------------------------------------------------------- layout
    def _build_controls(self) -> None:
        self.config_combo = QComboBox()
        self.config_combo.setObjectName("configCombo")
        self.config_combo.addItems(_preset_names())
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

        trace_row = QHBoxLayout()
        trace_row.addWidget(self.trace_edit, 1)
        trace_row.addWidget(self.browse_button)
        form = QFormLayout()
        form.addRow("Memory", self.config_combo)
        form.addRow("Trace", trace_row)
        form.addRow("Epoch", self.epoch_spin)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress_bar, 1)
        self._top = QVBoxLayout(self)
        self._top.addLayout(form)
        self._top.addLayout(buttons)
        self._top.addWidget(self.status_label)
        self._top.addWidget(self.summary_label)

    def _build_plots(self) -> None:
        self.plot_widget = pg.GraphicsLayoutWidget()
        self.plot_widget.setObjectName("plotWidget")
        lay = self.plot_widget
        self.plots: dict[str, pg.PlotItem] = {}

        p = lay.addPlot(row=0, col=0, colspan=2, title="Bank utilisation (row open)")
        p.setLabel("bottom", "epoch")
        p.setLabel("left", "bank")
        self.heatmap = pg.ImageItem(axisOrder="row-major")   # image[bank, epoch]
        self.heatmap.setLevels((0.0, 1.0))
        self.heatmap.setLookupTable(pg.colormap.get("viridis").getLookupTable(nPts=256))
        p.addItem(self.heatmap)
        self.plots["heatmap"] = p

        p = lay.addPlot(row=1, col=0, title="Row-buffer hit rate")
        p.setLabel("bottom", "cycle")
        p.setYRange(0.0, 1.0)
        self.hit_rate_curve = p.plot([], [], pen=pg.mkPen("c", width=2))
        self.plots["hit_rate"] = p

        p = lay.addPlot(row=1, col=1, title="Bandwidth (GB/s)")
        p.setLabel("bottom", "cycle")
        self.bandwidth_curve = p.plot([], [], pen=pg.mkPen("y", width=2))
        self.plots["bandwidth"] = p

        p = lay.addPlot(row=2, col=0, title="Read latency (cycles, to 99.9th pct)")
        p.setLabel("bottom", "cycles")
        p.setLabel("left", "reads")
        self.latency_curve = pg.PlotDataItem([0.0, 1.0], [0.0], stepMode="center",
                                             fillLevel=0, brush=(80, 160, 255, 120))
        self.latency_curve.setData([], [])
        p.addItem(self.latency_curve)
        self.plots["latency"] = p

        p = lay.addPlot(row=2, col=1, title="Energy by component (pJ)")
        self.energy_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush="m")
        p.addItem(self.energy_bars)
        self.energy_labels: list[str] = []
        self.energy_values = np.zeros(0)
        self.plots["energy"] = p

        self._top.addWidget(self.plot_widget, 1)

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
            from engine.config import load_config
            from engine.simulator import SimOptions
            cfg = load_config(name)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            import traceback
            self._show_error(f"Cannot load memory config '{name}': {exc}",
                             traceback.format_exc())
            return
        from gui.workers import start_simulation

        self._clear_plots()
        options = SimOptions(epoch=int(self.epoch_spin.value()))
        self._set_running(True)
        self.status_label.setText(f"Simulating {Path(trace).name} on {name}…")
        self.progress_bar.setRange(0, 0)            # busy until the first epoch
        run = start_simulation(cfg, [trace], options, parent=self)
        run.epoch.connect(self._on_epoch)
        run.progress.connect(self._on_progress)
        run.finished.connect(self._on_finished)
        run.failed.connect(self._on_failed)
        run.cancelled.connect(self._on_cancelled)
        self._run = run
        self._timer.start()

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
    def _on_epoch(self, rec: dict) -> None:
        self._pending.append(rec)          # drawn by the timer

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
        self._show_stats(stats)
        s = stats.summary
        self.status_label.setText(f"Done: {len(self._epochs)} epochs")
        self.summary_label.setText(
            f"cycles {int(s['num_cycles'])} · avg read latency "
            f"{float(s['average_read_latency']):.1f} cycles · row-hit rate "
            f"{100.0 * float(s['row_hit_rate']):.1f} % · bandwidth "
            f"{float(s['average_bandwidth']):.2f} GB/s · energy "
            f"{float(s['total_energy']):.3e} pJ")
        self.run_finished.emit(stats)

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
        self.heatmap.clear()
        self.hit_rate_curve.setData([], [])
        self.bandwidth_curve.setData([], [])
        self.latency_curve.setData([], [])
        self.energy_bars.setOpts(x=[], height=[])
        self.energy_labels = []
        self.energy_values = np.zeros(0)
        self.summary_label.setText("")

    def epoch_arrays(self) -> dict[str, np.ndarray]:
        """The epochs drawn so far: end cycle, hit rate, bandwidth, latency, utilisation."""
        e = self._epochs
        return {
            "end": np.array([r["end"] for r in e], dtype=np.float64),
            "row_hit_rate": np.array([r["row_hit_rate"] for r in e], dtype=np.float64),
            "bandwidth_GBps": np.array([r["bandwidth_GBps"] for r in e], dtype=np.float64),
            "avg_read_latency": np.array([r["avg_read_latency"] for r in e], dtype=np.float64),
            "utilisation": (np.stack([r["bank_utilisation"] for r in e], axis=1) if e
                            else np.zeros((0, 0))),
        }

    def _refresh(self) -> None:
        """Timer tick: draw the epochs that arrived since the last tick, in place."""
        if not self._pending:
            return
        self._epochs.extend(self._pending)
        self._pending.clear()
        a = self.epoch_arrays()
        self.heatmap.setImage(a["utilisation"], autoLevels=False, levels=(0.0, 1.0))
        self.hit_rate_curve.setData(a["end"], a["row_hit_rate"], connect="finite")
        self.bandwidth_curve.setData(a["end"], a["bandwidth_GBps"])

    def _show_stats(self, stats: Any) -> None:
        edges, counts = trim_histogram(stats.read_latency_hist)
        self.latency_curve.setData(edges, counts, stepMode="center")
        try:
            from engine.power import COMPONENTS
            comp = stats.energy.components_pJ
            items = [(k, float(comp[k])) for k in COMPONENTS if k in comp]
        except Exception:  # noqa: BLE001 - fall back on the summary's causes
            items = [(k, float(v)) for k, v in stats.summary.get("energy_by_cause", {}).items()]
        self.energy_labels = [k for k, _ in items]
        self.energy_values = np.array([v for _, v in items], dtype=np.float64)
        x = np.arange(len(items), dtype=np.float64)
        self.energy_bars.setOpts(x=x, height=self.energy_values, width=0.7)
        axis = self.plots["energy"].getAxis("bottom")
        axis.setTicks([list(zip(x.tolist(), self.energy_labels))])

    # ---------------------------------------------------------------- export
    def plot_data(self, plot: str) -> tuple[list[str], list[list[Any]]]:
        """(header, rows) of the data one plot shows, as written by :meth:`export_csv`."""
        if plot == "heatmap":
            util = self.epoch_arrays()["utilisation"]
            rows = [[b, e, float(util[b, e])] for b in range(util.shape[0])
                    for e in range(util.shape[1])]
            return ["bank", "epoch", "utilisation"], rows
        if plot in ("hit_rate", "bandwidth"):
            curve = self.hit_rate_curve if plot == "hit_rate" else self.bandwidth_curve
            x, y = curve.getData()
            x = [] if x is None else x
            y = [] if y is None else y
            name = "row_hit_rate" if plot == "hit_rate" else "bandwidth_GBps"
            return ["cycle", name], [[float(a), float(b)] for a, b in zip(x, y)]
        if plot == "latency":
            x, y = self.latency_curve.getData()
            if x is None or len(x) == 0:
                return ["latency_cycles", "reads"], []
            return ["latency_cycles", "reads"], [[int(a), float(b)] for a, b in zip(x, y)]
        if plot == "energy":
            return (["component", "energy_pJ"],
                    [[k, float(v)] for k, v in zip(self.energy_labels, self.energy_values)])
        raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)}")

    def export_csv(self, path: str | Path, plot: str | None = None) -> Path:
        """Write one plot's data (``plot`` in PLOTS), or all of them in long form, as CSV."""
        path = Path(path)
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            if plot is not None:
                header, rows = self.plot_data(plot)
                w.writerow(header)
                w.writerows(rows)
            else:
                w.writerow(["plot", "x", "y", "value"])
                for name in PLOTS:
                    header, rows = self.plot_data(name)
                    for r in rows:
                        r = list(r) + [""] * (3 - len(r))
                        w.writerow([name] + r)
        return path

    def export_png(self, path: str | Path, plot: str | None = None, scale: float = 2.0) -> Path:
        """Render one plot (``plot`` in PLOTS), or the whole plot grid, to a PNG file.

        The plot's scene region is painted into a QImage (``scale`` x its on-screen size), so a
        plot that was never laid out still exports at a sensible size.
        """
        from PySide6.QtCore import QRectF
        from PySide6.QtGui import QColor, QImage, QPainter

        path = Path(path)
        scene = self.plot_widget.scene()
        if plot is None:
            source = scene.itemsBoundingRect() if self.plot_widget.width() <= 0 else \
                QRectF(self.plot_widget.viewport().rect())
        elif plot in self.plots:
            source = self.plots[plot].sceneBoundingRect()
        else:
            raise ValueError(f"unknown plot '{plot}'; expected one of {', '.join(PLOTS)}")
        w = max(1, int(round(source.width() * scale)))
        h = max(1, int(round(source.height() * scale)))
        image = QImage(w, h, QImage.Format.Format_ARGB32)
        image.fill(QColor("black"))
        painter = QPainter(image)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            scene.render(painter, QRectF(0, 0, w, h), source)
        finally:
            painter.end()
        if not image.save(str(path), "PNG"):
            raise OSError(f"{path}: could not write the PNG")
        return path
