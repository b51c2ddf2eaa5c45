"""Hardened project files (issue 15): containment of external traces, safe work copies and
temporary files, locks, structural validation, orphan clean-up, disk full, kill -9."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from engine.config import load_config
from engine.errors import DiffMemError, TraceError
from engine.trace import TraceChunk, read_trace, write_text
from projects import safefs
from projects import schema as S
from projects.store import ExternalTraceRefused, Project, ProjectError, ProjectInUse
import benchmark_script  # noqa: E402  (tests/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
SECRET = "root:*:20228:0:99999:7:::"


def _fault_trials():
    return benchmark_script.load("fault_trials")


def _trace(path: Path, n: int = 50) -> Path:
    chunk = TraceChunk.from_arrays(np.arange(n, dtype=np.uint64) * 64, np.zeros(n, bool),
                                   np.arange(n) * 4)
    write_text(path, chunk)
    return path


def _plant_reference(project: Path, name: str, raw: str) -> None:
    """What a hostile project file holds: an external trace pointing anywhere."""
    with h5py.File(project, "a") as h5:
        g = h5[S.TRACES].create_group(name)
        g.attrs[S.TRACE_STORAGE] = "external"
        g.attrs[S.TRACE_PATH] = raw
        g.attrs[S.TRACE_FMT] = "text"


@pytest.fixture()
def layout(tmp_path):
    """tmp/outside/secret (a file that is not a trace), tmp/proj/p.dmproj."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_text(SECRET + "\nbin:*:20228:0:99999:7:::\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    path = proj / "p.dmproj"
    Project.create(path).close()
    return path, secret


# ---- containment ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_reference_leaving_the_folder_is_refused(layout, kind):
    path, secret = layout
    raw = {"dotdot": "../../../../../../../../" + str(secret).lstrip("/"),
           "absolute": str(secret), "symlink": "link"}[kind]
    if kind == "symlink":
        (path.parent / "link").symlink_to(secret)
    _plant_reference(path, "evil", raw)
    with Project.open(path) as p:
        with pytest.raises(ExternalTraceRefused, match="outside the project folder") as err:
            p.trace_source("evil")
        assert SECRET not in str(err.value) and "root:" not in str(err.value)
        assert isinstance(err.value, DiffMemError)
    # allowed explicitly: read, but the file's content is never quoted in the error
    with Project.open(path, allow_external=True) as p:
        src = p.trace_source("evil")
        with pytest.raises(TraceError) as err:
            list(src.iter_chunks())
        assert "root:" not in str(err.value) and "20228" not in str(err.value)
        assert "not a request trace" in str(err.value)


def test_relative_reference_resolves_against_the_project_folder(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    _trace(proj / "t.trace", 30)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    _trace(elsewhere / "t.trace", 99)                # a decoy in the working directory
    monkeypatch.chdir(elsewhere)
    path = proj / "p.dmproj"
    with Project.create(path) as p:
        p.add_trace("t", proj / "t.trace", embed=False)
        assert p.h5["traces/t"].attrs["path"] == "t.trace"    # stored relative
        p.save()
    moved = tmp_path / "moved"
    proj.rename(moved)                               # the folder travels as a whole
    with Project.open(moved / "p.dmproj") as p:
        src = p.trace_source("t")
        assert src.path == moved / "t.trace"
        assert len(read_trace(src.path)) == 30


def test_adding_an_outside_reference_needs_consent(layout, tmp_path):
    path, _ = layout
    t = _trace(tmp_path / "outside" / "ok.trace")
    with Project.open(path) as p:
        with pytest.raises(ExternalTraceRefused, match="--allow-external"):
            p.add_trace("t", t, embed=False)
        p.add_trace("t", t, embed=False, allow_external=True)
        assert p.h5["traces/t"].attrs["path"] == str(t)
        p.add_trace("e", t)                          # embedding copies: always allowed
        with pytest.raises(ExternalTraceRefused):
            p.trace_source("t")
        assert p.trace_source("t", allow_external=True).path == t


def test_work_copy_never_follows_a_planted_symlink(layout, tmp_path):
    path, secret = layout
    before = secret.read_bytes()
    # the old predictable names, planted as symlinks to a file of the user's
    for name in (f".{path.name}.work-{os.getpid()}", f".{path.name}.work-{os.getpid()}-0"):
        (path.parent / name).symlink_to(secret)
    with Project.open(path) as p:
        p.add_config("a", load_config("DDR4-3200"))
        p.save()
    assert secret.read_bytes() == before
    # and the primitive itself refuses to follow or reuse a name
    link = tmp_path / "l"
    link.symlink_to(secret)
    with pytest.raises(OSError):
        safefs.create_exclusive(link, 0o600)
    assert secret.read_bytes() == before


def test_work_copy_temp_files_and_lock_keep_the_modes(tmp_path, monkeypatch):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    os.chmod(path, 0o600)
    seen = {}
    real_create = safefs.create_exclusive

    def spy(p, mode):
        seen[Path(p).name] = mode
        return real_create(p, mode)

    monkeypatch.setattr(safefs, "create_exclusive", spy)
    with Project.open(path) as p:
        assert stat.S_IMODE(os.stat(p._work).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.with_name(path.name + ".lock")).st_mode) == 0o600
        p.add_config("a", load_config("DDR4-3200"))
        p.save()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    tmp_modes = [m for n, m in seen.items() if n.endswith(".tmp")]
    assert tmp_modes == [0o600]                       # the save's temporary file


