"""The optimiser's comparison table (the FADiff paper's) and the comparison with the mappers.

    .venv/bin/python benchmarks/bench_optimizer.py [--configs large small]
        [--networks ...] [--methods ...] [--seeds 0 1 2] [--evaluations N | --seconds T]
        [--no-peers] [--json OUT.json]

Part 1, for each hardware config (large, small) and network (all six): every registered
method with the same budget and seeds; EDP, energy, latency, validity, wall time and
evaluations of each run; printed as average EDP per method, per-network rows and wall time.

Part 2, against the mappers of ``../shared/reference/costmodel/mapper_peers.json`` (Timeloop's
mapper and ZigZag, per layer, no fusion) on that file's arrays (gemmini_16x16 and
gemmini_32x32 with a 256 KiB scratchpad and a 64 KiB accumulator, loaded with
``from_reference_arch``): the network EDP (sum of cycles x sum of energy) of each mapper as
the file reports it, of the Timeloop mapper's mappings re-scored per layer by our evaluator,
and of every registered method searched on the same hardware; plus search times (ZigZag's
summed per-shape search time).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT.parent / "shared" / "reference" / "costmodel" / "mapper_peers.json"
sys.path.insert(0, str(ROOT))

from engine.fileio import atomic_write_text, json_default  # noqa: E402
from optimizer.compare import format_table, run_comparison  # noqa: E402
from optimizer.costmodel import evaluate_schedule  # noqa: E402
from optimizer.mapping import LayerMapping, Schedule  # noqa: E402
from optimizer.methods import METHODS, optimize  # noqa: E402
from optimizer.reference import architectures, load_reference  # noqa: E402
from optimizer.search import Budget  # noqa: E402
from optimizer.workload import NETWORKS, load_network  # noqa: E402


def rescored_mapper(peers: dict[str, Any], tool: str, network: str, arch: str,
                    hw: Any) -> dict[str, Any] | None:
    """The network EDP of ``tool``'s per-layer mappings under our evaluator (None when a
    layer's mapping is missing or not expressible)."""
    net = load_network(network)
    by_id = {e["id"]: e for e in peers["entries"]}
    maps = {}
    for row in peers["networks"][network]:
        e = by_id.get(f"{tool}/{arch}/{row['shape_id']}")
        if e is None or not isinstance(e.get("mapping"), dict):
            return None
        maps[row["layer"]] = LayerMapping.from_notation(e["mapping"], e["id"])
    res = evaluate_schedule(net, Schedule(net.name, maps), hw)
    return {"edp": res.edp, "cycles": res.latency_cycles, "energy_pj": res.energy_pj,
            "valid": res.valid, "problems": res.problems[:3]}


def peers_part(methods: list[str], networks: list[str], budget: Budget,
               seeds: list[int], zigzag_time: bool = False) -> dict[str, Any]:
    """With ``zigzag_time``, each network's budget is the time ZigZag's search took on it
    (summed over its unique layer shapes), so "faster than ZigZag" holds by construction
    and the question is only whether the EDP is lower."""
    peers = load_reference(PEERS)
    hws = architectures(peers, PEERS)
    out: dict[str, Any] = {}
    for arch, hw in hws.items():
        for network in networks:
            tot = peers["network_totals"][network][arch]
            row: dict[str, Any] = {
                "timeloop_edp": tot["timeloop-mapper"]["edp_of_sums_pJ_x_cycles"],
                "zigzag_edp": tot["zigzag"]["edp_of_sums_pJ_x_cycles"],
                "zigzag_search_s": tot["zigzag"]["search_wall_s_total"],
                "timeloop_search_s": tot["timeloop-mapper"]["search_wall_s_total"],
                "timeloop_rescored": rescored_mapper(peers, "timeloop-mapper", network, arch,
                                                     hw),
                "methods": {}}
            row["best_peer_edp"] = min(row["timeloop_edp"], row["zigzag_edp"])
            run_budget = Budget(seconds=row["zigzag_search_s"]) if zigzag_time else budget
            for m in methods:
                runs = []
                for seed in seeds:
                    res, _ = optimize(network, hw, m, run_budget, seed)
                    runs.append({"seed": seed, "edp": res.result.edp,
                                 "valid": res.result.valid, "wall_s": res.wall_s,
                                 "evaluations": res.evaluations})
                    print(f"  peers {arch} {network} {m} seed {seed}: "
                          f"{res.result.edp * 1e-12:.4g} J x cycles, {res.wall_s:.1f} s",
                          file=sys.stderr, flush=True)
                best = min(runs, key=lambda r: r["edp"])
                row["methods"][m] = {"runs": runs, "best_edp": best["edp"],
                                     "mean_wall_s": sum(r["wall_s"] for r in runs) / len(runs),
                                     "below_best_peer": best["edp"] < row["best_peer_edp"]}
            out.setdefault(arch, {})[network] = row
    return out


