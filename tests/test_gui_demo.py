"""The shipped example project, `python main.py` opening a private copy of it, and
`python main.py demo --headless` writing the same project (offscreen, see conftest.py)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "projects" / "examples" / "ddr4_vs_hbm2_diffusion.dmproj"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_shipped_example_is_small_complete_and_current() -> None:
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace
    from projects.examples.make_examples import DEMO_EPOCH, DEMO_TRACE
    from projects.store import Project

    assert SHIPPED.is_file(), "build it: .venv/bin/python projects/examples/make_examples.py"
    assert SHIPPED.stat().st_size < 2 << 20
    with Project.open(SHIPPED, readonly=True) as p:
        assert p.runs() == ["ddr4-3200", "hbm2"]
        assert p.trace_info("diffusion-step")["storage"] == "embedded"   # opens anywhere
        stored = p.load_run("ddr4-3200")
    assert stored["options"] == {"epoch": DEMO_EPOCH}
    fresh = simulate_trace(load_config("DDR4-3200"), DEMO_TRACE, SimOptions(epoch=DEMO_EPOCH))
    for key in ("num_cycles", "num_reads_done", "num_act_cmds", "average_read_latency"):
        assert stored["summary"][key] == fresh.summary[key], (
            f"{key}: the shipped example is out of date with the engine; rebuild it with "
            ".venv/bin/python projects/examples/make_examples.py")


def test_main_without_arguments_opens_a_copy_of_the_demo(qapp, tmp_path, monkeypatch) -> None:
    import main as cli
    from gui.app import MainWindow

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    before = _sha(SHIPPED)
    seen: dict = {}

    def inspect_and_quit() -> None:
        w = next(w for w in QApplication.topLevelWidgets()
                 if isinstance(w, MainWindow) and w.isVisible())
        view = w.simulation_view
        seen["project"] = Path(w.project.path) if w.project is not None else None
        seen["runs"] = w.project_tree.names("run")
        seen["shown"] = view.record.run_id if view.record is not None else None
        seen["overlays"] = list(view.overlays)
        seen["heatmap"] = None if view.heatmap.image is None else view.heatmap.image.shape
        seen["energy"] = w.energy_view.root.value if w.energy_view.root else 0.0
        w.close()
        w.deleteLater()
        QApplication.quit()

    QTimer.singleShot(0, inspect_and_quit)
    assert cli.main([]) == 0
    copy = tmp_path / "data"
    assert seen["project"] is not None and copy in seen["project"].parents
    assert seen["project"].name == SHIPPED.name and seen["project"] != SHIPPED
    assert seen["runs"] == ["ddr4-3200", "hbm2"]
    assert seen["shown"] == "ddr4-3200" and seen["overlays"] == ["hbm2"]
    assert seen["heatmap"] is not None and seen["heatmap"][1] > 10
    assert seen["energy"] > 0
    assert _sha(SHIPPED) == before                      # the shipped file is never touched
    assert not SHIPPED.with_name(SHIPPED.name + ".lock").exists()


def test_demo_copy_keeps_the_users_edits(tmp_path) -> None:
    from gui.demo import demo_project_copy
    from projects.store import Project

    first = demo_project_copy(tmp_path)
    with Project.open(first) as p:
        p.delete("run", "hbm2")
        p.save()
    again = demo_project_copy(tmp_path)
    assert again == first
    with Project.open(again, readonly=True) as p:
        assert p.runs() == ["ddr4-3200"]
    assert demo_project_copy(tmp_path / "other", shipped=tmp_path / "missing.dmproj") is None


def test_headless_demo_writes_a_project_the_window_opens(qtbot, tmp_path, monkeypatch) -> None:
    import main as cli
    from gui.app import MainWindow

    assert cli.main(["demo", "--headless", "--out", str(tmp_path)]) == 0
    project = tmp_path / "demo.dmproj"
    assert project.is_file()
    for preset in ("DDR4-3200", "HBM2"):
        assert (tmp_path / f"demo_{preset}.json").is_file()
    w = MainWindow()
    qtbot.addWidget(w)
    errors: list[str] = []
    monkeypatch.setattr(w, "_show_error", errors.append)
    assert w.open_project(str(project)), errors
    assert w.project_tree.names("run") == ["ddr4-3200", "hbm2"]
    assert w.open_item("run", "hbm2") and w.simulation_view.record.run_id == "hbm2"
    w.close_project(ask=False)
