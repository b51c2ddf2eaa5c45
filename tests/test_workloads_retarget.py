"""A generated trace re-placed for another memory is the trace generated for that memory."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
h5py = pytest.importorskip("h5py")

from engine.config import load_config  # noqa: E402
from engine.workloads.placement import GpuAddressHash  # noqa: E402
from engine.workloads.retarget import (RetargetError, needs_retarget, placed_for,  # noqa: E402
                                       read_placement, retarget_trace)


def _cols(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        g = f["trace"]
        return {k: g[k][:] for k in ("addr", "cycle", "is_write", "phase", "op", "role")}


@pytest.mark.parametrize("preset", ["DDR4-3200", "DDR4-3200-8ch", "HBM2", "GDDR6"])
def test_gpu_hash_inverse(preset: str) -> None:
    cfg = load_config(preset)
    h = GpuAddressHash(cfg)
    a = np.unique(np.random.default_rng(1).integers(0, cfg.capacity_bytes // 64, 100_000)
                  ).astype(np.uint64) * np.uint64(64)
    assert np.array_equal(h.invert(h.apply(a)), a)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from engine.workloads.generate import TraceSpec, generate_trace
    d = tmp_path_factory.mktemp("retarget")
    out = {}
    # no L2: the only thing that depends on the memory is the placement (and the clock)
    for mem in ("DDR4-3200-8ch", "HBM2"):
        out[mem] = d / f"{mem}.h5"
        generate_trace(TraceSpec("ddpm", batch=2, size="tiny", cache_bytes=0, memory=mem,
                                 placement_seed=5), out[mem])
    return out


def test_retargeted_trace_equals_the_trace_generated_for_that_memory(
        traces: dict[str, Path], tmp_path: Path) -> None:
    hbm, ddr = load_config("HBM2"), load_config("DDR4-3200-8ch")
    rec = read_placement(traces["DDR4-3200-8ch"])
    assert rec["memory"] == ddr.name and rec["address_hash"] == "gpu"
    assert needs_retarget(rec, hbm) and not needs_retarget(rec, ddr)
    out = tmp_path / "on-hbm2.h5"
    new = retarget_trace(traces["DDR4-3200-8ch"], out, hbm)
    assert new["memory"] == hbm.name and new["retargeted_from"] == ddr.name
    got, want = _cols(out), _cols(traces["HBM2"])
    assert got["addr"].shape[0] > 1000
    assert np.array_equal(got["addr"], want["addr"])            # same addresses, exactly
    for k in ("is_write", "phase", "op", "role"):
        assert np.array_equal(got[k], want[k])
    # cycles: converted to HBM2's clock; at most one cycle from the direct floor(t / tCK)
    assert np.all(np.diff(got["cycle"].astype(np.int64)) >= 0)
    assert np.abs(got["cycle"].astype(np.int64) - want["cycle"].astype(np.int64)).max() <= 1
    # and back: re-placing the HBM2 trace for DDR4-3200-8ch gives the DDR4 trace's addresses
    back = tmp_path / "back.h5"
    retarget_trace(out, back, ddr)
    assert np.array_equal(_cols(back)["addr"], _cols(traces["DDR4-3200-8ch"])["addr"])


def test_placed_for_reuses_its_own_device_and_caches_copies(traces: dict[str, Path],
                                                            tmp_path: Path) -> None:
    src = traces["DDR4-3200-8ch"]
    ddr = load_config("DDR4-3200-8ch")
    from engine.studies.spec import with_overrides
    # a controller mapping what-if on the same device: the trace as it is
    remap = with_overrides(ddr, {"address_mapping": "rochrabgbaco"})
    assert placed_for(src, remap, tmp_path) == (src, "trace")
    p1, _ = placed_for(src, load_config("HBM2"), tmp_path)
    mtime = p1.stat().st_mtime_ns
    p2, _ = placed_for(src, load_config("HBM2"), tmp_path)
    assert p1 == p2 and p1.parent == tmp_path and p2.stat().st_mtime_ns == mtime


def test_a_step_that_does_not_fit_names_both_memories(traces: dict[str, Path],
                                                     tmp_path: Path) -> None:
    from engine.workloads.retarget import _Mapper
    rec = dict(read_placement(traces["DDR4-3200-8ch"]), footprint_bytes=20 * 10**9)
    with pytest.raises(RetargetError) as e:
        _Mapper(rec, load_config("HBM2"), "big.h5")
    msg = str(e.value)
    assert "big.h5" in msg and "HBM2" in msg and "20 GB" in msg and "8.59 GB" in msg


def test_folded_trace_is_not_re_placed(traces: dict[str, Path]) -> None:
    from engine.workloads.retarget import _Mapper
    rec = dict(read_placement(traces["HBM2"]), folded=True)
    with pytest.raises(RetargetError, match="--fold-addresses"):
        _Mapper(rec, load_config("DDR4-3200-8ch"), "f.h5")


def test_study_points_replay_each_memory_on_its_own_placement(
        traces: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.studies import StudySetup, TraceInput, get_study
    from engine.studies.jobs import run_point
    monkeypatch.setenv("DIFFMEM_DERIVED_DIR", str(tmp_path / "derived"))
    t = TraceInput("ddpm", str(traces["DDR4-3200-8ch"])).resolved()
    setup = StudySetup([t], arrival="saturate",
                       params={"configs": ["DDR4-3200-8ch", "HBM2"]}, cycles=20_000)
    pts = {p.config["name"]: p for p in get_study("technology").points(setup)}
    assert pts["DDR4-3200-8ch"].trace["path"] == t.path
    placed = pts["HBM2"].trace
    assert Path(placed["path"]).parent == tmp_path / "derived"
    assert placed["placed_from"] == t.digest and placed["digest"] != t.digest
    assert np.array_equal(_cols(Path(placed["path"]))["addr"], _cols(traces["HBM2"])["addr"])
    rec = run_point(pts["HBM2"].to_dict())
    assert rec["status"] == "ok", rec
    # a point whose memory cannot hold the step fails with the reason; the others run
    bad = dict(pts["HBM2"].to_dict(), trace={**t.to_dict(), "placement_error": "too big"})
    assert run_point(bad) == {"point_id": bad["point_id"], "status": "error",
                              "error": "RetargetError: too big"}


def test_a_mapping_what_if_on_a_re_placed_device_decodes_the_same_addresses(
        traces: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study's mapping variant on another device than the trace's: the trace is re-placed
    once, for the base mapping, and each variant decodes those addresses with its own (placed
    for the variant's mapping, the GPU hash undid the what-if: the variant measured exactly
    the baseline)."""
    from engine.studies import StudySetup, TraceInput, get_study
    from engine.studies.catalog import placement_config
    from engine.studies.jobs import run_point
    monkeypatch.setenv("DIFFMEM_DERIVED_DIR", str(tmp_path / "derived"))
    t = TraceInput("ddpm", str(traces["DDR4-3200-8ch"])).resolved()
    hbm = load_config("HBM2")
    remap = "rochrababgco"
    assert hbm.address_mapping != remap
    setup = StudySetup([t], config="HBM2", arrival="saturate", cycles=20_000,
                       params={"variants": {"remap": {"address_mapping": remap},
                                            "close": {"page_policy": "close"}}})
    pts = {p.tags["variant"]: p for p in get_study("hotspots").points(setup)}
    assert pts["remap"].config["address_mapping"] == remap
    # the same re-placed file for the baseline and both variants (one copy, made once)
    paths = {v: p.trace["path"] for v, p in pts.items()}
    assert len(set(paths.values())) == 1 and Path(paths["baseline"]).parent == tmp_path / \
        "derived"
    # ... whose addresses are those of the trace generated for HBM2 (its preset mapping)
    assert np.array_equal(_cols(Path(paths["remap"]))["addr"], _cols(traces["HBM2"])["addr"])
    base, remapped = (run_point(pts[v].to_dict()) for v in ("baseline", "remap"))
    assert base["status"] == remapped["status"] == "ok"
    keys = ("cycles", "act", "row_hit_rate")
    assert any(base["metrics"].get(k) != remapped["metrics"].get(k) for k in keys), (
        {k: base["metrics"].get(k) for k in keys})
    # placement_config: a variant that keeps the mapping is its own placement
    assert placement_config(hbm, hbm) is hbm
