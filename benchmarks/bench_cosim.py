"""Closed loop: FADiff schedules measured on the DRAM engine, and re-optimised with it.

    .venv/bin/python benchmarks/bench_cosim.py [--networks resnet18 mobilenet_v1 ...]
        [--memories DDR4-3200 HBM2] [--hw large] [--evaluations 5000] [--iterate 2]
        [--layouts nhwc nchw tiled] [--json OUT.json]

For each network and memory: FADiff's schedule on the hardware file (analytical DRAM: 8 B per
cycle, 64 pJ per byte), its DRAM traffic simulated layer by layer on the engine; the model's
DRAM time and energy against the engine's per network; the EDP of the schedule before and after
DRAM-aware re-optimisation, both measured with the engine; the same first schedule's traffic
under each data layout.  Prints markdown tables.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.fileio import atomic_write_text, json_default  # noqa: E402
from optimizer import cosim  # noqa: E402
from optimizer.hardware import load_hardware  # noqa: E402
from optimizer.methods import optimize as run_method  # noqa: E402
from optimizer.search import Budget  # noqa: E402
from optimizer.workload import load_network  # noqa: E402


def network_row(cs: cosim.CosimResult) -> dict[str, Any]:
    model_t = sum(x.model_dram_cycles for x in cs.layers)
    engine_t = sum(x.engine_service_cycles for x in cs.layers)
    model_e = sum(x.model_dram_pj for x in cs.layers)
    engine_e = sum(x.engine_dram_pj for x in cs.layers)
    n = sum(x.requests for x in cs.layers)
    hits = sum(x.row_hit_rate * x.requests for x in cs.layers) / n if n else 1.0
    return {"model_dram_cycles": model_t, "engine_dram_cycles": engine_t,
            "model_dram_pj": model_e, "engine_dram_pj": engine_e,
            "time_error": model_t / engine_t - 1 if engine_t else 0.0,
            "energy_error": model_e / engine_e - 1 if engine_e else 0.0,
            "row_hit_rate": hits, "requests": n,
            "stall_cycles": sum(x.stall_cycles for x in cs.layers),
            "row_conflicts": sum(x.row_conflicts for x in cs.layers),
            "refreshes": sum(x.refreshes for x in cs.layers),
            "engine_edp": cs.engine_edp, "model_edp": cs.model_edp}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+",
                    default=["resnet18", "mobilenet_v1", "gpt3_6.7b_mha", "gpt3_6.7b_ffn"])
    ap.add_argument("--memories", nargs="+", default=["DDR4-3200", "HBM2"])
    ap.add_argument("--hw", default="large")
    ap.add_argument("--evaluations", type=int, default=5000,
                    help="FADiff budget per run (evaluations: the result does not depend on "
                         "the machine's load, so before/after differ by the DRAM model only)")
    ap.add_argument("--iterate", type=int, default=2)
    ap.add_argument("--layouts", nargs="+", default=["nhwc", "nchw", "tiled"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    hw = load_hardware(args.hw)
    out: dict[str, Any] = {"machine": platform.platform(), "date": time.strftime("%Y-%m-%d"),
                           "hw": hw.name, "evaluations": args.evaluations, "runs": []}

    def optimize(net: Any, hardware: Any) -> Any:
        res, _ = run_method(net, hardware, "fadiff", Budget(evaluations=args.evaluations), 0)
        return res.schedule, res.result

    print("| network | memory | model DRAM time | engine DRAM time | time err | model DRAM "
          "energy (uJ) | engine DRAM energy (uJ) | energy err | row hits | engine EDP "
          "before | after | change | fusion changed | model/engine agree |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name in args.networks:
        net = load_network(name)
        for mem_name in args.memories:
            memory = cosim.load_memory(mem_name)
            t0 = time.perf_counter()
            iters = cosim.closed_loop(net, hw, memory, optimize=optimize,
                                      iterations=args.iterate)
            s = cosim.summary(iters)
            row = network_row(iters[0].cosim)
            layouts = {}
            first_sched = iters[0].schedule
            from optimizer.mapping import Schedule
            from optimizer.costmodel import evaluate_schedule
            sched = Schedule.from_json(first_sched)
            res = evaluate_schedule(net, sched, hw)
            for layout in args.layouts:
                cs = cosim.cosimulate(net, sched, hw, memory, layout=layout, result=res)
                lr = network_row(cs)
                layouts[layout] = {"requests": lr["requests"], "row_hit_rate": lr["row_hit_rate"],
                                   "engine_dram_cycles": lr["engine_dram_cycles"],
                                   "engine_dram_pj": lr["engine_dram_pj"],
                                   "engine_edp": cs.engine_edp}
            wall = time.perf_counter() - t0
            out["runs"].append({"network": name, "memory": mem_name, "first": row,
                                "summary": s, "layouts": layouts, "wall_s": wall,
                                "iterations": [{"hardware": it.hardware,
                                                "model_edp": it.model_edp,
                                                "engine_edp": it.cosim.engine_edp,
                                                "fused": it.fused} for it in iters]})
            print(f"| {name} | {mem_name} | {row['model_dram_cycles']:.3g} | "
                  f"{row['engine_dram_cycles']:.3g} | {row['time_error']:+.0%} | "
                  f"{row['model_dram_pj'] / 1e6:.4g} | {row['engine_dram_pj'] / 1e6:.4g} | "
                  f"{row['energy_error']:+.0%} | {row['row_hit_rate']:.3f} | "
                  f"{s['engine_edp_before']:.4g} | {s['engine_edp_after']:.4g} | "
                  f"{s['engine_edp_change']:+.1%} | {s['fusion_changed']} | "
                  f"{s['ranking_agrees']} |", flush=True)
    print()
    print("Data layout (first schedule; requests = 64-byte DRAM requests):")
    print("| network | memory | " + " | ".join(f"{l} requests | {l} row hits | {l} engine EDP"
                                              for l in args.layouts) + " |")
    print("|---|---|" + "---:|---:|---:|" * len(args.layouts))
    for run in out["runs"]:
        cells = " | ".join(f"{run['layouts'][l]['requests']} | "
                           f"{run['layouts'][l]['row_hit_rate']:.3f} | "
                           f"{run['layouts'][l]['engine_edp']:.4g}" for l in args.layouts)
        print(f"| {run['network']} | {run['memory']} | {cells} |")
    if args.json:
        atomic_write_text(args.json, json.dumps(out, indent=1, default=json_default))
    return 0


if __name__ == "__main__":
    sys.exit(main())
