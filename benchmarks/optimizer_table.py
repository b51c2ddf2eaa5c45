"""The full like-for-like table of issue 13, resumable: every (config, network, method, seed)
run appends one JSON line to a results file as soon as it ends, so a run cut short keeps what
it did, and a second call skips the runs already there.

    .venv/bin/python benchmarks/optimizer_table.py --out RUNS.jsonl \
        [--configs large small] [--networks ...] [--methods fadiff ga dosa random bo] \
        [--seeds 0 1 2 3 4] [--cpu-seconds 5 | --evaluations N [--cpu-cap bo=5]] [--tag NAME]
    .venv/bin/python benchmarks/optimizer_table.py --out RUNS.jsonl --report [--tag NAME]
    .venv/bin/python benchmarks/optimizer_table.py --out RUNS.jsonl --targets \
        --networks resnet18 gpt3_6.7b_ffn [--seeds 0 1]

Every run: ``optimizer.methods.optimize`` with the same CPU-second budget (one torch thread),
or with ``--evaluations N`` the same count of layer-mapping evaluations (one layer scored
under one mapping, counted alike for every method: ``optimizer.search.Budget``; the search
gets ``int(N / 2)`` of them, ``optimizer.methods.REFINE_SHARE``, the refinement what the
search left, N less the search's evaluations; the budget is then load-independent by
construction), the same exact evaluator and the same refinement stage; a line holds the raw (search only)
and refined EDP (pJ x cycles, batch 1), CPU-s, evaluations, fused edges, validity, the load
average and the commit.  ``--report`` prints the markdown tables (mean over the seeds and
relative sd per network, method and column; geometric-mean ratios).  ``--cpu-cap M=T`` adds
a CPU-second limit to method M's budget (whichever comes first), for a method that cannot
reach N at a bearable cost (BO: Optuna's TPE costs more per trial as trials accumulate); each
line records which limit ended the search (``search_stopped_by``).  ``--tag`` keeps variants
of a method (e.g. FADiff at two commits) apart in one file.  ``--fused-halo slide`` runs the
cost model with Timeloop's sliding window for fused groups' first layers instead of the
default halo re-fetch (``optimizer.costmodel.FUSED_HALO``, for the whole process; recorded in
each line as ``fused_halo``): the before/after of that model change at one commit.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def read_runs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    runs = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            runs.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{i}: not a JSON line ({exc})") from exc
    return runs


#: what a record's figures mean: 2 from 2026-12-08 (raw_edp is FADiff's search without its
#: layer-wise archive, post_edp with it; the baselines search the fused space). Records of
#: another version are neither reused nor tabulated beside these.
RECORD_VERSION = 2


def _key(r: dict[str, Any]) -> tuple[str, str, str, int, str]:
    return (r["config"], r["network"], r["method"], int(r["seed"]), r.get("tag", ""))


def _current(runs: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """The runs recorded with this RECORD_VERSION (the others named on stderr)."""
    old = [r for r in runs if r.get("record", 1) != RECORD_VERSION]
    if old:
        print(f"{path}: {len(old)} record(s) of another version left out (their raw EDP "
              "meant something else); they are run again", file=sys.stderr)
    return [r for r in runs if r.get("record", 1) == RECORD_VERSION]


def run_all(args: argparse.Namespace) -> None:
    import torch

    from optimizer.methods import optimize
    from optimizer.search import Budget

    import optimizer.costmodel as costmodel

    torch.set_num_threads(args.threads)
    costmodel.FUSED_HALO = args.fused_halo
    out = Path(args.out)
    done = {_key(r) for r in _current(read_runs(out), out)}
    commit = _commit()
    caps = parse_caps(args.cpu_cap)

    def budget_for(method: str) -> Budget:
        if args.evaluations is None:
            return Budget(cpu_seconds=args.cpu_seconds)
        return Budget(evaluations=args.evaluations, cpu_seconds=caps.get(method))
    if args.ablation:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_optimizer import register_ablations
        register_ablations(args.ablation)
    for seed in args.seeds:                 # seeds outermost: every network gets seed 0 first
        for cfg in args.configs:
            for net in args.networks:
                for m in args.methods:
                    k = (cfg, net, m, seed, args.tag)
                    if k in done:
                        continue
                    budget = budget_for(m)
                    res, space = optimize(net, cfg, m, budget, seed,
                                          refine=not args.no_refine)
                    raw = res.raw if res.raw is not None else res.result
                    # the final schedule under both fused-input rules: the halo bytes it pays
                    # (refetch - slide) and its EDP under the rule it was not searched with
                    other = "slide" if args.fused_halo == "refetch" else "refetch"
                    sched = res.schedule
                    both = {rule: costmodel.evaluate_schedule(space.net, sched, space.hw, rule)
                            for rule in ("refetch", "slide")}
                    first = {e[0] for e in sched.fused} - {e[1] for e in sched.fused}
                    tiles = {a: sched.mappings[a].temporal[0]["P"]
                             * sched.mappings[a].temporal[0]["Q"]
                             * sched.mappings[a].temporal[0]["N"] for a in sorted(first)}
                    rec = {"record": RECORD_VERSION,
                           "config": cfg, "network": net, "method": m, "seed": seed,
                           "tag": args.tag, "refine": not args.no_refine,
                           "raw_edp": raw.edp, "raw_valid": raw.valid,
                           "raw_fused": len(raw.fused),
                           # after the method's own post-processing (FADiff's archive, which
                           # raw_edp no longer includes); = raw_edp for the other methods
                           "post_edp": (res.post or raw).edp,
                           "edp": res.result.edp,
                           "valid": res.result.valid, "fused": len(res.result.fused),
                           "energy_pj": res.result.energy_pj,
                           "latency_cycles": res.result.latency_cycles,
                           "cpu_s": res.cpu_s, "wall_s": res.wall_s,
                           "evaluations": res.evaluations,
                           "raw_evaluations": res.raw_evaluations,
                           "budget_cpu_s": budget.cpu_seconds,
                           "budget_evaluations": budget.evaluations,
                           "search_stopped_by": _stopped_by(budget, res, not args.no_refine),
                           "fused_halo": args.fused_halo,
                           "fused_edges": [list(e) for e in sched.fused],
                           "first_layer_dram_tiles": tiles,
                           "halo_bytes": both["refetch"].dram_bytes - both["slide"].dram_bytes,
                           "edp_other_rule": both[other].edp,
                           "load": os.getloadavg()[0],
                           "commit": commit,
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
                    with out.open("a") as fh:
                        fh.write(json.dumps(rec) + "\n")
                    print(f"{cfg} {net} {m} seed {seed}: raw {raw.edp:.4g} refined "
                          f"{res.result.edp:.4g}, {res.cpu_s:.2f} CPU-s, load "
                          f"{rec['load']:.1f}", flush=True)


def parse_caps(items: list[str] | None) -> dict[str, float]:
    """``["bo=5"]`` -> ``{"bo": 5.0}``: the per-method CPU-second caps of ``--cpu-cap``."""
    caps: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            caps[name] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name or not caps[name] > 0:
            raise SystemExit(f"--cpu-cap: expected METHOD=CPU_SECONDS (> 0), got {item!r}")
    return caps


def _stopped_by(budget: Any, res: Any, refine: bool) -> str:
    """Which limit ended the search stage: with no evaluation budget, the CPU-seconds; with
    one and no CPU cap, the evaluations; with both, "evaluations" when the search spent at
    least 90 % of its evaluation share (a method stops short of it by less than one step:
    one candidate schedule, or one FADiff step of 9 K L), else "cpu_seconds"."""
    if budget.evaluations is None:
        return "cpu_seconds"
    if budget.cpu_seconds is None:
        return "evaluations"
    from optimizer.methods import REFINE_SHARE

    share = budget.share(1 - REFINE_SHARE).evaluations if refine else budget.evaluations
    return "evaluations" if res.raw_evaluations >= 0.9 * share else "cpu_seconds"


def _budget_text(rs: list[dict[str, Any]]) -> str:
    """The runs' budget as the table header states it."""
    evs = sorted({r.get("budget_evaluations") for r in rs} - {None})
    if not evs:
        return f"{rs[0]['budget_cpu_s']:g} CPU-s per run"
    caps = sorted({(r["method"], r["budget_cpu_s"]) for r in rs
                   if r.get("budget_evaluations") and r.get("budget_cpu_s")})
    text = "/".join(f"{n:,}" for n in evs) + " layer-mapping evaluations per run"
    if caps:
        text += " (" + ", ".join(f"{m} capped at {c:g} CPU-s" for m, c in caps) + ")"
    return text


