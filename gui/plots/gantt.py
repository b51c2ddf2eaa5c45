"""The Gemmini schedule as a Gantt chart: a "compute" row and a "DMA" row, one bar per layer or
fused group (a timeline unit of :mod:`optimizer.timeline`), on a pyqtgraph PlotItem.

Input is the schedule file's content (``optimizer.methods.schedule_json``: ``timeline`` and
per-layer ``layers`` records), so drawing needs neither torch nor the optimiser.  Units of a
fused group (more than one layer in a group) share a colour per group; unfused layers
alternate two greys.  Hovering over a bar shows the unit's layers with their tiling, energy,
cycles and what bounds the unit (:meth:`GanttChart.tooltip_at`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QToolTip

ROWS = ("compute", "DMA")            # top to bottom
ROW_Y = {"compute": 1.0, "DMA": 0.0}
BAR_HEIGHT = 0.7
GROUP_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#bcbd22", "#17becf")
PLAIN_COLOURS = ("#8a8a8a", "#b5b5b5")


def fused_groups(schedule: dict[str, Any]) -> dict[int, int]:
    """Group id -> colour index, for groups of more than one layer (fused)."""
    sizes: dict[int, int] = {}
    for lay in schedule.get("layers", []):
        g = int(lay.get("fusion_group", -1))
        sizes[g] = sizes.get(g, 0) + 1
    fused = sorted(g for g, n in sizes.items() if n > 1)
    return {g: i for i, g in enumerate(fused)}


def unit_colours(schedule: dict[str, Any]) -> list[str]:
    """One colour per timeline unit: by fused group, else alternating greys."""
    groups = fused_groups(schedule)
    out = []
    for i, u in enumerate(schedule.get("timeline", [])):
        g = int(u.get("group", -1))
        out.append(GROUP_COLOURS[groups[g] % len(GROUP_COLOURS)] if g in groups
                   else PLAIN_COLOURS[i % 2])
    return out


def unit_text(unit: dict[str, Any], layers: dict[str, dict[str, Any]]) -> str:
    """The tooltip of one unit: span, bound, and per layer its tiling, energy and cycles."""
    span = unit["end"] - unit["start"]
    c, d = unit["compute"], unit["dma"]
    head = [f"{unit['name']}  (group {unit['group']}, {len(unit['layers'])} layer"
            f"{'s' if len(unit['layers']) != 1 else ''})",
            f"cycles {unit['start']:,.0f} - {unit['end']:,.0f} ({span:,.0f}), "
            f"bound: {unit['bound']}",
            f"compute {c['end'] - c['start']:,.0f} cycles, DMA {d['end'] - d['start']:,.0f} "
            "cycles"]
    for name in unit["layers"]:
        lay = layers.get(name)
        if lay is None:
            continue
        tiling = lay.get("tiling", {}).get("summary", "")
        head += ["", f"{name} ({lay.get('kind', '')}, {lay.get('macs', 0):,} MACs)",
                 f"  tiling: {tiling}",
                 f"  energy {lay.get('energy_pj', 0.0):.4g} pJ, latency "
                 f"{lay.get('latency_cycles', 0.0):,.0f} cycles (compute "
                 f"{lay.get('compute_cycles', 0.0):,.0f}, DMA {lay.get('dma_cycles', 0.0):,.0f})",
                 f"  utilisation {100 * lay.get('utilization', 0.0):.1f} %, DRAM "
                 f"{lay.get('dram_bytes', 0):,.0f} bytes"]
    return "\n".join(head)


class GanttChart:
    """Draws a schedule's timeline on ``plot`` (a pg.PlotItem) and answers hover queries."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.schedule: dict[str, Any] = {}
        self.units: list[dict[str, Any]] = []
        self.colours: list[str] = []
        self._layers: dict[str, dict[str, Any]] = {}
        # (units: SI-prefixed ticks, "50 Mcycles", not "5e+07")
        plot.setLabel("bottom", "accelerator time", units="cycles")
        plot.setMouseEnabled(x=True, y=False)
        plot.getAxis("left").setTicks([[(y, name) for name, y in ROW_Y.items()]])
        plot.setYRange(-0.6, 1.6, padding=0)
        plot.showGrid(x=True, y=False, alpha=0.3)
        self.bars = {row: pg.BarGraphItem(x0=[], y=[], width=[], height=[]) for row in ROWS}
        for item in self.bars.values():
            plot.addItem(item)
        self._hover_connected = False

    def connect_hover(self) -> None:
        """Show tooltips on hover (call once the plot is in a scene)."""
        scene = self.plot.scene()
        if scene is None or self._hover_connected:
            return
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        self._hover_connected = True

    def clear(self) -> None:
        self.set_schedule({})

    def set_schedule(self, schedule: dict[str, Any]) -> None:
        """Draw ``schedule`` (schedule file content; ``{}`` clears)."""
        self.schedule = schedule or {}
        self.units = list(self.schedule.get("timeline", []))
        self._layers = {lay["name"]: lay for lay in self.schedule.get("layers", [])}
        self.colours = unit_colours(self.schedule)
        # empty lists trip pyqtgraph 0.14's BarGraphItem (UnboundLocalError): None when empty
        brushes = [pg.mkBrush(c) for c in self.colours] or None
        pens = [pg.mkPen("k", width=0.5) for _ in self.colours] or None
        for row, key in (("compute", "compute"), ("DMA", "dma")):
            x0 = np.array([u[key]["start"] for u in self.units], dtype=np.float64)
            w = np.array([u[key]["end"] - u[key]["start"] for u in self.units], dtype=np.float64)
            n = len(self.units)
            self.bars[row].setOpts(x0=x0, width=w, y=np.full(n, ROW_Y[row]),
                                   height=np.full(n, BAR_HEIGHT), brushes=brushes, pens=pens)
        if self.units:
            self.plot.setXRange(0.0, float(self.units[-1]["end"]), padding=0.02)

    def bar_count(self, row: str) -> int:
        """Bars drawn in ``row`` ("compute" or "DMA")."""
        opts = self.bars[row].opts
        x0 = opts.get("x0")
        return 0 if x0 is None else int(len(x0))

    def unit_at(self, x: float, y: float) -> int | None:
        """Index of the unit whose bar covers (x, y) in data coordinates, else None."""
        for row, key in (("compute", "compute"), ("DMA", "dma")):
            if abs(y - ROW_Y[row]) > BAR_HEIGHT / 2:
                continue
            for i, u in enumerate(self.units):
                if u[key]["start"] <= x <= u[key]["end"]:
                    return i
        return None

    def tooltip_at(self, x: float, y: float) -> str:
        """The hover text at (x, y) in data coordinates ("" when over no bar)."""
        i = self.unit_at(x, y)
        return "" if i is None else unit_text(self.units[i], self._layers)

    def _on_mouse_moved(self, pos: QPointF) -> None:
        if not self.units or not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.plot.vb.mapSceneToView(pos)
        text = self.tooltip_at(p.x(), p.y())
        if text:
            QToolTip.showText(QCursor.pos(), text)
        else:
            QToolTip.hideText()

    def csv(self) -> tuple[list[str], list[list[Any]]]:
        """(header, rows): one row per unit and row of the chart."""
        header = ["unit", "layers", "group", "row", "start_cycles", "end_cycles", "bound",
                  "colour"]
        rows = []
        for u, colour in zip(self.units, self.colours):
            for row, key in (("compute", "compute"), ("DMA", "dma")):
                rows.append([u["name"], " ".join(u["layers"]), u["group"], row,
                             u[key]["start"], u[key]["end"], u["bound"], colour])
        return header, rows
