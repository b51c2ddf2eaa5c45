"""The packaged application (packaging/build.sh -> dist/diffmem): its size, and the first
simulation with a fresh home folder (issue 16: 96 s in the bundle, numba compiling; target
<= 5 s).

    packaging/build.sh && .venv/bin/python benchmarks/bench_bundle_first_run.py [--repeats 3]

Each repeat runs ``dist/diffmem/diffmem simulate`` on the demo trace (20,000 requests,
DDR4-3200) with HOME / XDG_CACHE_HOME / XDG_CONFIG_HOME pointing at a new empty folder, so the
per-user numba cache is empty and is filled from the bundle's shipped kernels
(``_internal/numba-seed``, engine/numba_cache.seed_cache); then once more in the same home
(cache warm).  Reports wall seconds and the child's CPU seconds (``getrusage``: comparable on
a loaded machine), whether numba compiled anything (a cache folder that grew beyond the seed
counts as a recompile), and the bundle's size.  The GUI's first run adds the window's start-up
to the same simulation process start.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "resources" / "traces" / "demo.trace"


def du(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def run_once(app: Path, home: Path, out: Path) -> dict:
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("NUMBA_CACHE_DIR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([str(app), "simulate", "--config", "DDR4-3200", "--trace", str(DEMO),
                        "--out", str(out)], env=env, capture_output=True, text=True,
                       timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"simulate failed ({r.returncode}): {r.stderr[-800:]}")
    cache = home / ".cache"
    return {"wall_s": wall, "cpu_s": cpu, "cache_bytes": du(cache) if cache.exists() else 0,
            "requests": json.loads(out.read_text()).get("num_reads_done", None)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", type=Path, default=ROOT / "dist" / "diffmem")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    exe = args.app / "diffmem"
    if not exe.exists():
        print(f"{exe} not found: build it first (packaging/build.sh)", file=sys.stderr)
        return 1
    seed = args.app / "_internal" / "numba-seed"
    print(f"bundle {args.app}: {du(args.app) / 2**20:.1f} MiB "
          f"(numba seed {du(seed) / 2**20:.2f} MiB)" if seed.exists() else
          f"bundle {args.app}: {du(args.app) / 2**20:.1f} MiB (no numba seed!)")
    first, warm = [], []
    for i in range(args.repeats):
        home = Path(tempfile.mkdtemp(prefix="diffmem-fresh-home-"))
        try:
            a = run_once(exe, home, home / "stats.json")
            b = run_once(exe, home, home / "stats2.json")
        finally:
            shutil.rmtree(home, ignore_errors=True)
        first.append(a)
        warm.append(b)
        print(f"  fresh home {i + 1}: first run {a['wall_s']:.2f} s wall, {a['cpu_s']:.2f} s "
              f"CPU (per-user cache {a['cache_bytes'] / 2**20:.2f} MiB after); second run "
              f"{b['wall_s']:.2f} s wall, {b['cpu_s']:.2f} s CPU", flush=True)
    med = statistics.median(x["wall_s"] for x in first)
    print(f"first run in a fresh home: median {med:.2f} s wall, "
          f"{statistics.median(x['cpu_s'] for x in first):.2f} s CPU (target <= 5 s wall on "
          f"a quiet machine); warm: {statistics.median(x['wall_s'] for x in warm):.2f} s wall")
    print(f"load: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
