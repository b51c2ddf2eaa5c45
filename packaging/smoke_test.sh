#!/usr/bin/env bash
# Build the packaged application and run it as a user without Python would (slow: 5-15 min):
# --version, presets, selfcheck (numba kernels into the per-user cache, torch autograd + Adam,
# optimiser imports), `demo --headless` twice from two folders (results equal the source
# checkout's; kernels reused), a user error's exit code, and the window under Xvfb.
#
#   packaging/smoke_test.sh            # builds dist/diffmem/ first
#   packaging/smoke_test.sh --reuse    # tests the dist/diffmem/ already built
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
if [[ "${1:-}" == "--reuse" ]]; then
    export DIFFMEM_PACKAGING_REUSE=1
    shift
fi
DIFFMEM_PACKAGING_TEST=1 exec .venv/bin/python -m pytest -q tests/test_packaging_bundle.py "$@"
