"""The optimiser view's Loss plot for the tiny FADiff demo (docs/screenshot_tabs.py's run: the
2-layer network, the small hardware, 60 evaluations), run through the view as a user would.
That run makes one gradient step, so it reports one loss: the curve holds exactly the worker's
loss history and marks its lone point with a dot (a line needs two points; without the dot
the Loss plot looked empty in the screenshots)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from test_gui_optimizer import _open_network, _run, _setup, tiny_json, view  # noqa: F401

pytestmark = pytest.mark.gui


def _drawn(view, key: str) -> np.ndarray:
    _x, y = view.curves[key].getOriginalDataset()      # before the log axis's log10
    y = np.asarray([] if y is None else y, dtype=np.float64)
    return y[np.isfinite(y)]


@pytest.mark.parametrize("budget", [60, 1200])
def test_fadiff_loss_plot_holds_the_workers_loss_history(qtbot, view, monkeypatch, tiny_json,
                                                         budget) -> None:
    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "small", "fadiff", budget)
    (o,) = _run(qtbot, view)
    assert view.errors == []
    losses = [h["loss"] for h in o.history if math.isfinite(h["loss"])]
    assert len(losses) >= 1
    assert view.curve_points("loss") == len(losses)
    np.testing.assert_array_equal(_drawn(view, "loss"), losses)
    symbol = view.curves["loss"].opts["symbol"]
    if len(losses) == 1:                  # the tiny demo: one step, shown as a dot
        assert budget == 60 and symbol == "o"
    else:                                 # a line joins two or more reports
        assert symbol is None
