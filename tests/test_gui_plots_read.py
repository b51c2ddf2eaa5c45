"""Issue 16, items 9 and 10, as the user reads them on the Simulation tab: the heatmap's
colour bar and its channel / rank / bank-group labels, plain axes on empty plots, hit rate in
%, the bandwidth axis from 0 with the memory's peak drawn and labelled."""
from __future__ import annotations

import gc
import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent

pytestmark = pytest.mark.gui

EXAMPLE = Path(__file__).resolve().parents[1] / "projects" / "examples" / \
    "ddr4_vs_hbm2_diffusion.dmproj"


@pytest.fixture
def window(qtbot, tmp_path):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1920, 1080)
    w.show()
    yield w
    w.close_project(ask=False)
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def _ticks(plot, level: int) -> list[str]:
    levels = plot.getAxis("left")._tickLevels
    return [label for _pos, label in levels[level]] if levels and len(levels) > level else []


def test_empty_plots_have_plain_axes(window) -> None:
    sv = window.simulation_view
    for name in ("heatmap", "hit_rate", "bandwidth", "latency"):
        x0, x1 = sv.plots[name].getViewBox().viewRange()[0]
        assert (x0, x1) == pytest.approx((0.0, 1e-6)), name       # not "(x0.001) -400..400"
    assert sv.plots["heatmap"].getAxis("bottom").labelUnits == "s"
    assert _ticks(sv.plots["heatmap"], 0) == []                     # no bank rows invented
    assert not sv.peak_line.isVisible()


def test_stored_ddr4_run_reads_right(window, tmp_path) -> None:
    from engine.config import load_config
    from gui.units import fmt
    from gui.views.simulation import peak_bandwidth_GBps

    path = tmp_path / "demo.dmproj"
    shutil.copyfile(EXAMPLE, path)
    assert window.open_project(str(path))
    assert window.open_item("run", "ddr4-3200")
    sv = window.simulation_view
    QCoreApplication.processEvents()
    # item 9: a colour bar that says what the colours mean, over 0-100 %
    assert "row open (%)" in {sv.colour_bar.getAxis(s).labelText for s in ("left", "right")}
    assert tuple(sv.colour_bar.values) == (0.0, 100.0)
    # ... and rows labelled by channel and rank (major) and bank group (minor)
    cfg = window.project.run_config("ddr4-3200")
    majors, minors = _ticks(sv.plots["heatmap"], 0), _ticks(sv.plots["heatmap"], 1)
    assert majors[0] in ("rank 0", "ch0 r0") and len(majors) == cfg.channels * cfg.ranks
    assert minors[:cfg.bankgroups - 1] == [f"bg{g}" for g in range(1, cfg.bankgroups)]
    assert sv.heatmap.image.shape[0] == cfg.channels * cfg.ranks * cfg.banks
    # item 10: hit rate plotted in % (as the table says), bandwidth from 0 with the peak
    _x, hit = sv.hit_rate_curve.getData()
    assert 1.0 < np.nanmax(hit) <= 100.0
    assert sv.plots["hit_rate"].titleLabel.text.endswith("(%)")
    y0, y1 = sv.plots["bandwidth"].getViewBox().viewRange()[1]
    peak = peak_bandwidth_GBps(cfg)
    assert y0 == pytest.approx(0.0) and y1 >= peak
    assert sv.peak_line.isVisible() and sv.peak_line.value() == pytest.approx(peak)
    assert sv.peak_line.label.format == f"peak {fmt(peak, 'GB/s')}"
    assert peak == pytest.approx(peak_bandwidth_GBps(load_config("DDR4-3200")))
