"""The design card fixes the repository's top level: main.py gui engine optimizer resources
projects tests packaging, plus benchmarks/ and docs/ (and the set-up files beside them)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIRECTORIES = {"gui", "engine", "optimizer", "resources", "projects", "tests", "packaging",
               "benchmarks", "docs", ".ci"}
FILES = {"main.py", "README.md", "install.sh", "pyproject.toml", "requirements.txt",
         ".gitignore", ".gitattributes"}


def test_tracked_top_level_is_the_design_cards() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split("\n")
    top = {n.split("/", 1)[0] for n in names if n}
    dirs = {n.split("/", 1)[0] for n in names if "/" in n}
    assert dirs <= DIRECTORIES, f"top-level folders outside the design card: {dirs - DIRECTORIES}"
    assert top - dirs <= FILES, f"top-level files not expected: {(top - dirs) - FILES}"
