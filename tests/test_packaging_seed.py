"""The bundle ships its compiled kernels (issue 16: the first simulation in a fresh home took
96 s): an empty per-user numba cache is filled from ``_internal/numba-seed`` once."""
from __future__ import annotations

from pathlib import Path


def test_empty_user_cache_is_seeded_once(tmp_path: Path) -> None:
    from engine.numba_cache import seed_cache
    from engine.version import APP_VERSION

    seed = tmp_path / "numba-seed" / f"{APP_VERSION}-0123456789ab" / "engine"
    seed.mkdir(parents=True)
    (seed / "kernel.run_kernel-1.py311.nbi").write_bytes(b"index")
    (seed / "kernel.run_kernel-1.py311.1.nbc").write_bytes(b"code")
    root = tmp_path / "home" / ".cache" / "diffmem" / "numba" / f"{APP_VERSION}-fedcba987654"
    assert seed_cache(root, tmp_path / "numba-seed")
    assert (root / "engine" / "kernel.run_kernel-1.py311.1.nbc").read_bytes() == b"code"
    (root / "engine" / "kernel.run_kernel-1.py311.1.nbc").write_bytes(b"user's own")
    assert not seed_cache(root, tmp_path / "numba-seed")          # never overwrites
    assert (root / "engine" / "kernel.run_kernel-1.py311.1.nbc").read_bytes() == b"user's own"


def test_no_seed_for_another_version_or_outside_a_bundle(tmp_path: Path) -> None:
    from engine.numba_cache import seed_cache

    (tmp_path / "numba-seed" / "0.0.0-old" / "engine").mkdir(parents=True)
    (tmp_path / "numba-seed" / "0.0.0-old" / "engine" / "k.nbi").write_bytes(b"x")
    assert not seed_cache(tmp_path / "root", tmp_path / "numba-seed")
    assert not seed_cache(tmp_path / "root")                         # not frozen: no _MEIPASS


def test_install_script_warms_the_kernels() -> None:
    repo = Path(__file__).resolve().parents[1]
    text = (repo / "install.sh").read_text()
    assert '"$PY" packaging/warm_kernels.py' in text
    assert text.index("warm_kernels.py") < text.index('"$PY" main.py demo')
    build = (repo / "packaging" / "build.sh").read_text()
    assert 'NUMBA_CACHE_DIR="$app/_internal/numba-seed"' in build
