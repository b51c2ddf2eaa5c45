"""A line of text in the middle of an empty plot saying what fills it and how (a plot's axes
before any data are pyqtgraph's defaults, which mean nothing)."""
from __future__ import annotations

import pyqtgraph as pg

__all__ = ["EmptyNote"]

NOTE_COLOUR = "#999999"


class EmptyNote:
    """``text`` centred in ``plot``'s view while shown; it follows the view's range and takes
    no part in auto-ranging."""

    def __init__(self, plot: pg.PlotItem, text: str) -> None:
        self.plot = plot
        self.item = pg.TextItem(text, anchor=(0.5, 0.5), color=NOTE_COLOUR)
        self.item.setZValue(10)
        self.shown = False
        plot.getViewBox().sigRangeChanged.connect(self._centre)

    @property
    def text(self) -> str:
        return self.item.toPlainText()

    def show(self) -> None:
        if not self.shown:
            self.plot.addItem(self.item, ignoreBounds=True)
            self.shown = True
        self._centre()

    def hide(self) -> None:
        if self.shown:
            self.plot.removeItem(self.item)
            self.shown = False

    def _centre(self, *_args: object) -> None:
        if self.shown:
            (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
            self.item.setPos((x0 + x1) / 2.0, (y0 + y1) / 2.0)
