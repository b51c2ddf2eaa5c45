"""Engine speed: requests per CPU-second and simulated cycles per second, against DRAMsim3
and Ramulator 2 on the same traces (their figures from ../shared/reference/*/results/).

    .venv/bin/python benchmarks/bench_engine.py [--traces DIR] [--repeat 3]

Traces come from ../shared/tools/gen_traces.py (made on first use under benchmarks/.traces/,
which git ignores). JIT compilation is excluded: every trace is simulated once to warm up
(numba's cache is also kept across runs), then `--repeat` times; the best CPU time counts.
Trace parsing is included in the timed run, as it is in DRAMsim3's and Ramulator's.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from engine.config import load_ini  # noqa: E402
from engine.simulator import SimOptions, simulate_trace  # noqa: E402

CASES = [("DDR4_8Gb_x8_3200", "traces1m", "stream", "stream_1M"),
         ("DDR4_8Gb_x8_3200", "traces1m", "random", "random_1M"),
         ("DDR4_8Gb_x8_3200", "traces", "mixed", "mixed"),
         ("DDR4_8Gb_x8_3200", "traces", "diffusion", "diffusion"),
         ("HBM2_8Gb_x128", "traces", "mixed", "mixed")]


def ensure_traces(tdir: Path) -> None:
    gen = SHARED / "tools" / "gen_traces.py"
    for sub, n in (("traces", 200_000), ("traces1m", 1_000_000)):
        if not (tdir / sub / "random.trace").exists():
            (tdir / sub).mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, str(gen), str(tdir / sub), "--n", str(n)],
                           check=True)


def light_trace(path: Path, n: int = 200_000, gap: int = 200) -> None:
    """A light load: one request every `gap` cycles (mostly idle time)."""
    import numpy as np
    if path.exists():
        return
    rng = np.random.default_rng(1)
    addr = rng.integers(0, (4 << 30) // 64, n) * 64
    with open(path, "w") as f:
        for i, a in enumerate(addr):
            f.write(f"{a:#x} {'WRITE' if i % 3 == 2 else 'READ'} {i * gap}\n")


RAMULATOR_NAMES = {"DDR4_8Gb_x8_3200": "r21_ddr4_3200_2r",   # Ramulator 2.1, 2 ranks
                   "HBM2_8Gb_x128": "hbm2_8ch"}             # Ramulator 2.0 (2.1 not run)


def reference(cfg: str, key: str, tool: str) -> float | None:
    """Requests per CPU-second of DRAMsim3 or Ramulator 2 on the same config and trace."""
    if tool == "ramulator2":
        if cfg not in RAMULATOR_NAMES:
            return None
        p = SHARED / "reference" / tool / "results" / f"{RAMULATOR_NAMES[cfg]}__{key.lower()}.json"
        field = "requests_per_s_cpu"
    else:
        p = SHARED / "reference" / tool / "results" / f"{cfg}__{key}.json"
        field = "requests_per_cpu_s"
    if not p.exists():
        return None
    return float(json.loads(p.read_text())[field])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=ROOT / "benchmarks" / ".traces")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()
    ensure_traces(args.traces)
    light = args.traces / "light_random.trace"
    light_trace(light)
    cases = [(c, args.traces / sub / f"{name}.trace", key) for c, sub, name, key in CASES]
    cases.append(("DDR4_8Gb_x8_3200", light, None))
    rows = []
    for cfg_name, trace, key in cases:
        cfg = load_ini(SHARED / "dramsim3-configs" / f"{cfg_name}.ini")
        simulate_trace(cfg, trace, SimOptions(epoch=0))          # warm-up (JIT, page cache)
        best = None
        for _ in range(args.repeat):
            c0, w0 = time.process_time(), time.perf_counter()
            st = simulate_trace(cfg, trace, SimOptions(epoch=0))
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            if best is None or cpu < best[0]:
                best = (cpu, wall, st)
        cpu, wall, st = best
        n = st.summary["num_reads_accepted"] + st.summary["num_writes_accepted"]
        rps = n / cpu
        ds3 = reference(cfg_name, key, "dramsim3") if key else None
        ram = reference(cfg_name, key, "ramulator2") if key else None
        rows.append({"config": cfg_name, "trace": trace.name if key is None else key,
                     "requests": n, "cycles": st.summary["num_cycles"], "cpu_s": cpu,
                     "wall_s": wall, "req_per_cpu_s": rps,
                     "cycles_per_cpu_s": st.summary["num_cycles"] / cpu,
                     "dramsim3_req_per_cpu_s": ds3, "ramulator2_req_per_cpu_s": ram,
                     "x_dramsim3": rps / ds3 if ds3 else None,
                     "x_ramulator2": rps / ram if ram else None})
        r = rows[-1]
        print(f"{cfg_name:18s} {r['trace']:12s} {n:>9,d} req {r['cycles']:>10,d} cyc "
              f"cpu {cpu:6.3f}s  {rps/1e3:8.0f}k req/CPU-s  {r['cycles_per_cpu_s']/1e6:6.2f}M cyc/s"
              + (f"  x{r['x_dramsim3']:.2f} DRAMsim3" if ds3 else "")
              + (f"  x{r['x_ramulator2']:.2f} Ramulator2" if ram else ""), flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB; {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "peak_rss_mb": peak_mb,
                                         "date": time.strftime("%Y-%m-%d")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
