"""The co-simulation panel's validation scatter: model vs engine EDP of `cosim --validate`."""
from __future__ import annotations

import json
import math

import pytest

from gui.plots.validation_scatter import ValidationScatter, load_validation, scatter_points

VALIDATION = {"memory": "DDR4-3200", "schedules": 3, "kendall_tau_edp": 1.0,
              "dram_cycles_ratio_median": 1.01, "dram_energy_ratio_median": 0.98,
              "points": [{"source": "loop-0", "model_edp": 1e16, "engine_edp": 2e16},
                         {"source": "neighbour", "model_edp": 1e17, "engine_edp": 1.1e17},
                         {"source": "random", "model_edp": 1e18, "engine_edp": 9e17}]}


def test_points_are_log10_by_source():
    pts = scatter_points(VALIDATION)
    assert set(pts) == {"loop", "neighbour", "random"}
    x, y = pts["loop"]
    assert x[0] == pytest.approx(math.log10(2e16)) and y[0] == pytest.approx(16.0)


def test_widget_draws_a_result_file_and_rejects_one_without_validation(qtbot, tmp_path):
    w = ValidationScatter()
    qtbot.addWidget(w)
    path = tmp_path / "cosim.json"
    path.write_text(json.dumps({"summary": {"validation": VALIDATION}}))
    w.load(path)
    x, y = w.items["random"].getData()
    assert len(x) == 1 and y[0] == pytest.approx(18.0)
    assert "Kendall τ 1" in w.plotItem.titleLabel.text
    w.load(None)                                   # dialog cancelled: unchanged
    assert w.validation is VALIDATION or w.validation == VALIDATION
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"summary": {}}))
    with pytest.raises(ValueError, match="bad.json: no summary.validation"):
        load_validation(bad)
    w.set_validation(None)
    assert len(w.items["loop"].getData()[0]) == 0


def test_optimizer_view_hosts_the_scatter(qtbot, tmp_path):
    from gui.views.optimizer import OptimizerView
    v = OptimizerView()
    qtbot.addWidget(v)
    # no validation yet: the scatter leaves the panel's width to the Gantt and DRAM plots
    assert v.validation_plot.isHidden()
    path = tmp_path / "cosim.json"
    path.write_text(json.dumps({"summary": {"validation": VALIDATION}}))
    v._load_validation(str(path))
    assert v.validation_plot.validation["schedules"] == 3
    assert not v.validation_plot.isHidden()
