"""Closed loop and DRAM-term validation: tables from `main.py cosim` result files, and the
layouts and placements of a schedule compared on the engine.

    # the runs themselves are the CLI's (one per network and memory), e.g.
    .venv/bin/python main.py cosim --network resnet18 --hw large --memory DDR4-3200 \\
        --iterate 2 --validate 8 --cpu-seconds 20 --evaluations 400 --out r18_ddr4.json
    # tables
    .venv/bin/python benchmarks/bench_cosim.py tables r18_ddr4.json r18_hbm2.json ...
    # the first and the kept schedule of a result under every layout and placement
    .venv/bin/python benchmarks/bench_cosim.py layouts r18_ddr4.json [--json OUT.json]
    # per layer, model vs engine of validation schedule I of a result
    .venv/bin/python benchmarks/bench_cosim.py layers mb_hbm2.json I

Prints markdown tables.  Every figure comes from the result files (model and engine) or from
fresh engine runs (layouts); nothing is hard-coded.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARTS = ("time", "background", "refresh", "data", "act")


def _load(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def _kept(data: dict[str, Any]) -> dict[str, Any]:
    return next(it for it in data["iterations"] if it.get("kept"))


def parts_row(cs: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """(model before refit, engine) per part over a schedule's layers."""
    return {p: (sum(x["model_parts"].get(p, 0.0) for x in cs["layers"]),
                sum(x["engine_parts"].get(p, 0.0) for x in cs["layers"])) for p in PARTS}


