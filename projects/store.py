"""A DiffMem Studio project: one HDF5 file holding configs, traces and simulation runs.

    from projects.store import Project

    with Project.create("study.dmproj") as p:
        p.add_config("ddr4", load_config("DDR4-3200"))
        p.add_trace("unet", "unet.trace")                 # embedded, streamed in chunks
        stats = simulate_source(p.get_config("ddr4"), p.trace_source("unet"))
        p.add_run("r1", "ddr4", "unet", {"epoch": 1000}, stats)
        p.save()

Editing model: :meth:`Project.open` copies the project file to a *working copy* next to it
(``.<name>.work-<pid>``) and every edit goes there; the project file itself changes only in
:meth:`Project.save`, which writes a fresh file (an h5py copy of every group, which also
reclaims the space of deleted items) to a temporary name in the same folder, flushes and
fsyncs it, moves it onto the project with ``os.replace`` and fsyncs the folder.  An
interrupted save leaves the last saved file untouched and removes its temporary file.
:meth:`Project.close` without :meth:`Project.save` discards the edits.

Locking: a writable open creates ``<project>.lock`` (``O_CREAT | O_EXCL``, mode 0600) holding
the pid and host of the holder as JSON.  A second writable open raises :class:`ProjectInUse`
naming the holder; a lock whose process is gone (same host, pid not alive) is taken over with
a warning, and so is a lock that is empty or not a lock at all (a holder killed, or a disk
full, while writing it).  Read-only opens neither take nor honour the lock.  A failed create
or open never leaves a lock behind.  A writable open removes the temporary files and work
copies that killed processes left next to the project.

Hardening (issue 15): every file written next to the project (work copy, temporary files,
lock) is created with ``O_EXCL | O_NOFOLLOW`` and the project's own mode (see
:mod:`projects.safefs`); the structure of a file is checked on open ("not a DiffMem project"
/ "damaged: <what>"); a write that fails (disk full) raises :class:`ProjectError` and leaves
the project file as last saved.  External trace references are stored relative to the
project's folder and resolved against it; one that leads out of that folder (absolute, ``..``,
a symlink) is refused with :class:`ExternalTraceRefused` unless the project was opened with
``allow_external=True`` (CLI ``--allow-external``).

Older schemas are migrated (see :mod:`projects.schema`) in the working copy when the file is
opened; the file on disk keeps its old schema until :meth:`Project.save`.

No Qt imports here: the GUI's worker module wraps these calls.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import h5py
import numpy as np

from engine.config import MemoryConfig
from engine.errors import DiffMemError
from engine.fileio import fsync_dir
from engine.version import APP_VERSION  # written to the ``app_version`` attributes
from projects import safefs as F
from projects import schema as S

log = logging.getLogger(__name__)

_NAME_RE = re.compile(r"^[^/\x00]+$")


class ProjectError(DiffMemError):
    """A project file is missing, corrupt or cannot be changed: names the file."""

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        super().__init__((f"{self.path}: " if self.path is not None else "") + message)


class ProjectInUse(ProjectError):
    """Another process (or this one) has the project open for writing."""

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        self.holder = holder
        who = f"process {holder.get('pid', '?')} on host {holder.get('host', '?')}"
        if holder.get("created"):
            who += f" since {holder['created']}"
        super().__init__(f"project is in use by {who} (lock file {_lock_path(path)}); close "
                         f"it there, or delete the lock file if that process is gone",
                         path=path)


class ProjectTooNew(ProjectError):
    """The file was written by a newer DiffMem Studio (schema version above ours)."""


class ExternalTraceRefused(ProjectError):
    """A trace reference leads out of the project's folder and external files are not
    allowed (``Project.open(..., allow_external=True)``, CLI ``--allow-external``)."""

    def __init__(self, project: Path, trace: str, target: Path) -> None:
        self.trace = trace
        self.target = target
        super().__init__(f"trace {trace!r} refers to {str(target)!r}, outside the project "
                         f"folder {project.parent}: refused (a project file may not make "
                         f"DiffMem read files elsewhere unless you allow it: --allow-external "
                         f"on the command line, or confirm it in the application)",
                         path=project)


def _write_failed(path: Path, what: str, exc: BaseException) -> ProjectError:
    return ProjectError(f"cannot {what}: {F.describe_write_error(exc)}; the project file on "
                        f"disk is unchanged (as last saved)", path=path)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _work_path(path: Path) -> Path:
    """A fresh, unpredictable work-copy name ``.<name>.work-<pid>-<token>``."""
    return F.fresh_name(path.parent, f".{path.name}.work-{os.getpid()}-", "")


def _remove_work_copies(path: Path, pid: int) -> None:
    """Remove the work copies process ``pid`` left next to ``path``."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            m = F.WORK_RE.match(entry.name)
            if m and m.group("name") == path.name and int(m.group("pid")) == pid:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _remove_orphans(path: Path) -> list[str]:
    """Remove the temporary files and dead processes' work copies of project ``path`` (call
    while holding its lock: no live writer can own a temporary file then)."""
    removed: list[str] = []
    temp = F.orphan_pattern(path.name)
    host_pids_alive: dict[int, bool] = {}
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        orphan = bool(temp.match(entry.name))
        if not orphan:
            m = F.WORK_RE.match(entry.name)
            if m and m.group("name") == path.name:
                pid = int(m.group("pid"))
                alive = host_pids_alive.setdefault(pid, pid != os.getpid() and _pid_alive(pid))
                orphan = not alive and pid != os.getpid()
        if orphan:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    if removed:
        log.warning("%s: removed %d temporary file(s) left by an interrupted save or a "
                    "killed process: %s", path, len(removed), ", ".join(sorted(removed)[:5]))
    return removed




def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Lock file
# --------------------------------------------------------------------------------------------

def _read_holder(lock: Path) -> dict[str, Any] | None:
    """The lock's holder, or None when the lock is empty or not a lock (garbage)."""
    try:
        raw = lock.read_bytes()[:4096]
    except FileNotFoundError:
        raise
    except OSError:
        return None
    try:
        holder = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(holder, dict) or not isinstance(holder.get("pid"), int) \
            or isinstance(holder.get("pid"), bool) or not isinstance(holder.get("host"), str):
        return None
    return holder


