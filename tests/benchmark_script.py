"""Import a script of ``benchmarks/`` as a module (the folder holds scripts, not a package):
the tests that check a benchmark's helpers or re-run its trials load it through here."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, executed afresh and registered as ``sys.modules[name]`` (its
    dataclasses need their module there)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
