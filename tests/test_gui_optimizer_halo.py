"""The optimiser view's fused-halo rule (the CLI's ``--fused-halo``): picked in its combo as a
user would, the run gets it (the cost model's rule while the search runs, put back after),
the schedule file and the results table record it, a stored run shows it again, and the
co-simulation scores the schedule under the rule it was searched with."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from test_gui_optimizer import (RUN_TIMEOUT_MS, _open_network, _run,  # noqa: E402
                                _setup, tiny_json, view)  # noqa: F401  (fixtures)

pytestmark = pytest.mark.gui


def _pick_halo(qtbot, view, rule: str) -> None:
    """Choose ``rule`` in the fused-halo combo with the keyboard, as a user would."""
    combo = view.halo_combo
    combo.setFocus()
    target = combo.findData(rule)
    assert target >= 0
    key = Qt.Key.Key_Down if target > combo.currentIndex() else Qt.Key.Key_Up
    while combo.currentIndex() != target:
        qtbot.keyClick(combo, key)
    assert combo.currentData() == rule


def _table_row(view, r: int) -> dict[str, str]:
    t = view.results_table
    header = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    return {h: t.item(r, c).text() for c, h in enumerate(header)}


def _fused_pair(tiles: int = 4):
    """A 3x3 conv pair fused in ``tiles`` lockstep tiles along P: the halo re-fetch costs
    6 extra input rows at 4 tiles (tests/test_fusion_traffic.py), so the two rules differ."""
    from optimizer.hardware import load_hardware
    from optimizer.mapping import Schedule
    from test_fusion_traffic import _pair
    _a, _b, net, maps = _pair(tiles)
    return net, Schedule("pair", maps, [("a", "b")]), load_hardware("large")


def test_halo_rules_are_the_cost_models() -> None:
    from gui.optimizer_worker import DEFAULT_FUSED_HALO, FUSED_HALO_RULES, OptimizerJob
    from optimizer import costmodel

    assert FUSED_HALO_RULES == costmodel.FUSED_HALO_RULES
    assert DEFAULT_FUSED_HALO == "refetch" and OptimizerJob("n", "h").fused_halo == "refetch"
    with pytest.raises(ValueError, match="fused-halo"):
        OptimizerJob("n", "h", fused_halo="sliding")


def test_default_is_refetch_and_the_combo_offers_both(view) -> None:
    combo = view.halo_combo
    assert [combo.itemData(i) for i in range(combo.count())] == ["refetch", "slide"]
    assert combo.currentData() == "refetch" and view.job().fused_halo == "refetch"


def test_picked_slide_reaches_the_run_and_the_table(qtbot, view, monkeypatch,
                                                     tiny_json) -> None:
    import optimizer.methods as methods
    from optimizer import costmodel
    from optimizer.costmodel import evaluate_schedule

    received: list[tuple[str, str]] = []
    real = methods.optimize

    def spy(*a, **kw):
        res, space = real(*a, **kw)
        received.append((costmodel.FUSED_HALO, space.graph.halo))
        return res, space

    monkeypatch.setattr(methods, "optimize", spy)
    before = costmodel.FUSED_HALO
    _open_network(view, monkeypatch, tiny_json)
    _setup(view, "large", "random", 200, seed=2)
    _pick_halo(qtbot, view, "slide")
    outcomes = _run(qtbot, view)
    assert view.errors == []
    # the search ran under the rule picked, and the process's rule is back afterwards
    assert received == [("slide", "slide")]
    assert costmodel.FUSED_HALO == before
    o = outcomes[0]
    assert o.fused_halo == "slide" and o.schedule["fused_halo"] == "slide"
    # the EDP shown is the schedule's under the sliding rule (the exact evaluator)
    assert o.edp == pytest.approx(evaluate_schedule(o.net, o.mapping, o.hw, "slide").edp,
                                  rel=1e-9)
    assert _table_row(view, 0)["fused halo"] == "slide"
    header, rows = view.results_csv()
    assert rows[0][header.index("fused_halo")] == "slide"

    # back to the default: the next run gets refetch
    _pick_halo(qtbot, view, "refetch")
    outcomes = _run(qtbot, view)
    assert received[-1] == ("refetch", "refetch") and outcomes[0].fused_halo == "refetch"
    assert _table_row(view, 1)["fused halo"] == "refetch"


def test_stored_run_shows_its_rule(qtbot, view, tmp_path) -> None:
    from projects.store import Project

    sched = {"edp": 2.0e16, "energy_pj": 1.0, "latency_cycles": 1.0, "valid": True,
             "layers": [], "fused_halo": "slide"}
    old = {k: v for k, v in sched.items() if k != "fused_halo"}
    with Project.create(tmp_path / "p.dmproj") as p:
        settings = {"network": "resnet18", "hardware": "gemmini-large", "method": "random",
                    "seed": 1}
        rid = p.add_optimizer_run("new", settings, sched, [])
        rid_old = p.add_optimizer_run("old", settings, old, [])
        data, data_old = p.load_optimizer_run(rid), p.load_optimizer_run(rid_old)
    out = view.show_stored(data)
    out_old = view.show_stored(data_old)
    assert out.fused_halo == "slide" and _table_row(view, 0)["fused halo"] == "slide"
    # a run stored before the rule was recorded says so (not a guess)
    assert out_old.fused_halo is None and _table_row(view, 1)["fused halo"] == "not recorded"


def test_cosimulation_scores_under_the_runs_rule(qtbot, view) -> None:
    from gui.optimizer_worker import OptimizerOutcome
    from optimizer.costmodel import evaluate_schedule
    from optimizer.methods import result_json

    net, sched, hw = _fused_pair(4)
    edp = {rule: evaluate_schedule(net, sched, hw, rule) for rule in ("slide", "refetch")}
    assert edp["slide"].valid and edp["refetch"].valid
    assert edp["refetch"].dram_bytes > edp["slide"].dram_bytes       # the halo is paid
    data = result_json(edp["slide"], net, hw, method="hand")
    data["fused_halo"] = "slide"
    out = OptimizerOutcome("hand", 0, net.name, hw.name, data, [], 0.0, 0, net, hw, sched,
                           fused_halo="slide")
    view.add_result(out, store=False)
    with qtbot.waitSignal(view.cosim_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.cosim_button, Qt.MouseButton.LeftButton)
    cs = blocker.args[0]["cosim"]
    assert view.errors == []
    # the child process scored the schedule under "slide", not its own default rule
    assert cs["model_edp"] == pytest.approx(edp["slide"].edp, rel=1e-9)
    assert cs["model_edp"] != pytest.approx(edp["refetch"].edp, rel=1e-6)