def _acquire_lock(path: Path) -> Path:
    lock = _lock_path(path)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "created": _now()}
    for _attempt in range(4):
        try:
            fd = F.create_exclusive(lock, F.LOCK_MODE)
        except FileExistsError:
            try:
                holder = _read_holder(lock)
                if holder is None:            # maybe being written right now: look again
                    time.sleep(0.2)
                    holder = _read_holder(lock)
            except FileNotFoundError:
                continue                      # released meanwhile: try again
            if holder is None:
                if os.path.islink(lock) or not os.path.isfile(lock):
                    raise ProjectError(f"lock file {lock} is not a regular file: remove it",
                                       path=path) from None
                log.warning("%s: taking over the damaged lock file %s (empty or not a lock: "
                            "its writer was interrupted)", path, lock)
                with contextlib.suppress(OSError):
                    lock.unlink()
                continue
            pid = holder["pid"]
            stale = (holder.get("host") == me["host"] and pid != os.getpid()
                     and not _pid_alive(pid))
            if not stale:
                raise ProjectInUse(path, holder) from None
            log.warning("%s: taking over the stale lock of process %d on %s (that process "
                        "is gone)", path, pid, holder.get("host"))
            with contextlib.suppress(OSError):
                lock.unlink()
            _remove_work_copies(path, pid)    # its abandoned working copy
            continue
        except OSError as e:
            raise ProjectError(f"cannot create lock file {lock}: {F.describe_write_error(e)}",
                               path=path) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(me, f)
                f.flush()
                os.fsync(f.fileno())
        except BaseException as e:
            with contextlib.suppress(OSError):
                lock.unlink()                 # never leave an empty lock behind
            if isinstance(e, OSError):
                raise ProjectError(f"cannot write lock file {lock}: "
                                   f"{F.describe_write_error(e)}", path=path) from None
            raise
        return lock
    raise ProjectError(f"cannot create lock file {lock}", path=path)


def _release_lock(lock: Path) -> None:
    with contextlib.suppress(OSError):
        lock.unlink()


# --------------------------------------------------------------------------------------------
# Traces as simulator input
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TraceSource:
    """Where a project trace's requests can be read: a file and, for HDF5, a group.

    For an embedded trace ``path`` is the open project's working copy, valid while the
    project stays open.
    """

    path: Path
    group: str | None          # HDF5 group (None for text/binary files)
    fmt: str                   # "text" | "binary" | "hdf5"
    embedded: bool

    def iter_chunks(self, **kw: Any) -> Iterator[Any]:
        """Stream the requests as :class:`engine.trace.TraceChunk` objects
        (keyword arguments go to :func:`engine.trace.iter_trace`)."""
        from engine.trace import iter_trace
        if self.group is not None:
            kw.setdefault("group", self.group)
        return iter_trace(self.path, fmt=self.fmt, **kw)


def simulate_source(cfg: MemoryConfig, source: TraceSource, options: Any = None, *,
                    progress: Callable | None = None,
                    cancel: Callable[[], bool] | None = None) -> Any:
    """Like :func:`engine.simulator.simulate_trace` for one :class:`TraceSource` (which may be
    a group other than ``"trace"`` of an HDF5 file)."""
    from engine.simulator import simulate_trace
    return simulate_trace(cfg, source.path, options, progress=progress, cancel=cancel,
                          group=source.group or "trace")


# --------------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------------

def _copy_member(src: h5py.File, dst: h5py.File, name: str) -> None:
    """Copy one top-level group (datasets keep their chunking and compression)."""
    src.copy(src[name], dst, name=name)


def _write_copy(src: h5py.File, fd: int,
                edit: Callable[[h5py.File], None] | None = None) -> None:
    """Write every root attribute and group of ``src`` into the new (empty) file open as
    ``fd``, flushed and fsynced.

    The copy is built in memory (HDF5's core driver) and written with plain ``os.write``: a
    full disk is then an ordinary OSError, never a failed write inside HDF5 (after which
    closing any HDF5 file can crash the process)."""
    out = h5py.File(f"diffmem-save-{uuid.uuid4().hex}", "w", driver="core",
                    backing_store=False)
    try:
        for key, value in src.attrs.items():
            out.attrs[key] = value
        for name in src:
            _copy_member(src, out, name)
        if edit is not None:
            edit(out)
        out.flush()
        image = out.id.get_file_image()
    finally:
        out.close()
    _write_image(fd, image)


def _write_image(fd: int, image: bytes) -> None:
    """Write an HDF5 file image into the (empty) file open as ``fd`` with plain ``os.write``
    (a full disk is an OSError here, never a failed write inside HDF5), and fsync it."""
    view = memoryview(image)
    while view:
        n = os.write(fd, view[:1 << 24])
        view = view[n:]
    os.fsync(fd)


def _empty_project_image() -> bytes:
    """The bytes of a new, empty project file (built in memory)."""
    h5 = h5py.File(f"diffmem-new-{uuid.uuid4().hex}", "w", driver="core",
                   backing_store=False)
    try:
        _init_root(h5)
        h5.flush()
        return h5.id.get_file_image()
    finally:
        h5.close()


def _write_trace_group(parent: h5py.Group, name: str, chunks: Iterator[Any]) -> int:
    """Stream a trace into ``parent/name`` in the layout of :func:`engine.trace.write_hdf5`
    (the project's own HDF5 writes happen inside a space reservation, with no temporary
    file beside the project)."""
    from engine.trace import write_hdf5_group
    g = parent.create_group(name)
    try:
        n = write_hdf5_group(g, chunks)
    except BaseException:
        with contextlib.suppress(Exception):
            del parent[name]
        raise
    return n


def _check_root(path: Path, h5: h5py.File) -> int:
    missing = [a for a in S.REQUIRED_ROOT_ATTRS if a not in h5.attrs]
    if missing:
        raise ProjectError(f"not a DiffMem project file: root attribute(s) "
                           f"{', '.join(missing)} missing", path=path)
    raw = h5.attrs[S.ATTR_SCHEMA]
    try:
        version = int(raw)
    except (TypeError, ValueError):
        raise ProjectError(f"not a DiffMem project file: schema_version is {raw!r}, "
                           f"expected an integer", path=path) from None
    if version > S.SCHEMA_VERSION:
        raise ProjectTooNew(f"written with project schema {version}, newer than the "
                            f"{S.SCHEMA_VERSION} this DiffMem Studio reads: open it with a "
                            f"newer version", path=path)
    if version < 0:
        raise ProjectError(f"bad schema_version {version}", path=path)
    try:
        problems = _structure_problems(h5, version)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        problems = [f"unreadable layout ({type(e).__name__}: {str(e).splitlines()[0][:120]})"]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ProjectError(f"damaged DiffMem project: {'; '.join(problems[:3])}{more}",
                           path=path)
    return version


