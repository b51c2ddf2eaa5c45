"""Ablation of the closed loop: is the DRAM-aware schedule's engine EDP better than search
noise?  For seeds S, FADiff under the hardware file alone and under the calibrated DRAM term
(no refit), the same CPU-second budget each, every schedule measured on the engine; per seed
the paired ratio (DRAM term / hardware file) and what the schedules differ in (fused edges,
64-byte requests, row hits, latency), and both schedules scored by the DRAM term too (does
the term rank the pair as the engine does?).

    .venv/bin/python benchmarks/bench_cosim_ablation.py --network resnet18 --memory HBM2 \\
        --seeds 1 2 3 4 5 --cpu-seconds 20 [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import cosim  # noqa: E402
from optimizer.costmodel import evaluate_schedule  # noqa: E402
from optimizer.hardware import load_hardware  # noqa: E402
from optimizer.methods import optimize  # noqa: E402
from optimizer.search import Budget  # noqa: E402
from optimizer.workload import load_network  # noqa: E402

ARMS = ("hardware file", "DRAM term")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="resnet18")
    ap.add_argument("--memory", default="DDR4-3200")
    ap.add_argument("--hw", default="large")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    ap.add_argument("--evaluations", type=int, default=None,
                    help="also cap the layer-mapping evaluations (default: CPU seconds only)")
    ap.add_argument("--cpu-seconds", type=float, default=20.0)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    net, hw = load_network(args.network), load_hardware(args.hw)
    memory = cosim.load_memory(args.memory)
    dhw = cosim.dram_hardware(hw, memory, cache_dir=args.cache_dir)
    budget = Budget(evaluations=args.evaluations, cpu_seconds=args.cpu_seconds)
    print(f"{net.name} on {hw.name} with {memory.name}, {args.cpu_seconds:g} CPU-s per search, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("| seed | DRAM model in the search | engine EDP | engine latency | engine energy (uJ) "
          "| fused edges | 64-B requests | row hits | DRAM-term EDP | search evals | CPU s "
          "(search + engine) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for seed in args.seeds:
        for label, h in zip(ARMS, (hw, dhw)):
            t = time.process_time()
            res, _ = optimize(net, h, "fadiff", budget, seed)
            sched = res.schedule
            cs = cosim.cosimulate(net, sched, hw, memory,
                                  result=evaluate_schedule(net, sched, hw))
            cpu = time.process_time() - t
            hits = (sum(x.row_hit_rate * x.requests for x in cs.layers)
                    / max(1, cs.requests))
            row = {"seed": seed, "model": label, "engine_edp": cs.engine_edp,
                   "latency": cs.engine_latency, "energy_pj": cs.engine_energy_pj,
                   "fused": len(sched.fused), "requests": cs.requests, "row_hits": hits,
                   "term_edp": evaluate_schedule(net, sched, dhw).edp,
                   "evaluations": res.evaluations, "cpu_s": cpu}
            rows.append(row)
            print(f"| {seed} | {label} | {cs.engine_edp:.4g} | {cs.engine_latency:.4g} | "
                  f"{cs.engine_energy_pj / 1e6:.4g} | {row['fused']} | {cs.requests} | "
                  f"{hits:.3f} | {row['term_edp']:.4g} | {res.evaluations} | {cpu:.0f} |",
                  flush=True)
    print()
    by = {a: {r["seed"]: r for r in rows if r["model"] == a} for a in ARMS}
    for a in ARMS:
        e = [r["engine_edp"] for r in by[a].values()]
        print(f"- {a}: engine EDP median {statistics.median(e):.4g}, min {min(e):.4g}, "
              f"max {max(e):.4g} (spread {max(e) / min(e) - 1:+.1%})")
    ratio = [by[ARMS[1]][s]["engine_edp"] / by[ARMS[0]][s]["engine_edp"] for s in args.seeds]
    agree = sum((by[ARMS[1]][s]["term_edp"] < by[ARMS[0]][s]["term_edp"])
                == (by[ARMS[1]][s]["engine_edp"] < by[ARMS[0]][s]["engine_edp"])
                for s in args.seeds)
    print(f"- paired engine EDP, DRAM term / hardware file, per seed: "
          f"{', '.join(f'{r:.3f}' for r in ratio)}; median {statistics.median(ratio):.3f}; "
          f"the term wins {sum(r < 1 for r in ratio)} of {len(ratio)}")
    print(f"- the DRAM term ranks each seed's pair as the engine does in {agree} of "
          f"{len(ratio)} seeds; load at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
