"""The import rules of the architecture, enforced.

- engine/, optimizer/ and projects/ never import Qt (PySide6, shiboken6, pyqtgraph, ...), the
  GUI package, or `main` (the command line is a client of the library, never the reverse);
- engine/ never imports optimizer/ (the optimiser is a client of the engine);
- the engine's core (engine/ except engine/workloads/, which captures PyTorch models by
  design) never imports torch.

Checked twice: statically, every import statement anywhere in a module (also inside
functions, and importlib.import_module / __import__ of a literal name), and dynamically,
importing every module of a package in a fresh interpreter and looking at sys.modules (which
also catches an import made by a third-party library on our behalf).
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
QT = {"PySide6", "PySide2", "shiboken6", "shiboken2", "PyQt5", "PyQt6", "pyqtgraph", "qtpy",
      "gui"}
RULES = {
    # package (folder) -> forbidden top-level modules, and sub-folders exempt from a rule
    "engine": (QT | {"main", "optimizer"}, {}),
    "optimizer": (QT | {"main"}, {}),
    "projects": (QT | {"main"}, {}),
}
ENGINE_CORE_FORBIDDEN = {"torch", "torchvision"}
ENGINE_NOT_CORE = ("engine/workloads/",)


def imported_names(source: str, filename: str = "<src>") -> list[tuple[int, str]]:
    """(line, dotted module name) of every absolute import in the source, wherever it is."""
    out = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value))
    return out


def violations(path: Path) -> list[str]:
    rel = path.relative_to(REPO).as_posix()
    pkg = rel.split("/", 1)[0]
    forbidden, _ = RULES[pkg]
    if pkg == "engine" and not rel.startswith(ENGINE_NOT_CORE):
        forbidden = forbidden | ENGINE_CORE_FORBIDDEN
    return [f"{rel}:{line}: imports {name}"
            for line, name in imported_names(path.read_text(encoding="utf-8"), rel)
            if name.split(".")[0] in forbidden]


def _modules(pkg: str) -> list[Path]:
    return sorted(p for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def test_checker_catches_every_form_of_import() -> None:
    src = ("import PySide6.QtCore\nfrom main import x\ndef f():\n    import torch\n"
           "    importlib.import_module('optimizer.fadiff')\n    __import__('pyqtgraph')\n"
           "from . import sibling\n")
    assert [n for _, n in imported_names(src)] == ["PySide6.QtCore", "main", "torch",
                                                    "optimizer.fadiff", "pyqtgraph"]


@pytest.mark.parametrize("pkg", sorted(RULES))
def test_no_forbidden_import_statements(pkg: str) -> None:
    files = _modules(pkg)
    assert len(files) >= 3, f"{pkg}: found only {files}"
    bad = [v for f in files for v in violations(f)]
    assert not bad, "\n".join(bad)


_PROBE = """
import importlib, json, pkgutil, sys
pkg, skip = sys.argv[1], tuple(sys.argv[2:])
root = importlib.import_module(pkg)
names = [m.name for m in pkgutil.walk_packages(root.__path__, pkg + ".")
         if not m.name.startswith(skip)]
for n in names:
    importlib.import_module(n)
print(json.dumps({"modules": names, "loaded": sorted({m.split('.')[0] for m in sys.modules})}))
"""


@pytest.mark.parametrize("pkg,forbidden,skip", [
    ("engine", QT | {"main", "optimizer"} | ENGINE_CORE_FORBIDDEN, ("engine.workloads",)),
    ("optimizer", QT | {"main"}, ()),
    ("projects", QT | {"main"}, ()),
])
def test_importing_a_package_loads_nothing_forbidden(pkg, forbidden, skip) -> None:
    res = subprocess.run([sys.executable, "-c", _PROBE, pkg, *skip], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(got["modules"]) >= 3, got["modules"]
    assert not set(got["loaded"]) & forbidden, sorted(set(got["loaded"]) & forbidden)