def per_layer_part(method: str, networks: list[str], budget: Budget, seed: int
                   ) -> dict[str, Any]:
    """Like for like with the mappers: per unique layer shape, our search on that layer alone
    (so the objective is the layer's own EDP, cycles x energy, and nothing is fused), within
    ``budget``, against the per-layer best of Timeloop's mapper and ZigZag from
    mapper_peers.json (their own cost models' figures, pJ x cycles, batch 1).  Reports, per
    network and array, the fraction of layer occurrences at or below the better mapper."""
    from optimizer.workload import Layer, Network

    peers = load_reference(PEERS)
    hws = architectures(peers, PEERS)
    by_id = {e["id"]: e for e in peers["entries"]}
    shapes = peers["unique_shapes"]
    out: dict[str, Any] = {"method": method, "budget_per_shape": budget.to_dict(),
                           "seed": seed, "edp_unit": "pJ x cycles", "batch": 1, "arrays": {}}
    want = {row["shape_id"] for n in networks for row in peers["networks"][n]}
    for arch, hw in hws.items():
        per_shape: dict[str, Any] = {}
        for sid in sorted(want):
            sh = shapes[sid]
            # only depthwise and matmul differ in our model (conv, fc, gemm are all dense)
            kind = sh["kind"] if sh["kind"] in ("depthwise", "matmul") else "conv"
            layer = Layer("layer", kind, dict(sh["dims"]), int(sh["stride"]))
            net = Network(sid, [layer])
            res, _ = optimize(net, hw, method, budget, seed)
            tl = by_id.get(f"timeloop-mapper/{arch}/{sid}")
            zz = by_id.get(f"zigzag/{arch}/{sid}")
            tl_edp = tl["results"]["edp_pJ_x_cycles"] if tl and tl["results"].get("valid") \
                else float("inf")
            zz_edp = zz["results"]["edp_pJ_x_cycles"] if zz and zz["results"].get("valid") \
                else float("inf")
            per_shape[sid] = {"ours": res.result.edp, "ours_raw": res.raw.edp,
                              "valid": res.result.valid, "timeloop": tl_edp, "zigzag": zz_edp,
                              "cpu_s": res.cpu_s}
            print(f"  per-layer {arch} {sid}: ours {res.result.edp:.4g} TL {tl_edp:.4g} "
                  f"ZZ {zz_edp:.4g}", file=sys.stderr, flush=True)
        nets = {}
        for n in networks:
            rows = peers["networks"][n]
            below = [per_shape[r["shape_id"]]["ours"] <= min(per_shape[r["shape_id"]]["timeloop"],
                                                            per_shape[r["shape_id"]]["zigzag"])
                     * (1 + 1e-9) for r in rows]
            ratios = [per_shape[r["shape_id"]]["ours"] / min(per_shape[r["shape_id"]]["timeloop"],
                                                            per_shape[r["shape_id"]]["zigzag"])
                      for r in rows]
            nets[n] = {"layers": len(rows), "at_or_below_better_mapper": sum(below),
                       "fraction": sum(below) / len(rows),
                       "geomean_ratio_to_better_mapper": math.exp(
                           sum(math.log(x) for x in ratios) / len(ratios))}
        out["arrays"][arch] = {"shapes": per_shape, "networks": nets}
    return out


def format_per_layer(p: dict[str, Any]) -> str:
    lines = [f"per-layer EDP (pJ x cycles, batch 1, fusion off) of {p['method']} vs the better "
             "of Timeloop's mapper and ZigZag, per layer occurrence"]
    for arch, a in p["arrays"].items():
        for n, r in a["networks"].items():
            lines.append(f"  {arch:<14} {n:<14} {r['at_or_below_better_mapper']:>3}/"
                         f"{r['layers']:<3} at or below ({r['fraction'] * 100:5.1f} %), "
                         f"geomean ratio {r['geomean_ratio_to_better_mapper']:.3f}")
    return "\n".join(lines)


ABLATIONS: dict[str, dict[str, Any]] = {
    "fadiff": {},                                   # everything on
    "eight-chains": {"chains": 8},                  # batched multi-start, restarts
    "linear-relax": {"log_relax": False},           # straight-through on the factors
    "unshared": {"share_shapes": False},            # one decision per layer
    "lr0": {"learn": False},                        # sampling only: no gradient step
    "no-fusion": {"fusion": False},
    "no-archive": {"archive": 0},                   # no re-assembly from the scored samples
}


def register_ablations(only: list[str] | None = None) -> list[str]:
    """FADiff with one component off at a time, registered as methods ``abl:<name>``."""
    from optimizer import fadiff

    names = []
    for name, kw in ABLATIONS.items():
        if only and name not in only:
            continue
        def run(space: Any, budget: Budget, seed: int = 0, progress: Any = None,
                cancel: Any = None, _kw: dict[str, Any] = kw, _name: str = name) -> Any:
            res = fadiff.run(space, budget, seed, progress, cancel,
                             settings=fadiff.FADiffSettings(**_kw))
            res.method = res.schedule.method = f"abl:{_name}"
            return res
        METHODS[f"abl:{name}"] = run
        names.append(f"abl:{name}")
    return names


