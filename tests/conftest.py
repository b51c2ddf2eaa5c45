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

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared reference data (DRAMsim3 configs, reference outputs) beside the checkout."""
    if not SHARED_DIR.is_dir():
        pytest.skip(f"shared reference data not found at {SHARED_DIR} "
                    "(the shared/ folder beside the repository is not checked out)")
    return SHARED_DIR


@pytest.fixture(scope="session")
def timeloop_explicit(shared_dir: Path) -> list[dict]:
    """The explicit-mapping entries of the Timeloop reference, each with the parsed layer,
    mapping and hardware: (entry, Layer, LayerMapping, GemminiHardware)."""
    import json

    from optimizer.hardware import from_reference_arch
    from optimizer.mapping import LayerMapping
    from optimizer.workload import DIMS, Layer
    path = shared_dir / "reference" / "costmodel" / "reference.json"
    if not path.exists():
        pytest.skip(f"{path} not available")
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
