"""The recommendations table under the two front-end intakes, side by side (issues 18/12).

    .venv/bin/python benchmarks/compare_intake_recommendations.py DIR_DRAMSIM3 DIR_PER_CHANNEL
        [--markdown]

Each DIR is the --out folder of one `python main.py study recommendations ...` run on the same
traces and parameters, one with `--intake dramsim3` and one with `--intake per-channel` (the
study's default). For each (platform, workload, recommendation): the change in step DRAM time
and energy per sample with their 95 % intervals and verdicts under each intake, whether the
time verdict changed, the mechanism column of the per-channel run, and per platform the
median cycles per request (and per request x channels) of the baseline points with the
front-end-bound note of each run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.studies.catalog import get_study, join  # noqa: E402
from engine.studies.sinks import RESULTS_FILE, STUDY_FILE  # noqa: E402


def load(folder: Path) -> tuple[dict, list[dict]]:
    doc = json.loads((folder / STUDY_FILE).read_text())
    recs = [json.loads(line) for line in (folder / RESULTS_FILE).read_text().splitlines()
            if line.strip()]
    return doc, recs


def table(folder: Path) -> tuple[dict[tuple[str, str, str], list], list[str], dict]:
    doc, recs = load(folder)
    a = get_study("recommendations").analyse(doc, recs)
    t = a.tables[0]
    col = {c: i for i, c in enumerate(t.columns)}
    rows = {(r[col["platform"]], r[col["workload"]], r[col["recommendation"]]): r
            for r in t.rows}
    rows_joined, _ = join(doc, recs)
    cpr: dict[str, list[float]] = {}
    for r in rows_joined:
        if r.tags.get("variant") != "baseline":
            continue
        n = r.m.get("reads", 0) + r.m.get("writes", 0)
        if n:
            w = r.m.get("channels", 1) if r.m.get("intake") == "per-channel" else 1
            cpr.setdefault(r.tags["platform"], []).append(r.m["cycles"] * w / n)
    notes = [n for n in a.notes if n.startswith("Front-end bound")]
    return {"rows": rows, "col": col}, notes, {p: statistics.median(v) for p, v in cpr.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dramsim3", type=Path)
    ap.add_argument("per_channel", type=Path)
    args = ap.parse_args()
    (a, na, ca), (b, nb, cb) = table(args.dramsim3), table(args.per_channel)
    col = b["col"]
    print("| # | recommendation | platform | workload | Δ time % dramsim3 intake | Δ time % "
          "per-channel | verdict time (d3 -> pc) | Δ energy/sample % per-channel | verdict "
          "energy/sample (d3 -> pc) | counters that moved (per-channel) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    changed = 0
    for key, rb in b["rows"].items():
        ra = a["rows"].get(key)
        if ra is None:
            continue
        vt_a, vt_b = ra[col["verdict (time)"]], rb[col["verdict (time)"]]
        ve_a, ve_b = ra[col["verdict (energy/sample)"]], rb[col["verdict (energy/sample)"]]
        mark = "" if vt_a == vt_b else " **changed**"
        changed += vt_a != vt_b
        print(f"| {rb[col['#']]} | {key[2]} | {key[0]} | {key[1]} | "
              f"{ra[col['Δ DRAM time % [95 % CI]']]} | {rb[col['Δ DRAM time % [95 % CI]']]} | "
              f"{vt_a} -> {vt_b}{mark} | {rb[col['Δ energy/sample % [95 % CI]']]} | "
              f"{ve_a} -> {ve_b} | {rb[col['mechanism']]} |")
    print(f"\ntime verdicts changed: {changed} of {len(b['rows'])}")
    for p in sorted(set(ca) | set(cb)):
        print(f"{p}: baseline median cycles per request (x channels for per-channel): "
              f"dramsim3 intake {ca.get(p, float('nan')):.3f}, per-channel "
              f"{cb.get(p, float('nan')):.3f}")
    print("dramsim3 intake note:", na or "none")
    print("per-channel note:", nb or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
