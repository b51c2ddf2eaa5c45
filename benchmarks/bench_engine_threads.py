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

With N > 1 threads a child also runs the case a third time with every thread's CPU time
recorded: the critical path is the main thread's CPU seconds plus, for every parallel step
(one task per channel), the CPU seconds of the busiest thread when the tasks go, in the
pool's order, to the first free thread, or all the CPU seconds over N if that is more
(the trace is read ahead in a thread of its own, in no parallel step). It estimates the wall
seconds on N idle cores (the load of other users cannot stretch it; wake-up latency and
shared caches are not in it), and 1 thread's CPU seconds over it the speed-up there.
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
crit = c1 - c0
threads = int(sys.argv[4])
if threads > 1:
    from engine import simulator as S
    from engine.trace import iter_trace
    base = S._StreamThreads if sys.argv[5] == "dramsim3" else S._ChannelThreads
    span = [0.0]

    class Probe(base):
        def _each(self, fn, which=None):
            todo = list(range(len(self.subs))) if which is None else list(which)
            def timed(i):
                t0 = time.thread_time()
                r = fn(i)
                return r, time.thread_time() - t0
            out = list(self.pool.map(timed, todo))
            free = [0.0] * max(1, min(threads, len(todo)))
            for _, d in out:
                free[free.index(min(free))] += d
            span[0] += max(free)
            res = [None] * len(self.subs)
            for i, (r, _) in zip(todo, out):
                res[i] = r
            return res
    m0, p0 = time.thread_time(), time.process_time()
    # (trees before issue 17t's evening session restarted a run with dense refusals in one
    # thread: _DenseRefusals; later ones switch between one thread and threads in place)
    dense = getattr(S, "_DenseRefusals", ())
    try:
        S._simulate_threaded(cfg, iter_trace(sys.argv[3], chunk_size=opts.chunk_size), opts,
                             None, None, runner=Probe)
    except dense:
        simulate_trace(cfg, sys.argv[3], SimOptions(intake=sys.argv[5], epoch=10**12))
    # (threads that are in no parallel step, the trace reader's, only count here: all the
    # CPU seconds over N is the least wall time on N cores)
    crit = max(time.thread_time() - m0 + span[0], (time.process_time() - p0) / threads)
print(json.dumps({"cpu": c1 - c0, "wall": w1 - w0, "crit": crit,
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
                                      tr, str(th), args.intake], capture_output=True,
                                     text=True, check=True)
                res[th].append(json.loads(out.stdout.strip().splitlines()[-1]))
        one, many = res[1], res[args.threads]
        same = len({r["stats"] for r in one + many}) == 1
        b1 = min(r["wall"] for r in one)
        bn = min(r["wall"] for r in many)
        c1 = min(r["cpu"] for r in one)
        cn = min(r["cpu"] for r in many)
        kn = min(r["crit"] for r in many)
        rows.append((Path(tr).name, one[0]["n"], one[0]["cycles"], c1, cn, b1, bn, same,
                     [round(r["wall"], 3) for r in one], [round(r["wall"], 3) for r in many],
                     kn))
        print(f"{Path(tr).name}: {one[0]['n']} requests, {one[0]['cycles']} cycles; CPU-s 1 "
              f"thread {c1:.3f} / {args.threads} threads {cn:.3f}; wall-s {b1:.3f} / {bn:.3f} "
              f"(speed-up {b1 / bn:.2f}x; walls {rows[-1][8]} / {rows[-1][9]}); critical path "
              f"{kn:.3f} CPU-s (speed-up on idle cores {c1 / kn:.2f}x); statistics "
              f"identical: {same}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"\n| trace | requests | cycles | CPU-s 1 thr | CPU-s {args.threads} thr | "
          f"wall-s 1 thr | wall-s {args.threads} thr | wall speed-up | critical path "
          f"{args.threads} thr | CPU-s 1 thr / critical path | identical |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:,} | {r[2]:,} | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.3f} | "
              f"{r[6]:.3f} | {r[5] / r[6]:.2f}x | {r[10]:.3f} | {r[3] / r[10]:.2f}x | {r[7]} |")


if __name__ == "__main__":
    main()