def _structure_problems(h5: h5py.File, version: int) -> list[str]:
    """What is wrong with the layout of a project file (empty when it is sound)."""
    problems: list[str] = []
    for name in S.TOP_GROUPS:
        obj = h5.get(name, getlink=True)
        if obj is None:
            # /studies and /optimizer_runs came later within schema 1: optional
            if version >= 1 and name in (S.CONFIGS, S.TRACES, S.RUNS):
                problems.append(f"/{name} is missing")
            continue
        if not isinstance(obj, h5py.HardLink):
            problems.append(f"/{name} is a link, expected a group")
            continue
        if not isinstance(h5[name], h5py.Group):
            problems.append(f"/{name} is a {type(h5[name]).__name__.lower()}, expected a group")
    if problems:
        return problems
    for top in S.TOP_GROUPS:
        if top not in h5:
            continue
        for member in h5[top]:
            link = h5[top].get(member, getlink=True)
            if not isinstance(link, h5py.HardLink):
                problems.append(f"/{top}/{member} is a link (external or soft), expected a "
                                f"group stored in the file")
                continue
            obj = h5[top][member]
            if top == S.STUDIES:
                continue
            if not isinstance(obj, h5py.Group):
                problems.append(f"/{top}/{member} is a dataset, expected a group")
                continue
            if version < 1:
                continue
            if top == S.CONFIGS:
                problems += _json_attr_problem(obj, S.CONFIG_JSON, dict, f"/{top}/{member}")
            elif top == S.TRACES:
                storage = S.attr_str(obj.attrs.get(S.TRACE_STORAGE, ""))
                if storage == "external":
                    if not isinstance(obj.attrs.get(S.TRACE_PATH), (str, bytes)):
                        problems.append(f"/{top}/{member}: external trace without a path")
                elif storage == "embedded":
                    gone = [d for d in ("addr", "cycle", "is_write")
                            if not isinstance(obj.get(d), h5py.Dataset)]
                    if gone:
                        problems.append(f"/{top}/{member}: embedded trace lacks dataset(s) "
                                        f"{', '.join(gone)}")
                else:
                    problems.append(f"/{top}/{member}: storage is {storage!r}, expected "
                                    f"'embedded' or 'external'")
            elif top == S.RUNS:
                for key, kind in ((S.RUN_CONFIG, dict), (S.RUN_SUMMARY, dict)):
                    if key in obj.attrs:
                        problems += _json_attr_problem(obj, key, kind, f"/{top}/{member}")
        if len(problems) > 20:
            break
    return problems


def _json_attr_problem(g: h5py.Group, key: str, kind: type, where: str) -> list[str]:
    if key not in g.attrs:
        return [f"{where}: attribute {key!r} is missing"]
    try:
        value = json.loads(S.attr_str(g.attrs[key]))
    except (TypeError, ValueError, RecursionError):
        return [f"{where}: attribute {key!r} is not valid JSON"]
    if not isinstance(value, kind):
        return [f"{where}: attribute {key!r} holds a JSON {type(value).__name__}, expected "
                f"an object"]
    return []


def _init_root(h5: h5py.File) -> None:
    h5.attrs[S.ATTR_SCHEMA] = S.SCHEMA_VERSION
    h5.attrs[S.ATTR_APP_VERSION] = APP_VERSION
    h5.attrs[S.ATTR_CREATED] = _now()
    h5.attrs[S.ATTR_NX_CLASS] = S.ROOT_NX_CLASS
    for name in S.TOP_GROUPS:
        h5.require_group(name).attrs[S.ATTR_NX_CLASS] = "NXcollection"


def _require_space(path: Path, need: int, what: str) -> None:
    """Refuse (ProjectError) a write needing ``need`` bytes when the project's disk has
    less free: HDF5 must never meet a full disk (see :func:`projects.safefs.free_bytes`)."""
    free = F.free_bytes(path.parent)
    if free is not None and free < need:
        raise ProjectError(f"cannot {what}: the disk is full ({free / 2**20:.1f} MiB free, "
                           f"about {need / 2**20:.1f} MiB needed); the project file on disk "
                           f"is unchanged (as last saved)", path=path)


def _new_file_mode() -> int:
    """Mode of a new project file: 0644 less the process's umask, as for any new file."""
    mask = os.umask(0)
    os.umask(mask)
    return F.NEW_FILE_MODE & ~mask


def _run_nbytes(stats: Any) -> int:
    """An upper bound of the bytes a simulation run takes in the project (its epoch records,
    per-bank counters, histogram and JSON attributes, uncompressed, twice for HDF5's
    metadata and free-space slack)."""
    records = list(getattr(stats, "epochs", []) or [])
    per_record = 0
    if records:
        per_record = sum(max(1, int(np.size(v))) * 8 for v in records[0].values())
    arrays = sum(np.asarray(v).nbytes for v in getattr(stats, "per_bank", {}).values())
    arrays += np.asarray(getattr(stats, "read_latency_hist", [])).nbytes
    text = len(S.to_json(getattr(stats, "summary", {}))) + len(
        S.to_json(getattr(stats, "channels", [])))
    return 2 * (len(records) * per_record + arrays + text)


def _jload(value: Any, default: Any = None) -> Any:
    if value is None:
        return default
    return json.loads(S.attr_str(value))


# --------------------------------------------------------------------------------------------
# The project
# --------------------------------------------------------------------------------------------

