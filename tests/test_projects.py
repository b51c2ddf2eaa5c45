"""Project files: round trips, edits, atomic save, locking, errors and migrations."""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys

import h5py
import numpy as np
import pytest

from engine.config import load_config
from engine.errors import DiffMemError
from engine.simulator import SimOptions, simulate_trace
from engine.trace import TraceChunk, read_trace, write_text
from projects import schema as S
from projects import store
from projects.store import (Project, ProjectError, ProjectInUse, ProjectTooNew,
                            simulate_source)


@pytest.fixture(scope="module")
def sim_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    rng = np.random.default_rng(1)
    n = 500
    chunk = TraceChunk.from_arrays((rng.integers(0, 1 << 30, n) & ~63).astype(np.uint64),
                                   rng.random(n) < 0.3, np.arange(n) * 4)
    trace = d / "t.trace"
    write_text(trace, chunk)
    cfg = load_config("DDR4-3200")
    stats = simulate_trace(cfg, trace, SimOptions(epoch=1000))
    return cfg, trace, stats


def _assert_run_equal(run, stats):
    assert run["summary"] == json.loads(json.dumps(stats.summary))
    assert len(run["epochs"]["start"]) == len(stats.epochs) > 1
    for f in S.EPOCH_FIELDS:
        np.testing.assert_array_equal(run["epochs"][f], [e[f] for e in stats.epochs])
    np.testing.assert_array_equal(run["epochs"]["bank_utilisation"],
                                  [e["bank_utilisation"] for e in stats.epochs])
    assert set(run["per_bank"]) == set(stats.per_bank)
    for k, v in stats.per_bank.items():
        np.testing.assert_array_equal(run["per_bank"][k], v)
        assert run["per_bank"][k].shape == v.shape
    np.testing.assert_array_equal(run["read_latency_hist"], stats.read_latency_hist)


def test_round_trip(tmp_path, sim_data):
    cfg, trace, stats = sim_data
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        p.add_config("ddr4", cfg)
        p.add_trace("emb", trace, embed=True)
        p.add_trace("ext", trace, embed=False, allow_external=True)   # outside the folder
        rid = p.add_run("r1", "ddr4", "emb", {"epoch": 1000}, stats)
        assert rid == "r1"
        auto = p.add_run(None, "ddr4", "ext", {}, stats)
        p.save()
    assert not (tmp_path / "p.dmproj.lock").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.dmproj"]   # no work/temp files

    with h5py.File(path, "r") as h5:
        assert h5.attrs["schema_version"] == S.SCHEMA_VERSION
        assert h5.attrs["NX_class"] == "NXroot"
        assert set(S.TOP_GROUPS) <= set(h5)
        assert h5["traces/emb/addr"].compression == "gzip"
        assert h5["traces/emb/addr"].chunks is not None
        assert h5["runs/r1"].attrs["kind"] == "simulation"

    with Project.open(path, allow_external=True) as p:
        assert p.configs() == ["ddr4"]
        assert p.get_config("ddr4") == cfg
        assert p.traces() == ["emb", "ext"]
        original = read_trace(trace)
        for name in ("emb", "ext"):
            src = p.trace_source(name)
            got = TraceChunk.concat(list(src.iter_chunks()))
            np.testing.assert_array_equal(got.addr, original.addr)
            np.testing.assert_array_equal(got.cycle, original.cycle)
            np.testing.assert_array_equal(got.is_write, original.is_write)
        assert p.trace_source("emb").embedded and p.trace_source("emb").group == "traces/emb"
        assert p.trace_source("ext").path == trace.absolute()
        assert p.trace_info("emb")["summary"]["requests"] == 500
        assert p.runs() == sorted(["r1", auto], key=p.runs().index)
        assert set(p.runs()) == {"r1", auto}
        run = p.load_run("r1")
        _assert_run_equal(run, stats)
        assert run["config_name"] == "ddr4" and run["trace_name"] == "emb"
        assert run["options"] == {"epoch": 1000}
        assert p.run_config("r1") == cfg
        # the embedded trace is simulator input: same statistics as from the text file
        again = simulate_source(p.get_config("ddr4"), p.trace_source("emb"),
                                SimOptions(epoch=1000))
        assert again.summary["num_cycles"] == stats.summary["num_cycles"]
        assert again.summary["average_read_latency"] == stats.summary["average_read_latency"]

    with Project.open(path, readonly=True) as p:
        assert p.get_config("ddr4") == cfg
        with pytest.raises(ProjectError, match="read-only"):
            p.delete("config", "ddr4")


