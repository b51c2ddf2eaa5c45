"""Ablation of the closed loop: is the DRAM-aware schedule's engine EDP better than search
noise?  For seeds S, FADiff under the hardware file alone and under the calibrated DRAM term
(no refit), same budget, each schedule measured on the engine.

    .venv/bin/python benchmarks/bench_cosim_ablation.py --network resnet18 --memory DDR4-3200 \\
        --seeds 1 2 --evaluations 400 --cpu-seconds 20 [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="resnet18")
    ap.add_argument("--memory", default="DDR4-3200")
    ap.add_argument("--hw", default="large")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--evaluations", type=int, default=400)
    ap.add_argument("--cpu-seconds", type=float, default=20.0)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    net, hw = load_network(args.network), load_hardware(args.hw)
    memory = cosim.load_memory(args.memory)
    dhw = cosim.dram_hardware(hw, memory, cache_dir=args.cache_dir)
    budget = Budget(evaluations=args.evaluations, cpu_seconds=args.cpu_seconds)
    rows = []
    print("| seed | DRAM model in the search | engine EDP | engine latency | engine energy (uJ) "
          "| 64-B requests | CPU s (search + engine) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for seed in args.seeds:
        for label, h in (("hardware file", hw), ("DRAM term (calibrated)", dhw)):
            t = time.process_time()
            res, _ = optimize(net, h, "fadiff", budget, seed)
            cs = cosim.cosimulate(net, res.schedule, hw, memory,
                                  result=evaluate_schedule(net, res.schedule, hw))
            cpu = time.process_time() - t
            rows.append({"seed": seed, "model": label, "engine_edp": cs.engine_edp,
                         "latency": cs.engine_latency, "energy_pj": cs.engine_energy_pj,
                         "requests": cs.requests, "cpu_s": cpu})
            print(f"| {seed} | {label} | {cs.engine_edp:.4g} | {cs.engine_latency:.4g} | "
                  f"{cs.engine_energy_pj / 1e6:.4g} | {cs.requests} | {cpu:.0f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