def changes(first: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """What the DRAM-aware schedule changed against the first: layers whose tiling or loop
    order moved, fusion, DRAM traffic."""
    a, b = first["schedule"]["layers"], kept["schedule"]["layers"]
    tiles = orders = 0
    for name in a:
        ta = {lv: v.get("factors") for lv, v in a[name]["temporal"].items()}
        tb = {lv: v.get("factors") for lv, v in b[name]["temporal"].items()}
        oa = {lv: v.get("order_outer_to_inner") for lv, v in a[name]["temporal"].items()}
        ob = {lv: v.get("order_outer_to_inner") for lv, v in b[name]["temporal"].items()}
        tiles += (ta != tb) or (a[name].get("spatial") != b[name].get("spatial"))
        orders += oa != ob
    ca, cb = first["cosim"], kept["cosim"]

    def tot(cs: dict[str, Any], key: str) -> float:
        return sum(x[key] for x in cs["layers"])
    req_a, req_b = tot(ca, "requests"), tot(cb, "requests")
    return {"layers": len(a), "tiles_changed": tiles, "orders_changed": orders,
            "fused_first": len(first["fused"]), "fused_kept": len(kept["fused"]),
            "bytes_first": tot(ca, "bytes"), "bytes_kept": tot(cb, "bytes"),
            "requests_first": req_a, "requests_kept": req_b,
            "hits_first": sum(x["row_hit_rate"] * x["requests"] for x in ca["layers"]) / req_a,
            "hits_kept": sum(x["row_hit_rate"] * x["requests"] for x in cb["layers"]) / req_b,
            "latency_first": ca["engine_latency"], "latency_kept": cb["engine_latency"],
            "energy_first": ca["engine_energy_pj"], "energy_kept": cb["engine_energy_pj"]}


def tables(paths: list[str]) -> None:
    runs = [_load(p) for p in paths]
    print("| network | memory | iterations (kept) | engine EDP first | last | change | "
          "validation K | Kendall tau EDP | DRAM time ratio median (worst) | DRAM energy "
          "ratio median (worst) | before refit: tau, time, energy medians | search evals "
          "/ CPU s per iteration |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for d in runs:
        s = d["summary"]
        v = s.get("validation", {})
        c = v.get("calibrated", {})
        search = ", ".join(f"{it['schedule']['meta'].get('evaluations', '?')}/"
                           f"{it['schedule']['meta'].get('cpu_s', '?')}"
                           for it in d["iterations"])
        print(f"| {d['network']} | {d['memory']} | {s['iterations']} ({s['kept_iteration']}) | "
              f"{s['engine_edp_first']:.4g} | {s['engine_edp_last']:.4g} | "
              f"{s['engine_edp_change']:+.1%} | {v.get('schedules', 0)} | "
              f"{v.get('kendall_tau_edp', float('nan')):.3f} | "
              f"{v.get('dram_cycles_ratio_median', float('nan')):.3f} "
              f"({v.get('dram_cycles_ratio_worst', float('nan')):.3f}) | "
              f"{v.get('dram_energy_ratio_median', float('nan')):.3f} "
              f"({v.get('dram_energy_ratio_worst', float('nan')):.3f}) | "
              f"{c.get('kendall_tau_edp', float('nan')):.2f}, "
              f"{c.get('dram_cycles_ratio_median', float('nan')):.3f}, "
              f"{c.get('dram_energy_ratio_median', float('nan')):.3f} | {search} |")
    print()
    print("DRAM term before any refit (calibration only) against the engine, first schedule:")
    print("| network | memory | " + " | ".join(f"{p} model/engine" for p in PARTS)
          + " | engine energy shares (bg/ref/data+IO/ACT) |")
    print("|---|---|" + "---:|" * len(PARTS) + "---|")
    for d in runs:
        pr = parts_row(d["iterations"][0]["cosim"])
        e_tot = sum(pr[p][1] for p in PARTS if p != "time")
        shares = "/".join(f"{pr[p][1] / e_tot:.0%}" for p in PARTS if p != "time")
        print(f"| {d['network']} | {d['memory']} | "
              + " | ".join(f"{pr[p][0] / pr[p][1]:.3f}" if pr[p][1] else "n/a" for p in PARTS)
              + f" | {shares} |")
    print()
    print("What each DRAM-aware re-optimisation changed against the first schedule, on the "
          "engine (objective / best's: its model EDP over the best-so-far schedule's, both "
          "under the DRAM term it was optimised with; > 1: the search fell short):")
    print("| network | memory | iteration | kept | layers with new tiles / loop orders | fused "
          "edges | useful bytes | 64-B requests | row hits | engine latency | engine energy "
          "(uJ) | engine EDP vs first | objective / best's |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---:|---:|")
    for d in runs:
        first = d["iterations"][0]
        obj = d["summary"].get("objective_vs_best", [])
        for i, it in enumerate(d["iterations"][1:]):
            ch = changes(first, it)
            o = obj[i] if i < len(obj) and obj[i] is not None else float("nan")
            print(f"| {d['network']} | {d['memory']} | {it['iteration']} | "
                  f"{'yes' if it.get('kept') else 'no'} | {ch['tiles_changed']} / "
                  f"{ch['orders_changed']} of {ch['layers']} | {ch['fused_first']} -> "
                  f"{ch['fused_kept']} | {ch['bytes_first']:.4g} -> {ch['bytes_kept']:.4g} | "
                  f"{ch['requests_first']:.0f} -> {ch['requests_kept']:.0f} | "
                  f"{ch['hits_first']:.3f} -> {ch['hits_kept']:.3f} | "
                  f"{ch['latency_first']:.4g} -> {ch['latency_kept']:.4g} | "
                  f"{ch['energy_first'] / 1e6:.4g} -> {ch['energy_kept'] / 1e6:.4g} | "
                  f"{it['cosim']['engine_edp'] / first['cosim']['engine_edp'] - 1:+.1%} | "
                  f"{o:.3f} |")


def layouts(path: str, out: str | None) -> None:
    from optimizer import cosim
    from optimizer.costmodel import evaluate_schedule
    from optimizer.dma_trace import LAYOUTS, PLACEMENTS
    from optimizer.hardware import load_hardware
    from optimizer.mapping import Schedule
    from optimizer.workload import load_network
    d = _load(path)
    net = load_network(d["network"])
    hw = load_hardware("large" if d["hardware"] == "gemmini-large" else d["hardware"])
    memory = cosim.load_memory(d["memory"])
    rows = []
    picks = [("first", d["iterations"][0])]
    if not d["iterations"][0].get("kept"):
        picks.append(("kept", _kept(d)))
    print(f"{d['network']} on {d['memory']}: each schedule's traffic under every layout and "
          "placement (the schedules were optimised for "
          f"{d['layout']}/{d['placement']})")
    print("| schedule | layout | placement | 64-B requests | row hits | row conflicts | "
          "engine DRAM time (cycles) | engine DRAM energy (uJ) | engine EDP | CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, it in picks:
        sched = Schedule.from_json(it["schedule"])
        res = evaluate_schedule(net, sched, hw)
        for layout in LAYOUTS:
            for placement in PLACEMENTS:
                t = time.process_time()
                cs = cosim.cosimulate(net, sched, hw, memory, layout=layout,
                                      placement=placement, result=res)
                cpu = time.process_time() - t
                n = cs.requests
                hits = sum(x.row_hit_rate * x.requests for x in cs.layers) / n if n else 1.0
                row = {"schedule": label, "layout": layout, "placement": placement,
                       "requests": n, "row_hit_rate": hits,
                       "row_conflicts": sum(x.row_conflicts for x in cs.layers),
                       "engine_dram_cycles": cs.engine_dram_cycles,
                       "engine_dram_pj": cs.engine_dram_pj, "engine_edp": cs.engine_edp,
                       "cpu_s": cpu}
                rows.append(row)
                print(f"| {label} | {layout} | {placement} | {n} | {hits:.3f} | "
                      f"{row['row_conflicts']} | {cs.engine_dram_cycles:.4g} | "
                      f"{cs.engine_dram_pj / 1e6:.4g} | {cs.engine_edp:.4g} | {cpu:.1f} |",
                      flush=True)
    if out:
        from engine.fileio import atomic_write_text
        atomic_write_text(out, json.dumps({"source": path, "rows": rows}, indent=1))


def layer_diagnosis(path: str, index: int, cache_dir: str | None) -> None:
    """Per layer, model (calibrated DRAM term) vs engine for validation schedule ``index`` of
    a result (the candidates are drawn again with the CLI's seed: deterministic)."""
    from optimizer import cosim, validation
    from optimizer.hardware import load_hardware
    from optimizer.mapping import Schedule
    from optimizer.space import SearchSpace
    from optimizer.workload import load_network
    d = _load(path)
    net = load_network(d["network"])
    hw = load_hardware("large" if d["hardware"] == "gemmini-large" else d["hardware"])
    memory = cosim.load_memory(d["memory"])
    its = d["iterations"]
    loop = ([Schedule.from_json(it["schedule"]) for it in its if it.get("kept")]
            + [Schedule.from_json(it["schedule"]) for it in its if not it.get("kept")])
    k = d["summary"]["validation"]["schedules"]
    source, sched = validation.candidates(SearchSpace.build(net, hw), loop, k,
                                          seed=d["seed"])[index]
    dhw = cosim.dram_hardware(hw, memory, layout=d["layout"], cache_dir=cache_dir)
    cs = cosim.cosimulate(net, sched, hw, memory, layout=d["layout"],
                          placement=d["placement"], dram_hw=dhw)
    ratio = cs.model_dram_cycles / cs.engine_dram_cycles
    print(f"{d['network']} on {d['memory']}, validation schedule {index} ({source}): "
          f"{cs.requests} requests, model/engine DRAM time {ratio:.3f} (calibrated term)")
    print("| layer | requests | model lines | model service | engine service | ratio | row hits "
          "| row conflicts | writes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in cs.layers:
        if x.requests:
            print(f"| {x.name} | {x.requests} | {x.model_lines:.0f} | "
                  f"{x.model_parts['time']:.0f} | {x.engine_service_cycles:.0f} | "
                  f"{x.model_parts['time'] / x.engine_service_cycles:.2f} | "
                  f"{x.row_hit_rate:.2f} | {x.row_conflicts} | {x.write_fraction:.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="tables from cosim result files")
    t.add_argument("results", nargs="+")
    lay = sub.add_parser("layouts", help="a result's schedules under every layout/placement")
    lay.add_argument("result")
    lay.add_argument("--json", default=None)
    diag = sub.add_parser("layers", help="per-layer model vs engine of a validation schedule")
    diag.add_argument("result")
    diag.add_argument("index", type=int)
    diag.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    if args.cmd == "tables":
        tables(args.results)
    elif args.cmd == "layouts":
        layouts(args.result, args.json)
    else:
        layer_diagnosis(args.result, args.index, args.cache_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
