"""The installer's parts that can be checked without building it (fast).

The bundle itself is built and run by tests/test_packaging_bundle.py (slow, opt-in).
"""
from __future__ import annotations

import configparser
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGING = REPO / "packaging"
SPEC = PACKAGING / "diffmem.spec"


_SPECS: dict[bool, dict] = {}


def load_spec(monkeypatch: pytest.MonkeyPatch, baseline: bool = False) -> dict:
    """The spec's module level executed as PyInstaller would, minus the build itself (once
    per variant: it parses all our sources)."""
    if baseline not in _SPECS:
        with monkeypatch.context() as m:
            if baseline:
                m.setenv("DIFFMEM_PACKAGING_BASELINE", "1")
            else:
                m.delenv("DIFFMEM_PACKAGING_BASELINE", raising=False)
            namespace: dict = {"SPECPATH": str(PACKAGING), "__name__": "__spec__"}
            code = compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec")
            exec(code, namespace)  # noqa: S102
        _SPECS[baseline] = namespace
    return _SPECS[baseline]


# ---- the spec --------------------------------------------------------------------------------
def test_spec_version_is_the_apps(monkeypatch) -> None:
    from engine.version import APP_VERSION

    spec = load_spec(monkeypatch)
    assert spec["VERSION"] == APP_VERSION
    assert spec["EXE_NAME"] == "diffmem"


def test_spec_ships_resources_and_our_packages(monkeypatch) -> None:
    spec = load_spec(monkeypatch)
    datas = spec["datas_for"]()
    assert (str(REPO / "resources"), "resources") in datas
    for src, dest in datas:
        assert Path(src).exists(), src
        assert not src.endswith((".py", ".nbi", ".nbc")), src
    # every package of ours is collected whole, the optimiser included even while it is empty
    assert {"engine", "gui", "projects", "optimizer"} <= set(spec["OUR_PACKAGES"])
    ours = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert ours <= set(spec["OUR_PACKAGES"]), "a new top-level package is not in the spec"
    assert (PACKAGING / "rthooks" / "pyi_rth_diffmem.py").is_file()
    assert spec["ICON_PNG"].is_file()


def test_spec_excludes_only_what_the_app_does_not_import(monkeypatch) -> None:
    spec = load_spec(monkeypatch)
    excludes = set(spec["EXCLUDES"])
    assert {"tkinter", "tensorboard", "torch.utils.tensorboard", "PyQt5", "pytest"} <= excludes
    imported = spec["IMPORTED"]
    assert {"numpy", "numba", "PySide6", "pyqtgraph", "h5py"} <= imported
    # nothing our code imports (and none of the runtime's big packages) is cut
    for name in imported | {"torch", "numba", "llvmlite", "numpy", "h5py", "PySide6",
                            "pyqtgraph", "sympy", "engine", "gui", "projects", "optimizer"}:
        assert name not in excludes, name
    # of torch, only TensorBoard's writer goes (torch.optim's first step imports much of the
    # rest: torch._dynamo, torch.distributed, sympy)
    assert {x for x in excludes if x.startswith("torch.")} == {"torch.utils.tensorboard"}
    # a heavy optional package is cut exactly when our code does not import it
    for triggers, group in spec["EXCLUDES_UNLESS_IMPORTED"]:
        assert (not imported.intersection(triggers)) == (set(group) <= excludes), triggers
    # a package needed by a kept one is kept
    if "matplotlib" not in excludes:
        assert "PIL" not in excludes
    if "distributed" not in excludes:
        assert "dask" not in excludes


def test_spec_baseline_cuts_nothing(monkeypatch) -> None:
    spec = load_spec(monkeypatch, baseline=True)
    assert spec["EXCLUDES"] == []
    assert not spec["dropped"]("torch/bin/test_api")


@pytest.mark.parametrize("path, dropped", [
    ("torch/bin/test_api", True),
    ("torch/bin/protoc-3.13.0.0", True),
    ("torch/bin/TCPStoreTest", True),
    ("torch/bin/torch_shm_manager", False),
    ("torch/lib/libtorchbind_test.so", True),
    ("torch/lib/libtorch_cpu.so", False),
    ("torch/lib/libgomp.so.1", False),
    ("torch/include/ATen/core/Tensor.h", True),
    ("torch/_C/__init__.pyi", True),
    ("torch/nn/modules/linear.py", False),
    ("PySide6/Qt/translations/qtbase_de.qm", True),
    ("PySide6/Qt/plugins/platforms/libqxcb.so", False),
    ("PySide6/Qt/plugins/imageformats/libqsvg.so", False),
    ("PySide6/Qt/plugins/imageformats/libqpdf.so", True),
    ("PySide6/Qt/plugins/platforms/libqeglfs.so", True),
    ("PySide6/Qt/plugins/platforms/libqwayland.so", False),
    ("PySide6/Qt/plugins/platforms/libqoffscreen.so", False),
    ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", True),
    ("PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so", False),
    ("libpango-1.0.so.0", True),
    ("libQt6EglFSDeviceIntegration.so.6", True),
    ("libxkbcommon.so.0", False),
    ("libfontconfig.so.1", False),
    ("pillow.libs/libharfbuzz-fb49c9fc.so.0.61450.0", False),
    ("resources/presets/dram/DDR4-3200.toml", False),
])
def test_spec_drops_only_unused_files(monkeypatch, path: str, dropped: bool) -> None:
    assert load_spec(monkeypatch)["dropped"](path) is dropped


