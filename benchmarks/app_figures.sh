#!/usr/bin/env bash
# Every figure issue 16 asks of the application, in one command (run it on a quiet machine):
#   UI stall percentiles during a 1M-request run (bench_gui.py, with the stall sampler),
#   quit / cancel latency and the first run in a fresh home from the source checkout
#   (bench_gui_quit.py), the CPU cost of one live redraw (bench_gui_refresh.py), and the
#   bundle's size and first run in a fresh home (bench_bundle_first_run.py; builds the bundle
#   with packaging/build.sh first unless dist/diffmem exists or --no-bundle is given).
#
#   benchmarks/app_figures.sh [--no-bundle] [--rebuild]
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
PY="${PYTHON:-.venv/bin/python}"
bundle=1
rebuild=0
for arg in "$@"; do
    case "$arg" in
        --no-bundle) bundle=0 ;;
        --rebuild) rebuild=1 ;;
        *) echo "app_figures.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done
say() { printf '\n==> %s (%s; %s)\n' "$*" "$(date -u +%FT%TZ)" "$(uptime | sed 's/.*load/load/')"; }
say "UI stalls during a 1M-request run"
"$PY" benchmarks/bench_gui.py --find-stalls
say "one live redraw's CPU cost"
"$PY" benchmarks/bench_gui_refresh.py
say "quit / cancel latency, first run from the source checkout"
"$PY" benchmarks/bench_gui_quit.py --repeats 3
if [[ $bundle == 1 ]]; then
    if [[ $rebuild == 1 || ! -x dist/diffmem/diffmem ]]; then
        say "building the bundle"
        packaging/build.sh
    fi
    say "bundle size and first run in a fresh home"
    "$PY" benchmarks/bench_bundle_first_run.py --repeats 3
fi
