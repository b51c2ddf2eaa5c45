"""`--cycles N` against DRAMsim3's `-c N`: every run of tests/data/reference/dramsim3-cycles
(N inside the trace, 3x + 4321 and 5e7 cycles after it, addresses above the capacity) and the
22 reference runs at DRAMsim3's own N, compared statistic by statistic, with the old
"stop when done" semantics (`--max-cycles N`) beside it.

    .venv/bin/python benchmarks/cycles_dramsim3.py [--markdown] [--no-full]

Prints, per run, whether our figures equal DRAMsim3's (every counter of dramsim3.json summed
over channels: cycles, reads, writes, read/write commands, row hits, ACT, PRE, on-demand PRE,
REF, REFb, dual commands; energies act/read/write/ref/refb/total to 1e-9; bandwidth and
average read latency), and which statistics `--max-cycles N` gets wrong.
"""
from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT))

from engine.config import load_ini  # noqa: E402
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace  # noqa: E402

COUNTERS = ("num_cycles", "num_reads_done", "num_writes_done", "num_read_cmds",
            "num_write_cmds", "num_read_row_hits", "num_write_row_hits", "num_act_cmds",
            "num_pre_cmds", "num_ondemand_pres", "num_ref_cmds", "num_refb_cmds",
            "hbm_dual_cmds")
ENERGIES = ("act_energy", "read_energy", "write_energy", "ref_energy", "refb_energy",
            "total_energy")


def differing(s: dict, channels: dict) -> list[str]:
    bad = []
    for k in COUNTERS:
        ref = channels["0"][k] if k == "num_cycles" else sum(c[k] for c in channels.values())
        if s[k] != ref:
            bad.append(k)
    for k in ENERGIES + ("average_bandwidth",):
        ref = sum(c[k] for c in channels.values())
        ours = s["dramsim3_units"][k] if k in ENERGIES else s[k]
        if abs(ours - ref) > 1e-9 * max(1.0, abs(ref)):
            bad.append(k)
    reads = sum(c["num_reads_done"] for c in channels.values())
    lat = sum(c["average_read_latency"] * c["num_reads_done"] for c in channels.values())
    if abs(s["average_read_latency"] - (lat / reads if reads else 0.0)) > 1e-9:
        bad.append("average_read_latency")
    return bad


def head(src: Path, dst: Path, n: int) -> Path:
    with open(src) as f:
        dst.write_text("".join(next(f) for _ in range(n)))
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-full", action="store_true", help="skip the 22 full reference runs")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cycles-ds3-"))
    gen = DATA / "tools" / "gen_traces.py"
    subprocess.run([sys.executable, str(gen), str(tmp / "traces"), "--n", "200000"],
                   check=True, capture_output=True)
    rows = []
    runs = json.loads((DATA / "reference/dramsim3-cycles/runs.json").read_text())["runs"]
    for run in runs:
        cfg = load_ini(DATA / "dramsim3-configs" / f"{run['config']}.ini")
        tr = head(tmp / "traces" / f"{run['pattern']}.trace", tmp / "h.trace", run["head"])
        if run["wrap_bits"]:
            lines = tr.read_text().splitlines()
            tr.write_text("".join(
                f"{int(a, 16) | (run['wrap_bits'] if i % 2 else 0):#x} {op} {c}\n"
                for i, (a, op, c) in enumerate(ln.split() for ln in lines)))
        wrap = bool(run["wrap_bits"])
        cmd = tmp / "cmd.trace"
        s = simulate_trace(cfg, tr, SimOptions(cycles=run["cycles"], phantom_eof_read=True,
                                               epoch=10**9, cmd_trace=cmd,
                                               wrap_addresses=wrap)).summary
        ours = sorted(ln.split() for p in cmd_trace_paths(cmd, cfg.channels)
                      for ln in p.read_text().splitlines())
        ref = []
        for ch in range(cfg.channels):
            f = DATA / f"reference/dramsim3-cycles/cmdtrace/{run['name']}.ch{ch}.cmd.trace.gz"
            with gzip.open(f, "rt") as fh:
                ref += [ln.split() for ln in fh if ln.strip()]
        fast = simulate_trace(cfg, tr, SimOptions(cycles=run["cycles"], phantom_eof_read=True,
                                                  epoch=10**9, wrap_addresses=wrap)).summary
        old = simulate_trace(cfg, tr, SimOptions(max_cycles=run["cycles"],
                                                 phantom_eof_read=True, epoch=10**9,
                                                 wrap_addresses=wrap)).summary
        rows.append({"run": run["name"], "cycles": run["cycles"], "kind": run["kind"],
                     "commands": len(ref), "commands_equal": ours == sorted(ref),
                     "stats_diff": differing(s, run["channels"]),
                     "closed_form_diff": differing(fast, run["channels"]),
                     "skipped": fast["idle_cycles_skipped_in_closed_form"],
                     "max_cycles_diff": differing(old, run["channels"]),
                     "pending": s["num_requests_pending"], "waiting": s["num_requests_waiting"]})
        print(rows[-1]["run"], "ok" if rows[-1]["commands_equal"] and not rows[-1]["stats_diff"]
              else "DIFFERS", flush=True)
    if not args.no_full:
        subprocess.run([sys.executable, str(gen), str(tmp / "traces1m"), "--n", "1000000"],
                       check=True, capture_output=True)
        for f in sorted((DATA / "reference/dramsim3/results").glob("*.json")):
            ref = json.loads(f.read_text())
            raw = json.loads((f.parent / "raw" / f"{f.stem}.dramsim3.json").read_text())
            cfg = load_ini(DATA / "dramsim3-configs" / ref["config"])
            tr = tmp / ref["trace_dir"] / ref["trace"]
            s = simulate_trace(cfg, tr, SimOptions(cycles=ref["cycles_simulated"],
                                                   phantom_eof_read=True, epoch=0)).summary
            rows.append({"run": f.stem + " (reference, N = DRAMsim3's)",
                         "cycles": ref["cycles_simulated"], "kind": "reference",
                         "commands": None, "commands_equal": None,
                         "stats_diff": differing(s, raw), "closed_form_diff": [],
                         "skipped": 0, "max_cycles_diff": None, "pending": 0, "waiting": 0})
            print(rows[-1]["run"], "ok" if not rows[-1]["stats_diff"] else "DIFFERS",
                  flush=True)
    if args.markdown:
        print("\n| run | N | DRAMsim3 commands | commands equal | statistics equal | "
              "closed form equal (idle cycles skipped) | pending / waiting at N | "
              "`--max-cycles N` differs in |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            cf = ("yes" if not r["closed_form_diff"] else ", ".join(r["closed_form_diff"]))
            print(f"| {r['run']} | {r['cycles']:,} | "
                  f"{'' if r['commands'] is None else format(r['commands'], ',')} | "
                  f"{'' if r['commands_equal'] is None else ('yes' if r['commands_equal'] else 'NO')} | "
                  f"{'yes' if not r['stats_diff'] else ', '.join(r['stats_diff'])} | "
                  f"{cf} ({r['skipped']:,}) | {r['pending']} / {r['waiting']} | "
                  f"{'not run (N = when done)' if r['max_cycles_diff'] is None else ', '.join(r['max_cycles_diff']) or '-'} |")
    n_ok = sum(1 for r in rows if not r["stats_diff"] and r["commands_equal"] is not False
               and not r["closed_form_diff"])
    n_old = sum(1 for r in rows if r["max_cycles_diff"])
    print(f"\n{n_ok}/{len(rows)} runs identical to DRAMsim3; --max-cycles N (stop when done) "
          f"differs in {n_old}")
    return 0 if n_ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
