"""Agreement with DRAMsim3 on the full reference set (../shared/reference/dramsim3/results).

    .venv/bin/python benchmarks/accuracy_dramsim3.py [--traces DIR] [--markdown]

Runs every (config, trace) of the reference set to completion with DRAMsim3's end-of-trace
quirk reproduced (phantom READ), exactly as the reference runs were made, and reports the
relative difference of each figure the engine issue asks for: average read latency, row hits,
ACT count and bandwidth (tolerance 2 %), and total energy in pJ (tolerance 4 %).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine import ensure_traces  # noqa: E402
from engine.config import load_ini  # noqa: E402
from engine.simulator import SimOptions, simulate_trace  # noqa: E402

TOL = {"avg_read_latency": 0.02, "row_hits": 0.02, "act": 0.02, "bandwidth": 0.02,
       "energy_pJ": 0.04}


def compare(cfg_name: str, trace: Path, ref: dict) -> dict:
    cfg = load_ini(SHARED / "dramsim3-configs" / f"{cfg_name}.ini")
    s = simulate_trace(cfg, trace, SimOptions(phantom_eof_read=True, epoch=0)).summary
    ours = {"cycles": s["num_cycles"], "avg_read_latency": s["average_read_latency"],
            "row_hits": s["num_read_row_hits"] + s["num_write_row_hits"],
            "act": s["num_act_cmds"], "bandwidth": s["average_bandwidth"],
            "energy_pJ": s["total_energy"]}
    theirs = {"cycles": ref["cycles_simulated"],
              "avg_read_latency": ref["average_read_latency_cycles"],
              "row_hits": ref["num_read_row_hits"] + ref["num_write_row_hits"],
              "act": ref["num_act_cmds"], "bandwidth": ref["average_bandwidth_GBps_dramsim3"],
              "energy_pJ": ref["energy_pJ_tck_corrected"]["total_energy"]}
    rel = {k: (ours[k] - theirs[k]) / theirs[k] if theirs[k] else float(ours[k] != 0)
           for k in ours}
    ok = all(abs(rel[k]) <= t for k, t in TOL.items())
    return {"config": cfg_name, "trace": trace.name, "ours": ours, "dramsim3": theirs,
            "rel": rel, "within_tolerance": ok}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=ROOT / "benchmarks" / ".traces")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    ensure_traces(args.traces)
    rows = []
    for f in sorted((SHARED / "reference/dramsim3/results").glob("*.json")):
        ref = json.loads(f.read_text())
        cfg_name = ref["config"].removesuffix(".ini")
        trace = args.traces / ref["trace_dir"] / ref["trace"]
        r = compare(cfg_name, trace, ref)
        rows.append(r)
        worst = max(abs(v) for v in r["rel"].values())
        print(f"{cfg_name:20s} {ref['trace_dir'] + '/' + ref['trace']:26s} worst |rel| "
              f"{worst:.2e}  {'ok' if r['within_tolerance'] else 'OUT OF TOLERANCE'}",
              flush=True)
    if args.markdown:
        print("\n| config | trace | cycles | avg read lat (cyc) | row hits | ACT | BW GB/s |"
              " energy pJ | max rel. diff |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            o = r["ours"]
            print(f"| {r['config']} | {r['trace']} | {o['cycles']:,} | "
                  f"{o['avg_read_latency']:.2f} | {o['row_hits']:,} | {o['act']:,} | "
                  f"{o['bandwidth']:.3f} | {o['energy_pJ']:.4g} | "
                  f"{max(abs(v) for v in r['rel'].values()):.1e} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if not r["within_tolerance"]]
    print(f"{len(rows) - len(bad)}/{len(rows)} runs within tolerance")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
