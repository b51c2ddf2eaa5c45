"""Crash-safe file writes shared by every module that saves user data."""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

log = logging.getLogger(__name__)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:          # e.g. Windows: folders cannot be opened
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_target(path: str | os.PathLike[str]) -> Path:
    """The file that an atomic write of `path` (a temporary file moved onto it) replaces: a
    symbolic link's final target, so that the link stays a link (os.replace onto the link
    put a plain file in its place); a path that is neither a regular file nor a folder nor
    missing (a device such as /dev/full, a FIFO, a socket) is an OutputPathError: the
    replace would put a plain file in its place (as root, for /dev/full) instead of writing
    into it."""
    from engine.errors import OutputPathError
    p = Path(path)
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    try:
        st = p.stat()
    except FileNotFoundError:
        return p
    except OSError:          # (e.g. a path through a file: the writer names the error)
        return p
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        kind = ("a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        shown = f"{path}" + (f" (-> {p})" if str(p) != str(path) else "")
        raise OutputPathError(f"{shown} is {kind}: expected a regular file's path (outputs "
                              "are written to a temporary file and moved onto it)")
    return p


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, keep_existing: bool = False,
                suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path next to ``path`` (a unique name) that replaces it on success: for
    writers that take a file name (HDF5, PDF, a trace writer), as atomic_write_text for text.

    The caller writes and closes the temporary file inside the ``with`` block; then it is
    fsynced and moved onto ``path`` with ``os.replace`` (and the folder fsynced).  On error
    the temporary file is removed and ``path`` is untouched.  With ``keep_existing`` the
    temporary file starts as a copy of ``path`` (if it exists). ``suffix``: the temporary
    name's ending (a writer that picks its format by the extension needs the path's own).
    """
    path = replace_target(path)          # (a link's target; a device or FIFO refused)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if path.exists():
            mode = path.stat().st_mode & 0o7777
            if keep_existing:
                shutil.copyfile(path, tmp)
        else:
            mode = 0o644
        yield tmp
        os.chmod(tmp, mode)
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text (UTF-8, LF line ends) through :func:`atomic_path`: an interrupted write
    leaves the previous file (or none), never a half-written one; a new file gets mode 0644,
    an existing file keeps its mode; a symbolic link's target is written."""
    path = replace_target(path)
    if path.is_dir():               # (else the rename's error would name the temporary file)
        raise IsADirectoryError(errno.EISDIR, "a folder, expected a file's path", str(path))
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)


def prepare_output(path: str | os.PathLike[str], what: str, make: bool = True) -> Path:
    """Check, before a long run, that `path` can take the file it will write (`what`, e.g.
    "statistics output"), so that a bad path fails at once rather than after the run: not a
    folder, its nearest existing folder above is a folder this process may write in. Missing
    folders on the way are created now, and said (`make` False: left to the writer, so that
    a run refused later for its input leaves nothing behind). Raises OutputPathError naming
    the path and what is wrong."""
    from engine.errors import OutputPathError
    p = Path(path)
    if not str(path).strip():
        raise OutputPathError(f"{what}: an empty path: expected a file's path")
    if p.is_dir():
        raise OutputPathError(f"{what} {p} is a folder: expected a file's path")
    try:
        target = replace_target(p)
    except OutputPathError as e:
        raise OutputPathError(f"{what} {e}") from None
    folder = target.parent
    above = folder
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise OutputPathError(f"{what} {p}: {above} is a file, not a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        raise OutputPathError(f"{what} {p}: no permission to write in the folder {above}")
    try:
        # (a file made and removed: the permission bits do not tell, for root, a read-only
        # mount or a folder such as /proc that takes no new files)
        fd, probe = tempfile.mkstemp(prefix=".diffmem-probe-", dir=above)
        os.close(fd)
        os.unlink(probe)
        if make and above != folder:
            folder.mkdir(parents=True, exist_ok=True)
            # (a warning: a mistyped path makes folders where nobody looks for them)
            log.warning("created the folder %s for the %s", folder, what)
    except OSError as e:
        raise OutputPathError(f"{what} {p}: cannot create a file in the folder {above} "
                              f"({e.strerror or e})") from None
    return p


def check_distinct(outputs: Sequence[tuple[str, Any]],
                   inputs: Sequence[tuple[str, Any]] = ()) -> None:
    """Before a run: no output is one of its inputs or another of its outputs (the same
    path, links followed). `outputs` and `inputs`: (what it is, path or None) pairs. Raises
    OutputPathError naming both (a statistics output on its trace replaced the trace, a
    summary on the trace output replaced the trace, a conversion onto its source dropped its
    tags)."""
    from engine.errors import OutputPathError

    def key(path: Any) -> str:
        return os.path.realpath(os.fspath(path))
    seen: dict[str, str] = {}
    for what, path in inputs:
        if path is not None and str(path):
            seen.setdefault(key(path), what)
    for what, path in outputs:
        if path is None or not str(path):
            continue
        k = key(path)
        if k in seen:
            raise OutputPathError(f"{what} {path} is also the {seen[k]}: it would be "
                                  "replaced; give another path")
        seen[k] = what


def json_default(o: Any) -> Any:
    """`json.dumps(default=...)` for numpy scalars and arrays and path-like objects."""
    import numpy as np
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "__fspath__"):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
