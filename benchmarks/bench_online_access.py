"""CPU cost of the online API's smallest call: one request per ``Simulator.access()``.

    .venv/bin/python benchmarks/bench_online_access.py [TREE] [--n 5000] [--repeat 3]

Simulates ``--n`` one-request ``access()`` calls on DDR4-3200 (random lines, one request
every 20 cycles, every third a write) plus ``finish()``, ``--repeat`` times after a short
warm-up (JIT excluded), and prints the best CPU microseconds per call. TREE (default: this
checkout) is put first on ``sys.path``, so two trees can be compared in alternating
processes, as ``ab_engine.py`` does for whole traces. The per-call overhead of the kernel
call (argument typing, the simulator's checks) is what this measures.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path, nargs="?", default=ROOT)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    import numpy as np
    from engine.config import load_config
    from engine.simulator import SimOptions, Simulator
    cfg = load_config("DDR4-3200")

    def run(n: int) -> float:
        sim = Simulator(cfg, SimOptions(epoch=0))
        addr = (np.random.default_rng(1).integers(0, 1 << 24, n) * 64).tolist()
        t0 = time.process_time()
        for i, a in enumerate(addr):
            sim.access([a], [64], [i % 3 == 2], [i * 20])
        sim.finish()
        dt = time.process_time() - t0
        sim.close()
        return dt

    run(200)
    best = min(run(args.n) for _ in range(args.repeat))
    print(f"{best / args.n * 1e6:.1f} us per access() ({args.tree})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
