"""Make the DRAMsim3 reference runs for memories with more command queues than the kernel's
due-queue mask holds (tests/data/reference/dramsim3-wide/).

    .venv/bin/python benchmarks/make_dramsim3_wide_refs.py --dramsim3 /work/tools/ds3cmd

The kernel's DRAMsim3 scheduler keeps a bit mask of the queues due for a look (engine/kernel.py,
QMASK_MAX = 62 queues); with more queues it falls back to the plain round-robin scan. No stock
DRAMsim3 config has more than 32 queues, so this script derives two from DRAMsim3's own
DDR4_8Gb_x8_3200.ini by raising `channel_size` (DRAMsim3 derives the rank count from it):
4 ranks (64 per-bank queues) and 8 ranks (128). Needs a DRAMsim3 build OUTSIDE this repository
(umd-memsys/DRAMsim3 @ 29817593, `cmake -DCMAKE_BUILD_TYPE=Release -DCMD_TRACE=1`):
DIR/build/dramsim3main and DIR/src/configs/. Traces: the first 2,000 lines of the reference
generator's stream, random and mixed traces (tests/data/tools/gen_traces.py --n 200000, seed 7).
Each run goes to N = 30,000 cycles (past the trace's end: refresh and write drains included);
the mixed trace also to N = 3,000 (the run ends inside the trace). Writes runs.json (per run:
config file, trace, cycles, per-channel counters of DRAMsim3's dramsim3.json), configs/*.ini and
cmdtrace/*.cmd.trace.gz.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
OUT = DATA / "reference" / "dramsim3-wide"
BASE = "DDR4_8Gb_x8_3200"
CHANNEL_SIZES = {4: 32768, 8: 65536}      # ranks -> channel_size (MB) of the derived configs
PATTERNS = ("stream", "random", "mixed")
HEAD = 2000
CYCLES = 30_000
SHORT = 3_000


def derived_ini(src: Path, dst: Path, channel_size: int) -> Path:
    text = src.read_text()
    old = "channel_size = 16384"
    if old not in text:
        raise SystemExit(f"{src}: expected the line {old!r}")
    dst.write_text(f"; {BASE}.ini of DRAMsim3 @ 29817593 with channel_size = {channel_size} "
                   f"(made by benchmarks/make_dramsim3_wide_refs.py)\n"
                   + text.replace(old, f"channel_size = {channel_size}"))
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dramsim3", type=Path, required=True,
                    help="folder with build/dramsim3main and src/configs/")
    args = ap.parse_args()
    # the comparison script's helpers: one home for running DRAMsim3 and cutting a trace
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from make_dramsim3_cycles_refs import head_trace, run_dramsim3, scalar_stats
    exe = args.dramsim3 / "build" / "dramsim3main"
    commit = subprocess.run(["git", "-C", str(args.dramsim3 / "src"), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="ds3wide-"))
    full = tmp / "full"
    subprocess.run([sys.executable, str(DATA / "tools" / "gen_traces.py"), str(full),
                    "--n", "200000"], check=True, capture_output=True)
    for sub in ("configs", "cmdtrace"):
        (OUT / sub).mkdir(parents=True, exist_ok=True)
    runs = []
    for ranks, size in CHANNEL_SIZES.items():
        name_cfg = f"{BASE}_{ranks}ranks"
        ini = derived_ini(args.dramsim3 / "src" / "configs" / f"{BASE}.ini",
                          OUT / "configs" / f"{name_cfg}.ini", size)
        for pat in PATTERNS:
            tr = head_trace(full / f"{pat}.trace", tmp / f"{pat}.head.trace", HEAD)
            plans = [("long", CYCLES)] + ([("short", SHORT)] if pat == "mixed" else [])
            for kind, n in plans:
                work = tmp / "run"
                res = run_dramsim3(exe, ini, tr, n, work)
                name = f"{name_cfg}__{pat}.head{HEAD}.{kind}.c{n}"
                for f in sorted(work.glob("*cmd.trace")):
                    chn = f.name.removeprefix("dramsim3ch_").removesuffix("cmd.trace")
                    dst = OUT / "cmdtrace" / f"{name}.ch{chn}.cmd.trace.gz"
                    dst.write_bytes(gzip.compress(f.read_bytes(), compresslevel=9, mtime=0))
                runs.append({"name": name, "config": name_cfg, "ranks": ranks,
                             "pattern": pat, "head": HEAD, "kind": kind, "cycles": n,
                             "channels": {k: scalar_stats(v) for k, v in res.items()}})
                print(name, flush=True)
    (OUT / "runs.json").write_text(json.dumps(
        {"dramsim3_commit": commit, "build": "Release, -DCMD_TRACE=1, gcc (Debian 12)",
         "command": "dramsim3main configs/<config>.ini -c <cycles> -t <trace> -o <dir>",
         "configs": f"{BASE}.ini with channel_size raised: " + ", ".join(
             f"{s} MB = {r} ranks" for r, s in CHANNEL_SIZES.items()),
         "traces": f"first {HEAD} lines of gen_traces.py --n 200000 (seed 7, interval 2)",
         "runs": runs}, indent=1) + "\n")
    shutil.rmtree(tmp)
    print(f"{len(runs)} runs -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
