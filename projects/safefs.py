"""Safe creation of the files a project writes next to itself (work copies, temporary files,
locks), confinement of external trace references, and disk-full reporting.

Every file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a name planted in the folder
beforehand (a symlink to a file of the user's, a file of another user) is never followed or
overwritten.  Files that h5py then opens by name are checked to be the very inode we created
(:func:`open_h5_created`), so a swap between our creation and h5py's open is detected.

No Qt here.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import h5py

#: Flags of every file a project creates (O_NOFOLLOW / O_CLOEXEC where the OS has them).
CREATE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
#: Mode of a new project file (before the umask) and of lock files.
NEW_FILE_MODE = 0o644
LOCK_MODE = 0o600


def create_exclusive(path: Path, mode: int) -> int:
    """Create ``path`` (which must not exist, not even as a dangling symlink) with exactly
    ``mode`` (the umask does not widen or narrow it); returns the open descriptor."""
    fd = os.open(path, CREATE_FLAGS, mode)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def fresh_name(folder: Path, prefix: str, suffix: str) -> Path:
    """A not yet existing, unpredictable name in ``folder``."""
    for _ in range(100):
        p = folder / f"{prefix}{secrets.token_hex(6)}{suffix}"
        if not os.path.lexists(p):
            return p
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def create_empty(path: Path, mode: int) -> tuple[int, int]:
    """Create an empty file exclusively; returns its (st_dev, st_ino)."""
    fd = create_exclusive(path, mode)
    try:
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    finally:
        os.close(fd)


def copy_exclusive(src: Path, dst: Path, mode: int) -> tuple[int, int]:
    """Copy ``src`` into a new file ``dst`` created exclusively; returns its (dev, ino)."""
    fd = create_exclusive(dst, mode)
    try:
        with os.fdopen(fd, "wb", closefd=False) as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
            out.flush()
            os.fsync(fd)
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    finally:
        os.close(fd)


def open_h5_created(path: Path, mode: str, ident: tuple[int, int]) -> h5py.File:
    """Open with h5py a file we created (``ident`` = its dev, inode) and check that h5py
    opened that very file, not something swapped in at the same name."""
    h5 = h5py.File(path, mode)
    try:
        fd = h5.id.get_vfd_handle()
        st = os.fstat(fd)
        same = (st.st_dev, st.st_ino) == ident
    except Exception:       # noqa: BLE001 - a driver without a descriptor: check by name
        st = os.lstat(path)
        same = (st.st_dev, st.st_ino) == ident
    if not same:
        h5.close()
        raise FileExistsError(errno.EEXIST, "file replaced while being opened", str(path))
    return h5


def file_mode(path: Path, default: int = NEW_FILE_MODE) -> int:
    """Permission bits of ``path`` (``default`` when it does not exist)."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return default


# --------------------------------------------------------------------------------------------
# Disk full and other write failures
# --------------------------------------------------------------------------------------------

_NO_SPACE = re.compile(r"no space|disk full|quota|ENOSPC|errno = 28|file write failed",
                       re.IGNORECASE)


#: Free space (bytes) required beyond an operation's own estimate, for HDF5's metadata.
SPACE_MARGIN = 1 << 20
#: Uncompressed bytes of one trace record in HDF5 (addr u8, cycle u8, is_write u1, stream
#: u2) with room for chunk indexes.
TRACE_RECORD_BYTES = 24


def free_bytes(folder: Path) -> int | None:
    """Bytes available to this user on ``folder``'s file system (None where unknown)."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return int(st.f_bavail) * int(st.f_frsize)


def is_no_space(exc: BaseException) -> bool:
    """True for ENOSPC / EDQUOT and for the h5py errors they turn into."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return True
    return bool(_NO_SPACE.search(str(exc)))


def describe_write_error(exc: BaseException) -> str:
    """A short reason for a failed write: 'the disk is full' or the OS's words."""
    if is_no_space(exc):
        return "the disk is full (no space left on device)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


# Reserving space before HDF5 writes (closes the gap between the free-space check and the
# write: another program may fill the disk meanwhile, and a write failing inside HDF5 can crash
# the process when any HDF5 file is closed afterwards).

_FALLOC_KEEP_SIZE = 0x01
_FALLOC_PUNCH_HOLE = 0x02
_fallocate: Any = None        # libc's fallocate (Linux), False where there is none


def _libc_fallocate() -> Any:
    global _fallocate
    if _fallocate is None:
        _fallocate = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                fn = getattr(libc, "fallocate64", None) or libc.fallocate
                fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
                fn.restype = ctypes.c_int
                _fallocate = fn
    return _fallocate


