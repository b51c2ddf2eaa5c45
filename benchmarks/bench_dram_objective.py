"""Per-byte DRAM objective vs the DRAM term (``--memory``), against the engine.

For schedule files written by ``python main.py optimize`` (with or without ``--memory``),
co-simulate each on a memory (as ``main.py cosim`` measures a schedule: layer by layer,
paced, memory powered to the end of each layer) and print per schedule: the model's DRAM
energy and network EDP under the per-byte objective and under the memory's DRAM term
(calibrated, no refit), and the engine's.

    .venv/bin/python benchmarks/bench_dram_objective.py --hw large --memory LPDDR4-3200 \\
        --json OUT.json r18_pb_s0.json r18_lp_s0.json ...
    # markdown tables from the rows: model / engine ratios per network and memory, and the
    # engine-measured EDP of each objective's schedules, seed by seed
    .venv/bin/python benchmarks/bench_dram_objective.py --summary OUT.json ...

Every figure comes from the cost model or from the engine runs made here.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _seed(row: dict) -> str:
    """A row's seed: the schedule file's own field (rows measured before it was recorded:
    the file name's ``_s<seed>``)."""
    if row.get("seed") is not None:
        return str(row["seed"])
    stem = Path(row["file"]).stem
    return stem.rsplit("_s", 1)[1] if "_s" in stem else stem


def measure(path: str, hw_name: str, memory_name: str) -> dict:
    from optimizer import cosim
    from optimizer.batching import with_batch
    from optimizer.costmodel import evaluate_schedule
    from optimizer.dram_objective import objective_hardware
    from optimizer.hardware import load_hardware
    from optimizer.mapping import load_saved_schedule
    from optimizer.workload import load_network

    sched, saved = load_saved_schedule(path)
    net = with_batch(load_network(saved.network_file or sched.network), saved.batch)
    hw = load_hardware(hw_name)
    memory = cosim.load_memory(memory_name)
    dhw = objective_hardware(hw, memory_name)
    pb = evaluate_schedule(net, sched, hw)
    tm = evaluate_schedule(net, sched, dhw)
    t0 = time.process_time()
    cs = cosim.cosimulate(net, sched, hw, memory, result=pb, dram_hw=dhw)
    doc = json.loads(Path(path).read_text())
    obj = doc.get("dram_objective") or {"model": "per-byte"}

    def dram(res) -> float:
        return sum(lr.energy_parts["DRAM"] for lr in res.layers)
    eng_parts = {p: sum(x.engine_parts.get(p, 0.0) for x in cs.layers)
                 for p in ("background", "refresh", "data", "act")}
    mod_parts = {p: sum(x.model_parts.get(p, 0.0) for x in cs.layers)
                 for p in ("background", "refresh", "data", "act")}
    return {
        "file": path, "network": net.name, "memory": memory.name, "seed": doc.get("seed"),
        "optimised_under": obj.get("memory") or "per-byte",
        "dram_bytes_model": pb.dram_bytes,
        "dram_bytes_engine": sum(x.bytes for x in cs.layers),
        "per_byte": {"dram_pj": dram(pb), "edp": pb.edp, "cycles": pb.latency_cycles,
                     "energy_pj": pb.energy_pj},
        "term": {"dram_pj": dram(tm), "edp": tm.edp, "cycles": tm.latency_cycles,
                 "energy_pj": tm.energy_pj, "parts": mod_parts},
        "engine": {"dram_pj": cs.engine_dram_pj, "edp": cs.engine_edp,
                   "cycles": cs.engine_latency, "energy_pj": cs.engine_energy_pj,
                   "parts": eng_parts},
        "cosim_cpu_s": round(time.process_time() - t0, 1),
    }


def _range(xs: list[float]) -> str:
    return f"{sum(xs) / len(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def summary(rows: list[dict]) -> str:
    """Markdown: per network and memory, model/engine DRAM energy and EDP for both models
    (mean and range over every schedule measured), and per seed the engine EDP of the
    per-byte objective's schedule and of the DRAM-aware one."""
    out = ["| network | memory | schedules | DRAM energy per-byte/engine | DRAM energy "
           "term/engine | EDP per-byte/engine | EDP term/engine |", "|---" * 7 + "|"]
    keys = sorted({(r["network"], r["memory"]) for r in rows})
    for net, mem in keys:
        rs = [r for r in rows if (r["network"], r["memory"]) == (net, mem)]
        e = [r["engine"] for r in rs]
        out.append(f"| {net} | {mem} | {len(rs)} | "
                   f"{_range([r['per_byte']['dram_pj'] / x['dram_pj'] for r, x in zip(rs, e)])} | "
                   f"{_range([r['term']['dram_pj'] / x['dram_pj'] for r, x in zip(rs, e)])} | "
                   f"{_range([r['per_byte']['edp'] / x['edp'] for r, x in zip(rs, e)])} | "
                   f"{_range([r['term']['edp'] / x['edp'] for r, x in zip(rs, e)])} |")
    out += ["", "| network | memory | seed | engine EDP, per-byte schedule | engine EDP, "
            "DRAM-aware schedule | aware/per-byte | engine DRAM mJ pb / aware | "
            "cycles pb / aware |", "|---" * 8 + "|"]
    for net, mem in keys:
        rs = [r for r in rows if (r["network"], r["memory"]) == (net, mem)]
        pb = {_seed(r): r for r in rs if r["optimised_under"] == "per-byte"}
        aw = {_seed(r): r for r in rs if r["optimised_under"] != "per-byte"}
        ratios = []
        for seed in sorted(set(pb) & set(aw)):
            a, b = pb[seed]["engine"], aw[seed]["engine"]
            ratios.append(b["edp"] / a["edp"])
            out.append(f"| {net} | {mem} | {seed} | {a['edp']:.4g} | {b['edp']:.4g} | "
                       f"{b['edp'] / a['edp']:.3f} | {a['dram_pj'] * 1e-9:.2f} / "
                       f"{b['dram_pj'] * 1e-9:.2f} | {a['cycles']:.3g} / {b['cycles']:.3g} |")
        if pb and aw:
            best_pb = min(r["engine"]["edp"] for r in pb.values())
            best_aw = min(r["engine"]["edp"] for r in aw.values())
            gm = 1.0
            for x in ratios:
                gm *= x
            out.append(f"| {net} | {mem} | best of seeds | {best_pb:.4g} | {best_aw:.4g} | "
                       f"{best_aw / best_pb:.3f} | geomean of seeds "
                       f"{gm ** (1 / len(ratios)):.3f} | |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hw", default="large")
    ap.add_argument("--memory")
    ap.add_argument("--json", help="append the rows to this JSON list")
    ap.add_argument("--summary", action="store_true",
                    help="print tables from the row files given instead of measuring")
    ap.add_argument("schedules", nargs="+")
    args = ap.parse_args()
    if args.summary:
        rows = [r for f in args.schedules for r in json.loads(Path(f).read_text())]
        print(summary(rows))
        return 0
    if args.memory is None:
        ap.error("--memory is needed to measure")
    rows = []
    for path in args.schedules:
        r = measure(path, args.hw, args.memory)
        rows.append(r)
        pb, tm, en = r["per_byte"], r["term"], r["engine"]
        print(f"{Path(path).name:<22} {r['network']:<13} {r['memory']:<12} opt:"
              f"{r['optimised_under']:<12} DRAM mJ pb {pb['dram_pj'] * 1e-9:.3f} term "
              f"{tm['dram_pj'] * 1e-9:.3f} eng {en['dram_pj'] * 1e-9:.3f} | EDP pb "
              f"{pb['edp']:.4g} term {tm['edp']:.4g} eng {en['edp']:.4g} | "
              f"{r['cosim_cpu_s']} CPU-s", flush=True)
    if args.json:
        out = Path(args.json)
        old = json.loads(out.read_text()) if out.is_file() else []
        out.write_text(json.dumps(old + rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