def test_rename_delete_duplicate(tmp_path, sim_data):
    cfg, trace, stats = sim_data
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        p.add_config("a", cfg)
        p.add_trace("t", trace)
        p.add_run("r", "a", "t", {}, stats)
        p.rename("config", "a", "b")
        assert p.configs() == ["b"]
        assert p.load_run("r")["config_name"] == "b"      # runs follow a rename
        p.rename("trace", "t", "t2")
        assert p.load_run("r")["trace_name"] == "t2"
        p.duplicate("config", "b", "c")
        assert p.get_config("c") == p.get_config("b") == cfg
        p.duplicate("run", "r", "r-copy")
        _assert_run_equal(p.load_run("r-copy"), stats)
        p.duplicate("trace", "t2", "t3")
        assert len(read_trace(p.trace_source("t3").path, group="traces/t3")) == 500
        p.rename("run", "r", "first")
        assert set(p.runs()) == {"first", "r-copy"}
        with pytest.raises(ProjectError, match="already exists"):
            p.rename("config", "b", "c")
        with pytest.raises(ProjectError, match="no config named 'zz'"):
            p.delete("config", "zz")
        with pytest.raises(ProjectError, match="unknown kind"):
            p.delete("widget", "b")
        with pytest.raises(ProjectError, match="bad name"):
            p.add_config("x/y", cfg)
        p.delete("config", "b")
        p.delete("trace", "t3")
        p.delete("run", "r-copy")
        p.save()
    with Project.open(path) as p:
        assert p.configs() == ["c"]
        assert p.traces() == ["t2"]
        assert p.runs() == ["first"]


def test_unsaved_edits_discarded(tmp_path, sim_data):
    cfg = sim_data[0]
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    with Project.open(path) as p:
        p.add_config("a", cfg)
        assert p.modified
    with Project.open(path) as p:
        assert p.configs() == []


def test_interrupted_save_keeps_last_good_file(tmp_path, sim_data, monkeypatch):
    cfg = sim_data[0]
    path = tmp_path / "p.dmproj"
    with Project.create(path) as p:
        p.add_config("a", cfg)
        p.save()
    before = path.read_bytes()
    calls = []
    real = store._copy_member

    def dying(src, dst, name):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed mid-write")
        real(src, dst, name)

    with Project.open(path) as p:
        p.add_config("b", cfg)
        p.delete("config", "a")
        monkeypatch.setattr(store, "_copy_member", dying)
        with pytest.raises(KeyboardInterrupt):
            p.save()
        assert len(calls) == 2
        assert path.read_bytes() == before
        assert not list(tmp_path.glob("*.tmp"))
        monkeypatch.setattr(store, "_copy_member", real)
        p.save()                                         # the session goes on
    assert not list(tmp_path.glob("*.tmp"))
    with Project.open(path) as p:
        assert p.configs() == ["b"]


def test_second_open_is_refused(tmp_path):
    path = tmp_path / "p.dmproj"
    with Project.create(path):
        with pytest.raises(ProjectInUse) as err:
            Project.open(path)
        msg = str(err.value)
        assert str(os.getpid()) in msg and socket.gethostname() in msg and str(path) in msg
        with Project.open(path, readonly=True) as r:     # readers are allowed
            assert r.configs() == []
    with Project.open(path):                              # released on close
        pass


def test_stale_lock_taken_over(tmp_path, caplog):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / "p.dmproj.lock"
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname()}))
    orphan = tmp_path / f".p.dmproj.work-{dead.pid}"
    orphan.write_bytes(b"left over")
    with caplog.at_level(logging.WARNING, logger="projects.store"):
        with Project.open(path):
            assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert "stale lock" in caplog.text
    assert not orphan.exists() and not lock.exists()
    # a live process on another host is never taken over
    lock.write_text(json.dumps({"pid": dead.pid, "host": "elsewhere.example"}))
    with pytest.raises(ProjectInUse, match="elsewhere.example"):
        Project.open(path)


def test_corrupt_files(tmp_path):
    bad = tmp_path / "bad.dmproj"
    bad.write_bytes(b"this is not HDF5" * 100)
    with pytest.raises(ProjectError, match="bad.dmproj.*not an HDF5 file") as err:
        Project.open(bad)
    assert isinstance(err.value, DiffMemError)
    assert not (tmp_path / "bad.dmproj.lock").exists()
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as h5:
        h5.create_group("whatever")
    with pytest.raises(ProjectError, match="plain.h5.*schema_version"):
        Project.open(plain)
    assert not (tmp_path / "plain.h5.lock").exists()
    with pytest.raises(ProjectError, match="no such project file"):
        Project.open(tmp_path / "missing.dmproj")
    (tmp_path / "dir.dmproj").mkdir()
    with pytest.raises(ProjectError, match="a folder, expected a project file"):
        Project.open(tmp_path / "dir.dmproj")
    with pytest.raises(ProjectError, match="already exists"):
        Project.create(plain)


def test_newer_schema_refused(tmp_path):
    path = tmp_path / "p.dmproj"
    Project.create(path).close()
    with h5py.File(path, "a") as h5:
        h5.attrs["schema_version"] = S.SCHEMA_VERSION + 1
    with pytest.raises(ProjectTooNew, match="newer") as err:
        Project.open(path)
    assert str(path) in str(err.value)
    assert not (tmp_path / "p.dmproj.lock").exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.dmproj"]


