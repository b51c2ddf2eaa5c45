"""Energy by bank as a flame graph: total → channel → rank → bank, or total → cause → bank
(each row one level).

A box's width is its energy, children sit under their
parent in the same order.  Hovering a box shows its path, pJ and share of the total (status
line and tooltip).  The tree comes from :mod:`gui.energy_tree` (no Qt); the view draws the
run the simulation view shows (:meth:`EnergyView.set_record`).  Exports PNG, SVG and CSV.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QLabel, QMenu,
                               QMessageBox, QToolButton, QVBoxLayout, QWidget)

from gui import energy_tree as ET

#: the plot's title in each hierarchy (engine.power shares a rank's background and refresh
#: energy among its banks in the location view; the cause view keeps them as their own boxes)
PLOT_TITLES = {
    "location": "Energy: channel → rank → bank (core; rank-level energy shared among the "
                "banks) and IO",
    "cause": "Energy: cause → bank (refresh, background and IO as their own boxes)",
}
from gui import plot_export

MODE_TITLES = {"location": "channel → rank → bank", "cause": "cause → bank"}
#: Box colours by depth (total, level 1, level 2, level 3).
LEVEL_COLOURS = ("#4c566a", "#d08770", "#ebcb8b", "#a3be8c", "#88c0d0")
MIN_LABEL_FRACTION = 0.06      # boxes narrower than this share of the total get no text


def format_pJ(value: float) -> str:
    """Energy in pJ written by the app's one formatter (J with an SI prefix)."""
    from gui.units import fmt
    return fmt(value, "pJ")


