"""The demo project the window opens at start: a private copy of the shipped example.

    path = demo_project_copy()          # <user data dir>/examples/ddr4_vs_hbm2_diffusion.dmproj
    open_demo(window)                   # open it, show the DDR4 run, overlay the HBM2 run

The shipped file (projects/examples/, built by projects/examples/make_examples.py) is never
opened for writing: the first start copies it into the user's data directory
(``QStandardPaths.AppDataLocation``, e.g. ``~/.local/share/DiffMem/DiffMem Studio``), and
later starts reopen that copy, with whatever the user saved in it.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from engine.fileio import atomic_path

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DEMO_PROJECT_NAME = "ddr4_vs_hbm2_diffusion.dmproj"
SHIPPED_DEMO = REPO / "projects" / "examples" / DEMO_PROJECT_NAME
SHOWN_RUN, COMPARED_RUN = "ddr4-3200", "hbm2"


def user_data_dir() -> Path:
    """The application's writable data folder (created when missing)."""
    from PySide6.QtCore import QStandardPaths

    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    path = Path(base) if base else Path.home() / ".local" / "share" / "DiffMem Studio"
    path.mkdir(parents=True, exist_ok=True)
    return path


def demo_project_copy(data_dir: Path | None = None, shipped: Path = SHIPPED_DEMO) -> Path | None:
    """The user's copy of the demo project (copied from the shipped file the first time);
    None when the shipped file is missing and there is no copy yet."""
    folder = (data_dir or user_data_dir()) / "examples"
    target = folder / shipped.name
    if target.is_file():
        return target
    if not shipped.is_file():
        log.warning("demo project %s is missing (build it with "
                    "projects/examples/make_examples.py)", shipped)
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        shutil.copyfile(shipped, tmp)
    return target


def open_demo(window: Any, data_dir: Path | None = None) -> bool:
    """Open the demo copy in ``window`` and show its DDR4 run with the HBM2 run overlaid."""
    try:
        path = demo_project_copy(data_dir)
    except OSError as exc:
        window._show_error(f"Cannot copy the demo project: {exc}")
        return False
    if path is None or not window.open_project(str(path)):
        return False
    runs = window.project.runs()
    if SHOWN_RUN in runs and window.open_item("run", SHOWN_RUN):
        window.project_tree.select("run", SHOWN_RUN)
        item = window.simulation_view.compare_item(COMPARED_RUN)
        if item is not None:
            from PySide6.QtCore import Qt
            item.setCheckState(Qt.CheckState.Checked)
    return True
