"""Make the DRAMsim3 reference runs for `--cycles N` and `--wrap-addresses` (tests/data/).

    .venv/bin/python benchmarks/make_dramsim3_cycles_refs.py --dramsim3 /work/tools/dramsim3

Needs a DRAMsim3 build OUTSIDE this repository (umd-memsys/DRAMsim3 @ 29817593, built with
`cmake -DCMAKE_BUILD_TYPE=Release -DCMD_TRACE=1` so that it also writes command traces):
DIR/build/dramsim3main and DIR/src/configs/. For each of the four reference configs and five
generated traces (first 2,000 requests, seed 7, as tests/data/reference/dramsim3/cmdtrace),
DRAMsim3 is run for N = half and 3x + 4321 of the cycle count at which
every request was done (cycles.txt), so runs end before the trace does, and long after it
(refresh, background energy and write drains going on with nothing left to serve),
and for the mixed trace N = 5e7 (almost all idle: what the engine skips in closed form). Also one
run per config on a trace whose addresses carry bits above the capacity (DRAMsim3 drops
them). Writes tests/data/reference/dramsim3-cycles/: runs.json (per run: config, trace,
cycles, per-channel counters of DRAMsim3's dramsim3.json) and cmdtrace/*.cmd.trace.gz.
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
OUT = DATA / "reference" / "dramsim3-cycles"
CONFIGS = ("DDR4_8Gb_x8_3200", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16", "HBM2_8Gb_x128")
PATTERNS = ("stream", "random", "mixed", "strided", "diffusion")
HEAD = 2000
IDLE_CYCLES = 50_000_000   # long idle after the trace: the engine skips it in closed form
WRAP_BIT = 40          # bit added to every other address of the wrap traces (above capacity)


def head_trace(src: Path, dst: Path, n: int = HEAD) -> Path:
    with open(src) as f:
        dst.write_text("".join(next(f) for _ in range(n)))
    return dst


def wrapped_trace(src: Path, dst: Path) -> Path:
    """Every other address with bit WRAP_BIT (and bit WRAP_BIT + 3) set: beyond any capacity."""
    out = []
    for i, ln in enumerate(src.read_text().splitlines()):
        a, op, c = ln.split()
        v = int(a, 16) | ((9 << WRAP_BIT) if i % 2 else 0)
        out.append(f"{v:#x} {op} {c}\n")
    dst.write_text("".join(out))
    return dst


def scalar_stats(ch: dict) -> dict:
    return {k: v for k, v in ch.items() if "[" not in k and not isinstance(v, dict)}


def run_dramsim3(exe: Path, ini: Path, trace: Path, cycles: int, work: Path) -> dict:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    subprocess.run([str(exe), str(ini), "-c", str(cycles), "-t", str(trace), "-o", str(work)],
                   check=True, capture_output=True)
    return json.loads((work / "dramsim3.json").read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dramsim3", type=Path, required=True,
                    help="folder with build/dramsim3main and src/configs/")
    args = ap.parse_args()
    exe = args.dramsim3 / "build" / "dramsim3main"
    cfg_dir = args.dramsim3 / "src" / "configs"
    commit = subprocess.run(["git", "-C", str(args.dramsim3 / "src"), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="ds3cycles-"))
    done = {}
    for ln in (DATA / "reference/dramsim3/cmdtrace/cycles.txt").read_text().splitlines():
        if ln.strip():
            c, p, n = ln.split()
            done[(c, p)] = int(n)
    (OUT / "cmdtrace").mkdir(parents=True, exist_ok=True)
    runs = []
    for cfg in CONFIGS:
        ini = cfg_dir / f"{cfg}.ini"
        full = tmp / "full"
        if not full.exists():
            subprocess.run([sys.executable, str(DATA / "tools" / "gen_traces.py"), str(full),
                            "--n", "200000"], check=True, capture_output=True)
        for pat in PATTERNS:
            tr = head_trace(full / f"{pat}.trace", tmp / f"{pat}.head.trace")
            n_done = done[(cfg, pat)]
            plans = [("short", n_done // 2), ("long", 3 * n_done + 4321)]
            if pat == "mixed":
                plans.append(("wrap", 3 * n_done))
                plans.append(("idle", IDLE_CYCLES))
            for kind, n in plans:
                t = wrapped_trace(tr, tmp / f"{pat}.wrap.trace") if kind == "wrap" else tr
                work = tmp / "run"
                res = run_dramsim3(exe, ini, t, n, work)
                name = f"{cfg}__{pat}.head{HEAD}.{kind}.c{n}"
                for f in sorted(work.glob("*cmd.trace")):
                    chn = f.name.removeprefix("dramsim3ch_").removesuffix("cmd.trace")
                    dst = OUT / "cmdtrace" / f"{name}.ch{chn}.cmd.trace.gz"
                    dst.write_bytes(gzip.compress(f.read_bytes(), compresslevel=9, mtime=0))
                runs.append({"name": name, "config": cfg, "pattern": pat, "head": HEAD,
                             "kind": kind, "cycles": n, "cycles_all_done": n_done,
                             "wrap_bits": (9 << WRAP_BIT) if kind == "wrap" else 0,
                             "channels": {k: scalar_stats(v) for k, v in res.items()}})
                print(name, flush=True)
    (OUT / "runs.json").write_text(json.dumps(
        {"dramsim3_commit": commit, "build": "Release, -DCMD_TRACE=1, gcc (Debian 12)",
         "command": "dramsim3main configs/<config>.ini -c <cycles> -t <trace> -o <dir>",
         "traces": f"first {HEAD} lines of gen_traces.py --n 200000 (seed 7, interval 2); "
                   f"wrap: every other address | {(9 << WRAP_BIT):#x}",
         "runs": runs}, indent=1) + "\n")
    shutil.rmtree(tmp)
    print(f"{len(runs)} runs -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