def reserve(fd: int, offset: int, length: int) -> bool:
    """Allocate the disk blocks of ``[offset, offset + length)`` of the file open as ``fd``
    without changing its size (Linux ``fallocate(FALLOC_FL_KEEP_SIZE)``), so that writes into
    that range cannot meet a full disk.  Raises OSError (ENOSPC) when the disk has not that
    much room; returns False where the OS or file system cannot reserve (the caller then
    relies on the free-space check alone)."""
    fn = _libc_fallocate()
    if not fn or length <= 0:
        return False
    if fn(fd, _FALLOC_KEEP_SIZE, max(0, int(offset)), int(length)) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.ENODEV, errno.ESPIPE,
               getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
        return False
    raise OSError(err, os.strerror(err))


def release(fd: int, end: int) -> None:
    """Give back the reserved blocks beyond the file's end, up to ``end`` (best effort)."""
    fn = _libc_fallocate()
    if not fn:
        return
    with contextlib.suppress(OSError):
        size = os.fstat(fd).st_size
        if end > size:
            # truncating to the same size drops the blocks allocated beyond the end (ext4,
            # tmpfs, xfs); punching a hole there is the fallback
            os.ftruncate(fd, size)
            if os.fstat(fd).st_blocks * 512 > size + (1 << 20):
                fn(fd, _FALLOC_PUNCH_HOLE | _FALLOC_KEEP_SIZE, size, end - size)


def close_h5_quietly(h5: h5py.File | None) -> None:
    """Close an h5py file after a failed write (e.g. ENOSPC), in the order h5py needs.

    After a write error HDF5's metadata cache still holds dirty entries; closing the file
    while other handles into it are open makes HDF5 flush (and fail) again and can crash in
    h5py's close. So: close every object handle first, then drop the file's dirty cache by
    closing with the "strong" degree, and swallow the errors of that flush."""
    if h5 is None:
        return
    with contextlib.suppress(Exception):
        fid = h5.id
        if not fid.valid:
            return
        for kind in (h5py.h5f.OBJ_DATASET, h5py.h5f.OBJ_GROUP, h5py.h5f.OBJ_DATATYPE,
                     h5py.h5f.OBJ_ATTR):
            with contextlib.suppress(Exception):
                for oid in h5py.h5f.get_obj_ids(fid, types=kind):
                    with contextlib.suppress(Exception):
                        while oid.valid:
                            oid._close()
    with contextlib.suppress(Exception):
        h5.close()


# --------------------------------------------------------------------------------------------
# Containment of external trace references
# --------------------------------------------------------------------------------------------

def is_inside(folder: Path, target: Path) -> bool:
    """True when ``target`` (symlinks resolved) lies inside ``folder`` (resolved)."""
    try:
        real = Path(os.path.realpath(target))
        base = Path(os.path.realpath(folder))
    except (OSError, ValueError):
        return False
    return real == base or base in real.parents


def stored_reference(folder: Path, target: Path) -> str:
    """How a project stores a reference to ``target``: relative to the project folder (with
    '/') when it lies inside, else the absolute path."""
    target = Path(os.path.abspath(target))
    if is_inside(folder, target):
        try:
            return Path(os.path.relpath(target, folder)).as_posix()
        except ValueError:           # another drive (Windows)
            pass
    return str(target)


def resolve_reference(folder: Path, raw: str) -> tuple[Path, bool]:
    """(the file a stored reference names, whether it stays inside ``folder``).

    Relative references resolve against the project folder (never the working directory);
    absolute ones, ``..`` and symlinks that lead out count as outside."""
    if not raw or "\x00" in raw:
        return folder / "?", False
    p = Path(raw)
    if not p.is_absolute():
        p = folder / p
    p = Path(os.path.normpath(p))
    return p, is_inside(folder, p)


def orphan_pattern(name: str) -> re.Pattern[str]:
    """Names of temporary files a project called ``name`` may leave behind when killed:
    save's ``.<name>.<token>.tmp``, add_trace's ``.<name>.<token>.trace.h5`` and the trace
    writer's ``..<name>.<token>.trace.h5.<token>.tmp``."""
    n = re.escape(name)
    return re.compile(rf"^(\.{n}\.[A-Za-z0-9_]+\.(tmp|trace\.h5)"
                      rf"|\.\.{n}\.[A-Za-z0-9_]+\.trace\.h5\.[A-Za-z0-9_]+\.tmp)$")


WORK_RE = re.compile(r"^\.(?P<name>.+)\.work-(?P<pid>\d+)(-[0-9a-f]+)?$")

