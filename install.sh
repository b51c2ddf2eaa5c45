#!/usr/bin/env bash
# Install DiffMem Studio on Debian 12: system libraries (Qt offscreen + Xvfb), a virtual
# environment in .venv/ with the pinned Python packages and the CPU build of torch, then run
# the demo on the bundled trace.
#
#   ./install.sh [--no-demo] [--no-system]
#
#   --no-demo     do not run `main.py demo` at the end (CI)
#   --no-system   skip apt-get (no root; the system packages must be there already)
#
# Safe to re-run: installed system packages, an existing .venv/ and an unchanged
# requirements.txt are detected and skipped.
set -euo pipefail

TORCH_VERSION="2.13.0"    # its own step: an unpinned torch pulls a multi-GB CUDA build
SYSTEM_PACKAGES=(
    # Python: a venv with pip (wheels exist for every pinned package: no compiler needed)
    python3 python3-venv
    # Qt offscreen (tests, screenshots)
    libglib2.0-0 libgl1 libegl1 libxkbcommon0 libfontconfig1 libfreetype6 libdbus-1-3
    # a real window, also under Xvfb
    xvfb xauth libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0
)

run_demo=1
system=1
for arg in "$@"; do
    case "$arg" in
        --no-demo) run_demo=0 ;;
        --no-system) system=0 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
say() { printf '==> %s\n' "$*"; }

# ---- 1. system packages --------------------------------------------------------------------
missing_packages() {
    local pkg
    for pkg in "${SYSTEM_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
            printf '%s\n' "$pkg"
        fi
    done
}

if [[ $system == 1 ]]; then
    if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
        echo "install.sh: apt-get not found: this script targets Debian 12. Install the" \
             "packages listed in SYSTEM_PACKAGES yourself, then run: $0 --no-system" >&2
        exit 1
    fi
    mapfile -t missing < <(missing_packages)
    if (( ${#missing[@]} == 0 )); then
        say "system packages: all installed"
    else
        if [[ $(id -u) == 0 ]]; then
            sudo=()
        elif command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "install.sh: missing system packages (${missing[*]}) and not root, no sudo." \
                 "Ask an administrator to install them, or re-run with --no-system." >&2
            exit 1
        fi
        say "system packages: installing ${missing[*]}"
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y --no-install-recommends "${missing[@]}"
    fi
fi

# ---- 2. virtual environment ----------------------------------------------------------------
PY=.venv/bin/python
if [[ -x $PY ]] && "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    say "virtual environment: .venv/ exists ($("$PY" --version))"
else
    if ! command -v python3 >/dev/null; then
        echo "install.sh: python3 not found (run without --no-system, or install python3" \
             "and python3-venv)" >&2
        exit 1
    fi
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "install.sh: Python 3.11 or newer needed, found $(python3 --version)" >&2
        exit 1
    fi
    say "virtual environment: creating .venv/ with $(python3 --version)"
    rm -rf .venv
    python3 -m venv .venv
fi

# ---- 3. Python packages --------------------------------------------------------------------
# A stamp in .venv/ records what was installed; skip pip when nothing changed.
stamp=.venv/.diffmem-install-stamp
want="$(sha256sum requirements.txt | cut -d' ' -f1) torch==$TORCH_VERSION"
if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]] \
        && "$PY" -c 'import numpy, numba, h5py, PySide6, pyqtgraph, pytest, pytestqt, torch' \
            2>/dev/null; then
    say "Python packages: up to date"
else
    say "Python packages: installing requirements.txt"
    "$PY" -m pip install --disable-pip-version-check -r requirements.txt
    say "Python packages: installing torch==$TORCH_VERSION (CPU build)"
    "$PY" -m pip install --disable-pip-version-check "torch==$TORCH_VERSION"
    printf '%s\n' "$want" > "$stamp"
fi

# ---- 4. byte code --------------------------------------------------------------------------
# pip compiles the packages it installs; the project's own modules are compiled here, so a
# process started where bytecode is not written (PYTHONDONTWRITEBYTECODE=1, a read-only
# checkout) does not compile ~150 modules from source each time: ~0.13 of a ~0.4 CPU-s start-up
# (issue 17). Python checks each file's time stamp, so an edited module is compiled
# afresh in memory, never run stale.
say "byte code: compiling the project's modules"
"$PY" -m compileall -q -j 0 main.py engine optimizer projects gui packaging >/dev/null

# ---- 5. numba kernels ----------------------------------------------------------------------
# Compiled once here (into engine/__pycache__), so the first simulation in the window, from
# any home folder, starts at once instead of waiting a minute or two for numba.  Cached
# kernels load in ~2 s, so a re-run costs little; the test suite reuses the same cache.
say "numba kernels: compiling (first install: a minute or two)"
"$PY" packaging/warm_kernels.py
# The kernel compiled ahead of time into a shared library in the user cache (~13 CPU-s with
# the numba cache warm): a simulation then starts without importing numba (issue 17). It
# needs a C compiler; without one the engine keeps using numba's kernel.
say "compiled kernel: building (main.py build-kernel)"
"$PY" main.py build-kernel || say "compiled kernel: not built (see above); numba's kernel is used"

# ---- 6. demo -------------------------------------------------------------------------------
if [[ $run_demo == 1 ]]; then
    say "demo: $PY main.py demo"
    "$PY" main.py demo
fi
say "done. Tests: .venv/bin/python -m pytest    GUI: .venv/bin/python main.py"
