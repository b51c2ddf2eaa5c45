#!/usr/bin/env bash
# Build DiffMem Studio as a one-folder Linux application: dist/diffmem/diffmem.
#
#   packaging/build.sh [--archive] [--keep-work]
#
#   --archive     also pack dist/diffmem-<version>-linux-<arch>.tar.gz
#   --keep-work   keep PyInstaller's work folder build/pyinstaller/ (faster rebuilds)
#
# Needs the development set-up (./install.sh: .venv/ with the pinned packages and torch).
# Installs the build tools of packaging/requirements-build.txt into .venv/ (build-time only)
# and runs packaging/diffmem.spec.  Takes 5-15 minutes on 2 cores and ~3 GB of free disk.
# The result runs on Linux x86-64 machines with glibc >= this one's, without Python; they
# need libgl1, libegl1, libxkbcommon0, libfontconfig1 (and a font), libdbus-1-3 and, for a
# window on X11, libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0.
#
# Windows / macOS: the same spec, from the repository root with the venv's Python:
#   python -m pip install -r packaging/requirements-build.txt
#   python -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/diffmem.spec
set -euo pipefail

archive=0
keep_work=0
for arg in "$@"; do
    case "$arg" in
        --archive) archive=1 ;;
        --keep-work) keep_work=1 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
say() { printf '==> %s\n' "$*"; }

PY="${PYTHON:-.venv/bin/python}"
if [[ ! -x "$PY" ]]; then
    echo "build.sh: $PY not found: run ./install.sh first (or set PYTHON)" >&2
    exit 1
fi

# ---- 1. build tools (skipped when the pinned versions are installed) --------------------------
if "$PY" - packaging/requirements-build.txt <<'EOF'
import sys
from importlib import metadata
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, version = line.partition("==")
    try:
        if metadata.version(name) != version:
            sys.exit(1)
    except metadata.PackageNotFoundError:
        sys.exit(1)
EOF
then
    say "build tools: installed ($(grep -m1 '^pyinstaller==' packaging/requirements-build.txt))"
else
    say "build tools: installing packaging/requirements-build.txt into $(dirname "$(dirname "$PY")")"
    "$PY" -m pip install --quiet --disable-pip-version-check -r packaging/requirements-build.txt
fi

VERSION="$(sed -n 's/^APP_VERSION = "\(.*\)"$/\1/p' engine/version.py)"
if [[ -z "$VERSION" ]]; then
    echo "build.sh: APP_VERSION not found in engine/version.py" >&2
    exit 1
fi

# ---- 2. PyInstaller ---------------------------------------------------------------------------
say "building DiffMem Studio $VERSION (log: build/pyinstaller.log)"
mkdir -p build
rm -rf dist/diffmem
start=$(date +%s)
if ! "$PY" -m PyInstaller --noconfirm --distpath dist --workpath build/pyinstaller \
        packaging/diffmem.spec > build/pyinstaller.log 2>&1; then
    tail -n 30 build/pyinstaller.log >&2
    echo "build.sh: PyInstaller failed (full log: build/pyinstaller.log)" >&2
    exit 1
fi
say "PyInstaller done in $(( $(date +%s) - start )) s"

# ---- 3. desktop integration -------------------------------------------------------------------
app=dist/diffmem
sed "s/@VERSION@/$VERSION/" packaging/diffmem.desktop > "$app/diffmem.desktop"
cp resources/icons/diffmem.png "$app/diffmem.png"
cp packaging/install-desktop-entry.sh "$app/install-desktop-entry.sh"
chmod +x "$app/install-desktop-entry.sh"
printf '%s\n' "$VERSION" > "$app/VERSION"

# ---- 4. quick check, and the kernels shipped compiled -------------------------------------------
"$app/diffmem" --version
# compile the numba kernels with the bundle itself into _internal/numba-seed/: a user's first
# simulation copies them into its empty cache (engine/numba_cache.py, seed_cache) instead of
# compiling for a minute; they fit CPUs of the build machine's family (numba recompiles
# otherwise)
seed_home=$(mktemp -d)
say "numba kernels: compiling into the bundle"
HOME="$seed_home" XDG_CACHE_HOME="$seed_home/.cache" XDG_CONFIG_HOME="$seed_home/.config" \
    NUMBA_CACHE_DIR="$app/_internal/numba-seed" "$app/diffmem" demo --headless > /dev/null
# ... and the event loop's general variant (engine.kernel.VARIANTS: the demo runs DRAMsim3's
# scheduler only; any other scheduler or page policy, a study's what-ifs, runs this one)
HOME="$seed_home" XDG_CACHE_HOME="$seed_home/.cache" XDG_CONFIG_HOME="$seed_home/.config" \
    NUMBA_CACHE_DIR="$app/_internal/numba-seed" "$app/diffmem" simulate --config DDR4-3200 \
    --trace "$app/_internal/resources/traces/demo.trace" --scheduler frfcfs --cycles 20000 \
    --out "$seed_home/frfcfs.json" > /dev/null
rm -rf "$seed_home"
say "numba kernels: $(du -sh "$app/_internal/numba-seed" | cut -f1) shipped"
say "application: $app/diffmem ($(du -sh "$app" | cut -f1))"

if [[ $keep_work == 0 ]]; then
    rm -rf build/pyinstaller
fi
if [[ $archive == 1 ]]; then
    tarball="dist/diffmem-$VERSION-linux-$(uname -m).tar.gz"
    tar -C dist -czf "$tarball" diffmem
    say "archive: $tarball ($(du -sh "$tarball" | cut -f1))"
fi
say "run it: $app/diffmem (GUI), $app/diffmem demo --headless, $app/diffmem --help;" \
    "menu entry: $app/install-desktop-entry.sh"
