"""Log axes label 1-2-5 values only (issue 16: the optimiser's loss axis printed 2·10¹ ...
9·10¹ on top of each other)."""
from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.gui


def test_labels_are_1_2_5_within_three_decades_and_decades_beyond(qapp) -> None:
    from gui.plots.log_axis import LogAxis
    axis = LogAxis("left")
    values = [math.log10(v) for v in range(20, 100, 10)]          # 20 ... 90
    axis.range = (math.log10(18), math.log10(95))
    labels = axis.logTickStrings(values, 1.0, 1.0)
    assert [s for s in labels if s] == ["2·10¹", "5·10¹"]
    wide = [math.log10(v) for v in (1, 2, 5, 10, 20, 50, 100, 1e3, 1e4, 1e5)]
    axis.range = (0.0, 5.0)
    assert [s for s in axis.logTickStrings(wide, 1.0, 1.0) if s] == \
        ["1", "10¹", "10²", "10³", "10⁴", "10⁵"]
    narrow = [math.log10(v) for v in (3e13, 4e13, 5e13)]        # the demo's EDP axis
    axis.range = (math.log10(2.6e13), math.log10(5.3e13))
    assert axis.logTickStrings(narrow, 1.0, 1.0) == ["3·10¹³", "4·10¹³", "5·10¹³"]


def test_the_optimiser_loss_and_edp_axes_use_it(qapp) -> None:
    from gui.plots.log_axis import LogAxis
    from gui.views.optimizer import OptimizerView
    view = OptimizerView()
    for key in ("loss", "edp"):
        axis = view.plots[key].getAxis("left")
        assert isinstance(axis, LogAxis) and axis.logMode
    view.deleteLater()