def format_peers(p: dict[str, Any]) -> str:
    lines = []
    for arch, nets in p.items():
        methods = list(next(iter(nets.values()))["methods"])
        head = (f"{'network':<14} {'Timeloop':>10} {'TL rescored':>11} {'ZigZag':>10} "
                + " ".join(f"{m:>10}" for m in methods) + f" {'ZZ time s':>9}")
        lines += [f"network EDP (J x cycles) on {arch} vs the mappers (no fusion in the "
                  "mappers)", head, "-" * len(head)]
        for network, r in nets.items():
            resc = r["timeloop_rescored"]
            lines.append(
                f"{network:<14} {r['timeloop_edp'] * 1e-12:>10.4g} "
                f"{(resc['edp'] * 1e-12 if resc else float('nan')):>11.4g} "
                f"{r['zigzag_edp'] * 1e-12:>10.4g} "
                + " ".join(f"{r['methods'][m]['best_edp'] * 1e-12:>9.4g}"
                           + ("*" if r["methods"][m]["below_best_peer"] else " ")
                           for m in methods)
                + f" {r['zigzag_search_s']:>9.1f}")
        lines.append("* = below the better of Timeloop's and ZigZag's network EDP")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=["large", "small"])
    ap.add_argument("--networks", nargs="+", default=list(NETWORKS))
    ap.add_argument("--methods", nargs="+", default=None,
                    help="default: every registered method")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--evaluations", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="wall-clock budget, with "
                    "--peers-only only (not for comparisons: it moves with the machine's load)")
    ap.add_argument("--cpu-seconds", type=float, default=None,
                    help="CPU-second budget per run (default 5 when no other budget is given)")
    ap.add_argument("--no-refine", action="store_true", help="no refinement stage for anyone")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--no-peers", action="store_true", help="skip the mapper comparison")
    ap.add_argument("--ablation", action="store_true",
                    help="FADiff with one component off at a time (as methods abl:<name>)")
    ap.add_argument("--variants", nargs="+", default=None, choices=list(ABLATIONS),
                    help="with --ablation: only these variants")
    ap.add_argument("--per-layer", action="store_true",
                    help="only the per-layer comparison with the mappers (fusion off, each "
                         "layer's own EDP as the objective; the budget is per unique shape)")
    ap.add_argument("--peers-only", action="store_true", help="only the mapper comparison")
    ap.add_argument("--zigzag-time", action="store_true",
                    help="in the mapper comparison, give each network ZigZag's search time")
    ap.add_argument("--json", metavar="OUT.json", default=None)
    args = ap.parse_args(argv)
    if args.seconds is not None and not args.peers_only:
        # (run_comparison refuses wall-clock budgets: they move with the machine's load)
        ap.error("--seconds: a wall-clock budget is for the mapper comparison only "
                 "(--peers-only); comparisons between methods take --evaluations or "
                 "--cpu-seconds")
    import os

    import torch

    torch.set_num_threads(1)            # CPU seconds = one core's work, for every method
    methods = register_ablations(args.variants) if args.ablation else (args.methods or list(METHODS))
    budget = (Budget(evaluations=args.evaluations, seconds=args.seconds,
                     cpu_seconds=args.cpu_seconds)
              if args.evaluations or args.seconds or args.cpu_seconds
              else Budget(cpu_seconds=5.0))
    t0 = time.perf_counter()
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "machine": f"{platform.machine()}, Python "
                                         f"{platform.python_version()}, torch "
                                         f"{torch.__version__}, 1 torch thread",
                              "load_start": os.getloadavg(), "budget": budget.to_dict(),
                              "refine": not args.no_refine, "batch": args.batch,
                              "seeds": args.seeds, "methods": methods, "configs": {}}
    if args.per_layer:
        pl = per_layer_part(methods[0], args.networks, budget, args.seeds[0])
        print(format_per_layer(pl), flush=True)
        report["per_layer"] = pl
        args.no_peers, args.configs = True, []
    for cfg in ([] if args.peers_only else args.configs):
        comp = run_comparison(cfg, args.networks, methods, budget, args.seeds,
                              on_run=lambda r: print(f"  {r.network} {r.method} seed {r.seed}: "
                                                     f"raw {r.raw_edp:.4g} refined {r.edp:.4g} "
                                                     f"pJ x cycles, {r.cpu_s:.1f} CPU-s, "
                                                     f"{r.wall_s:.1f} s, load "
                                                     f"{os.getloadavg()[0]:.1f}",
                                                     file=sys.stderr, flush=True),
                              refine=not args.no_refine, batch=args.batch)
        print(format_table(comp), "\n", flush=True)
        report["configs"][cfg] = comp.to_json()
        if args.json:       # keep what is done if a later part is cut short
            atomic_write_text(args.json, json.dumps(report, indent=2, default=json_default))
    if not args.no_peers and PEERS.exists():
        peers = peers_part(methods, args.networks, budget, args.seeds, args.zigzag_time)
        print(format_peers(peers), flush=True)
        report["peers"] = peers
    report["wall_s"] = time.perf_counter() - t0
    report["load_end"] = os.getloadavg()
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=2, default=json_default))
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