class EnergyView(QWidget):
    """The flame graph of one run's energy, with a hierarchy chooser and Export menu."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.record: Any = None
        self.root: ET.EnergyNode | None = None
        self.boxes: list[ET.Box] = []
        self.hover_text = ""
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("energyModeCombo")
        for mode in ET.MODES:
            self.mode_combo.addItem(MODE_TITLES[mode], mode)
        self.mode_combo.currentIndexChanged.connect(lambda _i: self._rebuild())
        self.export_button = QToolButton()
        self.export_button.setObjectName("energyExportButton")
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        for fmt in plot_export.FORMATS:
            action = menu.addAction(fmt.upper() + "…")
            action.setObjectName(f"energy_export_{fmt}")
            action.triggered.connect(lambda _c=False, f=fmt: self._export_interactive(f))
        self.export_button.setMenu(menu)
        self.title_label = QLabel("No run shown: run a simulation or open a stored run")
        self.title_label.setObjectName("energyTitle")
        self.hover_label = QLabel("")
        self.hover_label.setObjectName("energyHover")
        self.hover_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.plot_widget = pg.PlotWidget()
        self.plot_widget.setObjectName("energyPlot")
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setTitle(PLOT_TITLES[ET.MODES[0]])
        # boxes are in pJ; the axis shows J with an SI prefix (never "GpJ")
        self.plot.setLabel("bottom", "energy", units="J")
        self.plot.getAxis("bottom").setScale(1e-12)
        self.plot.hideAxis("left")
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.invertY(True)                     # total at the top, banks below
        self.bars = pg.BarGraphItem(x0=[], y0=[], width=[], height=[])
        self.plot.addItem(self.bars)
        self._texts: list[pg.TextItem] = []
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)

        top = QHBoxLayout()
        top.addWidget(QLabel("Hierarchy"))
        top.addWidget(self.mode_combo)
        top.addWidget(self.title_label, 1)
        top.addWidget(self.export_button)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.plot_widget, 1)
        lay.addWidget(self.hover_label)

    # ---------------------------------------------------------------- model
    @property
    def mode(self) -> str:
        return str(self.mode_combo.currentData())

    def set_mode(self, mode: str) -> None:
        idx = self.mode_combo.findData(mode)
        if idx < 0:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(ET.MODES)}")
        self.mode_combo.setCurrentIndex(idx)

    def set_record(self, record: Any) -> None:
        """Draw the energy of a :class:`gui.run_data.RunRecord` (None clears)."""
        self.record = record
        self.title_label.setText(record.label if record is not None else "No run shown")
        self._rebuild()

    def _rebuild(self) -> None:
        for t in self._texts:
            self.plot.removeItem(t)
        self._texts = []
        self.hover_text = ""
        self.hover_label.setText("")
        if self.record is None:
            self.root, self.boxes = None, []
            self.bars.setOpts(x0=[], y0=[], width=[], height=[], brushes=[])
            return
        self.plot.setTitle(PLOT_TITLES.get(self.mode, ""))
        self.root = ET.build(self.mode, self.record.summary, self.record.per_bank)
        self.boxes = [b for b in ET.layout(self.root) if b.width > 0]
        total = self.root.value or 1.0
        # no outlines (hundreds of HBM banks would be all outline); neighbours alternate shades
        brushes, index_in_row = [], {}
        for b in self.boxes:
            i = index_in_row.get(b.depth, 0)
            index_in_row[b.depth] = i + 1
            colour = pg.mkColor(LEVEL_COLOURS[min(b.depth, len(LEVEL_COLOURS) - 1)])
            brushes.append(pg.mkBrush(colour.darker(125) if i % 2 else colour))
        self.bars.setOpts(x0=np.array([b.x0 for b in self.boxes]),
                          y0=np.array([b.depth for b in self.boxes], dtype=np.float64),
                          width=np.array([b.width for b in self.boxes]),
                          height=np.full(len(self.boxes), 0.95), brushes=brushes, pen=None)
        for b in self.boxes:
            if b.width / total < MIN_LABEL_FRACTION:
                continue
            text = pg.TextItem(f"{b.node.name} {100.0 * b.width / total:.0f} %",
                               color="#000000", anchor=(0, 0.5))
            text.setPos(b.x0, b.depth + 0.475)
            self.plot.addItem(text)
            self._texts.append(text)
        depth = max((b.depth for b in self.boxes), default=0)
        self.plot.setXRange(0, total, padding=0.01)
        self.plot.setYRange(-0.1, depth + 1.05, padding=0)

    # ---------------------------------------------------------------- hover
    def box_at(self, x: float, y: float) -> ET.Box | None:
        """The box under data coordinates (x pJ, y row), if any."""
        row = int(np.floor(y))
        for b in self.boxes:
            if b.depth == row and b.x0 <= x < b.x0 + b.width:
                return b
        return None

    def describe(self, box: ET.Box) -> str:
        total = self.root.value if self.root is not None and self.root.value else 1.0
        text = (f"{' → '.join(box.path)}: {format_pJ(box.width)} "
                f"({box.width:.4g} pJ, {100.0 * box.width / total:.2f} % of the total)")
        return text + (f" — {box.node.note}" if box.node.note else "")

    def hover(self, x: float, y: float) -> str:
        """Show what is under data coordinates (x, y) in the status line; returns the text."""
        box = self.box_at(x, y)
        self.hover_text = self.describe(box) if box is not None else ""
        self.hover_label.setText(self.hover_text)
        return self.hover_text

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        from gui.plots.hover_tip import show_hover
        show_hover(self.plot_widget, self.plot, scene_pos, self.hover)

    # ---------------------------------------------------------------- export
    def table(self) -> tuple[list[str], list[list[Any]]]:
        """(header, rows): every box with its level, path, pJ and % of the total."""
        total = self.root.value if self.root is not None and self.root.value else 1.0
        rows = [[b.depth, "/".join(b.path), b.node.name, b.width, 100.0 * b.width / total,
                 b.node.note] for b in self.boxes]
        return ["level", "path", "name", "energy_pJ", "percent_of_total", "note"], rows

    def export(self, path: str | Path, fmt: str | None = None) -> Path:
        """Export the flame graph as PNG or SVG, or its boxes as CSV (by ``fmt`` or suffix)."""
        kind = plot_export.format_for(path, fmt)
        if kind == "csv":
            header, rows = self.table()
            return plot_export.write_csv(path, header, rows)
        scene = self.plot_widget.scene()
        source = self.plot.sceneBoundingRect()
        if kind == "png":
            return plot_export.render_png(scene, source, path)
        return plot_export.render_svg(scene, source, path, title="DiffMem Studio: energy")

    def _ask_export_path(self, fmt: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Export energy", f"energy.{fmt}",
                                              f"{fmt.upper()} (*.{fmt});;All files (*)")
        return path or None

    def _show_error(self, msg: str) -> None:
        QMessageBox.critical(self, "Export", msg)

    def _export_interactive(self, fmt: str) -> Path | None:
        path = self._ask_export_path(fmt)
        if not path:
            return None
        try:
            return self.export(path, fmt)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            self._show_error(f"Cannot export to {path}: {exc}")
            return None
