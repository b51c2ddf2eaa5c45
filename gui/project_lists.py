"""The names the views' choice lists offer (Qt-free): the memory presets and what an open
project holds.  Both never raise: a view must open, and a list must fill, even when the
resources are missing or the project file is broken or closed."""
from __future__ import annotations

from typing import Any


def preset_names() -> list[str]:
    """The memory presets (no numba kernels are compiled); [] when they cannot be read."""
    try:
        from engine.config import list_presets
        return list_presets()
    except Exception:  # noqa: BLE001 - the view must open even if resources are missing
        return []


def project_names(project: Any | None, kind: str) -> list[str]:
    """The names of ``kind`` (``"configs"``, ``"runs"``, ...) in an open project; [] when no
    project is open, it is closed, or it cannot be read (a broken project offers nothing)."""
    if project is None or getattr(project, "closed", False):
        return []
    try:
        return list(getattr(project, kind)())
    except Exception:  # noqa: BLE001 - a broken project offers nothing
        return []
