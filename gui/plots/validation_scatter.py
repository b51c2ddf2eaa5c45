"""Model vs engine EDP of the schedules of a DRAM-term validation (``cosim --validate K``), on
log axes, one point per schedule, with the y = x line and the statistics in the title.

Input is the ``summary["validation"]`` dict of a cosim result file
(:func:`optimizer.validation.summarise`): ``points`` with ``model_edp``, ``engine_edp`` and
``source`` ("loop-<i>", "neighbour", "random"), ``kendall_tau_edp`` and the DRAM time / energy
ratios.  :func:`load_validation` reads it from the JSON file (data only).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

SOURCE_BRUSHES = {"loop": "#1f77b4", "neighbour": "#ff7f0e", "random": "#2ca02c"}


def load_validation(path: str | Path) -> dict[str, Any]:
    """The validation of a cosim result file; ValueError naming the file when it has none."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{p}: not a readable JSON file ({exc})") from None
    v = data.get("summary", {}).get("validation") if isinstance(data, dict) else None
    if not isinstance(v, dict) or not isinstance(v.get("points"), list):
        raise ValueError(f"{p}: no summary.validation (run `python main.py cosim ... "
                         "--validate K`)")
    return v


def _kind(source: str) -> str:
    return "loop" if source.startswith("loop") else source


def scatter_points(v: dict[str, Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """log10(engine EDP), log10(model EDP) per source kind (positive values only)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for p in v.get("points", []):
        e, m = float(p.get("engine_edp", 0)), float(p.get("model_edp", 0))
        if e > 0 and m > 0:
            xs, ys = out.setdefault(_kind(str(p.get("source", ""))), ([], []))
            xs.append(math.log10(e))
            ys.append(math.log10(m))
    return {k: (np.array(x), np.array(y)) for k, (x, y) in out.items()}


def title(v: dict[str, Any]) -> str:
    def f(key: str) -> str:
        x = v.get(key)
        return "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.3g}"
    return (f"{v.get('memory', '')}: {v.get('schedules', 0)} schedules, Kendall τ "
            f"{f('kendall_tau_edp')}; DRAM time model/engine {f('dram_cycles_ratio_median')}, "
            f"energy {f('dram_energy_ratio_median')} (medians)")


class ValidationScatter(pg.PlotWidget):
    """Model EDP (y) against engine EDP (x), log10 axes."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setObjectName("validationScatter")
        self.setLabel("bottom", "engine EDP (log10 pJ·cycles)")
        self.setLabel("left", "model EDP (log10 pJ·cycles)")
        self.addLegend(offset=(5, 5))
        self.items: dict[str, pg.ScatterPlotItem] = {}
        for kind, colour in SOURCE_BRUSHES.items():
            item = pg.ScatterPlotItem(size=9, brush=pg.mkBrush(colour), pen=None, name=kind)
            self.addItem(item)
            self.items[kind] = item
        self.diagonal = pg.PlotDataItem([], [], pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine))
        self.addItem(self.diagonal)
        self.validation: dict[str, Any] | None = None
        self.set_validation(None)

    def set_validation(self, v: dict[str, Any] | None) -> None:
        """Draw a validation dict, or clear the plot (None)."""
        self.validation = v
        pts = scatter_points(v) if v else {}
        for kind, item in self.items.items():
            x, y = pts.get(kind, (np.zeros(0), np.zeros(0)))
            item.setData(x=x, y=y)
        allv = np.concatenate([np.concatenate(xy) for xy in pts.values()]) if pts else None
        if allv is not None and allv.size:
            lo, hi = float(allv.min()) - 0.05, float(allv.max()) + 0.05
            self.diagonal.setData([lo, hi], [lo, hi])
        else:
            self.diagonal.setData([], [])
        self.setTitle(title(v) if v else "DRAM-term validation: run cosim --validate K, "
                      "then load its result file")
        # an empty scatter would take a third of the panel's width from the Gantt chart and
        # the co-simulation plots: it is shown only while it has a validation to draw
        self.setHidden(not v)

    def load(self, path: str | Path | None) -> None:
        """Draw the validation of a cosim result file (None: nothing chosen, no change)."""
        if path:
            self.set_validation(load_validation(path))