# ---- locks ------------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage", b"[1, 2]", b'{"pid": "x"}'])
def test_damaged_lock_is_taken_over(tmp_path, content, caplog):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    lock = tmp_path / "p.dmproj.lock"
    lock.write_bytes(content)
    with Project.open(path):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert "damaged lock" in caplog.text
    assert not lock.exists()


def test_live_lock_is_still_honoured(tmp_path):
    path = tmp_path / "p.dmproj"
    with Project.create(path):
        with pytest.raises(ProjectInUse, match=socket.gethostname()):
            Project.open(path)


def test_failed_lock_write_leaves_no_lock(tmp_path, monkeypatch):
    path = tmp_path / "p.dmproj"
    import errno

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ProjectError, match="disk is full"):
        Project.create(path)
    assert not (tmp_path / "p.dmproj.lock").exists()
    assert not list(tmp_path.iterdir())


# ---- structure ----------------------------------------------------------------------------------

def _damage(path: Path, how: str) -> None:
    with h5py.File(path, "a") as h5:
        if how == "no-runs":
            del h5["runs"]
        elif how == "runs-dataset":
            del h5["runs"]
            h5.create_dataset("runs", data=[1, 2, 3])
        elif how == "config-list":
            h5.create_group("configs/c").attrs["config"] = "[1, 2]"
        elif how == "config-not-json":
            h5.create_group("configs/c").attrs["config"] = "{nope"
        elif how == "trace-storage":
            h5.create_group("traces/t").attrs["storage"] = "teleported"
        elif how == "external-link":
            h5["runs/x"] = h5py.ExternalLink("/etc/passwd", "/")
        elif how == "embedded-no-data":
            h5.create_group("traces/t").attrs["storage"] = "embedded"


@pytest.mark.parametrize("how,expect", [
    ("no-runs", "/runs is missing"), ("runs-dataset", "/runs is a dataset"),
    ("config-list", "holds a JSON list"), ("config-not-json", "not valid JSON"),
    ("trace-storage", "storage is 'teleported'"), ("external-link", "is a link"),
    ("embedded-no-data", "lacks dataset"),
])
def test_damaged_structure_is_a_clean_error(tmp_path, how, expect):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    _damage(path, how)
    for readonly in (False, True):
        with pytest.raises(ProjectError, match="damaged DiffMem project") as err:
            Project.open(path, readonly=readonly)
        assert expect in str(err.value) and str(path) in str(err.value)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.dmproj"]   # no lock, no copy


def test_older_schema_1_files_without_studies_still_open(tmp_path):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    with h5py.File(path, "a") as h5:
        del h5["studies"]
        del h5["optimizer_runs"]
    with Project.open(path, readonly=True) as p:
        assert p.studies() == [] and p.optimizer_runs() == []
    with Project.open(path) as p:
        p.add_optimizer_run("o", {}, {})
        p.save()


