"""Where the tests find their reference data: ``tests/data/`` in this repository.

``tests/data/`` mirrors the layout of the shared folder the data came from
(``dramsim3-configs/``, ``reference/<tool>/...``, ``tools/gen_traces.py``,
``workloads.json``); provenance and licences are in ``tests/data/README.md``.
Large text files are stored gzip-compressed as ``NAME.gz``: :func:`data_file` returns a
plain path either way (a compressed file is unpacked once per session into a temporary
folder), so a test never needs to know which files are compressed.

    from refdata import data_file, DATA_DIR
    cfg = load_ini(data_file("dramsim3-configs/DDR4_8Gb_x8_3200.ini"))
    ref = json.loads(data_file("reference/ramulator2-ddr5/results/x.json").read_text())

A missing file skips the test with a reason starting ``MISSING_DATA`` ("reference data
missing"); ``.ci/run`` sets ``DIFFMEM_FAIL_ON_DATA_SKIP=1``, which turns any such skip into
a failure of the session (tests/conftest.py).
"""
from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
MISSING_DATA = "reference data missing"
_unpacked: Path | None = None


def data_path(rel: str | Path) -> Path | None:
    """The stored file for ``rel`` (relative to tests/data), unpacked if stored as .gz; None
    when neither ``rel`` nor ``rel.gz`` is there."""
    global _unpacked
    plain = DATA_DIR / rel
    if plain.exists():
        return plain
    packed = plain.with_name(plain.name + ".gz")
    if not packed.is_file():
        return None
    if _unpacked is None:
        _unpacked = Path(tempfile.mkdtemp(prefix="diffmem-testdata-"))
    out = _unpacked / rel
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".part")
        with gzip.open(packed, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.replace(out)
    return out


def data_file(rel: str | Path) -> Path:
    """Like :func:`data_path`, but skips the calling test when the file is not stored."""
    p = data_path(rel)
    if p is None:
        import pytest
        pytest.skip(f"{MISSING_DATA}: {DATA_DIR / rel} (nor {Path(rel).name}.gz)")
    return p


def has_data(rel: str | Path) -> bool:
    """Whether ``rel`` (or ``rel.gz``) is stored, for ``skipif`` marks at collection time."""
    plain = DATA_DIR / rel
    return plain.exists() or plain.with_name(plain.name + ".gz").is_file()
