"""Per-user folders of DiffMem Studio (numba-free: imported on the simulate path)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def is_frozen() -> bool:
    """True inside a PyInstaller bundle."""
    return bool(getattr(sys, "frozen", False))


def user_cache_dir() -> Path:
    """The platform's per-user cache folder for DiffMem Studio (not created here)."""
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
        return base / "DiffMem" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "DiffMem"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "diffmem"
