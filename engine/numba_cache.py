"""Where numba keeps its compiled kernels when DiffMem Studio runs as a packaged application.

From a source checkout numba's own locators apply: ``@njit(cache=True)`` writes next to the
module (``engine/__pycache__``) or to ``NUMBA_CACHE_DIR``.  Inside a PyInstaller bundle they
go wrong: the modules have no source file on disk and their code objects carry a *relative*
file name (``engine/kernel.py``), so numba ignores ``NUMBA_CACHE_DIR`` and files the cache
under a folder derived from the current directory, compiling again for every folder the
application is started from.

:class:`FrozenCacheLocator` fixes the folder to a per-user cache directory
(:func:`cache_root`), keyed on the installed executable, and treats the executable itself as
the "source" (a rebuilt bundle invalidates the cache).  The bundle selects it with numba's
``NUMBA_CACHE_LOCATOR_CLASSES`` (set by packaging/rthooks/pyi_rth_diffmem.py before numba is
imported, with numba's usual locators after it as fall-backs).  This module imports numba,
not the kernels.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from numba.core.caching import _CacheLocator  # noqa: PLC2701 - numba's documented base

from engine.app_dirs import is_frozen, user_cache_dir  # noqa: F401 - re-exported
from engine.version import APP_VERSION

log = logging.getLogger(__name__)

#: The value the bundle gives ``NUMBA_CACHE_LOCATOR_CLASSES``.
LOCATOR_SPEC = ("engine.numba_cache.FrozenCacheLocator,InTreeCacheLocator,"
                "UserWideCacheLocator")


def cache_root() -> Path:
    """The numba cache folder of this installation.

    ``NUMBA_CACHE_DIR`` when the user set it, else ``<user cache>/numba``; one sub-folder per
    installed executable and version, so two installations never overwrite each other's
    kernels."""
    override = os.environ.get("NUMBA_CACHE_DIR")
    base = Path(override) if override else user_cache_dir() / "numba"
    exe = os.path.abspath(sys.executable)
    key = hashlib.sha1(exe.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return base / f"{APP_VERSION}-{key}"


def _fallback_root() -> Path:
    """A temporary folder, for when the user cache folder cannot be written."""
    user = os.environ.get("USER") or os.environ.get("USERNAME") or str(os.getpid())
    return Path(tempfile.gettempdir()) / f"diffmem-numba-{user}"


#: Folder of the bundle (next to its Python modules) holding the kernels compiled when the
#: bundle was built (packaging/build.sh): copied into a user's empty cache on first use.
SEED_DIR_NAME = "numba-seed"


def seed_cache(root: Path, seed_parent: Path | None = None) -> bool:
    """Fill an empty per-user cache folder ``root`` from the kernels the bundle ships
    (``<bundle>/_internal/numba-seed/<version>-<key>/``: built at packaging time, for the
    build machine's CPU family); True when files were copied.  numba checks each cached
    kernel against the executable's stamp and the CPU it runs on, and compiles again where
    they differ, so a seed that does not fit costs nothing but the copy."""
    import shutil
    if seed_parent is None:
        base = getattr(sys, "_MEIPASS", None)
        if base is None:
            return False
        seed_parent = Path(base) / SEED_DIR_NAME
    try:
        if root.is_dir() and any(root.rglob("*.nbi")):
            return False                     # the user's cache is already there
        seeds = sorted(p for p in seed_parent.glob(f"{APP_VERSION}-*") if p.is_dir())
    except OSError:
        return False
    if not seeds:
        return False
    try:
        shutil.copytree(seeds[0], root, dirs_exist_ok=True)
    except OSError as exc:
        log.debug("cannot seed the numba cache %s: %s", root, exc)
        return False
    log.info("numba cache %s seeded from the bundle's %s", root, seeds[0])
    return True


class FrozenCacheLocator(_CacheLocator):
    """numba cache locator for functions of a frozen (PyInstaller) application."""

    def __init__(self, py_func: Any, py_file: str, root: Path) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        # py_file is relative inside a bundle ("engine/kernel.py"): keep its folder names
        rel_dir = Path(py_file).parent
        parts = [p for p in rel_dir.parts if p not in ("", ".", "..", rel_dir.anchor)]
        self._cache_path = str(root.joinpath(*parts)) if parts else str(root)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> Any:
        # the executable holds the bundle's Python code: a rebuild changes it
        st = os.stat(sys.executable)
        return st.st_mtime, st.st_size

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> FrozenCacheLocator | None:
        if not is_frozen():
            return None                     # a source checkout: numba's locators apply
        for root in (cache_root(), _fallback_root()):
            seed_cache(root)
            self = cls(py_func, py_file, root)
            try:
                self.ensure_cache_path()
            except OSError:
                log.debug("numba cache folder %s not writable", root)
                continue
            return self
        return None
