"""Property-based tests (Hypothesis) of the config, trace and project readers (issue 15):
arbitrary bytes and structured mutations give a result or one of our errors, never anything
else.  Profiles: "ci" (default, few examples, seconds) and "deep" (HYPOTHESIS_PROFILE=deep).
The 1,000-input campaign is benchmarks/reliability.py."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import load_ini, load_preset
from engine.config_physics import impossible
from engine.errors import DiffMemError
from engine.trace import TraceChunk, read_trace, write_binary

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from refdata import DATA_DIR, MISSING_DATA  # tests/data/ (provenance: tests/data/README.md)
SHARED = DATA_DIR / "dramsim3-configs"
BASE_INI = SHARED / "DDR4_8Gb_x8_2400.ini"
PRESET = Path(__file__).resolve().parents[1] / "resources" / "presets" / "dram" / "DDR4-3200.toml"


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="diffmem-fuzz-"))


def _ours_or_ok(fn) -> object:
    try:
        return fn()
    except DiffMemError as exc:
        return exc


# ---- configs -------------------------------------------------------------------------------

@given(st.binary(max_size=600))
def test_ini_arbitrary_bytes(data):
    d = _scratch()
    try:
        p = d / "c.ini"
        p.write_bytes(data)
        out = _ours_or_ok(lambda: load_ini(p))
        if not isinstance(out, DiffMemError):
            assert impossible(out) == []
        p = d / "c.toml"
        p.write_bytes(data)
        _ours_or_ok(lambda: load_preset(p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


VALUES = st.one_of(st.integers(min_value=-2**70, max_value=2**70).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.text(max_size=12), st.sampled_from(["", "0x", "true", "1e-9", "0"]))


@pytest.mark.skipif(not BASE_INI.exists(), reason=f"{MISSING_DATA}: {BASE_INI}")
@settings(max_examples=12)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10_000), VALUES), min_size=1,
                max_size=5))
def test_ini_structured_mutations(changes):
    lines = BASE_INI.read_text().splitlines()
    kv = [k for k, ln in enumerate(lines) if "=" in ln]
    for pick, value in changes:
        k = kv[pick % len(kv)]
        lines[k] = lines[k].split("=")[0] + "= " + value.replace("\n", " ")
    d = _scratch()
    try:
        p = d / "m.ini"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        out = _ours_or_ok(lambda: load_ini(p))
        if not isinstance(out, DiffMemError):
            assert impossible(out) == []
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- traces ----------------------------------------------------------------------------------

@given(st.binary(max_size=800), st.sampled_from([".trace", ".dmt", ".h5", ".txt"]))
def test_trace_arbitrary_bytes(data, suffix):
    d = _scratch()
    try:
        p = d / f"t{suffix}"
        p.write_bytes(data)
        _ours_or_ok(lambda: read_trace(p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=2**64 - 1),
                          st.sampled_from(["READ", "WRITE", "read", "P_FETCH", "XX", ""]),
                          st.integers(min_value=-5, max_value=10**19)), max_size=20))
def test_text_trace_lines(rows):
    d = _scratch()
    try:
        p = d / "t.trace"
        p.write_text("".join(f"{a:#x} {op} {c}\n" for a, op, c in rows))
        out = _ours_or_ok(lambda: read_trace(p))
        if not isinstance(out, DiffMemError):
            assert len(out) == len(rows)
            assert (np.diff(out.cycle) >= 0).all()
    finally:
        shutil.rmtree(d, ignore_errors=True)


DTYPES = st.sampled_from(["<u8", "<i8", "<u1", "<i4", "<f8", "S4", "bool", "<u2"])


@given(DTYPES, DTYPES, DTYPES, st.integers(min_value=0, max_value=6),
       st.integers(min_value=0, max_value=6), st.sampled_from([None, 1, 2, "one", 1.5]))
def test_hdf5_trace_structured(da, dc, dw, na, nc, version):
    d = _scratch()
    try:
        p = d / "t.h5"
        rng = np.random.default_rng(na * 7 + nc)
        with h5py.File(p, "w") as h5:
            g = h5.create_group("trace")
            g.attrs["format"] = "diffmem-trace"
            if version is not None:
                g.attrs["version"] = version
            for name, dt, n in (("addr", da, na), ("cycle", dc, nc), ("is_write", dw, na)):
                raw = rng.integers(0, 3, n) if dt != "S4" else np.array([b"ab"] * n)
                g.create_dataset(name, data=np.asarray(raw).astype(dt))
        _ours_or_ok(lambda: read_trace(p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=200),
                          st.integers(min_value=0, max_value=255)), max_size=6))
def test_binary_trace_byte_flips(flips):
    d = _scratch()
    try:
        p = d / "t.dmt"
        write_binary(p, TraceChunk.from_arrays(np.arange(5, dtype=np.uint64) * 64,
                                               np.zeros(5, bool), np.arange(5)))
        raw = bytearray(p.read_bytes())
        for pos, val in flips:
            raw[pos % len(raw)] = val
        p.write_bytes(bytes(raw))
        _ours_or_ok(lambda: read_trace(p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- projects --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seed_project(tmp_path_factory):
    from engine.config import load_config
    from engine.trace import write_text
    from projects.store import Project
    d = tmp_path_factory.mktemp("seed")
    t = d / "t.trace"
    write_text(t, TraceChunk.from_arrays(np.arange(20, dtype=np.uint64) * 64,
                                         np.zeros(20, bool), np.arange(20)))
    p = d / "seed.dmproj"
    with Project.create(p) as proj:
        proj.add_config("c", load_config("DDR4-3200"))
        proj.add_trace("emb", t)
        proj.add_trace("ext", t, embed=False)
        proj.save()
    return p


def _exercise(path: Path) -> None:
    from projects.store import Project
    with Project.open(path) as p:
        for n in p.configs():
            p.get_config(n)
        for n in p.traces():
            for _ in p.trace_source(n).iter_chunks():
                pass
        for r in p.runs():
            p.load_run(r)
        p.save()


@given(st.binary(max_size=3000))
def test_project_arbitrary_bytes(data):
    d = _scratch()
    try:
        p = d / "p.dmproj"
        p.write_bytes(data)
        _ours_or_ok(lambda: _exercise(p))
        assert not (d / "p.dmproj.lock").exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)


ATTR_VALUES = st.one_of(st.text(st.characters(blacklist_characters="\x00"), max_size=20),
                        st.integers(min_value=-2**63, max_value=2**63 - 1),
                        st.sampled_from(["[1, 2]", "{", "external", "embedded",
                                         "../../../../etc/passwd", "/etc/passwd"]))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(["/", "configs", "configs/c", "traces", "traces/emb", "traces/ext",
                        "runs"]),
       st.sampled_from(["schema_version", "config", "storage", "path", "fmt", "summary",
                        "format", "version", "group"]),
       ATTR_VALUES, st.booleans())
def test_project_structured_mutations(seed_project, where, key, value, delete):
    d = _scratch()
    try:
        p = d / "p.dmproj"
        shutil.copyfile(seed_project, p)
        with h5py.File(p, "a") as h5:
            if delete and where != "/":
                del h5[where]
            else:
                h5[where].attrs[key] = value
        _ours_or_ok(lambda: _exercise(p))
        assert not (d / "p.dmproj.lock").exists()
        leftovers = [x for x in os.listdir(d) if x != "p.dmproj"]
        assert leftovers == []
    finally:
        shutil.rmtree(d, ignore_errors=True)
