"""Mechanisms behind the recommendations study's controller verdicts, from command traces.

    .venv/bin/python benchmarks/bench_recommendations.py BLOCK.h5 [BLOCK.h5 ...]
        [--platform DDR4-3200@8ch --platform HBM2] [--json out.json]

For each trace block (e.g. the study's derived blocks under $DIFFMEM_DERIVED_DIR) and
platform, runs the baseline, dynamic bank grouping, write priority -15 % and the 2 KB page
(where it applies) with command traces (requests offered as fast as the memory takes them, as the study does), and counts
what the engine's statistics do not: back-to-back column commands to the same bank group
(each pays tCCD_L) and to another one (tCCD_S), read/write bus turnarounds (a switch from a
read burst to a write burst or back: one per write drain and its return to reads), besides
cycles and row hits. Bounded: one block per file, each run ~1 s of CPU per 100k requests.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.simulator import SimOptions, Simulator, cmd_trace_paths  # noqa: E402
from engine.studies.command_counts import count_command_trace  # noqa: E402
from engine.studies.recommendations import _page_2kb, platform_config  # noqa: E402
from engine.trace import iter_trace  # noqa: E402
from engine.workloads.retarget import placed_for  # noqa: E402

VARIANTS = {"baseline": {}, "dynamic bank grouping": {"dynamic_bank_grouping": True},
            "write priority -15 %": {"write_priority_pct": 15.0}, "2 KB row buffer": None}
def run(cfg, trace: Path, cmd: Path) -> dict[str, float]:
    sim = Simulator(cfg, SimOptions(epoch=0, cmd_trace=cmd))
    try:
        for ch in iter_trace(trace, capacity_bytes=cfg.capacity_bytes):
            sim.feed(ch.addr, ch.is_write, np.zeros_like(ch.cycle), ch.stream)
        s = sim.finish().summary
    finally:
        sim.close()
    return {"cycles": int(s["num_cycles"]), "row_hit_rate": float(s["row_hit_rate"]),
            "energy_pJ": float(s["total_energy_with_io"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blocks", nargs="+", type=Path)
    ap.add_argument("--platform", action="append", default=None)
    ap.add_argument("--variant", action="append", default=None, choices=list(VARIANTS),
                    help="variants to run (default: all)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    platforms = args.platform or ["DDR4-3200@8ch", "HBM2"]
    results = []
    cpu0 = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        for block in args.blocks:
            for pname in platforms:
                base_cfg = platform_config(pname, {})
                for vname in args.variant or list(VARIANTS):
                    over = VARIANTS[vname]
                    if over is None:                      # 2 KB page at equal capacity
                        over = _page_2kb(base_cfg)
                        if over is None:
                            continue
                    cfg = base_cfg.replace(**over)
                    cmd = Path(tmp) / "cmd.trace"
                    # the block as placed for this memory (engine.workloads.retarget)
                    placed, _ = placed_for(block, cfg, Path(tmp) / "placed")
                    r = run(cfg, placed, cmd)
                    r.update(count_command_trace(cmd_trace_paths(cmd, cfg.channels)))
                    r.update(block=block.name, platform=pname, variant=vname)
                    results.append(r)
                    print(f"{block.name:<40} {pname:<14} {vname:<22} cycles {r['cycles']:>9} "
                          f"hits {100 * r['row_hit_rate']:5.1f} %  same-BG pairs "
                          f"{r['same_bg_pairs']:>7} other-BG {r['other_bg_pairs']:>7}  "
                          f"R/W turnarounds {r['rw_turnarounds']:>6}  active channels "
                          f"{r['active_channels']:.2f}", flush=True)
                    for p in cmd_trace_paths(cmd, cfg.channels):
                        Path(p).unlink(missing_ok=True)
    cpu = time.process_time() - cpu0
    print(f"CPU {cpu:.1f} s, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}"
          " MB")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "cpu_s": cpu}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