def _write_v0(path, cfg, stats, trace):
    """A schema-0 file as early builds wrote it (see projects.schema)."""
    with h5py.File(path, "w") as h5:
        h5.attrs["schema_version"] = 0
        h5.attrs["app_version"] = "0.0.1"
        h5.attrs["created"] = "2024-01-01T00:00:00+00:00"
        g = h5.create_group("configs/ddr4")
        for k, v in cfg.to_dict().items():
            if v is not None:
                g.attrs[k] = v
        t = h5.create_group("traces/ext")
        t.attrs["path"] = str(trace)
        t.attrs["fmt"] = "text"
        t.attrs["summary"] = json.dumps({"requests": 500})
        r = h5.create_group("simulations/old")
        r.attrs["config"] = "ddr4"
        r.attrs["trace"] = "ext"
        r.attrs["options"] = json.dumps({"epoch": 1000})
        r.attrs["summary"] = json.dumps(stats.summary, default=float)
        r.attrs["created"] = "2024-01-01T00:00:00+00:00"
        ep = r.create_group("epochs")
        for f in S.EPOCH_FIELDS:
            ep.create_dataset(f, data=[e[f] for e in stats.epochs])
        ep.create_dataset("bank_utilisation", data=[e["bank_utilisation"] for e in stats.epochs])
        for k, v in stats.per_bank.items():
            r.create_dataset(f"per_bank/{k}", data=v)
        r.create_dataset("read_latency_hist", data=stats.read_latency_hist)


def test_v0_migrates_on_open_and_saves_as_v1(tmp_path, sim_data):
    cfg, trace, stats = sim_data
    path = tmp_path / "old.dmproj"
    _write_v0(path, cfg, stats, trace)
    with Project.open(path, readonly=True) as p:           # read-only: migrated in a copy
        assert p.get_config("ddr4") == cfg
    with Project.open(path, allow_external=True) as p:  # absolute reference
        assert p.schema_on_disk == 0 and p.modified
        assert p.h5.attrs["schema_version"] == 1
        assert p.configs() == ["ddr4"]
        assert p.get_config("ddr4") == cfg
        assert p.runs() == ["old"]
        run = p.load_run("old")
        assert run["kind"] == "simulation"
        assert run["config_name"] == "ddr4" and run["trace_name"] == "ext"
        assert p.run_config("old") == cfg
        _assert_run_equal(run, stats)
        assert p.trace_source("ext").path == trace
        with h5py.File(path, "r") as disk:                  # the file on disk is still v0
            assert disk.attrs["schema_version"] == 0 and "simulations" in disk
    with h5py.File(path, "r") as disk:                      # closed without save: still v0
        assert disk.attrs["schema_version"] == 0
    with Project.open(path) as p:
        p.save()
        assert p.schema_on_disk == 1 and not p.modified
    with h5py.File(path, "r") as disk:
        assert disk.attrs["schema_version"] == 1
        assert disk.attrs["NX_class"] == "NXroot"
        assert "simulations" not in disk and "runs/old" in disk
        assert {"studies", "optimizer_runs"} <= set(disk)
    with Project.open(path) as p:
        assert not p.modified
        _assert_run_equal(p.load_run("old"), stats)


def test_migrations_are_ordered():
    assert S.SCHEMA_VERSION == 1 and len(S.MIGRATIONS) == S.SCHEMA_VERSION


def test_no_qt_imports():
    code = ("import sys, projects, projects.store, projects.schema; "
            "bad = [m for m in sys.modules if m.startswith(('PySide6', 'PyQt', 'shiboken'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_optimizer_run_round_trip(tmp_path):
    """An optimiser run (settings, schedule JSON, progress curves) survives save and reopen,
    and takes part in rename / duplicate / delete like the other entities."""
    from optimizer.search import Progress
    path = tmp_path / "opt.dmproj"
    schedule = {"network": "resnet18", "edp": 1.5e16, "valid": True,
                "layers": [{"name": "conv1", "energy_pj": 3.0}], "fused_edges": [["a", "b"]]}
    history = [Progress("fadiff", i + 1, 2 * (i + 1), 0.1 * i, 10.0 - i, 1e17 / (i + 1),
                        1e17 / (i + 1), tau=1.0 - 0.1 * i, violation=0.0, fused=0.5)
               for i in range(5)]
    with Project.create(path) as p:
        rid = p.add_optimizer_run("first", {"network": "resnet18", "method": "fadiff",
                                            "seed": 3}, schedule, history)
        assert rid == "first" and p.optimizer_runs() == ["first"]
        p.save()
    with Project.open(path) as p:
        run = p.load_optimizer_run("first")
        assert run["settings"]["seed"] == 3
        assert run["schedule"] == schedule
        assert list(run["history"]["step"]) == [1, 2, 3, 4, 5]
        assert run["history"]["tau"][-1] == pytest.approx(0.6)
        p.duplicate("optimizer_run", "first", "copy")
        p.rename("optimizer_run", "first", "renamed")
        p.delete("optimizer_run", "copy")
        assert p.optimizer_runs() == ["renamed"]
        with pytest.raises(ProjectError, match="already exists"):
            p.add_optimizer_run("renamed", {}, schedule)
