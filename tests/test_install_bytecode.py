"""install.sh byte-compiles the project's modules (issue 17: start-up). Where bytecode is not
written (PYTHONDONTWRITEBYTECODE=1, a read-only checkout) every process would otherwise compile
the project from source, ~0.13 of a ~0.4 CPU-s start-up. The test runs install.sh's own
command on a copy of the paths it names, with bytecode writing off, and checks that every
module then has the cache file Python looks for."""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _compile_command() -> list[str]:
    lines = [ln.strip() for ln in (REPO / "install.sh").read_text().splitlines()
             if ln.strip().startswith('"$PY" -m compileall')]
    assert len(lines) == 1, "install.sh should byte-compile the project in one command"
    return shlex.split(lines[0].split(">")[0])


def test_install_compiles_every_project_module_despite_dontwritebytecode(tmp_path: Path) -> None:
    cmd = _compile_command()
    args = cmd[3:]
    if "-j" in args:                                  # the option with a value
        del args[args.index("-j"):args.index("-j") + 2]
    paths = [a for a in args if not a.startswith("-")]
    assert {"main.py", "engine", "optimizer", "projects", "gui"} <= set(paths)
    for name in paths:
        src = REPO / name
        assert src.exists(), f"install.sh compiles {name}, which the repository lacks"
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tmp_path / name)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable] + cmd[1:], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    sources = [p for p in tmp_path.rglob("*.py")]
    assert len(sources) > 100
    missing = [str(p.relative_to(tmp_path)) for p in sources
               if not Path(importlib.util.cache_from_source(str(p))).is_file()]
    assert not missing, f"no bytecode for {missing[:5]}"