def _write_op(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a Project method that writes into the working copy: a write failure there
    (disk full) becomes a ProjectError and marks the working copy unusable."""
    import functools

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(self: Project, *a: Any, **kw: Any) -> Any:
            try:
                with self._reserved(F.SPACE_MARGIN, what):
                    return fn(self, *a, **kw)
            except (OSError, RuntimeError) as e:
                self._broken = F.describe_write_error(e)
                raise _write_failed(self.path, what, e) from None
        return inner
    return wrap


class Project:
    """An open project file.  Use :meth:`create` or :meth:`open`, not the constructor."""

    def __init__(self, path: Path, h5: h5py.File, work: Path | None, lock: Path | None,
                 readonly: bool, schema_on_disk: int, allow_external: bool = False) -> None:
        self.path = path
        #: May trace references lead out of the project's folder? (see the module docstring)
        self.allow_external = allow_external
        self._broken: str | None = None    # why the working copy can no longer be written
        self._reserve_depth = 0            # nesting of _reserved blocks
        self._reserved_end = 0             # end of the blocks reserved for HDF5's writes
        self._h5: h5py.File | None = h5
        self._work = work                  # None: reading the project file itself
        self._lock = lock
        self.readonly = readonly
        self.schema_on_disk = schema_on_disk
        self.modified = schema_on_disk != S.SCHEMA_VERSION

    # ---- opening and closing ------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike[str], *,
               allow_external: bool = False) -> Project:
        """Create a new, empty project file (saved at once) and open it for writing."""
        p = Path(path).absolute()
        if os.path.lexists(p):
            raise ProjectError("already exists: choose another name or open it", path=p)
        if not p.parent.is_dir():
            raise ProjectError(f"folder {p.parent} does not exist", path=p)
        _require_space(p, F.SPACE_MARGIN, "create the project")
        lock = _acquire_lock(p)
        work: Path | None = None
        h5: h5py.File | None = None
        try:
            _remove_orphans(p)
            work = _work_path(p)
            fd = F.create_exclusive(work, _new_file_mode())
            try:
                _write_image(fd, _empty_project_image())
                st = os.fstat(fd)
            finally:
                os.close(fd)
            h5 = F.open_h5_created(work, "r+", (st.st_dev, st.st_ino))
            project = cls(p, h5, work, lock, False, S.SCHEMA_VERSION, allow_external)
        except BaseException as e:
            F.close_h5_quietly(h5)
            if work is not None:
                with contextlib.suppress(OSError):
                    work.unlink()
            _release_lock(lock)
            if isinstance(e, (OSError, RuntimeError)):
                raise _write_failed(p, "create the project", e) from None
            raise
        try:
            project.save()
        except BaseException:
            project.close()
            with contextlib.suppress(OSError):
                if p.exists() and p.stat().st_size == 0:
                    p.unlink()
            raise
        return project

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, readonly: bool = False,
             allow_external: bool = False) -> Project:
        """Open a project file; writable opens take the lock and work on a copy.

        ``allow_external``: trace references may lead out of the project's folder (the
        user's explicit consent; refused otherwise, see :class:`ExternalTraceRefused`)."""
        p = Path(path).absolute()
        if p.is_dir():
            raise ProjectError("a folder, expected a project file", path=p)
        if not p.is_file():
            raise ProjectError("no such project file", path=p)
        try:
            is_h5 = h5py.is_hdf5(str(p))
        except OSError as e:
            raise ProjectError(f"cannot read: {F.describe_write_error(e)}", path=p) from None
        if not is_h5:
            raise ProjectError("not a DiffMem project file (not an HDF5 file)", path=p)
        lock = None if readonly else _acquire_lock(p)
        work: Path | None = None
        h5: h5py.File | None = None
        try:
            if lock is not None:
                _remove_orphans(p)
            try:
                with h5py.File(p, "r") as probe:
                    version = _check_root(p, probe)
            except (OSError, RuntimeError) as e:
                raise ProjectError(f"cannot read as HDF5: {e}", path=p) from None
            if readonly and version == S.SCHEMA_VERSION:
                return cls(p, h5py.File(p, "r"), None, None, True, version, allow_external)
            work = _work_path(p)
            _require_space(p, p.stat().st_size + F.SPACE_MARGIN, "open the project for "
                           "writing (it works on a copy next to the file)")
            try:
                ident = F.copy_exclusive(p, work, F.file_mode(p))
                h5 = F.open_h5_created(work, "r+", ident)
            except (OSError, RuntimeError) as e:
                raise _write_failed(p, "make the working copy", e) from None
            project = cls(p, h5, work, lock, readonly, version, allow_external)
            try:
                with project._reserved(F.SPACE_MARGIN + p.stat().st_size // 4,
                                       "open the project for writing"):
                    S.migrate(h5, version)
                    for name in (S.STUDIES, S.OPTIMIZER_RUNS):
                        if name not in h5:
                            h5.require_group(name).attrs[S.ATTR_NX_CLASS] = "NXcollection"
            except Exception as e:
                if isinstance(e, DiffMemError):
                    raise
                if isinstance(e, (OSError, RuntimeError)) and F.is_no_space(e):
                    raise _write_failed(p, "open the project for writing", e) from None
                raise ProjectError(f"cannot migrate from schema {version}: {e}",
                                   path=p) from e
            return project
        except BaseException:
            F.close_h5_quietly(h5)
            if work is not None:
                with contextlib.suppress(OSError):
                    work.unlink()
            if lock is not None:
                _release_lock(lock)
            raise

    def close(self) -> None:
        """Close, discarding unsaved edits, and release the lock (idempotent)."""
        if self._h5 is None:
            return
        if self.modified and not self.readonly:
            log.info("%s: closing with unsaved changes (discarded)", self.path)
        h5, self._h5 = self._h5, None
        if self._broken is not None:
            F.close_h5_quietly(h5)
        else:
            try:
                h5.close()
            except Exception:   # noqa: BLE001 - e.g. a flush failing on a full disk
                F.close_h5_quietly(h5)
        if self._work is not None:
            with contextlib.suppress(OSError):
                self._work.unlink()
        if self._lock is not None:
            _release_lock(self._lock)
            self._lock = None

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._h5 is None

    @property
    def h5(self) -> h5py.File:
        """The open working copy (read it; change it only through this class)."""
        if self._h5 is None:
            raise ProjectError("project is closed", path=self.path)
        return self._h5

    def _writable(self) -> h5py.File:
        h5 = self.h5
        if self.readonly:
            raise ProjectError("project is open read-only", path=self.path)
        if self._broken is not None:
            raise ProjectError(f"the working copy could not be written ({self._broken}): "
                               f"close the project and open it again (the project file holds "
                               f"the last save)", path=self.path)
        self.modified = True
        return h5

    # ---- saving ----------------------------------------------------------------------------
    def save(self) -> None:
        """Write the working copy to the project file atomically (see the module docstring)."""
        h5 = self._writable()
        folder = self.path.parent
        tmp: Path | None = None
        try:
            self._require_space(self._work_size() + F.SPACE_MARGIN, "save")
            self._guarded("save", lambda: None)       # flushes inside a reservation
            mode = F.file_mode(self.path, _new_file_mode())
            tmp = F.fresh_name(folder, f".{self.path.name}.", ".tmp")
            fd = F.create_exclusive(tmp, mode)
            try:
                _write_copy(h5, fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            tmp = None
        except BaseException as e:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            if isinstance(e, (OSError, RuntimeError)):
                raise _write_failed(self.path, "save", e) from None
            raise
        fsync_dir(folder)
        self.modified = False
        self.schema_on_disk = S.SCHEMA_VERSION
        log.debug("saved %s", self.path)

    def save_as(self, target: str | os.PathLike[str]) -> tuple[Project, list[str]]:
        """Write this project, with its unsaved changes, to a new file ``target`` (replacing
        a file there that nobody has open) and open that file for writing; this project is
        left open and unchanged (the caller closes it).  Returns ``(the new project, the
        traces whose files now lie outside the new project's folder)``.

        External trace references are rewritten for the new folder: relative to it when the
        trace file lies inside it, else absolute.  Traces that were inside the old folder but
        are outside the new one stay readable in the returned project (the user's own files,
        moved by the user's own action) and are named in the returned list, so the caller can
        say so; a later open asks again (:class:`ExternalTraceRefused`)."""
        t = Path(target).absolute()
        if t == self.path or (t.exists() and t.resolve() == self.path.resolve()):
            self.save()
            return self, []
        if not t.parent.is_dir():
            raise ProjectError(f"folder {t.parent} does not exist", path=t)
        if os.path.islink(t) or (t.exists() and not t.is_file()):
            raise ProjectError("is not a regular file: choose another name", path=t)
        h5 = self.h5
        old_folder, new_folder = self.path.parent, t.parent
        moved_out: list[str] = []

        def rewrite(out: h5py.File) -> None:
            for name, g in out[S.TRACES].items():
                if S.attr_str(g.attrs.get(S.TRACE_STORAGE, "")) != "external":
                    continue
                target_path, was_inside = F.resolve_reference(
                    old_folder, S.attr_str(g.attrs.get(S.TRACE_PATH, "")))
                g.attrs[S.TRACE_PATH] = F.stored_reference(new_folder, target_path)
                if was_inside and not F.is_inside(new_folder, target_path):
                    moved_out.append(name)

        _require_space(t, self._work_size() + F.SPACE_MARGIN, "save the project as")
        lock = _acquire_lock(t)
        tmp: Path | None = None
        try:
            self._guarded("save the project as", lambda: None)      # flush the edits
            tmp = F.fresh_name(new_folder, f".{t.name}.", ".tmp")
            fd = F.create_exclusive(tmp, _new_file_mode())
            try:
                _write_copy(h5, fd, rewrite)
            finally:
                os.close(fd)
            os.replace(tmp, t)
            tmp = None
            fsync_dir(new_folder)
        except BaseException as e:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            if isinstance(e, (OSError, RuntimeError)):
                raise ProjectError(f"cannot save the project as {t}: "
                                   f"{F.describe_write_error(e)}; {self.path} is still open "
                                   f"and unchanged", path=t) from None
            raise
        finally:
            _release_lock(lock)
        if moved_out:
            log.warning("%s: trace(s) %s now lie outside the project's folder (stored by "
                        "absolute path)", t, ", ".join(moved_out))
        new = Project.open(t, allow_external=self.allow_external or bool(moved_out))
        return new, moved_out

    # ---- generic entity operations ---------------------------------------------------------
    def _group(self, kind: str) -> h5py.Group:
        try:
            return self.h5[S.KINDS[kind]]
        except KeyError:
            raise ProjectError(f"unknown kind {kind!r}: expected one of "
                               f"{', '.join(S.KINDS)}", path=self.path) from None

    def _check_name(self, name: str) -> str:
        if not isinstance(name, str) or not _NAME_RE.match(name) or name in (".", ".."):
            raise ProjectError(f"bad name {name!r}: expected a non-empty name without '/'",
                               path=self.path)
        return name

    def _get(self, kind: str, name: str) -> h5py.Group:
        g = self._group(kind)
        if name not in g:
            have = sorted(g)
            raise ProjectError(f"no {kind} named {name!r} (have: "
                               f"{', '.join(have) if have else 'none'})", path=self.path)
        return g[name]

    def _check_free(self, kind: str, name: str) -> None:
        if self._check_name(name) in self._group(kind):
            raise ProjectError(f"a {kind} named {name!r} already exists", path=self.path)

    def names(self, kind: str) -> list[str]:
        if kind in S.KINDS and S.KINDS[kind] not in self.h5:
            return []                      # an optional group absent from an older file
        return sorted(self._group(kind))

    @_write_op("rename")
    def rename(self, kind: str, old: str, new: str) -> None:
        """Rename a config, trace or run; runs referring to a renamed config or trace follow."""
        self._get(kind, old)
        self._check_free(kind, new)
        h5 = self._writable()
        group = S.KINDS[kind]
        h5.move(f"{group}/{old}", f"{group}/{new}")
        ref = {"config": S.RUN_CONFIG_NAME, "trace": S.RUN_TRACE_NAME}.get(kind)
        if ref:
            for run in h5[S.RUNS].values():
                if S.attr_str(run.attrs.get(ref, "")) == old:
                    run.attrs[ref] = new

    @_write_op("delete")
    def delete(self, kind: str, name: str) -> None:
        """Delete a config, trace or run (runs keep their config snapshot)."""
        self._get(kind, name)
        h5 = self._writable()
        del h5[f"{S.KINDS[kind]}/{name}"]

    @_write_op("duplicate")
    def duplicate(self, kind: str, name: str, new: str) -> None:
        """Copy a config, trace or run under a new name."""
        src = self._get(kind, name)
        self._check_free(kind, new)
        h5 = self._writable()
        h5.copy(src, h5[S.KINDS[kind]], name=new)

    def entity_nbytes(self, kind: str, name: str) -> int:
        """Bytes of data (uncompressed) held by a config, trace or run."""
        total = [0]

        def visit(_name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                total[0] += int(obj.size) * int(obj.dtype.itemsize)
        self._get(kind, name).visititems(visit)
        return total[0]

    def take_out(self, kind: str, name: str) -> h5py.File:
        """Delete a config, trace or run and return a copy of it in an in-memory HDF5 file
        (under ``/entity``), for :meth:`put_back` (the GUI's undo)."""
        src = self._get(kind, name)
        held = h5py.File(f"diffmem-undo-{uuid.uuid4().hex}", "w", driver="core",
                         backing_store=False)
        held.copy(src, held, name="entity")
        self.delete(kind, name)
        return held

    @_write_op("restore")
    def put_back(self, kind: str, name: str, held: h5py.File) -> None:
        """Restore an entity returned by :meth:`take_out` under ``name``."""
        self._check_free(kind, name)
        h5 = self._writable()
        held.copy(held["entity"], h5[S.KINDS[kind]], name=name)

    # ---- configs -----------------------------------------------------------------------------
    @_write_op("add the config")
    def add_config(self, name: str, cfg: MemoryConfig, *, replace: bool = False) -> None:
        """Store a memory config (as JSON of :meth:`MemoryConfig.to_dict`)."""
        self._check_name(name)
        h5 = self._writable()
        configs = h5[S.CONFIGS]
        if name in configs:
            if not replace:
                raise ProjectError(f"a config named {name!r} already exists", path=self.path)
            del configs[name]
        data = cfg.to_dict()
        g = configs.create_group(name)
        g.attrs[S.ATTR_NX_CLASS] = "NXcollection"
        g.attrs[S.CONFIG_JSON] = S.to_json(data)
        for key in S.CONFIG_KEY_ATTRS:
            if data.get(key) is not None:
                g.attrs[key] = data[key]
        g.attrs[S.ATTR_CREATED] = _now()

    def configs(self) -> list[str]:
        return self.names("config")

    def get_config(self, name: str) -> MemoryConfig:
        g = self._get("config", name)
        try:
            return MemoryConfig.from_dict(_jload(g.attrs[S.CONFIG_JSON]))
        except (KeyError, ValueError) as e:
            raise ProjectError(f"config {name!r} is corrupt: {e}", path=self.path) from None

    # ---- traces ------------------------------------------------------------------------------
    def add_trace(self, name: str, source_path: str | os.PathLike[str], embed: bool = True, *,
                  fmt: str | None = None, group: str = "trace",
                  allow_external: bool | None = None) -> None:
        """Add a trace file: embedded (streamed chunk by chunk into the project) or referred
        to by path.  ``fmt``/``group`` describe the source as for
        :func:`engine.trace.iter_trace`.

        A reference (``embed=False``) is stored relative to the project's folder; a file
        outside that folder needs ``allow_external`` (default: the project's setting) and is
        stored by its absolute path."""
        from engine.trace import detect_format, iter_trace, trace_summary
        self._check_free("trace", name)
        src = Path(source_path).absolute()
        folder = self.path.parent
        if not embed and not F.is_inside(folder, src) and not (
                self.allow_external if allow_external is None else allow_external):
            raise ExternalTraceRefused(self.path, name, src)
        kind = fmt or detect_format(src)
        summary = trace_summary(src, fmt=kind, group=group)
        h5 = self._writable()
        if embed:
            # the temporary HDF5 trace and its copy in the working copy: at most the
            # uncompressed size each, plus the working copy's next flush
            # (chunks may be written twice while they fill: room for two copies)
            raw = int(summary.get("requests", 0)) * F.TRACE_RECORD_BYTES
            need = 2 * raw + F.SPACE_MARGIN
            self._require_space(need, f"add trace {name!r}")
            self._guarded(f"add trace {name!r}", lambda: _write_trace_group(
                h5[S.TRACES], name, iter_trace(src, fmt=kind, group=group)), need=need)

        def describe() -> None:
            if embed:
                g = h5[S.TRACES][name]
                g.attrs[S.TRACE_STORAGE] = "embedded"
            else:
                g = h5[S.TRACES].create_group(name)
                g.attrs[S.TRACE_STORAGE] = "external"
                g.attrs[S.TRACE_PATH] = F.stored_reference(folder, src)
                g.attrs[S.TRACE_FMT] = kind
                if kind == "hdf5":
                    g.attrs["group"] = group
            g.attrs[S.ATTR_NX_CLASS] = "NXcollection"
            g.attrs[S.TRACE_SOURCE] = str(src)
            g.attrs[S.TRACE_SUMMARY] = S.to_json(summary)
            g.attrs[S.ATTR_CREATED] = _now()
            for key in ("requests", "reads", "writes"):
                g.attrs[key] = int(summary[key])
        self._guarded(f"add trace {name!r}", describe)

    def _work_size(self) -> int:
        try:
            return os.stat(self._work if self._work is not None else self.path).st_size
        except OSError:
            return 0

    def _require_space(self, need: int, what: str) -> None:
        _require_space(self.path, need, what)

    def _guarded(self, what: str, fn: Callable[[], Any], *, need: int = F.SPACE_MARGIN) -> Any:
        """Run a write into the working copy inside a reservation of ``need`` bytes; a failure
        there (disk full) marks the working copy unusable and raises ProjectError (the
        project file keeps its last save)."""
        try:
            with self._reserved(need, what):
                return fn()
        except (OSError, RuntimeError) as e:
            self._broken = F.describe_write_error(e)
            raise _write_failed(self.path, what, e) from None

    @contextlib.contextmanager
    def _reserved(self, need: int, what: str) -> Iterator[None]:
        """Reserve ``need`` more bytes of disk for the working copy's HDF5 writes in the block
        (see :func:`projects.safefs.reserve`): HDF5 then never meets a full disk, even one
        that another program fills after the free-space check.  A disk without that room is
        a ProjectError before anything is written (the working copy stays usable).  The
        outermost block flushes HDF5 (so every write lands in the reserved blocks) and gives
        back what it did not use."""
        h5 = self._h5
        fd: int | None = None
        if h5 is not None and self._work is not None and self._broken is None:
            with contextlib.suppress(Exception):
                handle = h5.id.get_vfd_handle()
                fd = handle if isinstance(handle, int) else None
        if fd is not None:
            start = max(os.fstat(fd).st_size, self._reserved_end)
            try:
                if F.reserve(fd, start, need):
                    self._reserved_end = start + need
            except OSError as e:
                raise ProjectError(f"cannot {what}: {F.describe_write_error(e)} (about "
                                   f"{need / 2**20:.1f} MiB needed); the project file on "
                                   f"disk is unchanged (as last saved)",
                                   path=self.path) from None
        outer = self._reserve_depth == 0
        self._reserve_depth += 1
        try:
            yield
        finally:
            self._reserve_depth -= 1
            if outer and fd is not None:
                try:
                    # also after a failed write: nothing HDF5 holds may reach the disk later,
                    # outside a reservation (close() would write it)
                    if h5 is not None and self._broken is None:
                        h5.flush()
                finally:
                    if self._reserved_end:
                        F.release(fd, self._reserved_end)
                        self._reserved_end = 0

    def traces(self) -> list[str]:
        return self.names("trace")

    def trace_info(self, name: str) -> dict[str, Any]:
        g = self._get("trace", name)
        return {"storage": S.attr_str(g.attrs.get(S.TRACE_STORAGE, "embedded")),
                "source": S.attr_str(g.attrs.get(S.TRACE_SOURCE, "")),
                "summary": _jload(g.attrs.get(S.TRACE_SUMMARY), {})}

    def trace_source(self, name: str, *, allow_external: bool | None = None) -> TraceSource:
        """Where to read trace ``name`` from (see :func:`simulate_source`).

        A reference resolves against the project's folder; one leading out of it raises
        :class:`ExternalTraceRefused` unless ``allow_external`` (default: the project's
        setting)."""
        g = self._get("trace", name)
        if S.attr_str(g.attrs.get(S.TRACE_STORAGE, "embedded")) == "external":
            fmt = S.attr_str(g.attrs.get(S.TRACE_FMT, "text"))
            if fmt not in ("text", "binary", "hdf5"):
                raise ProjectError(f"trace {name!r}: stored format {fmt[:40]!r} is not one of "
                                   f"text, binary, hdf5 (damaged project)", path=self.path)
            grp = S.attr_str(g.attrs.get("group", "trace")) if fmt == "hdf5" else None
            target, inside = F.resolve_reference(self.path.parent,
                                                 S.attr_str(g.attrs.get(S.TRACE_PATH, "")))
            allowed = self.allow_external if allow_external is None else allow_external
            if not inside and not allowed:
                raise ExternalTraceRefused(self.path, name, target)
            return TraceSource(target, grp, fmt, False)
        self.h5.flush()
        return TraceSource(Path(self.h5.filename), g.name.lstrip("/"), "hdf5", True)

    # ---- runs ----------------------------------------------------------------------------------
    @_write_op("add the run")
    def add_run(self, run_id: str | None, cfg_name: str, trace_name: str,
                options: dict[str, Any], stats: Any) -> str:
        """Store a simulation's statistics; returns the run id (made up when None)."""
        if not run_id:
            run_id = datetime.now().strftime("run-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self._check_free("run", run_id)
        snapshot = S.attr_str(self._get("config", cfg_name).attrs[S.CONFIG_JSON])
        self._get("trace", trace_name)
        h5 = self._writable()
        with self._reserved(_run_nbytes(stats), "add the run"):
            self._write_run(h5, run_id, cfg_name, snapshot, trace_name, options, stats)
        return run_id

    @staticmethod
    def _write_run(h5: h5py.File, run_id: str, cfg_name: str, snapshot: str, trace_name: str,
                   options: dict[str, Any], stats: Any) -> None:
        g = h5[S.RUNS].create_group(run_id)
        try:
            a = g.attrs
            a[S.ATTR_NX_CLASS] = "NXentry"
            a[S.RUN_KIND] = S.RUN_KIND_SIMULATION
            a[S.RUN_CONFIG_NAME] = cfg_name
            a[S.RUN_CONFIG] = snapshot
            a[S.RUN_TRACE_NAME] = trace_name
            a[S.RUN_OPTIONS] = S.to_json(dict(options))
            a[S.ATTR_CREATED] = _now()
            a[S.ATTR_APP_VERSION] = APP_VERSION
            a[S.RUN_SUMMARY] = S.to_json(stats.summary)
            a[S.RUN_CHANNELS] = S.to_json(stats.channels)
            ep = g.create_group(S.RUN_EPOCHS)
            ep.attrs[S.ATTR_NX_CLASS] = "NXdata"
            ep.attrs["signal"] = "average_read_latency"
            ep.attrs["axes"] = "start"
            records = list(stats.epochs)
            fields = list(S.EPOCH_FIELDS)
            if records:
                fields += [k for k, v in records[0].items()
                           if k not in fields and np.ndim(v) == 0]
            for f in fields:
                values = np.asarray([r.get(f, 0) for r in records])
                if values.size == 0:
                    values = np.zeros(0, np.float64 if "rate" in f or "average" in f
                                      or "GBps" in f else np.int64)
                ep.create_dataset(f, data=values)
            if records and S.EPOCH_BANK_UTILISATION in records[0]:
                util = np.asarray([r[S.EPOCH_BANK_UTILISATION] for r in records],
                                  dtype=np.float64)
                ep.create_dataset(S.EPOCH_BANK_UTILISATION, data=util, compression="gzip")
            pb = g.create_group(S.RUN_PER_BANK)
            pb.attrs[S.ATTR_NX_CLASS] = "NXcollection"
            for key, arr in stats.per_bank.items():
                pb.create_dataset(key, data=np.asarray(arr))
            g.create_dataset(S.RUN_HIST, data=np.asarray(stats.read_latency_hist),
                             compression="gzip", shuffle=True)
        except BaseException:
            del h5[S.RUNS][run_id]
            raise

    def runs(self) -> list[str]:
        """Run ids, oldest first."""
        g = self.h5[S.RUNS]
        return sorted(g, key=lambda r: (S.attr_str(g[r].attrs.get(S.ATTR_CREATED, "")), r))

    def load_run(self, run_id: str) -> dict[str, Any]:
        """A run as plain data: attributes (JSON decoded), ``epochs`` and ``per_bank`` as
        dicts of numpy arrays, ``read_latency_hist`` as an array."""
        g = self._get("run", run_id)
        a = g.attrs
        try:
            out: dict[str, Any] = {
                "run_id": run_id,
                "kind": S.attr_str(a.get(S.RUN_KIND, S.RUN_KIND_SIMULATION)),
                "config_name": S.attr_str(a.get(S.RUN_CONFIG_NAME, "")),
                "config": _jload(a.get(S.RUN_CONFIG), {}),
                "trace_name": S.attr_str(a.get(S.RUN_TRACE_NAME, "")),
                "options": _jload(a.get(S.RUN_OPTIONS), {}),
                "created": S.attr_str(a.get(S.ATTR_CREATED, "")),
                "app_version": S.attr_str(a.get(S.ATTR_APP_VERSION, "")),
                "summary": _jload(a.get(S.RUN_SUMMARY), {}),
                "channels": _jload(a.get(S.RUN_CHANNELS), []),
            }
        except ValueError as e:
            raise ProjectError(f"run {run_id!r} is corrupt: {e}", path=self.path) from None
        out["epochs"] = ({k: v[()] for k, v in g[S.RUN_EPOCHS].items()}
                         if S.RUN_EPOCHS in g else {})
        out["per_bank"] = ({k: v[()] for k, v in g[S.RUN_PER_BANK].items()}
                           if S.RUN_PER_BANK in g else {})
        out["read_latency_hist"] = g[S.RUN_HIST][()] if S.RUN_HIST in g else np.zeros(0)
        return out

    def run_config(self, run_id: str) -> MemoryConfig:
        """The config snapshot a run was simulated with."""
        return MemoryConfig.from_dict(self.load_run(run_id)["config"])

    # ---- studies (engine.studies) --------------------------------------------------------------
    def studies(self) -> list[str]:
        """Names of the stored studies, sorted."""
        return sorted(self.h5[S.STUDIES]) if S.STUDIES in self.h5 else []

    @_write_op("store the study")
    def put_study(self, name: str, document: dict[str, Any]) -> None:
        """Create study *name* from a study document (``study``, ``setup``, ``points``), or
        update an existing one of the same type: its points are merged, its results kept."""
        self._check_name(name)
        h5 = self._writable()
        group = h5.require_group(S.STUDIES)
        if name in group:
            g = group[name]
            old_type = S.attr_str(g.attrs.get(S.STUDY_TYPE, ""))
            if old_type != document["study"]:
                raise ProjectError(f"study {name!r} is a '{old_type}' study, not a "
                                   f"'{document['study']}' one: choose another name",
                                   path=self.path)
            points = list(document["points"])
            known = {p["point_id"] for p in points}
            points += [p for p in _jload(g.attrs.get(S.STUDY_POINTS), [])
                       if p["point_id"] not in known]
        else:
            g = group.create_group(name)
            g.attrs[S.ATTR_NX_CLASS] = "NXentry"
            g.attrs[S.RUN_KIND] = S.STUDY_KIND
            g.attrs[S.ATTR_CREATED] = _now()
            g.require_group(S.STUDY_RESULTS).attrs[S.ATTR_NX_CLASS] = "NXcollection"
            points = list(document["points"])
        g.attrs[S.STUDY_TYPE] = document["study"]
        g.attrs[S.STUDY_SETUP] = S.to_json(document["setup"])
        g.attrs[S.STUDY_POINTS] = S.to_json(points)
        g.attrs[S.ATTR_APP_VERSION] = APP_VERSION

    def study_document(self, name: str) -> dict[str, Any]:
        """The stored study as a document: ``study``, ``setup``, ``points``, ``created``,
        ``app_version``."""
        g = self._get("study", name)
        try:
            return {"study": S.attr_str(g.attrs[S.STUDY_TYPE]),
                    "setup": _jload(g.attrs.get(S.STUDY_SETUP), {}),
                    "points": _jload(g.attrs.get(S.STUDY_POINTS), []),
                    "created": S.attr_str(g.attrs.get(S.ATTR_CREATED, "")),
                    "app_version": S.attr_str(g.attrs.get(S.ATTR_APP_VERSION, ""))}
        except (KeyError, ValueError) as e:
            raise ProjectError(f"study {name!r} is corrupt: {e}", path=self.path) from None

    @_write_op("store the study result")
    def add_study_result(self, name: str, record: dict[str, Any]) -> None:
        """Store (or replace) the result record of one point of study *name*."""
        g = self._get("study", name)
        self._writable()
        res = g.require_group(S.STUDY_RESULTS)
        pid = self._check_name(str(record["point_id"]))
        if pid in res:
            del res[pid]
        ds = res.create_dataset(pid, data=S.to_json(record), dtype=h5py.string_dtype())
        ds.attrs[S.STUDY_STATUS] = str(record.get("status", "ok"))

    def study_results(self, name: str) -> dict[str, dict[str, Any]]:
        """point id -> result record of study *name*."""
        g = self._get("study", name)
        out: dict[str, dict[str, Any]] = {}
        if S.STUDY_RESULTS not in g:
            return out
        for pid, ds in g[S.STUDY_RESULTS].items():
            try:
                out[pid] = _jload(ds[()])
            except ValueError as e:
                raise ProjectError(f"study {name!r}, point {pid}: corrupt result: {e}",
                                   path=self.path) from None
        return out

    # ---- optimiser runs (optimizer.methods) ----------------------------------------------------
    @_write_op("store the optimiser run")
    def add_optimizer_run(self, run_id: str | None, settings: dict[str, Any],
                          schedule: dict[str, Any], history: Sequence[Any] = ()) -> str:
        """Store an optimiser run: its settings, the schedule file's JSON and the progress
        curves (records with the fields of :data:`schema.OPT_HISTORY_FIELDS`: dicts or
        objects such as optimizer.search.Progress).  Returns the run id."""
        if not run_id:
            run_id = datetime.now().strftime("opt-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self._check_free("optimizer_run", run_id)
        h5 = self._writable()
        g = h5[S.OPTIMIZER_RUNS].create_group(run_id)
        try:
            g.attrs[S.ATTR_NX_CLASS] = "NXentry"
            g.attrs[S.RUN_KIND] = S.OPT_KIND
            g.attrs[S.OPT_SETTINGS] = S.to_json(dict(settings))
            g.attrs[S.OPT_SCHEDULE] = S.to_json(schedule)
            g.attrs[S.ATTR_CREATED] = _now()
            g.attrs[S.ATTR_APP_VERSION] = APP_VERSION
            hist = g.create_group(S.OPT_HISTORY)
            for f in S.OPT_HISTORY_FIELDS:
                values = [r.get(f) if isinstance(r, dict) else getattr(r, f, None)
                          for r in history]
                hist.create_dataset(f, data=np.asarray(
                    [np.nan if v is None else v for v in values], dtype=np.float64))
        except Exception:
            del h5[S.OPTIMIZER_RUNS][run_id]
            raise
        return run_id

    def optimizer_runs(self) -> list[str]:
        return self.names("optimizer_run")

    def load_optimizer_run(self, run_id: str) -> dict[str, Any]:
        """An optimiser run as plain data: ``settings``, ``schedule`` (dicts) and ``history``
        (field -> numpy array)."""
        g = self._get("optimizer_run", run_id)
        try:
            out = {"run_id": run_id, "settings": _jload(g.attrs.get(S.OPT_SETTINGS), {}),
                   "schedule": _jload(g.attrs.get(S.OPT_SCHEDULE), {}),
                   "created": S.attr_str(g.attrs.get(S.ATTR_CREATED, "")),
                   "app_version": S.attr_str(g.attrs.get(S.ATTR_APP_VERSION, ""))}
        except ValueError as e:
            raise ProjectError(f"optimizer run {run_id!r} is corrupt: {e}",
                               path=self.path) from None
        out["history"] = ({k: v[()] for k, v in g[S.OPT_HISTORY].items()}
                          if S.OPT_HISTORY in g else {})
        return out

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("read-only" if self.readonly else "open")
        return f"<Project {self.path} ({state})>"
