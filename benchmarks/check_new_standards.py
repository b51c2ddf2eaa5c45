"""Native DDR5 / LPDDR5 / HBM3 runs, their command traces checked by the JEDEC checker.

One command (from the repository root)::

    .venv/bin/python benchmarks/check_new_standards.py [--n 20000] [--out DIR] [--standards HBM3]

Generates the shared synthetic traces (``../shared/tools/gen_traces.py``, seed 7, one request
every 2 cycles), runs every new preset under each refresh kind its standard declares
(engine.standards), writes the per-channel command traces, checks each with
``engine.jedec_check.check_command_trace`` (written from the standards, not from the
engine's timing tables) and prints a Markdown table: requests, cycles, bandwidth, average
read latency, row hits (reads + writes), ACT / REF / REFB counts, commands checked and
violations.
"""
from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import standards  # noqa: E402
from engine.config import load_preset  # noqa: E402
from engine.jedec_check import check_command_trace  # noqa: E402
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace  # noqa: E402

NEW = ("DDR5", "LPDDR5", "HBM3")
TRACES = ("stream", "random", "mixed")


def runs(n: int, out: Path, protocols: tuple[str, ...] = NEW) -> list[dict]:
    tdir = out / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    gen = ROOT.parent / "shared" / "tools" / "gen_traces.py"
    subprocess.run([sys.executable, str(gen), "--n", str(n), "--interval", "2", "--seed", "7",
                    str(tdir)], check=True, stdout=subprocess.DEVNULL)
    rows = []
    for proto in protocols:
        std = standards.get(proto)
        for preset in std.presets:
            base = load_preset(preset)
            for policy in std.refresh_policies:
                if policy == "RANK_LEVEL_SIMULTANEOUS":
                    continue            # one rank per channel: the same as STAGGERED
                cfg = base.replace(refresh_policy=policy)
                for trace in TRACES:
                    cmd = out / f"{preset}_{policy}_{trace}.cmd"
                    st = simulate_trace(cfg, tdir / f"{trace}.trace", SimOptions(cmd_trace=cmd))
                    s = st.to_dict()["summary"] if "summary" in st.to_dict() else st.to_dict()
                    viol, ncmd = [], 0
                    for p in cmd_trace_paths(cmd, cfg.channels):
                        viol += check_command_trace(p, cfg)
                        ncmd += sum(1 for _ in p.open())
                    rows.append(dict(preset=preset, refresh=std.refresh_kind(policy).mnemonic,
                                     trace=trace, n=n, cycles=s["num_cycles"],
                                     bw=s["average_bandwidth"],
                                     lat=s["average_read_latency"], act=s["num_act_cmds"],
                                     hits=s["num_read_row_hits"] + s["num_write_row_hits"],
                                     ref=s["num_ref_cmds"], refb=s["num_refb_cmds"],
                                     cmds=ncmd, violations=len(viol),
                                     first=viol[0].message if viol else ""))
                    print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="requests per trace")
    ap.add_argument("--out", type=Path, default=None, help="folder for traces and command "
                    "traces (default: a temporary folder)")
    ap.add_argument("--standards", nargs="+", choices=NEW, default=list(NEW),
                    help="run only these standards' presets (default: all three)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        rows = runs(args.n, args.out or Path(tmp), tuple(args.standards))
    print("| preset | refresh | trace | requests | cycles | GB/s | avg read lat (cyc) | row hits "
          "| ACT | REF | REFB | commands checked | JEDEC violations |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['preset']} | {r['refresh']} | {r['trace']} | {r['n']} | {r['cycles']} | "
              f"{r['bw']:.2f} | {r['lat']:.1f} | {r['hits']} | {r['act']} | {r['ref']} | {r['refb']} | "
              f"{r['cmds']} | {r['violations']} |")
    bad = [r for r in rows if r["violations"]]
    for r in bad:
        print(f"\n{r['preset']} {r['refresh']} {r['trace']}: {r['first']}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