def _geo(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(args: argparse.Namespace) -> str:
    runs = [r for r in _current(read_runs(Path(args.out)), Path(args.out))
            if (not args.tag or r.get("tag", "") in
                                                      args.tag) and int(r["seed"]) in args.seeds]
    lines: list[str] = []
    label = (lambda r: r["method"] + (f"[{r['tag']}]" if r.get("tag") else ""))
    configs = [c for c in args.configs if any(r["config"] == c for r in runs)]
    for cfg in configs:
        rs = [r for r in runs if r["config"] == cfg]
        methods = list(dict.fromkeys(label(r) for r in rs))
        if args.methods_order:          # these methods only, in this order
            methods = [m for m in args.methods_order if m in methods]
        nets = [n for n in args.networks if any(r["network"] == n for r in rs)]
        # the runs of the table only: its networks and methods (the run count, loads, CPU-s
        # and fused edges below were over every run of the config in the file before)
        rs = [r for r in rs if r["network"] in nets and label(r) in methods]
        cell: dict[tuple[str, str, str], list[float]] = {}
        for r in rs:
            cell.setdefault((r["network"], label(r), "raw"), []).append(r["raw_edp"])
            cell.setdefault((r["network"], label(r), "refined"), []).append(r["edp"])
        seeds = sorted({int(r["seed"]) for r in rs})
        loads = [r["load"] for r in rs]
        lines.append(f"**{cfg}** (gemmini-{cfg}, {_budget_text(rs)}, "
                     f"seeds {', '.join(map(str, seeds))}; {len(rs)} runs, load "
                     f"{min(loads):.1f}-{max(loads):.1f}): mean EDP (pJ x cycles, batch 1) over "
                     "the seeds (relative sd; n = seeds when not all)")
        lines.append("")
        lines.append("| network | column | " + " | ".join(methods) + " |")
        lines.append("|---|---|" + "---:|" * len(methods))
        full: list[str] = []          # networks every method has for the geomeans
        for n in nets:
            if all((n, m, "raw") in cell for m in methods):
                full.append(n)
            for col in ("raw", "refined"):
                cells = []
                for m in methods:
                    v = cell.get((n, m, col))
                    if not v:
                        cells.append("-")
                        continue
                    mean = sum(v) / len(v)
                    sd = statistics.stdev(v) / mean if len(v) > 1 else 0.0
                    nn = "" if len(v) == len(seeds) else f", n={len(v)}"
                    cells.append(f"{mean:.3e} ({sd * 100:.0f} %{nn})")
                lines.append(f"| {n} | {col} | " + " | ".join(cells) + " |")
        for base in ("ga", "dosa", "random"):
            if base not in methods or not full:
                continue
            for col in ("raw", "refined"):
                vals = []
                for m in methods:
                    rat = [(sum(cell[(n, m, col)]) / len(cell[(n, m, col)]))
                           / (sum(cell[(n, base, col)]) / len(cell[(n, base, col)]))
                           for n in full]
                    vals.append(f"{_geo(rat):.3f}")
                lines.append(f"| geomean / {base} | {col} | " + " | ".join(vals) + " |")
        cpu = {m: [r["cpu_s"] for r in rs if label(r) == m] for m in methods}
        fused = {m: sum(r["fused"] for r in rs if label(r) == m) for m in methods}
        lines.append("")
        if any(r.get("budget_evaluations") for r in rs):
            lines.append("mean evaluations per run, search / total: " + ", ".join(
                f"{m} {_mean([r['raw_evaluations'] for r in rs if label(r) == m]):,.0f} / "
                f"{_mean([r['evaluations'] for r in rs if label(r) == m]):,.0f}"
                for m in methods) + "; CPU-s per run, mean (min-max) by network: " + "; ".join(
                f"{n}: " + ", ".join(
                    f"{m} {_mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" for m in methods
                    if (v := [r["cpu_s"] for r in rs if label(r) == m and r["network"] == n]))
                for n in nets))
            lines.append("")
        lines.append("mean CPU-s per run: " + ", ".join(
            f"{m} {sum(v) / len(v):.2f}" for m, v in cpu.items()) +
            f"; all valid: {all(r['valid'] for r in rs)}; fused edges in the final schedules "
            "(sum over runs): " + ", ".join(f"{m} {v}" for m, v in fused.items()) +
            f"; geomeans over {', '.join(full)}")
        lines.append("")
    return "\n".join(lines)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


#: issue 13's targets: (numerator method, its column, denominator method, its column, bound)
TARGETS = (("fadiff", "raw", "ga", "raw", 0.9), ("fadiff", "raw", "dosa", "raw", 0.9),
           ("fadiff", "refined", "random", "refined", 0.95))


def targets(args: argparse.Namespace) -> str:
    """Issue 13's targets table: per network, the ratio of the two methods' mean EDP over
    the seeds both have; the geometric mean over the networks against the bound; and on how
    many seeds the numerator is the lower."""
    runs = [r for r in _current(read_runs(Path(args.out)), Path(args.out))
            if int(r["seed"]) in args.seeds
            and (not args.tag or r.get("tag", "") in args.tag)]
    nets = [n for n in args.networks if any(r["network"] == n for r in runs)]
    lines = ["| | config | seeds | " + " | ".join(nets) + " | geomean | wins (seeds) | target |",
             "|---|---|---|" + "---:|" * len(nets) + "---:|---:|---|"]
    for num, ncol, den, dcol, bound in TARGETS:
        for cfg in args.configs:
            def edps(m: str, net: str, col: str) -> dict[int, float]:
                return {int(r["seed"]): r["raw_edp" if col == "raw" else "edp"] for r in runs
                        if r["config"] == cfg and r["network"] == net and r["method"] == m}
            ratios, seeds_used, wins, pairs = [], set(), 0, 0
            for net in nets:
                a, b = edps(num, net, ncol), edps(den, net, dcol)
                common = sorted(set(a) & set(b))
                if not common:
                    ratios.append(math.nan)
                    continue
                seeds_used |= set(common)
                ratios.append((sum(a[s] for s in common) / len(common))
                              / (sum(b[s] for s in common) / len(common)))
                wins += sum(a[s] < b[s] for s in common)
                pairs += len(common)
            ok = [x for x in ratios if math.isfinite(x)]
            if not ok:
                continue
            geo = _geo(ok)
            verdict = ("met" if geo <= bound else "missed") if len(ok) == len(nets) else "incomplete"
            lines.append(f"| {num} {ncol} / {den} {dcol} | {cfg} | {len(seeds_used)} | "
                         + " | ".join("-" if not math.isfinite(x) else f"{x:.3f}"
                                      for x in ratios)
                         + f" | {geo:.3f} | {wins} of {pairs} | <= {bound:g}: {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from optimizer.workload import NETWORKS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON-lines results file (appended)")
    ap.add_argument("--configs", nargs="+", default=["large", "small"])
    ap.add_argument("--networks", nargs="+", default=list(NETWORKS))
    ap.add_argument("--methods", nargs="+", default=["fadiff", "ga", "dosa", "random", "bo"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--cpu-seconds", type=float, default=5.0,
                    help="budget per run in process CPU-s (default 5; unused with --evaluations)")
    ap.add_argument("--evaluations", type=int, default=None, metavar="N",
                    help="budget per run in layer-mapping evaluations, the same for every "
                         "method (as main.py optimize --evaluations): the search gets N/2, the "
                         "refinement the rest")
    ap.add_argument("--cpu-cap", nargs="+", default=None, metavar="METHOD=T",
                    help="with --evaluations: also stop METHOD after T CPU-s (whichever first)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-refine", action="store_true")
    ap.add_argument("--ablation", nargs="+", default=None,
                    help="register these FADiff ablations (bench_optimizer.ABLATIONS) as "
                         "methods abl:<name>")
    ap.add_argument("--tag", default="", help="label of this batch of runs (kept apart)")
    ap.add_argument("--fused-halo", choices=["refetch", "slide"], default="refetch",
                    help="the fused-input rule of the cost model (default: refetch)")
    ap.add_argument("--report", action="store_true", help="print the tables and exit")
    ap.add_argument("--targets", action="store_true",
                    help="print issue 13's targets table (ratios per network, geomean, wins) "
                         "and exit")
    ap.add_argument("--methods-order", nargs="+", default=None,
                    help="with --report: only these methods, in this order")
    ap.add_argument("--tags", dest="tag_filter", nargs="+", default=None)
    args = ap.parse_args(argv)
    if args.evaluations is not None and args.evaluations <= 0:
        ap.error("--evaluations must be positive")
    if args.cpu_cap and args.evaluations is None:
        ap.error("--cpu-cap needs --evaluations")
    if args.report or args.targets:
        args.tag = args.tag_filter
        print(targets(args) if args.targets else report(args))
        return 0
    run_all(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
