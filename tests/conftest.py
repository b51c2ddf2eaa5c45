"""Shared test set-up: Qt runs offscreen (no display needed); the shared reference data."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Before anything imports Qt (pytest-qt creates the QApplication lazily, after this module).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Windows closed by tests save their layout (QSettings): keep that out of the user's config.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="diffmem-tests-config-")
# The suite checks numba's kernel whatever the user's cache holds; tests/test_kernel_aot.py
# checks that the ahead-of-time library gives the same (DIFFMEM_KERNEL=aot runs it everywhere).
from engine.kernel_aot import MODE_ENV  # noqa: E402

os.environ.setdefault(MODE_ENV, "jit")

from refdata import DATA_DIR, MISSING_DATA, data_file  # noqa: E402  (tests/ is on sys.path)

# The reference data ships with the repository (tests/data/, same layout as the shared folder
# it was copied from); the fixture keeps its old name so the tests read as before.
SHARED_DIR = DATA_DIR
_data_skips: list[str] = []


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The reference data (DRAMsim3 configs, reference outputs): tests/data/."""
    if not (SHARED_DIR / "dramsim3-configs").is_dir():
        pytest.skip(f"{MISSING_DATA}: {SHARED_DIR} (tests/data/ is not in this checkout)")
    return SHARED_DIR


def pytest_runtest_logreport(report) -> None:
    """Remember tests skipped for want of reference data (see pytest_sessionfinish)."""
    if report.skipped and isinstance(report.longrepr, tuple) and \
            MISSING_DATA in str(report.longrepr[2]):
        _data_skips.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus) -> None:
    """With DIFFMEM_FAIL_ON_DATA_SKIP=1 (as .ci/run sets it) a skip for missing reference
    data fails the run: the data is in the repository, so such a skip is a packaging bug."""
    if _data_skips and os.environ.get("DIFFMEM_FAIL_ON_DATA_SKIP") == "1":
        print(f"\n{len(_data_skips)} test(s) skipped for missing reference data "
              f"(DIFFMEM_FAIL_ON_DATA_SKIP=1), e.g. {_data_skips[:3]}")
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _gc_in_the_gui_thread(request):
    """Tests that make widgets run as the window does (gui.gc_guard): Python's garbage
    collector only in the GUI thread, and a full collection there at the end, so no Qt
    wrapper a test dropped is destroyed later in some background thread (which deadlocked
    the suite: the timeline's reader thread collected an earlier test's widgets)."""
    if request.node.get_closest_marker("gui") is None and not (
            {"qtbot", "qapp"} & set(request.fixturenames)):
        yield
        return
    request.getfixturevalue("qapp")
    from gui import gc_guard
    gc_guard.install()
    yield
    gc_guard.uninstall()


def _gen_traces(shared_dir: Path, out: Path, n: int) -> Path:
    import subprocess
    import sys
    subprocess.run([sys.executable, str(shared_dir / "tools" / "gen_traces.py"), str(out),
                    "--n", str(n)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def dram_calibration_dir(tmp_path_factory) -> Path:
    """One DRAM-term calibration cache for the tests that only use the calibration (each
    memory is calibrated once per session: ~136 short engine runs)."""
    return tmp_path_factory.mktemp("dram-calibration")


@pytest.fixture(scope="session")
def ref_traces(shared_dir, tmp_path_factory) -> Path:
    """The 200k-request reference traces, made by the generator exactly as the references
    were (tests/data/tools/gen_traces.py, seed 7)."""
    return _gen_traces(shared_dir, tmp_path_factory.mktemp("traces"), 200_000)


@pytest.fixture(scope="session")
def ref_traces_1m(shared_dir, tmp_path_factory) -> Path:
    """The 1M-request stream and random reference traces (traces1m/ of the references)."""
    return _gen_traces(shared_dir, tmp_path_factory.mktemp("traces1m"), 1_000_000)


@pytest.fixture(scope="session")
def timeloop_explicit(shared_dir: Path) -> list[dict]:
    """The explicit-mapping entries of the Timeloop reference, each with the parsed layer,
    mapping and hardware: (entry, Layer, LayerMapping, GemminiHardware)."""
    import json

    from optimizer.hardware import from_reference_arch
    from optimizer.mapping import LayerMapping
    from optimizer.workload import DIMS, Layer
    path = data_file("reference/costmodel/reference.json")
    ref = json.loads(path.read_text())
    archs = {k: from_reference_arch(k, v) for k, v in ref["architectures"].items()}
    out = []
    for entry in ref["entries"]:
        if entry["kind"] != "explicit_mapping":
            continue
        dims = entry["layer_dims"]
        layer = Layer("L", "conv", {d: dims[d] for d in DIMS}, dims["stride"])
        out.append((entry, layer, LayerMapping.from_notation(entry["mapping"]),
                    archs[entry["arch"]]))
    return out
