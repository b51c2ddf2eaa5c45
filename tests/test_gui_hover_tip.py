"""Hover text on a plot (gui.plots.hover_tip): the text for the point under the mouse is shown
beside it, and a stale tooltip goes when the mouse is over no mark."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_hover_shows_the_points_text_and_hides_a_stale_one(qtbot) -> None:
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF
    from PySide6.QtWidgets import QToolTip

    from gui.plots.hover_tip import show_hover

    w = pg.PlotWidget()
    qtbot.addWidget(w)
    w.resize(400, 300)
    w.show()
    plot = w.getPlotItem()
    plot.setXRange(0, 10, padding=0)
    plot.setYRange(0, 10, padding=0)
    qtbot.waitExposed(w)
    centre = plot.getViewBox().sceneBoundingRect().center()
    seen: list[tuple[float, float]] = []

    def text_at(x: float, y: float) -> str:
        seen.append((x, y))
        return "mark at 5" if abs(x - 5) < 1 else ""

    assert show_hover(w, plot, centre, text_at) == "mark at 5"
    assert seen[-1] == pytest.approx((5, 5), abs=0.2)        # data coordinates
    qtbot.waitUntil(QToolTip.isVisible, timeout=5000)
    assert QToolTip.text() == "mark at 5"
    left = QPointF(plot.getViewBox().sceneBoundingRect().left() + 2, centre.y())
    assert show_hover(w, plot, left, text_at) == ""
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=5000)
    n = len(seen)
    assert show_hover(w, plot, QPointF(-100, -100), text_at) == ""   # outside the view box
    assert len(seen) == n
