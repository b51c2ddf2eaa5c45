"""A log-scale axis whose labels do not crowd: pyqtgraph labels every minor tick of a log axis
(2·10¹, 3·10¹, ... 9·10¹ packed at a decade's top end), which overlap on a plot a few hundred
pixels high.  :class:`LogAxis` keeps the ticks and labels only the 1-2-5 values, and only the
decades when the axis spans more than three of them; a narrow range's few ticks keep their
labels."""
from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg

#: mantissas labelled when the axis spans up to three decades
LABELLED = (1, 2, 5)
#: this many ticks or fewer are all labelled (e.g. 3·10¹³, 4·10¹³, 5·10¹³)
FEW_TICKS = 4


def labelled_mantissa(log_value: float, decades: float) -> bool:
    """Whether the tick at 10**log_value gets a label on an axis spanning ``decades``."""
    mantissa = round(10 ** (log_value - math.floor(log_value + 1e-9)), 6)
    keep = (1,) if decades > 3 else LABELLED
    return any(abs(mantissa - m) < 1e-3 for m in keep)


class LogAxis(pg.AxisItem):
    """pyqtgraph's AxisItem with fewer log-mode labels (see the module docstring)."""

    def logTickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        strings = super().logTickStrings(values, scale, spacing)
        if not values:
            return strings
        lo, hi = self.range if getattr(self, "range", None) else (min(values), max(values))
        decades = abs(float(hi) - float(lo))
        if len(values) <= FEW_TICKS:   # a narrow range: its few ticks all fit
            return strings
        out = [s if labelled_mantissa(v, decades) else "" for v, s in zip(values, strings)]
        if not any(out):               # a range between two 1-2-5 values: label its ends
            out[0], out[-1] = strings[0], strings[-1]
        return out


def use_log_y(plot: pg.PlotItem) -> LogAxis:
    """Give ``plot`` a :class:`LogAxis` on the left and switch its y axis to log mode."""
    axis = LogAxis("left")
    plot.setAxisItems({"left": axis})
    plot.setLogMode(x=False, y=True)
    return axis