def test_imported_top_level_sees_lazy_imports(monkeypatch, tmp_path) -> None:
    spec = load_spec(monkeypatch)
    src = tmp_path / "m.py"
    src.write_text("import os.path\ndef f():\n    from optuna.samplers import TPESampler\n"
                   "    from . import sibling\n", encoding="utf-8")
    assert spec["imported_top_level"]([src]) == {"os", "optuna"}


# ---- the numba cache inside a bundle -----------------------------------------------------------
def test_runtime_hook_selects_the_frozen_locator() -> None:
    from engine.numba_cache import LOCATOR_SPEC

    namespace: dict = {}
    env_before = os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES")
    try:
        os.environ.pop("NUMBA_CACHE_LOCATOR_CLASSES", None)
        hook = PACKAGING / "rthooks" / "pyi_rth_diffmem.py"
        exec(compile(hook.read_text(encoding="utf-8"), str(hook), "exec"), namespace)  # noqa: S102
        assert os.environ["NUMBA_CACHE_LOCATOR_CLASSES"] == LOCATOR_SPEC
    finally:
        if env_before is None:
            os.environ.pop("NUMBA_CACHE_LOCATOR_CLASSES", None)
        else:
            os.environ["NUMBA_CACHE_LOCATOR_CLASSES"] = env_before
    assert "import numba" not in hook.read_text(encoding="utf-8")   # the GUI starts without it


@pytest.fixture
def frozen(monkeypatch, tmp_path):
    """Pretend to be a PyInstaller bundle whose executable is tmp_path/app/diffmem."""
    exe = tmp_path / "app" / "diffmem"
    exe.parent.mkdir()
    exe.write_bytes(b"\x7fELF placeholder")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    return exe


def _func(x):
    return x + 1


def test_frozen_locator_ignores_the_current_directory(frozen, tmp_path, monkeypatch) -> None:
    from engine.numba_cache import FrozenCacheLocator
    from engine.version import APP_VERSION

    paths = set()
    for cwd in (tmp_path, tmp_path / "app"):
        monkeypatch.chdir(cwd)
        loc = FrozenCacheLocator.from_function(_func, "engine/kernel.py")
        assert loc is not None
        paths.add(loc.get_cache_path())
    assert len(paths) == 1
    path = Path(paths.pop())
    assert path.is_dir()
    assert path.parent.parent == tmp_path / "cache" / "diffmem" / "numba"
    assert path.parent.name.startswith(APP_VERSION + "-")
    assert path.name == "engine"


def test_frozen_locator_honours_numba_cache_dir(frozen, tmp_path, monkeypatch) -> None:
    from engine.numba_cache import FrozenCacheLocator

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    loc = FrozenCacheLocator.from_function(_func, "engine/trace.py")
    assert Path(loc.get_cache_path()).parent.parent == tmp_path / "mine"


