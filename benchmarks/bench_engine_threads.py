"""Channels in parallel (SimOptions(threads=N)): CPU and wall seconds of 1 and N threads on
the same trace, alternating fresh processes, and the statistics compared.

    .venv/bin/python benchmarks/bench_engine_threads.py --config HBM2_8Gb_x128.ini \
        --trace DIR/stream.trace --trace DIR/random.trace [--threads 2] [--rounds 3] \
        [--intake per-channel|dramsim3]

`--intake` is the front end both runs use (default per-channel, as when this script was
first written; dramsim3 is the simulator's default intake).

Each child process simulates its case once to warm up (JIT and page cache excluded), then
once timed: CPU seconds (user+sys of every thread, time.process_time) and wall seconds. The
best of `--rounds` processes per (trace, threads) is reported, with the spread. On a shared
machine wall-time speed-up is bounded by the idle cores: state the load beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from engine.config import load_config
from engine.simulator import SimOptions, simulate_trace
cfg = load_config(sys.argv[2])
opts = SimOptions(intake=sys.argv[5], threads=int(sys.argv[4]), epoch=10**12)
simulate_trace(cfg, sys.argv[3], opts)
c0, w0 = time.process_time(), time.perf_counter()
st = simulate_trace(cfg, sys.argv[3], opts)
c1, w1 = time.process_time(), time.perf_counter()
s = {k: v for k, v in st.summary.items()
     if k not in ("wall_seconds", "idle_cycles_skipped_in_closed_form")}
print(json.dumps({"cpu": c1 - c0, "wall": w1 - w0,
                  "n": st.summary["num_reads_done"] + st.summary["num_writes_done"],
                  "cycles": st.summary["num_cycles"],
                  "stats": json.dumps(s, sort_keys=True, default=str)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="HBM2")
    ap.add_argument("--trace", action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=ROOT)
    ap.add_argument("--intake", choices=("per-channel", "dramsim3"), default="per-channel")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; intake {args.intake}", flush=True)
    rows = []
    for tr in args.trace:
        res: dict[int, list[dict]] = {1: [], args.threads: []}
        for _ in range(args.rounds):
            for th in (1, args.threads):
                out = subprocess.run([sys.executable, "-c", CHILD, str(args.tree), args.config,
                                      tr, str(th), args.intake], capture_output=True, text=True, check=True)
                res[th].append(json.loads(out.stdout.strip().splitlines()[-1]))
        one, many = res[1], res[args.threads]
        same = len({r["stats"] for r in one + many}) == 1
        b1 = min(r["wall"] for r in one)
        bn = min(r["wall"] for r in many)
        c1 = min(r["cpu"] for r in one)
        cn = min(r["cpu"] for r in many)
        rows.append((Path(tr).name, one[0]["n"], one[0]["cycles"], c1, cn, b1, bn, same,
                     [round(r["wall"], 3) for r in one], [round(r["wall"], 3) for r in many]))
        print(f"{Path(tr).name}: {one[0]['n']} requests, {one[0]['cycles']} cycles; CPU-s 1 "
              f"thread {c1:.3f} / {args.threads} threads {cn:.3f}; wall-s {b1:.3f} / {bn:.3f} "
              f"(speed-up {b1 / bn:.2f}x; walls {rows[-1][8]} / {rows[-1][9]}); statistics "
              f"identical: {same}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"\n| trace | requests | cycles | CPU-s 1 thr | CPU-s {args.threads} thr | "
          f"wall-s 1 thr | wall-s {args.threads} thr | wall speed-up | identical |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:,} | {r[2]:,} | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.3f} | "
              f"{r[6]:.3f} | {r[5] / r[6]:.2f}x | {r[7]} |")


if __name__ == "__main__":
    main()
