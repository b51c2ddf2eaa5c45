"""Our Gemmini cost model against Timeloop + Accelergy on every mapping the shared reference
evaluated with timeloop-model (../shared/reference/costmodel).

    .venv/bin/python benchmarks/validate_costmodel.py [--json OUT.json] [--write-results]

Mappings scored (each with the file's own architecture and per-word energies, through the
same code as ``python main.py evaluate --reference``):

* ``reference.json``: the explicit mappings and the Timeloop mapper's best mappings;
* ``mapper_peers.json``: the Timeloop mapper's best mapping of every unique layer shape of the
  six networks on both arrays, the fixed-budget re-runs, and ZigZag's mappings as evaluated
  by timeloop-model (totals only: cycles and energy).

Figures (the issue's three): per-level, per-tensor access counts (reads, fills, updates) —
the largest relative error and the share within 5 %; the Kendall tau between our cycles and
Timeloop's over the mappings of each layer (same arch and shape); the energy error.
``--write-results`` replaces the section "## Optimizer: cost model vs Timeloop" at the end of
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REF_DIR = ROOT.parent / "shared" / "reference" / "costmodel"
sys.path.insert(0, str(ROOT))

from engine.fileio import atomic_write_text  # noqa: E402
from optimizer.reference import architectures, load_reference, score_entry  # noqa: E402

SECTION = "## Optimizer: cost model vs Timeloop"
COUNT_KEYS = ("reads_total", "fills_total", "updates_total")


def kendall_tau(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b (ties in either ranking handled); 1.0 for fewer than two pairs."""
    conc = disc = tx = ty = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + tx) * (conc + disc + ty)) ** 0.5
    return 1.0 if denom == 0 else (conc - disc) / denom


def collect() -> list[dict[str, Any]]:
    """(source, entry, Timeloop results, has per-level counts) for every mapping."""
    ref = load_reference(REF_DIR / "reference.json")
    peers = load_reference(REF_DIR / "mapper_peers.json")
    out = []
    for e in ref["entries"]:
        if isinstance(e.get("mapping"), dict) and "per_level" in e.get("results", {}):
            src = "reference.json " + ("explicit" if e["kind"] == "explicit_mapping"
                                       else "Timeloop mapper")
            out.append({"source": src, "entry": e, "file": ref, "timeloop": e["results"]})
    for e in peers["entries"] + peers.get("fixed_budget_reruns", []):
        if e["tool"] == "timeloop-mapper":
            out.append({"source": "mapper_peers Timeloop mapper", "entry": e, "file": peers,
                        "timeloop": e["results"]})
        elif e["tool"] == "zigzag":
            tm = e.get("zigzag_mapping_evaluated_by_timeloop_model") or {}
            if tm.get("valid") and isinstance(e.get("mapping"), dict):
                out.append({"source": "mapper_peers ZigZag mapping (timeloop-model)",
                            "entry": e, "file": peers, "timeloop": tm})
    return out


def layer_key(e: dict[str, Any]) -> tuple:
    dims = e.get("layer_dims") or e.get("dims")
    kind = e.get("layer_kind") or (e["kind"] if e["kind"] in ("dense", "depthwise", "matmul")
                                   else "dense")
    stride = dims.get("stride", e.get("stride", 1))
    return (e["arch"], kind, tuple(int(dims.get(d, 1)) for d in "NKCPQRS"), int(stride))


def validate() -> dict[str, Any]:
    hardware = architectures(load_reference(REF_DIR / "reference.json"),
                             REF_DIR / "reference.json")
    items = collect()
    by_source: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "mappings": 0, "count_values": 0, "counts_within_5pct": 0, "count_max_rel_err": 0.0,
        "energy_max_rel_err": 0.0, "cycles_max_rel_err": 0.0, "cycles_max_abs_err": 0.0,
        "invalid_ours": 0})
    worst_count: dict[str, Any] = {}
    groups: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for it in items:
        e, tl = it["entry"], it["timeloop"]
        eid = e.get("id", "?")
        ours = score_entry(e, it["file"], hardware, eid)
        s = by_source[it["source"]]
        s["mappings"] += 1
        s["invalid_ours"] += 0 if ours["valid"] else 1
        cyc_err = abs(ours["cycles"] - tl["cycles"])
        s["cycles_max_abs_err"] = max(s["cycles_max_abs_err"], cyc_err)
        s["cycles_max_rel_err"] = max(s["cycles_max_rel_err"], cyc_err / tl["cycles"])
        s["energy_max_rel_err"] = max(s["energy_max_rel_err"],
                                      abs(ours["energy_pJ"] - tl["energy_pJ"]) / tl["energy_pJ"])
        groups[layer_key(e)].append((ours["cycles"], float(tl["cycles"])))
        if "per_level" not in tl:
            continue
        for level, table in ours["per_level"].items():
            for tensor, counts in table["tensors"].items():
                theirs = tl["per_level"][level]["tensors"][tensor]
                for key in COUNT_KEYS:
                    a, b = counts[key], float(theirs.get(key, 0))
                    err = abs(a - b) / b if b else (0.0 if a == 0 else float("inf"))
                    s["count_values"] += 1
                    s["counts_within_5pct"] += err <= 0.05
                    if err > s["count_max_rel_err"]:
                        s["count_max_rel_err"] = err
                    if err > worst_count.get("err", 0.0):
                        worst_count = {"err": err, "id": eid, "level": level,
                                       "tensor": tensor, "key": key, "ours": a, "timeloop": b}
    taus = {k: kendall_tau([a for a, _ in v], [b for _, b in v])
            for k, v in groups.items() if len(v) >= 2}
    all_counts = sum(s["count_values"] for s in by_source.values())
    return {
        "sources": dict(by_source),
        "mappings": len(items),
        "count_values": all_counts,
        "count_max_rel_err": max(s["count_max_rel_err"] for s in by_source.values()),
        "counts_within_5pct": sum(s["counts_within_5pct"] for s in by_source.values()),
        "worst_count": worst_count,
        "energy_max_rel_err": max(s["energy_max_rel_err"] for s in by_source.values()),
        "cycles_max_rel_err": max(s["cycles_max_rel_err"] for s in by_source.values()),
        "kendall_groups": len(taus),
        "kendall_groups_tau_1": sum(1 for t in taus.values() if t == 1.0),
        "kendall_min_tau": min(taus.values()) if taus else 1.0,
        "kendall_below_1": [{"layer": list(map(str, k)), "tau": t, "points": groups[k]}
                            for k, t in taus.items() if t < 1.0],
    }