def test_frozen_locator_falls_back_when_cache_is_unwritable(frozen, tmp_path,
                                                            monkeypatch) -> None:
    from engine import numba_cache

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(numba_cache.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    loc = numba_cache.FrozenCacheLocator.from_function(_func, "engine/kernel.py")
    assert loc is not None
    assert Path(loc.get_cache_path()).is_relative_to(tmp_path / "tmp")


def test_frozen_locator_steps_aside_from_source(monkeypatch) -> None:
    from engine.numba_cache import FrozenCacheLocator

    monkeypatch.delattr(sys, "frozen", raising=False)
    assert FrozenCacheLocator.from_function(_func, __file__) is None


def test_numba_caches_kernels_through_the_frozen_locator(frozen, tmp_path,
                                                         monkeypatch) -> None:
    """numba itself, as in the bundle: a cached function compiles into the user cache and a
    new dispatcher (a second start) loads it from there."""
    from numba import njit
    from numba.core import config

    from engine.numba_cache import LOCATOR_SPEC

    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", LOCATOR_SPEC)
    ns: dict = {"__name__": "engine.frozen_probe"}
    code = textwrap.dedent("""
        def add_one(x):
            return x + 1
    """)
    # a relative file name, as PyInstaller gives the code objects of bundled modules
    exec(compile(code, "engine/frozen_probe.py", "exec"), ns)  # noqa: S102
    first = njit(cache=True)(ns["add_one"])
    assert first(41) == 42
    cache_dir = next((tmp_path / "cache" / "diffmem" / "numba").glob("*/engine"))
    assert sorted(p.suffix for p in cache_dir.iterdir()) == [".nbc", ".nbi"]
    second = njit(cache=True)(ns["add_one"])
    assert second(1) == 2
    assert second.stats.cache_hits.get(second.signatures[0], 0) == 1


# ---- command line: version and the hidden self-check -----------------------------------------
def test_version_flag(capsys) -> None:
    import main
    from engine.version import APP_VERSION

    with pytest.raises(SystemExit) as exc:
        main.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"main.py {APP_VERSION}"


def test_project_files_record_the_app_version() -> None:
    import projects.store
    from engine.version import APP_VERSION

    assert projects.store.APP_VERSION is APP_VERSION


def test_selfcheck_is_hidden_and_passes(capsys) -> None:
    import main

    assert "selfcheck" not in main.build_parser().format_help()
    assert main.main(["selfcheck"]) == 0
    out = capsys.readouterr().out
    for name in ("resources", "numba", "torch", "optimizer", "processes", "plots"):
        assert any(line.startswith("ok") and f" {name} " in line
                   for line in out.splitlines()), out


def test_selfcheck_reports_a_failing_check(monkeypatch, capsys) -> None:
    import main
    from engine import selfcheck

    def broken() -> str:
        raise RuntimeError("no presets here")

    monkeypatch.setattr(selfcheck, "CHECKS", (("resources", broken),))
    assert main.main(["selfcheck"]) == 1
    assert "FAIL resources" in capsys.readouterr().out


# ---- desktop integration -----------------------------------------------------------------------
def test_desktop_file() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str                 # keys are case-sensitive
    parser.read(PACKAGING / "diffmem.desktop", encoding="utf-8")
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Name"] == "DiffMem Studio"
    assert entry["Exec"] == "diffmem"
    assert entry["Icon"] == "diffmem"
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";")
    assert entry["X-DiffMem-Version"] == "@VERSION@"     # filled in by build.sh


def test_icon_is_a_256_px_png() -> None:
    png = (REPO / "resources" / "icons" / "diffmem.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (256, 256)
    assert (REPO / "resources" / "icons" / "diffmem.svg").read_text().lstrip().startswith("<?xml")


def test_install_desktop_entry(tmp_path) -> None:
    app = tmp_path / 'odd "dir" $HOME'
    app.mkdir()
    for name in ("install-desktop-entry.sh", "diffmem.desktop"):
        (app / name).write_bytes((PACKAGING / name).read_bytes())
    (app / "diffmem.png").write_bytes((REPO / "resources" / "icons" / "diffmem.png").read_bytes())
    (app / "diffmem").write_text("#!/bin/sh\n", encoding="utf-8")
    (app / "diffmem").chmod(0o755)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    res = subprocess.run(["bash", str(app / "install-desktop-entry.sh")], env=env,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    entry = (tmp_path / "data" / "applications" / "diffmem.desktop").read_text(encoding="utf-8")
    # the desktop entry spec: quoted, with \ " $ ` escaped, then every backslash doubled
    quoted = str(app / "diffmem").replace('"', '\\\\"').replace("$", "\\\\$")
    assert f'Exec="{quoted}"' in entry.splitlines()
    assert f"TryExec={app / 'diffmem'}" in entry.splitlines()
    assert (tmp_path / "data" / "icons" / "hicolor" / "256x256" / "apps" / "diffmem.png").is_file()
    res = subprocess.run(["bash", str(app / "install-desktop-entry.sh"), "--remove"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0
    assert not (tmp_path / "data" / "applications" / "diffmem.desktop").exists()


def test_build_script_is_valid_bash() -> None:
    res = subprocess.run(["bash", "-n", str(PACKAGING / "build.sh")], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    res = subprocess.run(["bash", str(PACKAGING / "build.sh"), "--help"], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0 and "dist/diffmem/diffmem" in res.stdout


def test_build_requirements_are_pinned() -> None:
    lines = [ln.split("#", 1)[0].strip()
             for ln in (PACKAGING / "requirements-build.txt").read_text().splitlines()]
    pins = dict(ln.split("==") for ln in lines if ln)
    assert pins["pyinstaller"] == "6.22.3"
    assert set(pins) == {"pyinstaller", "pyinstaller-hooks-contrib", "altgraph"}
    assert all(v and v[0].isdigit() for v in pins.values())
