"""Save As into another folder keeps external trace references pointing at the same files
(issue 16), and the project's own HDF5 writes happen inside a disk-space reservation, so a
disk filled by another program after the free-space check gives a clean error instead of a
crash (issue 15's disk-full item)."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.config import load_config
from engine.trace import TraceChunk, read_trace, write_text
from projects import safefs
from projects import schema as S
from projects.store import ExternalTraceRefused, Project, ProjectError
import benchmark_script  # noqa: E402  (tests/ is on sys.path)


def _trace(path: Path, n: int = 40) -> Path:
    chunk = TraceChunk.from_arrays(np.arange(n, dtype=np.uint64) * 64, np.zeros(n, bool),
                                   np.arange(n) * 4)
    write_text(path, chunk)
    return path


def _stored(path: Path, trace: str) -> str:
    import h5py
    with h5py.File(path, "r") as h5:
        return S.attr_str(h5[S.TRACES][trace].attrs[S.TRACE_PATH])


@pytest.fixture()
def project_with_references(tmp_path):
    """tmp/a/p.dmproj referring to tmp/a/traces/t.trace (relative) and embedding e."""
    a = tmp_path / "a"
    (a / "traces").mkdir(parents=True)
    t = _trace(a / "traces" / "t.trace")
    p = Project.create(a / "p.dmproj")
    p.add_config("ddr4", load_config("DDR4-3200"))
    p.add_trace("ref", t, embed=False)
    p.add_trace("emb", t, embed=True)
    p.save()
    assert _stored(p.path, "ref") == "traces/t.trace"
    yield p, t
    p.close()


def test_save_as_into_a_sibling_folder_rewrites_the_relative_reference(
        project_with_references, tmp_path):
    p, t = project_with_references
    b = tmp_path / "b"
    b.mkdir()
    new, moved_out = p.save_as(b / "q.dmproj")
    try:
        assert moved_out == ["ref"]
        assert _stored(b / "q.dmproj", "ref") == str(t)          # absolute now
        src = new.trace_source("ref")                             # readable this session
        assert src.path == t
        assert len(read_trace(src.path)) == 40
        assert len(new.trace_source("emb").iter_chunks().__next__()) == 40
        assert new.configs() == ["ddr4"]
    finally:
        new.close()
    assert not (b / "q.dmproj.lock").exists()
    with Project.open(b / "q.dmproj") as again:                   # a later open asks again
        with pytest.raises(ExternalTraceRefused, match="outside the project folder"):
            again.trace_source("ref")
    with Project.open(b / "q.dmproj", allow_external=True) as again:
        assert again.trace_source("ref").path == t


def test_save_as_into_a_parent_folder_keeps_it_relative(project_with_references, tmp_path):
    p, t = project_with_references
    new, moved_out = p.save_as(tmp_path / "up.dmproj")
    try:
        assert moved_out == []
        assert _stored(tmp_path / "up.dmproj", "ref") == "a/traces/t.trace"
    finally:
        new.close()
    with Project.open(tmp_path / "up.dmproj") as again:            # no consent needed
        assert again.trace_source("ref").path == t
    # the original, saved once at create time, still refers to traces/t.trace
    p.save()
    assert _stored(p.path, "ref") == "traces/t.trace"


def test_save_as_leaves_the_original_as_last_saved_and_mode_of_a_new_file(
        project_with_references, tmp_path):
    p, _ = project_with_references
    before = p.path.read_bytes()
    new, _ = p.save_as(tmp_path / "copy.dmproj")
    new.close()
    assert p.path.read_bytes() == before and not p.closed
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "copy.dmproj").stat().st_mode & 0o777 == 0o644 & ~umask


def test_save_as_onto_a_project_open_elsewhere_is_refused(project_with_references, tmp_path):
    p, _ = project_with_references
    other = Project.create(tmp_path / "busy.dmproj")
    try:
        with pytest.raises(ProjectError, match="in use"):
            p.save_as(tmp_path / "busy.dmproj")
    finally:
        other.close()


def test_save_as_on_a_full_disk_is_clean(project_with_references, tmp_path, monkeypatch):
    p, _ = project_with_references
    from projects import store

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "write", full)
    with pytest.raises(ProjectError, match="disk is full.*still open and unchanged"):
        p.save_as(tmp_path / "c.dmproj")
    monkeypatch.undo()
    assert not (tmp_path / "c.dmproj").exists()
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".")] == []
    p.add_config("after", load_config("DDR4-3200"))                 # the session goes on


# ---- reservation before HDF5 writes --------------------------------------------------------------

def test_a_write_that_cannot_reserve_space_is_a_clean_error_and_the_copy_stays_usable(
        tmp_path, monkeypatch):
    """The reservation is refused (the disk filled after the free-space check): the write
    is refused before HDF5 writes anything, and the working copy is not marked broken."""
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        calls = []

        def no_room(fd, offset, length):
            calls.append(length)
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(safefs, "reserve", no_room)
        with pytest.raises(ProjectError, match="cannot add the config: the disk is full"):
            p.add_config("a", load_config("DDR4-3200"))
        assert calls and calls[0] >= safefs.SPACE_MARGIN
        assert p.configs() == []
        monkeypatch.undo()
        p.add_config("a", load_config("DDR4-3200"))
        p.save()
    with Project.open(path) as p:
        assert p.configs() == ["a"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fallocate is Linux's")
def test_reserve_allocates_without_changing_the_size_and_release_gives_it_back(tmp_path):
    f = tmp_path / "x"
    fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"abc")
        if not safefs.reserve(fd, 3, 8 << 20):
            pytest.skip("this file system cannot reserve (fallocate KEEP_SIZE)")
        st = os.fstat(fd)
        assert st.st_size == 3 and st.st_blocks * 512 >= 8 << 20
        safefs.release(fd, 3 + (8 << 20))
        assert os.fstat(fd).st_blocks * 512 < 1 << 20
    finally:
        os.close(fd)


def _fault_trials():
    return benchmark_script.load("fault_trials")


def test_disk_filled_after_the_free_space_check_never_crashes(monkeypatch):
    """The free-space check switched off (as if another program filled the disk right after
    it): on a small tmpfs at the free-space levels where embedding a trace used to segfault
    inside HDF5 (32-128 KiB), every trial ends with a clean error or success, the project
    intact and nothing left behind."""
    ft = _fault_trials()
    why = ft.tmpfs_unavailable()
    if why:
        pytest.skip(f"disk-full trials need a small tmpfs: {why}")
    monkeypatch.setenv("DIFFMEM_TRIAL_NO_SPACE_CHECK", "1")
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="diffmem-race-"))
    try:
        trace = ft._tiny_trace(base / "t.dmt", 20_000)
        trials = [ft.disk_full_trial(kib, steps, trace, preexisting=pre)
                  for kib in (32, 96, 4096)
                  for steps, pre in (("config,trace,save", False),
                                     ("config,save,trace,save", True))]
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)
    for t in trials:
        assert not t.crashed, (t.free_kib, t.steps, t.rc, t.outcome)
        assert t.intact, t.after
        assert not t.leftovers, t.leftovers
        err = t.outcome.get("error")
        assert err is None or "disk is full" in err, err
    assert any(t.outcome.get("error") for t in trials)
    assert all(t.outcome.get("error") is None for t in trials if t.free_kib == 4096)