def markdown(r: dict[str, Any], wall: float) -> str:
    lines = [SECTION, "",
             f"`.venv/bin/python benchmarks/validate_costmodel.py --write-results` "
             f"({time.strftime('%Y-%m-%d')}, 2-core AMD EPYC VM, Debian 12, Python "
             f"{platform.python_version()}; {wall:.0f} s). Every mapping of "
             "`../shared/reference/costmodel/` that timeloop-model evaluated, scored by our "
             "cost model (`optimizer/costmodel.py`) through `python main.py evaluate "
             "--reference` with the reference's own architecture and per-word energies.", "",
             "| mappings | n | counts compared | counts within 5 % | max count error | "
             "max cycle error | max energy error | ours invalid |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in r["sources"].items():
        counts = "– | – | –"
        if s["count_values"]:
            counts = (f"{s['count_values']} | {s['counts_within_5pct']} | "
                      f"{100 * s['count_max_rel_err']:.3g} %")
        lines.append(f"| {name} | {s['mappings']} | {counts} | "
                     f"{100 * s['cycles_max_rel_err']:.2g} % "
                     f"({s['cycles_max_abs_err']:.0f} cycles) | "
                     f"{100 * s['energy_max_rel_err']:.2g} % | {s['invalid_ours']} |")
    lines += ["",
              f"- **Access counts (target: within 5 %)**: {r['counts_within_5pct']} of "
              f"{r['count_values']} per-level, per-tensor reads/fills/updates within 5 %; "
              f"largest relative error {100 * r['count_max_rel_err']:.3g} %"
              + (f" ({r['worst_count']['id']}, {r['worst_count']['level']} "
                 f"{r['worst_count']['tensor']} {r['worst_count']['key']}: ours "
                 f"{r['worst_count']['ours']:.0f}, Timeloop {r['worst_count']['timeloop']:.0f})"
                 if r["worst_count"] else "") + ".",
              f"- **Cycle ranking (target: Kendall tau = 1)**: {r['kendall_groups_tau_1']} of "
              f"{r['kendall_groups']} layers (same array and shape, 2 or more mappings) rank "
              f"identically; smallest tau {r['kendall_min_tau']:.3f}. Cycles differ by at "
              f"most {100 * r['cycles_max_rel_err']:.2g} %.",
              f"- **Energy (target: within 10 %)**: largest error "
              f"{100 * r['energy_max_rel_err']:.2g} % (Timeloop prints per-level energies "
              "to 0.01 pJ).", ""]
    for b in r["kendall_below_1"]:
        lines.append(f"  - tau {b['tau']:.3f} on {', '.join(b['layer'])}: "
                     f"(ours, Timeloop) cycles {b['points']}")
    return "\n".join(lines).rstrip() + "\n"


def write_results(section: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text(encoding="utf-8")
    if SECTION in text:
        head, _, rest = text.partition(SECTION)
        nxt = rest.find("\n## ")
        tail = rest[nxt + 1:] if nxt >= 0 else ""
        text = head.rstrip() + "\n\n" + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip() + "\n\n" + section
    atomic_write_text(path, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="OUT.json", help="write all figures as JSON")
    ap.add_argument("--write-results", action="store_true",
                    help="replace/append the section in benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    if not (REF_DIR / "reference.json").exists():
        print(f"error: {REF_DIR} not found", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    r = validate()
    wall = time.perf_counter() - t0
    md = markdown(r, wall)
    print(md)
    if args.json:
        atomic_write_text(args.json, json.dumps(r, indent=2, default=str))
    if args.write_results:
        write_results(md)
        print("section written to benchmarks/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
