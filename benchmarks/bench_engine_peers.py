"""Speed side by side with the C++ peers in one session: DiffMem (`main.py simulate`, 1 and 2
threads), DRAMsim3, Ramulator 2.0 and (DDR4 only, when built) Ramulator 2.1 on the same
1M-request traces.

    .venv/bin/python benchmarks/bench_engine_peers.py --peers /work/tools/peers [--reps 3]

PEERS holds the builds of ../shared/reference/peers/build_peers.sh (src/DRAMsim3/build/
dramsim3main, src/ramulator2/build/ramulator2), the traces of ../shared/tools/gen_traces.py
(traces1m/ with --n 1000000, traces1k/ with --n 1000) and Ramulator's LoadStoreTrace copies
(ram/<trace>_<remap>.lst from ../shared/reference/ramulator2/tools/convert_trace.py).
Ramulator 2.1 (optional) is its Python package with the built nanobind module in
ram21/ramulator2/python/ramulator/ (see benchmarks/PEERS.md); it runs on DDR4 only,
as `python r21_ddr4_3200_2r.py ram/<trace>_ddr4_2r.lst` (../shared/reference/ramulator2/configs),
timed as a whole process (interpreter start, import and trace load included, as in the stored
figures of ../shared/reference/ramulator2/SUMMARY.md).
CPU seconds are user+sys of the child process (getrusage), every thread included; the
repetitions are interleaved (rep 1 of every run, then rep 2, ...).

Code placement (`--placement`, default fresh): on the hosts we measure on, our compiled kernel's
speed depends on where its library's pages lie in physical memory, which stays fixed while the
file is in the page cache: four copies of one library differed by up to 20 % on HBM2 random,
each within 2 % of itself, and evicting a copy from the page cache moved its speed
(benchmarks/RESULTS.md, issue 17, 2026-12-04 late). One placement per session would make the
table a draw, so with `fresh` every timed run first drops its tool's code files (our kernel
library; DRAMsim3's and Ramulator's executables and shared libraries) from the page cache
(posix_fadvise DONTNEED), and the table takes the median over the reps (each a fresh draw for
every tool alike); the minimum, as before this option, is printed beside it. `keep` leaves the
page cache alone.
"net" for DiffMem = whole process minus a 1,000-request run of the same config (start-up).
DRAMsim3 runs `-c` = the cycles DiffMem's DRAMsim3-intake run needed (its own run length).
The 2-thread runs use the per-channel intake (the DRAMsim3 intake couples the channels), so
they are compared with the 1-thread per-channel run, whose statistics they equal.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CFG = {"DDR4": (SHARED / "dramsim3-configs" / "DDR4_8Gb_x8_3200.ini",
                SHARED / "reference" / "ramulator2" / "configs" / "ddr4_3200_2r.yaml", "ddr4_2r"),
       "HBM2": (SHARED / "dramsim3-configs" / "HBM2_8Gb_x128.ini",
                SHARED / "reference" / "ramulator2" / "configs" / "hbm2_8ch.yaml", "hbm2_8ch")}
R21_CFG = SHARED / "reference" / "ramulator2" / "configs" / "r21_ddr4_3200_2r.py"


def run(cmd: list[str], cwd: Path | None = None,
        env: dict[str, str] | None = None) -> tuple[float, float, str]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    w = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), w, p.stdout


def drop_from_page_cache(files: list[Path]) -> None:
    """Have the next run of these files' code read them into fresh pages (see the module's
    docstring: code placement). A file another process maps keeps its pages."""
    for f in files:
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def code_files(peers: Path) -> dict[str, list[Path]]:
    """Each tool's own compiled code: our kernel library; the peers' executables and their
    shared libraries."""
    sys.path.insert(0, str(ROOT))
    from engine import kernel_aot
    key = kernel_aot.kernel_key()
    src = peers / "src"
    return {
        "ours": [kernel_aot.library_path(key)] if key else [],
        "dramsim3": [src / "DRAMsim3" / "build" / "dramsim3main",
                     *sorted((src / "DRAMsim3").glob("*.so"))],
        "ramulator2": [src / "ramulator2" / "build" / "ramulator2",
                       *sorted((src / "ramulator2").glob("*.so"))],
        "ramulator21": sorted((peers / "ram21").rglob("*.so")),
    }


def ours(ini: Path, trace: Path, out: Path, extra: list[str]) -> tuple[float, float, dict]:
    cpu, wall, _ = run([sys.executable, str(ROOT / "main.py"), "simulate", "--config", str(ini),
                        "--trace", str(trace), "--out", str(out)] + extra)
    return cpu, wall, json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--placement", choices=("fresh", "keep"), default="fresh",
                    help="fresh (default): each timed run's code files dropped from the page "
                    "cache first, the median over the reps in the table; keep: the minimum, "
                    "page cache left alone")
    args = ap.parse_args()
    P = args.peers
    files = code_files(P)
    fresh = args.placement == "fresh"

    def place(tool: str) -> None:
        if fresh:
            drop_from_page_cache(files[tool])
    d3 = P / "src" / "DRAMsim3" / "build" / "dramsim3main"
    r2 = P / "src" / "ramulator2" / "build" / "ramulator2"
    r21_py = P / "ram21" / "ramulator2" / "python"
    r21 = any((r21_py / "ramulator").glob("_ramulator.*.so"))
    r21_env = {**os.environ, "PYTHONPATH": str(r21_py)}
    print(f"Ramulator 2.1: {'found in ' + str(r21_py) if r21 else 'not built, left out'}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    cases = [(c, t) for c in ("DDR4", "HBM2") for t in ("stream", "random")]
    need: dict[tuple[str, str], int] = {}
    res: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    loads = [os.getloadavg()[0]]
    for rep in range(args.reps):
        for cfg in ("DDR4", "HBM2"):
            ini = CFG[cfg][0]
            place("ours")
            cpu, wall, _ = ours(ini, P / "traces1k" / "stream.trace", tmp / "s.json", [])
            res.setdefault((cfg, "1k", "startup"), []).append((cpu, wall))
        for cfg, tr in cases:
            ini, yml, remap = CFG[cfg]
            trace = P / "traces1m" / f"{tr}.trace"
            runs = {"ours": [], "ours_pc1": ["--intake", "per-channel"]}
            if cfg == "HBM2":
                runs["ours_pc2"] = ["--intake", "per-channel", "--threads", "2"]
            for name, extra in runs.items():
                place("ours")
                cpu, wall, s = ours(ini, trace, tmp / "s.json", extra)
                res.setdefault((cfg, tr, name), []).append((cpu, wall))
                if name == "ours":
                    need[(cfg, tr)] = int(s["num_cycles"])
                res.setdefault((cfg, tr, name + "_stats"), []).append(
                    (s["num_cycles"], s["average_read_latency"]))
            place("dramsim3")
            cpu, wall, _ = run([str(d3), str(ini), "-c", str(need[(cfg, tr)]), "-t", str(trace),
                                "-o", str(tmp)])
            res.setdefault((cfg, tr, "dramsim3"), []).append((cpu, wall))
            place("ramulator2")
            cpu, wall, _ = run([str(r2), "-f", str(yml), "-p",
                                f"Frontend.path={P / 'ram' / f'{tr}_{remap}.lst'}"])
            res.setdefault((cfg, tr, "ramulator2"), []).append((cpu, wall))
            if r21 and cfg == "DDR4":
                place("ramulator21")
                cpu, wall, o = run([sys.executable, str(R21_CFG),
                                    str(P / "ram" / f"{tr}_{remap}.lst")], env=r21_env)
                res.setdefault((cfg, tr, "ramulator21"), []).append((cpu, wall))
                # the config script prints: cycles, average read latency, hits, misses, conflicts
                res.setdefault((cfg, tr, "ramulator21_stats"), []).append(
                    tuple(float(x) for x in o.split()[-5:]))
        loads.append(os.getloadavg()[0])
        print(f"rep {rep + 1} done, load {loads[-1]:.2f}", flush=True)
    n = 1_000_000
    times = {k: [c for c, _ in v] for k, v in res.items() if not k[2].endswith("_stats")}
    mins = {k: min(v) for k, v in times.items()}
    best = {k: statistics.median(v) for k, v in times.items()} if fresh else mins
    stat = "median" if fresh else "min"
    print(f"\nload average (1 min) during the session: {min(loads):.2f}-{max(loads):.2f}; "
          f"placement {args.placement}, the table's CPU-s: the {stat} of {args.reps} reps")
    print(f"start-up (1,000-request run, whole process, {stat} CPU-s): " + ", ".join(
        f"{c} {best[(c, '1k', 'startup')]:.3f}" for c in ("DDR4", "HBM2")))
    print("\n| trace | DiffMem whole / net req/CPU-s (DRAMsim3 intake) | per-channel 1 thread "
          "whole / net | per-channel 2 threads whole / net (CPU-s) | DRAMsim3 | Ramulator 2.0 | "
          "Ramulator 2.1 | net / DRAMsim3 | net / Ramulator 2.0 | net / Ramulator 2.1 |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    out = {}
    for cfg, tr in cases:
        su = best[(cfg, "1k", "startup")]

        def fig(name: str) -> str:
            c = best.get((cfg, tr, name))
            if c is None:
                return "-"
            return f"{n / c / 1e3:,.0f}k / {n / (c - su) / 1e3:,.0f}k"
        net = n / (best[(cfg, tr, "ours")] - su)
        d3r = n / best[(cfg, tr, "dramsim3")]
        r2r = n / best[(cfg, tr, "ramulator2")]
        c21 = best.get((cfg, tr, "ramulator21"))
        r21s, r21x = (f"{n / c21 / 1e3:,.0f}k", f"{net * c21 / n:.2f}x") if c21 else ("-", "-")
        print(f"| {cfg} {tr} 1M | {fig('ours')} | {fig('ours_pc1')} | {fig('ours_pc2')} | "
              f"{d3r / 1e3:,.0f}k | {r2r / 1e3:,.0f}k | {r21s} | {net / d3r:.2f}x | "
              f"{net / r2r:.2f}x | {r21x} |")
        out[f"{cfg}_{tr}"] = {k[2]: v for k, v in res.items() if k[:2] == (cfg, tr)}
    if fresh:
        # the same ratios from each run's minimum (the table before --placement)
        def ratio(cfg: str, tr: str, peer: str) -> str:
            c = mins.get((cfg, tr, peer))
            net = mins[(cfg, tr, "ours")] - mins[(cfg, "1k", "startup")]
            return "-" if c is None else f"{c / net:.2f}x"
        print("\nfrom the minimum CPU-s instead (net / DRAMsim3, / Ramulator 2.0, / 2.1): " +
              "; ".join(f"{cfg} {tr} {ratio(cfg, tr, 'dramsim3')}, {ratio(cfg, tr, 'ramulator2')}"
                        f", {ratio(cfg, tr, 'ramulator21')}" for cfg, tr in cases))
    for cfg, tr in cases:
        st = res.get((cfg, tr, "ramulator21_stats"))
        if st:
            cyc, lat, hits, misses, conf = st[0]
            print(f"Ramulator 2.1 {cfg} {tr}: {cyc:,.0f} memory cycles, average read latency "
                  f"{lat:.1f}, row hits / misses / conflicts {hits:,.0f} / {misses:,.0f} / "
                  f"{conf:,.0f}" + ("" if len(set(st)) == 1 else " (differs between reps)"))
    print("\nwall seconds (min) per run: " + "; ".join(
        f"{k[0]} {k[1]} {k[2]} {min(w for _, w in v):.2f}" for k, v in res.items()
        if not k[2].endswith("_stats")))
    if args.json:
        args.json.write_text(json.dumps({"loads": loads, "placement": args.placement, "runs": {
            "/".join(k): v for k, v in res.items()}}, indent=1))


if __name__ == "__main__":
    main()
