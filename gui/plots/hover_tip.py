"""One rule for hover text on a pyqtgraph plot: the text for the point under the mouse shows
as a tooltip beside it, and a stale tooltip goes when the mouse leaves every mark."""
from __future__ import annotations

from typing import Callable

import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QToolTip

__all__ = ["show_hover"]


def show_hover(widget: pg.PlotWidget, plot: pg.PlotItem, scene_pos: QPointF,
               text_at: Callable[[float, float], str]) -> str:
    """Show ``text_at(x, y)`` (data coordinates) at ``scene_pos``, hide it when empty; returns
    the text ('' outside the plot's view box, where nothing changes)."""
    vb = plot.getViewBox()
    if not vb.sceneBoundingRect().contains(scene_pos):
        return ""
    p = vb.mapSceneToView(scene_pos)
    text = text_at(p.x(), p.y())
    if text:
        QToolTip.showText(widget.mapToGlobal(widget.mapFromScene(scene_pos)), text, widget)
    else:
        QToolTip.hideText()
    return text