def test_orphans_of_interrupted_saves_are_removed_on_open(tmp_path):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphans = [f".p.dmproj.a1b2c3.tmp", f".p.dmproj.ffee00.trace.h5",
               f"..p.dmproj.ab12.trace.h5.cd34.tmp", f".p.dmproj.work-{dead.pid}-0a0b"]
    keep = ["other.txt", ".q.dmproj.a1b2c3.tmp", f".p.dmproj.work-{os.getppid()}-aa"]
    for name in orphans + keep:
        (tmp_path / name).write_bytes(b"x" * 1000)
    with Project.open(path, readonly=True):
        pass                                      # readers never clean up
    assert all((tmp_path / n).exists() for n in orphans)
    with Project.open(path):
        pass
    assert not any((tmp_path / n).exists() for n in orphans)
    assert all((tmp_path / n).exists() for n in keep)   # others' files, live processes


# ---- disk full and kill -9 ---------------------------------------------------------------------------

_TMPFS = None


def _tmpfs_reason():
    global _TMPFS
    if _TMPFS is None:
        _TMPFS = _fault_trials().tmpfs_unavailable() or ""
    return _TMPFS


@pytest.mark.slow
def test_disk_full_on_a_small_tmpfs():
    why = _tmpfs_reason()
    if why:
        pytest.skip(f"disk-full trials need a small tmpfs: {why}")
    ft = _fault_trials()
    trials = ft.disk_full_trials([0, 64, 1024, 2048, 8192], trace_requests=40_000)
    for t in trials:
        assert not t.crashed, (t.free_kib, t.steps, t.rc, t.outcome)
        assert t.intact, t.after
        assert not t.leftovers, t.leftovers
        err = t.outcome.get("error")
        assert err is None or "disk is full" in err, err
    assert any(t.outcome.get("error") for t in trials)          # some did run out of space
    assert any(t.outcome.get("error") is None for t in trials)  # and the roomy ones succeed


@pytest.mark.slow
def test_kill_during_save_20_trials(tmp_path):
    r = _fault_trials().kill_trials(20, seed=15, workdir=tmp_path, trace_requests=60_000)
    assert r.trials == 20
    assert r.corrupt == 0 and r.lost == 0, r.details
    assert r.intact == 20
    assert r.orphans_after_open == 0, r.details


def test_cli_project_check_refuses_then_allows(layout):
    path, secret = layout
    _plant_reference(path, "evil", "../../../../../../../../" + str(secret).lstrip("/"))
    run = [sys.executable, str(REPO / "main.py"), "project", str(path)]
    r = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "outside the project folder" in r.stderr and "--allow-external" in r.stderr
    assert "root:" not in r.stderr + r.stdout
    r = subprocess.run(run + ["--allow-external"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "not a request trace" in r.stderr
    assert "root:" not in r.stderr + r.stdout and "20228" not in r.stderr + r.stdout


def test_save_on_a_full_disk_is_clean_and_keeps_the_last_save(tmp_path, monkeypatch):
    """The second line of defence: the free-space check passed, yet the disk fills while the
    copy is written (os.write ENOSPC): a clean error, the old file intact, nothing left."""
    import errno
    from projects import store
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        p.add_config("a", load_config("DDR4-3200"))
        p.save()
    before = path.read_bytes()
    real_write = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with Project.open(path) as p:
        p.add_config("b", load_config("DDR4-3200"))
        monkeypatch.setattr(store.os, "write", full)
        with pytest.raises(ProjectError, match="cannot save: the disk is full"):
            p.save()
        monkeypatch.setattr(store.os, "write", real_write)
        assert path.read_bytes() == before
        assert not list(tmp_path.glob("*.tmp"))
        p.save()                                   # space again: the session goes on
    with Project.open(path) as p:
        assert p.configs() == ["a", "b"]


def test_cli_project_check_names_a_referenced_trace_that_changed(tmp_path, capsys):
    """A referenced trace replaced by another file (or cut short) passed the check with its
    new request count: the project's runs are of the old file. The count recorded when the
    trace was added is now compared."""
    import main as cli
    from projects.store import Project
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"0x{i * 64:x} READ {i}\n" for i in range(50)))
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        p.add_trace("t", trace, embed=False)
        p.save()
    assert cli.main(["project", str(path)]) == 0
    assert "trace t: 50 requests" in capsys.readouterr().out
    trace.write_text("".join(f"0x{i * 64:x} READ {i}\n" for i in range(20)))
    assert cli.main(["project", str(path)]) == 2
    assert "now holds 20 requests, the project recorded 50 when it was added" in \
        capsys.readouterr().err
